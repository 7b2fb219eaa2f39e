"""``jobq grant`` and ``jobq revoke`` under their former module: this name is
:mod:`.installer.privileges` itself, so that patching one patches the other."""

import sys

from .installer import privileges
from .installer.privileges import *  # noqa: F403
from .installer.privileges import __all__ as __all__

sys.modules[__name__] = privileges

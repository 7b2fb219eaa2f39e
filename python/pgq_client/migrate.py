"""The installer's names under their former module, each loaded when first asked for: a client
that imports :func:`check_compatible` from here loads :mod:`.installer.compat` alone."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .installer.compat import breaking_change_in as breaking_change_in
    from .installer.compat import check_compatible as check_compatible
    from .installer.compat import incompatibility as incompatibility
    from .installer.drift import control_findings as control_findings
    from .installer.drift import function_drift as function_drift
    from .installer.files import MigrationError as MigrationError
    from .installer.runner import grant_logger as grant_logger
    from .installer.runner import logger as logger
    from .installer.runner import migrate as migrate
    from .installer.script import render_dry_run as render_dry_run

# Searched in this order, the light modules first; a name any of them imports is the same object.
_MODULES = ("compat", "files", "levels", "plan", "drift", "script", "runner")


def __getattr__(name: str) -> Any:
    for module in () if name.startswith("_") else _MODULES:
        found = importlib.import_module(f".installer.{module}", __package__)
        if hasattr(found, name):
            return getattr(found, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

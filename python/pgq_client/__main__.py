"""`python -m pgq_client` is the `jobq` command where jobq-cli is installed."""

from __future__ import annotations

import sys
from collections.abc import Sequence


def run(argv: Sequence[str] | None = None) -> None:
    """The ``jobq`` command with ``argv``; without jobq-cli, what to install (exit status 1)."""
    try:
        from jobq_cli import main
    except ImportError as exc:
        install = "the jobq command is the jobq-cli package: pip install jobq-cli"
        sys.exit(f"jobq: {install} ({exc.name} is missing)")
    main(argv)


if __name__ == "__main__":
    run()

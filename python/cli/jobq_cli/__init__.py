"""The ``jobq`` command line (also ``python -m jobq_cli`` and ``python -m pgq_client``), one
module per concern: where the database is in :mod:`.base`, how a command fails in
:mod:`.errors`."""

from __future__ import annotations

import copy
from collections.abc import Sequence

import click

from pgq_client.durations import parse_duration

from . import install, jobs, operations, produce, serve
from .base import connection_options
from .errors import JobqGroup
from .parsing import parse_run_at

__all__ = ["cli", "main", "parse_duration", "parse_run_at"]

# `jobq --version` names the client: jobq-cli is released with it, at the same version (its
# pyproject.toml pins it), and the client is what the version tells an operator about.
DIST_NAME = "pgq-client"

MAIN_HELP = """jobq: a PostgreSQL job queue whose logic lives in SQL.

\b
The database is --dsn, else $JOBQ_DSN, else $DATABASE_URL, else an embedded
PostgreSQL started on demand. --dsn and --schema go before or after the command.

\b
Examples:
  jobq migrate --dsn postgresql://app@db/app
  jobq enqueue send_email '{"to": "a@example.com"}'
  jobq worker examples.handlers:HANDLERS --concurrency 8
  jobq stats
  jobq jobs list --status dead_letter
"""


@click.group(
    cls=JobqGroup,
    help=MAIN_HELP,
    context_settings={"help_option_names": ["-h", "--help"], "show_default": True},
)
@click.version_option(
    package_name=DIST_NAME, prog_name="jobq", message="%(prog)s %(version)s (" + DIST_NAME + ")"
)
@connection_options(None)
def cli() -> None:
    pass


def alias(command: click.Command, name: str) -> click.Command:
    """``command`` under another name, left out of ``--help`` (it lists the command once)."""
    hidden = copy.copy(command)
    hidden.name, hidden.hidden = name, True
    return hidden


for module in (install, produce, jobs, operations, serve):
    for command in module.COMMANDS:
        cli.add_command(command)
cli.add_command(alias(install.doctor, "health"))  # the name of the SQL function it reports
cli.add_command(alias(operations.limit_list, "limits"))  # likewise (jobq_limits)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the ``jobq`` script."""
    cli.main(args=list(argv) if argv is not None else None, prog_name="jobq")

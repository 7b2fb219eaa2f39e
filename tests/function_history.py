"""sql/functions/history.sha256: every version of every function file that jobq has shipped.

The migration runner refuses a schema whose recorded function file is a version it does not
find there (a newer jobq applied it: applying the older file would put older bodies back).
So each version must be listed before it ships: ``make schema-dump`` adds the current files
(``python -m tests.function_history``), and a test fails while one is missing. Lines are never
removed: an older version stays known, so that a newer jobq still upgrades installs of it.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pgq_client.migrate import HISTORY_FILE, function_files

ROOT = Path(__file__).resolve().parents[1]
FUNCTIONS = ROOT / "sql" / "functions"

HEADER = """\
# Every version of every function file that jobq has shipped, as `sha256sum` prints it.
# `jobq migrate` refuses a schema whose recorded function file is not listed here: a newer
# jobq applied it. `make schema-dump` adds the current files; never remove a line.
"""


def missing(directory: Path = FUNCTIONS) -> list[str]:
    """The lines of the current files that the history does not have yet."""
    path = directory / HISTORY_FILE
    known = set(path.read_text(encoding="utf-8").splitlines()) if path.exists() else set()
    current = [f"{f.checksum}  {f.name}.sql" for f in function_files(directory)]
    return [line for line in current if line not in known]


def update(directory: Path = FUNCTIONS) -> list[str]:
    """Add the current files' lines, sorted by file name with the others; returns those added."""
    path = directory / HISTORY_FILE
    added = missing(directory)
    old = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    entries = [line for line in old if line and not line.startswith("#")] + added
    entries.sort(key=lambda line: (line.split("  ", 1)[-1], line))
    path.write_text(HEADER + "".join(f"{line}\n" for line in entries), encoding="utf-8")
    return added


if __name__ == "__main__":
    for line in update():
        sys.stdout.write(f"history.sha256: added {line}\n")

#!/usr/bin/env python3
"""``sqlfluff lint`` of the files that did not pass it before as they are now.

    .venv/bin/python scripts/sqlfluff-changed.py .venv/bin/sqlfluff [LINT OPTIONS...] DIRECTORY

ruff and mypy keep caches, so that a second run of the linters checks only what changed;
sqlfluff keeps none. This keeps one: a file is linted unless the same sqlfluff, with the same
options and the same configuration files, passed the same content before. What passed is
recorded in .venv/sqlfluff-passed, one hash per line; a clean clone has none and lints all.
Its exit status is sqlfluff's (0 when there was nothing to lint).
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib.metadata
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / ".venv" / "sqlfluff-passed"


def ignored(path: Path) -> bool:
    """Whether a .sqlfluffignore beside the file or above it (within the repository) names it:
    the patterns used here are file names and paths relative to that file's directory."""
    for parent in path.resolve().parents:
        rules = parent / ".sqlfluffignore"
        if rules.exists():
            relative = str(path.resolve().relative_to(parent))
            for pattern in rules.read_text().split():
                if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(path.name, pattern):
                    return True
        if parent == ROOT:
            break
    return False


def main(argv: list[str]) -> int:
    sqlfluff, *options, directory = argv
    version = importlib.metadata.version("sqlfluff")  # of this interpreter's environment
    # Every configuration sqlfluff could read (it looks in each directory up to the root).
    config = sorted(p for p in ROOT.rglob(".sqlfluff") if ".venv" not in p.parts)
    common = hashlib.sha256(version.encode())
    for part in options:
        common.update(b"\0" + part.encode())
    for path in config:
        common.update(b"\0" + str(path).encode() + b"\0" + path.read_bytes())

    def key(path: Path) -> str:
        h = common.copy()
        h.update(b"\0" + str(path).encode() + b"\0" + path.read_bytes())
        return h.hexdigest()

    passed = set(RECORD.read_text().split()) if RECORD.exists() else set()
    files = {key(p): p for p in sorted(Path(directory).rglob("*.sql")) if not ignored(p)}
    todo = {k: p for k, p in files.items() if k not in passed}
    print(f"sqlfluff: {len(todo)} of {len(files)} files changed since they last passed")
    if not todo:
        return 0
    rc = subprocess.run([sqlfluff, "lint", *options, *map(str, todo.values())]).returncode
    if rc == 0:
        RECORD.parent.mkdir(exist_ok=True)
        with RECORD.open("a") as out:
            out.writelines(f"{k}\n" for k in todo)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

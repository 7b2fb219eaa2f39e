#!/usr/bin/env bash
# Regenerates the reference part of docs/sql-api.md (between its markers) from a database built
# by the migrations: signatures and COMMENT ON texts (tests/sql_reference.py).
# Needs JOBQ_TEST_DSN (superuser); `make docs` starts a throwaway server when unset.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
if [ -z "${JOBQ_TEST_DSN:-}" ]; then
    tmp=$(mktemp -d /tmp/jobq-docs.XXXXXX); chmod 755 "$tmp"
    trap 'scripts/testdb.sh stop "$tmp/pg" >/dev/null; rm -rf "$tmp"' EXIT
    eval "$(scripts/testdb.sh start "$tmp/pg")"
fi
# Not exec: the EXIT trap must still stop the throwaway server.
"$PY" -m tests.sql_reference --write docs/sql-api.md "$JOBQ_TEST_DSN"

#!/usr/bin/env bash
# Prints the schema that the migrations build (schema public of a fresh database), normalised:
# no comments, no SET lines, no blank-line runs, so that it compares across runs.
# Needs JOBQ_TEST_DSN (superuser); `make schema-dump` starts a throwaway server when unset.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
if [ -z "${JOBQ_TEST_DSN:-}" ]; then
    tmp=$(mktemp -d /tmp/jobq-dump.XXXXXX); chmod 755 "$tmp"
    trap 'scripts/testdb.sh stop "$tmp/pg" >/dev/null; rm -rf "$tmp"' EXIT
    eval "$(scripts/testdb.sh start "$tmp/pg")"
fi
# Not exec: the EXIT trap must still stop the throwaway server.
"$PY" -m tests.schema_dump "$JOBQ_TEST_DSN"

#!/usr/bin/env bash
# make test: linters, pgTAP (pg_prove) and pytest against a throwaway PostgreSQL.
# Exits non-zero if any step fails; every step runs even after a failure, so one run shows all.
#
# JOBQ_TEST_DSN set: use that server (a superuser DSN) instead of starting one.
# Arguments are passed to pytest (e.g. scripts/run-tests.sh -k enqueue).
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
BIN=$(dirname "$PY")

failed=()
step() {  # step NAME COMMAND...
    local name=$1; shift
    echo "== $name"
    if "$@"; then echo "== $name: ok"; else echo "== $name: FAILED"; failed+=("$name"); fi
}

if [ -z "${JOBQ_TEST_DSN:-}" ]; then
    tmp=$(mktemp -d /tmp/jobq-test.XXXXXX)
    chmod 755 "$tmp"
    trap 'scripts/testdb.sh stop "$tmp/pg"; rm -rf "$tmp"' EXIT
    eval "$(scripts/testdb.sh start "$tmp/pg")" || { echo "could not start a test PostgreSQL" >&2; exit 1; }
    echo "== throwaway PostgreSQL at $JOBQ_TEST_DSN"
fi
export JOBQ_TEST_DSN

step "sqlfluff (sql/)" "$BIN/sqlfluff" lint --dialect postgres sql/
step "ruff" "$BIN/ruff" check python tests bench examples
step "mypy --strict" "$BIN/mypy"
step "pgTAP" scripts/pgtap.sh
step "pytest" "$PY" -m pytest "$@"

if [ ${#failed[@]} -gt 0 ]; then
    echo "make test: FAILED: ${failed[*]}"
    exit 1
fi
echo "make test: all steps passed"

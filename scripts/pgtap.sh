#!/usr/bin/env bash
# Runs tests/pgtap/*.sql (or the files given as arguments) with pg_prove against databases
# built by the migrations: one template, then a copy per job slot that the files of the slot
# share, each rolling back what it did (scripts/pgtap-psql.sh), so that pg_prove runs
# JOBQ_TEST_JOBS files at once (default: the number of cores).
# Needs JOBQ_TEST_DSN (a superuser DSN). pgTAP and plpgsql_check live in schema `tap`, so that
# the API-surface tests see only jobq's own functions in `public`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
: "${JOBQ_TEST_DSN:?JOBQ_TEST_DSN must name a superuser DSN}"

db="jobq_pgtap_$$"
dsn=$("$PY" - "$JOBQ_TEST_DSN" "$db" <<'PYEOF'
import sys
from psycopg.conninfo import make_conninfo
print(make_conninfo(sys.argv[1], dbname=sys.argv[2]))
PYEOF
)
slots=$(mktemp -d /tmp/jobq-pgtap.XXXXXX)
psql "$JOBQ_TEST_DSN" -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $db"
cleanup() {  # the template and the slots' copies (scripts/pgtap-psql.sh marks each by a file)
    local m
    for m in "$slots"/*.db; do
        [ -e "$m" ] && echo "DROP DATABASE IF EXISTS ${db}_slot$(basename "$m" .db) WITH (FORCE);"
    done | psql "$JOBQ_TEST_DSN" -X -q >/dev/null 2>&1 || true
    psql "$JOBQ_TEST_DSN" -X -q -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$slots"
}
trap cleanup EXIT
"$PY" -c "import sys; from pgq_client.migrate import migrate; migrate(sys.argv[1])" "$dsn"
psql "$dsn" -X -q -v ON_ERROR_STOP=1 <<'SQL'
CREATE SCHEMA tap;
CREATE EXTENSION pgtap SCHEMA tap;
CREATE EXTENSION plpgsql_check SCHEMA tap;
SQL
shopt -s nullglob
if [ $# -gt 0 ]; then files=("$@"); else files=(tests/pgtap/*.sql); fi
if [ ${#files[@]} -eq 0 ]; then
    echo "pgtap.sh: no tests in tests/pgtap/" >&2
    exit 1
fi
# api_surface.sql checks the catalogue against the files' names (comma-separated).
function_files=$(cd sql/functions && ls -- *.sql | sed 's/\.sql$//' | paste -sd, -)
# Copies by file where the server can (see _create_db in tests/conftest.py).
JOBQ_PGTAP_STRATEGY=
if [ "$(psql "$JOBQ_TEST_DSN" -X -tA -c "SHOW server_version_num")" -ge 150000 ]; then
    JOBQ_PGTAP_STRATEGY="STRATEGY FILE_COPY"
fi
# The connection string of a file's database is the server's with another dbname: made here
# once, as a template with the name left to fill (a process per file would cost more CPU).
JOBQ_PGTAP_DSN_OF=$("$PY" -c 'import sys; from psycopg.conninfo import make_conninfo; print(make_conninfo(sys.argv[1], dbname="@DB@"))' "$JOBQ_TEST_DSN")
JOBQ_PGTAP_STATE=$(scripts/pgtap-psql.sh --state-of "$dsn")
JOBQ_TEST_JOBS=${JOBQ_TEST_JOBS:-$(nproc)}
export JOBQ_PGTAP_ADMIN_DSN=$JOBQ_TEST_DSN JOBQ_PGTAP_TEMPLATE=$db JOBQ_PGTAP_STRATEGY PY \
    JOBQ_PGTAP_DSN_OF JOBQ_PGTAP_SLOTS=$slots JOBQ_PGTAP_STATE JOBQ_TEST_JOBS
PGOPTIONS="-c search_path=public,tap" pg_prove --psql-bin scripts/pgtap-psql.sh \
    --set "function_files=$function_files" \
    --jobs "$JOBQ_TEST_JOBS" --failures "${files[@]}"

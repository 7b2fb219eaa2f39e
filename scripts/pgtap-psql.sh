#!/usr/bin/env bash
# psql for pg_prove (--psql-bin), as scripts/pgtap.sh runs it: each test file in a database of
# its own, copied from the template pgtap.sh built, so that files run in parallel (pg_prove -j)
# never meet (roles and counters they change in their transactions included).
#
# Needs JOBQ_PGTAP_ADMIN_DSN (a superuser DSN) and JOBQ_PGTAP_TEMPLATE (the template's name).
set -euo pipefail
: "${JOBQ_PGTAP_ADMIN_DSN:?}" "${JOBQ_PGTAP_TEMPLATE:?}"
PY=${PY:-.venv/bin/python}

file=
prev=
for arg in "$@"; do
    if [ "$prev" = --file ] || [ "$prev" = -f ]; then file=$arg; fi
    prev=$arg
done
base=$(basename "${file:-stdin}" .sql | tr -c 'a-z0-9_\n' '_')
db="${JOBQ_PGTAP_TEMPLATE}_${base:0:30}_$$"
dsn=$("$PY" -c 'import sys; from psycopg.conninfo import make_conninfo; print(make_conninfo(sys.argv[1], dbname=sys.argv[2]))' \
    "$JOBQ_PGTAP_ADMIN_DSN" "$db")
admin() { psql "$JOBQ_PGTAP_ADMIN_DSN" -X -q -v ON_ERROR_STOP=1 -c "$1" >/dev/null; }
admin "CREATE DATABASE \"$db\" TEMPLATE \"$JOBQ_PGTAP_TEMPLATE\" ${JOBQ_PGTAP_STRATEGY:-}"
trap 'admin "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" || true' EXIT
psql "$@" --dbname "$dsn"

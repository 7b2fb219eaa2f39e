#!/usr/bin/env bash
# psql for pg_prove (--psql-bin), as scripts/pgtap.sh runs it: each test file in a database of
# its own, copied from the template pgtap.sh built, so that files run in parallel (pg_prove -j)
# never meet (roles and counters they change in their transactions included).
#
# Needs JOBQ_PGTAP_ADMIN_DSN (a superuser DSN), JOBQ_PGTAP_TEMPLATE (the template's name) and
# JOBQ_PGTAP_DSN_OF (the server's connection string with dbname @DB@).
set -euo pipefail
: "${JOBQ_PGTAP_ADMIN_DSN:?}" "${JOBQ_PGTAP_TEMPLATE:?}"

file=
prev=
for arg in "$@"; do
    if [ "$prev" = --file ] || [ "$prev" = -f ]; then file=$arg; fi
    prev=$arg
done
base=$(basename "${file:-stdin}" .sql | tr -c 'a-z0-9_\n' '_')
db="${JOBQ_PGTAP_TEMPLATE}_${base:0:30}_$$"
dsn=${JOBQ_PGTAP_DSN_OF:?}
dsn=${dsn//@DB@/$db}
admin() { psql "$JOBQ_PGTAP_ADMIN_DSN" -X -q -v ON_ERROR_STOP=1 -c "$1" >/dev/null; }
admin "CREATE DATABASE \"$db\" TEMPLATE \"$JOBQ_PGTAP_TEMPLATE\" ${JOBQ_PGTAP_STRATEGY:-}"
trap 'admin "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" || true' EXIT
psql "$@" --dbname "$dsn"

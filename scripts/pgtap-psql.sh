#!/usr/bin/env bash
# psql for pg_prove (--psql-bin), as scripts/pgtap.sh runs it: each test file in a database of
# its own at a time, so that files run in parallel (pg_prove -j) never meet (roles and counters
# they change in their transactions included).
#
# Every file runs inside one transaction it rolls back, so the database it leaves is the one it
# found: the files that pg_prove runs one after another in the same job slot share one copy of
# the template (the first file of a slot makes it). After each file the database's catalogue
# (tests/fingerprint.sql) and the rows of its tables are compared with the template's; a file
# that left anything behind has its copy dropped, with a message, so that the next file of the
# slot gets a fresh one. With JOBQ_TEST_RECYCLE=0, or when no slot is free, a file gets a copy
# of its own, dropped after it.
#
# Needs JOBQ_PGTAP_ADMIN_DSN (a superuser DSN), JOBQ_PGTAP_TEMPLATE (the template's name),
# JOBQ_PGTAP_DSN_OF (the server's connection string with dbname @DB@), and for the slots
# JOBQ_PGTAP_SLOTS (a directory for their locks), JOBQ_PGTAP_STATE (the template's state, as
# `pgtap-psql.sh --state-of DSN` prints it) and JOBQ_TEST_JOBS (how many).
set -euo pipefail
here=$(dirname "$0")

# What a file could leave behind: the catalogue, and the rows of every table (each table's rows
# hashed in a statement of their own, run by query_to_xml).
state_of() {  # state_of DSN
    psql "$1" -X -q -tA -v ON_ERROR_STOP=1 -f "$here/../tests/fingerprint.sql" -c "
SELECT pg_catalog.md5(pg_catalog.string_agg(pg_catalog.md5(pg_catalog.query_to_xml(
    pg_catalog.format('SELECT pg_catalog.md5(pg_catalog.string_agg(t::text, '','' ORDER BY t::text)) FROM %s AS t',
                      c.oid::pg_catalog.regclass), false, true, '')::text), ',' ORDER BY c.oid))
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname !~ '^pg_(toast_)?temp_'"
}
if [ "${1:-}" = --state-of ]; then
    state_of "$2"
    exit
fi
: "${JOBQ_PGTAP_ADMIN_DSN:?}" "${JOBQ_PGTAP_TEMPLATE:?}" "${JOBQ_PGTAP_DSN_OF:?}"

file=
prev=
for arg in "$@"; do
    if [ "$prev" = --file ] || [ "$prev" = -f ]; then file=$arg; fi
    prev=$arg
done
admin() { psql "$JOBQ_PGTAP_ADMIN_DSN" -X -q -v ON_ERROR_STOP=1 -c "$1" >/dev/null; }
dsn_of() { echo "${JOBQ_PGTAP_DSN_OF//@DB@/$1}"; }
copy() { admin "CREATE DATABASE \"$1\" TEMPLATE \"$JOBQ_PGTAP_TEMPLATE\" ${JOBQ_PGTAP_STRATEGY:-}"; }
drop() { admin "DROP DATABASE IF EXISTS \"$1\" WITH (FORCE)"; }

# A slot: the first of JOBQ_TEST_JOBS lock files this process can hold (pg_prove runs at most
# that many files at once, so one is free unless a finished file's process is still exiting).
slot=
if [ -n "${JOBQ_PGTAP_SLOTS:-}" ] && [ "${JOBQ_TEST_RECYCLE:-1}" != 0 ]; then
    for ((i = 1; i <= ${JOBQ_TEST_JOBS:-1}; i++)); do
        exec 9>"$JOBQ_PGTAP_SLOTS/$i.lock"
        if flock -n 9; then slot=$i; break; fi
        exec 9>&-
    done
fi

if [ -z "$slot" ]; then
    base=$(basename "${file:-stdin}" .sql | tr -c 'a-z0-9_\n' '_')
    db="${JOBQ_PGTAP_TEMPLATE}_${base:0:30}_$$"
    copy "$db"
    trap 'drop "$db" || true' EXIT
    psql "$@" --dbname "$(dsn_of "$db")"
    exit
fi

db="${JOBQ_PGTAP_TEMPLATE}_slot$slot"
if [ ! -e "$JOBQ_PGTAP_SLOTS/$slot.db" ]; then
    copy "$db"
    touch "$JOBQ_PGTAP_SLOTS/$slot.db"
fi
rc=0
psql "$@" --dbname "$(dsn_of "$db")" || rc=$?
state=$(state_of "$(dsn_of "$db")" 2>&1) || true
if [ "$state" != "$JOBQ_PGTAP_STATE" ]; then
    echo "pgtap-psql.sh: ${file:-stdin} left its database changed (it must roll back all it does); the next file gets a fresh copy" >&2
    rm -f "$JOBQ_PGTAP_SLOTS/$slot.db"
    drop "$db" || true
fi
exit "$rc"

#!/usr/bin/env bash
# make test / make check: linters, pgTAP (pg_prove) and pytest against a throwaway PostgreSQL.
#
#   scripts/run-tests.sh [PYTEST ARGS...]           the whole suite (make test, CI)
#   scripts/run-tests.sh --check [PYTEST ARGS...]   the inner loop (make check): pytest without
#                                                   the tests marked slow or serial
#
# Exits non-zero if any step fails; every step runs even after a failure, so one run shows all.
# The linters run while the server starts and beside the tests; pgTAP runs its files
# JOBQ_TEST_JOBS at a time (default: the number of cores) beside pytest on JOBQ_TEST_WORKERS
# pytest-xdist workers (default: JOBQ_TEST_JOBS), then, alone, the tests marked serial (they
# restart the server).
#
# JOBQ_TEST_DSN set: use that server (a superuser DSN) instead of starting one.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
BIN=$(dirname "$PY")
JOBS=${JOBQ_TEST_JOBS:-$(nproc)}
export JOBQ_TEST_JOBS=$JOBS
# Most tests wait (on the server, on a worker's sleep, on a subprocess) more than they compute:
# JOBQ_TEST_WORKERS pytest workers, one more than the cores by default (docs/DEVELOPING.md).
WORKERS=${JOBQ_TEST_WORKERS:-$((JOBS + 1))}

# Python keeps the bytecode it compiles even where the environment asks it not to: otherwise
# every pytest worker compiles and assertion-rewrites every test module again, and every
# `python -m pgq_client` a test starts compiles the client. It goes under .venv, not beside
# the sources, so that the work tree holds only what git tracks.
unset PYTHONDONTWRITEBYTECODE
export PYTHONPYCACHEPREFIX="${PYTHONPYCACHEPREFIX:-$PWD/.venv/pycache}"

# The throwaway cluster's data directory in memory (scripts/testdb.sh, JOBQ_TEST_RAMDIR) when
# the machine has room for it; JOBQ_TEST_RAMDIR= (empty) keeps it on disk.
if [ -z "${JOBQ_TEST_RAMDIR+set}" ]; then JOBQ_TEST_RAMDIR=$(scripts/testdb.sh ramdir); fi
export JOBQ_TEST_RAMDIR

mode=test
if [ "${1:-}" = --check ]; then mode=check; shift; fi

tmp=$(mktemp -d /tmp/jobq-test.XXXXXX)
chmod 755 "$tmp"
own_server=
cleanup() {
    if [ -n "$own_server" ]; then scripts/testdb.sh stop "$tmp/pg"; fi
    rm -rf "$tmp"
}
trap cleanup EXIT
start=$SECONDS

failed=()
report() {  # report NAME STATUS SECONDS
    if [ "$2" = 0 ]; then echo "== $1: ok (${3}s)"; else echo "== $1: FAILED (${3}s)"; failed+=("$1"); fi
}
step() {  # step NAME COMMAND...: in the foreground
    local name=$1 t0=$SECONDS rc=0
    shift
    echo "== $name"
    "$@" || rc=$?
    report "$name" "$rc" $((SECONDS - t0))
}
declare -A bg_pid=() bg_t0=()
bg_names=()
bg_step() {  # bg_step NAME COMMAND...: in the background, its output shown by bg_wait
    local name=$1
    shift
    ("$@") >"$tmp/step-${#bg_names[@]}.log" 2>&1 &
    bg_pid[$name]=$!
    bg_t0[$name]=$SECONDS
    bg_names+=("$name")
}
bg_wait() {  # bg_wait: wait for every background step, in the order they started
    local i name rc
    for i in "${!bg_names[@]}"; do
        name=${bg_names[$i]}
        rc=0
        wait "${bg_pid[$name]}" || rc=$?
        echo "== $name"
        cat "$tmp/step-$i.log"
        report "$name" "$rc" $((SECONDS - bg_t0[$name]))
    done
    bg_names=()
}

# The server starts in the background (initdb is mostly disk) while ruff and mypy run; sqlfluff,
# the slowest linter and the only one that needs neither the server nor the tests, runs beside
# everything at a lower priority, so that it takes the cores only when the tests leave them idle.
# Like ruff and mypy, it lints only what changed since it last passed (scripts/sqlfluff-changed.py).
if [ -z "${JOBQ_TEST_DSN:-}" ]; then
    own_server=1
    scripts/testdb.sh start "$tmp/pg" >"$tmp/pg.env" 2>"$tmp/pg.err" &
    server_pid=$!
fi
sqlfluff=(nice -n 10 "$PY" scripts/sqlfluff-changed.py "$BIN/sqlfluff" --dialect postgres)
bg_step "sqlfluff (sql/)" "${sqlfluff[@]}" sql/
bg_step "sqlfluff (the installer's statements)" "${sqlfluff[@]}" --templater python \
    python/pgq_client/installer/sql/
bg_step "sqlfluff (the client's statements)" "${sqlfluff[@]}" --templater placeholder \
    python/pgq_client/sql/
step "ruff" "$BIN/ruff" check python tests bench examples
step "mypy --strict" "$BIN/mypy"
if [ -n "$own_server" ]; then
    if ! wait "$server_pid"; then
        cat "$tmp/pg.err" >&2
        echo "could not start a test PostgreSQL" >&2
        bg_wait
        exit 1
    fi
    # shellcheck disable=SC1091
    source "$tmp/pg.env"
    echo "== throwaway PostgreSQL at $JOBQ_TEST_DSN"
fi
export JOBQ_TEST_DSN

# pgTAP runs beside pytest: both spend most of their time waiting on the server.
bg_step "pgTAP (${JOBS} files at a time)" scripts/pgtap.sh
xdist=(-n "$WORKERS" --dist worksteal)
if [ "$mode" = check ]; then
    step "pytest, not slow (${WORKERS} workers)" "$PY" -m pytest "${xdist[@]}" -m "not slow and not serial" "$@"
    bg_wait
else
    # The slowest tests, each run's critical path: one that outgrows the others shows here.
    step "pytest (${WORKERS} workers)" "$PY" -m pytest "${xdist[@]}" --durations=15 -m "not serial" "$@"
    bg_wait  # a restart would break pgTAP's sessions
    # exit status 5: no test selected (arguments that name no serial test)
    step "pytest, serial" bash -c '"$0" -m pytest -p no:xdist -m serial "$@"; rc=$?; [ $rc = 5 ] && rc=0; exit $rc' "$PY" "$@"
fi

if [ ${#failed[@]} -gt 0 ]; then
    echo "make $mode: FAILED: ${failed[*]} ($((SECONDS - start))s)"
    exit 1
fi
echo "make $mode: all steps passed ($((SECONDS - start))s)"

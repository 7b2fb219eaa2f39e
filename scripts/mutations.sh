#!/usr/bin/env bash
# Mutation check of the test loop: does each selection still fail when a feature is broken?
#
#   scripts/mutations.sh [--full] [NAME...]     every mutation below, or those named
#
# Each mutation is one substitution in one file of a scratch copy of the working tree (the
# tracked files as they are now, uncommitted changes included). The tests that should notice
# it run first without it (they must pass), then with it (they must fail), against the scratch
# copy's SQL and client (PYTHONPATH points at the copy).
# The copy is restored after each mutation; the working tree is never touched.
#
#   check  a mutation `make check` catches: the named pgTAP files or pytest tests (never slow
#          or serial ones) must fail.
#   test   a mutation only `make test` catches: the same area's `make check` tests must pass
#          (with --full: all of `make check`'s pgTAP files and pytest tests) and the named slow
#          tests must fail.
#
# Prints one line per mutation (caught / NOT caught / did not apply) and exits non-zero unless
# every one behaved as expected. Uses JOBQ_TEST_DSN when set, else a throwaway server (its
# data directory in memory where scripts/run-tests.sh would put it: JOBQ_TEST_RAMDIR). Each
# test gets a time limit (JOBQ_MUTATION_TIMEOUT seconds; a pgTAP run, five times that): a
# mutation that makes a test hang counts as caught by it.
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
PY=${PY:-$ROOT/.venv/bin/python}
JOBS=${JOBQ_TEST_JOBS:-$(nproc)}
LIMIT=${JOBQ_MUTATION_TIMEOUT:-120}  # seconds, per test (pytest-timeout)

full=
if [ "${1:-}" = --full ]; then full=1; shift; fi

# name | kind | file | perl substitution (applied with perl -0pi) | the tests that must fail | for
# kind test: the make-check tests of the same area that must still pass
MUTATIONS=(
    "complete-no-attempt-fence|check|sql/functions/jobq_complete.sql|s/\n\s*AND \(jobq_complete\.attempt IS NULL OR j\.attempts = jobq_complete\.attempt\)//|pgtap:tests/pgtap/complete.sql|"
    "retry-backoff-off-by-one|check|sql/functions/jobq__retry_at.sql|s/greatest\(attempts, 1\)/greatest(attempts + 1, 1)/|pgtap:tests/pgtap/fail.sql|"
    "claim-without-skip-locked|check|sql/functions/jobq_dequeue.sql|s/(LIMIT jobq_dequeue\.batch_size\n\s*FOR UPDATE) SKIP LOCKED(\n\s*\),\n\n\s*claimed AS)/\$1\$2/|pytest:tests/python/test_claims_exact.py|"
    "fetcher-keeps-orphans|test|python/pgq_client/worker/fetcher.py|s/\n(\s*)self\._release_orphans\(conn\)\n/\n\$1pass\n/|pytest:tests/faults/test_connection_faults.py|pytest:tests/python/test_worker.py"
    "limit-key-without-advisory-lock|test|sql/functions/jobq__claim_limited.sql|s/OR pg_catalog\.pg_try_advisory_xact_lock\(/OR TRUE OR pg_catalog.pg_try_advisory_xact_lock(/|pytest:tests/faults/test_limits.py|pgtap:tests/pgtap/limits.sql"
    "available-with-seqscan|test|sql/functions/jobq__available.sql|s/\nSET enable_seqscan = off\n/\n/|pytest:tests/python/test_volume.py|pgtap:tests/pgtap/queue_summary.sql tests/pgtap/health.sql"
)

# The throwaway cluster's data directory in memory, as for scripts/run-tests.sh.
if [ -z "${JOBQ_TEST_RAMDIR+set}" ]; then JOBQ_TEST_RAMDIR=$(scripts/testdb.sh ramdir); fi
export JOBQ_TEST_RAMDIR

scratch=$(mktemp -d /tmp/jobq-mutations.XXXXXX)
chmod 755 "$scratch"
own_server=
cleanup() {
    if [ -n "$own_server" ]; then scripts/testdb.sh stop "$scratch/pg" >/dev/null; fi
    if [ -z "${JOBQ_MUTATIONS_KEEP:-}" ]; then rm -rf "$scratch"; fi
}
trap cleanup EXIT
if [ -z "${JOBQ_TEST_DSN:-}" ]; then
    own_server=1
    # shellcheck disable=SC1090
    source <(scripts/testdb.sh start "$scratch/pg")
fi
export JOBQ_TEST_DSN JOBQ_TEST_JOBS=$JOBS

tree=$scratch/tree
mkdir "$tree"
git ls-files -z | tar --null -T - -cf - | tar -xf - -C "$tree"
export PYTHONPATH=$tree/python:$tree PY
imported=$(cd "$tree" && "$PY" -c 'import pgq_client; print(pgq_client.__file__)')
case $imported in
    "$tree"/*) ;;
    *) echo "mutations.sh: pgq_client comes from $imported, not the scratch copy" >&2; exit 2 ;;
esac

run_selection() {  # run_selection pgtap:FILES... | pytest:FILES... [MARKERS]: the run's status
    local sel=$1 kind files
    kind=${sel%%:*}
    files=${sel#*:}
    # shellcheck disable=SC2086
    if [ "$kind" = pgtap ]; then
        (cd "$tree" && timeout $((5 * LIMIT)) scripts/pgtap.sh $files)
    else
        (cd "$tree" && "$PY" -m pytest -q -p no:cacheprovider -n "$JOBS" --timeout "$LIMIT" \
            -m "${2:-not serial}" $files)
    fi
}

# A mutated SQL file is a change as a developer commits it, generated files regenerated (as
# `make schema-dump` does): only tests of behaviour may catch it, not the tests that compare
# the generated files with the code.
cp "$tree/sql/schema.sql" "$tree/sql/functions/history.sha256" "$scratch/"
regenerate() {
    (cd "$tree" && scripts/schema-dump.sh >sql/schema.sql.new && mv sql/schema.sql.new sql/schema.sql \
        && "$PY" -m tests.function_history)
}

check_selection() {  # every test `make check` runs
    run_selection "pgtap:" && run_selection "pytest:" "not slow and not serial"
}

failed=()
results=()
for entry in "${MUTATIONS[@]}"; do
    IFS='|' read -r name kind file expr caught_by passes <<<"$entry"
    if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
    log=$scratch/$name.log
    marker="not slow and not serial"
    if [ "$kind" = test ]; then marker="slow and not serial"; fi
    # The control: without the mutation, the tests that are to catch it pass.
    if ! run_selection "$caught_by" "$marker" >"$log" 2>&1; then
        results+=("$name: ${caught_by#*:} fail without the mutation")
        failed+=("$name")
        tail -n 40 "$log"
        continue
    fi
    cp "$tree/$file" "$scratch/original"
    perl -0pi -e "$expr" "$tree/$file"
    if ! cmp -s "$tree/$file" "$scratch/original" && [[ $file == sql/* ]]; then
        regenerate >>"$log" 2>&1
    fi
    if cmp -s "$tree/$file" "$scratch/original"; then
        results+=("$name: did not apply (no match in $file)")
        failed+=("$name")
        continue
    fi
    echo "== $name ($kind): $file" | tee -a "$log"
    verdict=caught
    if [ "$kind" = test ]; then
        if [ -n "$full" ]; then
            check_selection >>"$log" 2>&1 || verdict="caught by make check too"
        elif [ -n "$passes" ]; then
            run_selection "$passes" "not slow and not serial" >>"$log" 2>&1 \
                || verdict="caught by make check too (${passes#*:})"
        fi
    fi
    if [ "$verdict" = caught ] && run_selection "$caught_by" "$marker" >>"$log" 2>&1; then
        verdict="NOT caught by ${caught_by#*:}"
    fi
    cp "$scratch/original" "$tree/$file"
    cp "$scratch/schema.sql" "$tree/sql/schema.sql"
    cp "$scratch/history.sha256" "$tree/sql/functions/history.sha256"
    if [ "$verdict" = caught ]; then
        # pytest's "FAILED <test id> - <message>" (an id may hold spaces), pgTAP's "not ok N"
        by=$({ sed -nE '/^(FAILED|ERROR) /{s/^(FAILED|ERROR) //; s/ - .*//; p}' "$log"
               grep -oE '^not ok [0-9]+|^tests/pgtap/[a-z_]+\.sql +[0-9]+' "$log"; } \
            | sort -uV | paste -sd, - | cut -c1-300)
        results+=("$name ($kind): caught by ${caught_by#*:}: ${by:-see its log}")
    else
        results+=("$name ($kind): $verdict")
        failed+=("$name")
        tail -n 40 "$log"
    fi
done

printf '%s\n' "${results[@]}"
if [ ${#failed[@]} -gt 0 ]; then
    echo "mutations.sh: unexpected: ${failed[*]}"
    exit 1
fi
echo "mutations.sh: every mutation caught where expected"

#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for tests and benchmarks: TCP on 127.0.0.1, trust, no fsync.
#
#   scripts/testdb.sh start DIR [NAME=VALUE...]   prints shell exports (JOBQ_TEST_DSN, ...)
#   scripts/testdb.sh stop DIR
#   scripts/testdb.sh ramdir                       prints /dev/shm if it can hold a test cluster
#
# The names are the embedded server's (docs/embedded.md): JOBQ_PG_BIN is the bin directory of
# the PostgreSQL to run (default here: the newest /usr/lib/postgresql/*/bin, whose extensions
# pgTAP and plpgsql_check the tests need, else initdb on PATH), and as root the cluster belongs
# to and runs as the system user `pgserver`, as the embedded server does (PostgreSQL refuses
# root). JOBQ_PG_BINDIR is the deprecated former name of JOBQ_PG_BIN.
#
# JOBQ_TEST_RAMDIR names a directory on a memory file system (tmpfs) to hold the data directory
# instead of DIR (DIR/data is then a link to it, removed with it by stop): the tests create and
# remove thousands of files (a database copied per test that changes its catalogue, new files
# for every table a TRUNCATE empties), and on a disk file system finding a free inode for each
# is the server's largest single cost. scripts/run-tests.sh and scripts/mutations.sh set it
# (to what `ramdir` prints, unless it is set already: empty keeps the disk); a benchmark must
# not (its fsync would reach no disk).
set -euo pipefail

cmd=${1:?usage: testdb.sh start|stop DIR | ramdir}

# /dev/shm when it is a tmpfs with room for the largest tables the tests build (about 0.7 GB;
# 4 GB asked) and the machine has as much memory available: a container's /dev/shm is often
# 64 MB.
if [ "$cmd" = ramdir ]; then
    avail_kb=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null)
    shm_kb=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $4}')
    if [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && [ -w /dev/shm ] \
        && [ "${avail_kb:-0}" -ge $((4 * 1024 * 1024)) ] \
        && [ "${shm_kb:-0}" -ge $((4 * 1024 * 1024)) ]; then
        echo /dev/shm
    fi
    exit 0
fi

dir=${2:?usage: testdb.sh start|stop DIR}
shift 2

bindir() {
    if [ -z "${JOBQ_PG_BIN:-}" ] && [ -n "${JOBQ_PG_BINDIR:-}" ]; then
        echo "testdb.sh: JOBQ_PG_BINDIR is deprecated; set JOBQ_PG_BIN instead" >&2
        JOBQ_PG_BIN=$JOBQ_PG_BINDIR
    fi
    if [ -n "${JOBQ_PG_BIN:-}" ]; then echo "$JOBQ_PG_BIN"; return; fi
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -n "$d" ] && [ -x "$d/initdb" ]; then echo "$d"; return; fi
    if command -v initdb >/dev/null 2>&1; then dirname "$(command -v initdb)"; return; fi
    echo "testdb.sh: no PostgreSQL server binaries (initdb) found; install postgresql (Debian: apt-get install postgresql)" >&2
    exit 1
}

run_as=()
owner=$(id -un)
case "$cmd" in
start)
    bin=$(bindir)
    if [ "$(id -u)" = 0 ]; then
        owner=pgserver
        id "$owner" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$owner"
        run_as=(runuser -u "$owner" --)
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    chown "$owner" "$dir"
    chmod 700 "$dir"
    if ! "${run_as[@]}" test -w "$dir"; then
        echo "testdb.sh: $owner cannot reach $dir (make its parent directories traversable, chmod o+x)" >&2
        exit 1
    fi
    if [ -n "${JOBQ_TEST_RAMDIR:-}" ]; then
        data=$(mktemp -d "$JOBQ_TEST_RAMDIR/jobq-pgdata.XXXXXX")
        chown "$owner" "$data"
        ln -sfn "$data" "$dir/data"
    fi
    "${run_as[@]}" "$bin/initdb" -D "$dir/data" -A trust -U postgres --no-sync -E UTF8 \
        --locale=C >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; rm -rf "${data:-}"; exit 1; }
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    opts="-p $port -k $dir -c listen_addresses=127.0.0.1 -c max_connections=300"
    opts="$opts -c shared_buffers=256MB -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    for extra in "$@"; do opts="$opts -c $extra"; done
    "${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "$opts" -w -t 60 start >/dev/null \
        || { cat "$dir/server.log" >&2; rm -rf "${data:-}"; exit 1; }
    cat <<ENV
export JOBQ_TEST_DSN='postgresql://postgres@127.0.0.1:$port/postgres'
export JOBQ_TEST_PGDATA='$dir/data'
export JOBQ_TEST_PGCTL='$bin/pg_ctl'
export JOBQ_TEST_PGOWNER='$owner'
export JOBQ_TEST_PGPORT='$port'
ENV
    ;;
stop)
    bin=$(bindir)
    if [ -f "$dir/data/postmaster.pid" ]; then
        # As whoever owns the cluster: the one that started it may predate a change of owner.
        [ "$(id -u)" = 0 ] && run_as=(runuser -u "$(stat -L -c %U "$dir/data")" --)
        "${run_as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
    fi
    if [ -L "$dir/data" ]; then rm -rf "$(readlink "$dir/data")"; fi
    rm -rf "$dir"
    ;;
*) echo "usage: testdb.sh start|stop DIR | ramdir" >&2; exit 2 ;;
esac

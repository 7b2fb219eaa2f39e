#!/usr/bin/env bash
# A throwaway Citus cluster on localhost: a coordinator and two worker nodes, for the tests of
# docs/scaling.md (`make test-citus`).
#
#   scripts/citus.sh build              build Citus once into the cache (prints its prefix)
#   scripts/citus.sh start DIR [N]      start a coordinator and N worker nodes (default 2),
#                                       prints shell exports (JOBQ_CITUS_DSN, ...)
#   scripts/citus.sh restart DIR NODE   restart one node (coordinator, worker1, worker2)
#   scripts/citus.sh stop DIR           stop them and remove DIR
#
# Citus is not packaged for this Debian, so it is built from its source tarball
# (citus-13.2.2.tar.gz, a `git archive` of tag v13.2.2): $JOBQ_CITUS_TARBALL, else the first
# of ../vendor/ and ../shared/vendor/ beside the repository that has it. The build needs
# Debian's postgresql-server-dev-15 and a few -dev libraries (installed here when root).
#
# The build never touches the system's PostgreSQL: it goes into a private copy of it in the
# cache ($JOBQ_CITUS_CACHE, default /var/cache/jobq as root, else ~/.cache/jobq), made of the
# Debian server's bin/lib/share directories and Citus's files. PostgreSQL finds its share and
# lib directories relative to its own binary, so the copy loads its own extensions (pgTAP and
# plpgsql_check come along if installed). The next start reuses the cache: a build is done
# once per machine (about two minutes on two cores).
set -euo pipefail

CITUS_VERSION=13.2.2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)

pg_major() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    [ -n "$d" ] || { echo "citus.sh: no Debian PostgreSQL server under /usr/lib/postgresql" >&2; exit 1; }
    basename "$(dirname "$d")"
}

cache_root() {
    if [ -n "${JOBQ_CITUS_CACHE:-}" ]; then echo "$JOBQ_CITUS_CACHE"
    elif [ "$(id -u)" = 0 ]; then echo /var/cache/jobq
    else echo "${XDG_CACHE_HOME:-$HOME/.cache}/jobq"
    fi
}

tarball() {
    local t
    for t in "${JOBQ_CITUS_TARBALL:-}" "$repo/../vendor/citus-$CITUS_VERSION.tar.gz" \
             "$repo/../shared/vendor/citus-$CITUS_VERSION.tar.gz"; do
        if [ -n "$t" ] && [ -f "$t" ]; then echo "$t"; return; fi
    done
    echo "citus.sh: citus-$CITUS_VERSION.tar.gz not found; set JOBQ_CITUS_TARBALL to its path" >&2
    exit 1
}

build_deps() {
    local v=$1 need=() p
    for p in "postgresql-server-dev-$v" liblz4-dev libzstd-dev libkrb5-dev libselinux1-dev \
             libxslt1-dev libpam0g-dev libreadline-dev libssl-dev make gcc patch; do
        dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
    done
    [ ${#need[@]} -eq 0 ] && return
    local sudo=()
    if [ "$(id -u)" != 0 ]; then
        if sudo -n true 2>/dev/null; then sudo=(sudo -n)
        else
            echo "citus.sh: building Citus needs: ${need[*]}" >&2
            echo "install them with: sudo apt-get install ${need[*]}" >&2
            exit 1
        fi
    fi
    echo "citus.sh: installing ${need[*]}" >&2
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
}

# Prints the prefix of the private PostgreSQL with Citus, building it first if needed.
build() {
    local v root prefix src stamp
    v=$(pg_major)
    root=$(cache_root)
    prefix="$root/citus-$CITUS_VERSION-pg$v"
    stamp="$prefix/.built"
    if [ -f "$stamp" ]; then echo "$prefix"; return; fi
    build_deps "$v"
    mkdir -p "$root"
    rm -rf "$prefix" "$prefix.src"
    # The private copy: same relative layout as Debian's, so that the binary finds the rest.
    mkdir -p "$prefix/lib/postgresql" "$prefix/share/postgresql"
    cp -a "/usr/lib/postgresql/$v" "$prefix/lib/postgresql/"
    cp -a "/usr/share/postgresql/$v" "$prefix/share/postgresql/"
    src="$prefix.src"
    mkdir -p "$src"
    tar -xzf "$(tarball)" -C "$src" --strip-components=1
    # Debian's 15.20 headers export have_createdb_privilege(), which Citus also defines.
    if grep -q have_createdb_privilege "/usr/include/postgresql/$v/server/commands/dbcommands.h" 2>/dev/null \
        || grep -rqs "extern bool have_createdb_privilege" "/usr/include/postgresql/$v/server/"; then
        (cd "$src" && patch -s -p1 <"$here/citus/pg15-have-createdb-privilege.patch")
    fi
    echo "citus.sh: building Citus $CITUS_VERSION for PostgreSQL $v (once; log: $prefix.build.log)" >&2
    (
        cd "$src"
        ./configure --without-libcurl PG_CONFIG="/usr/lib/postgresql/$v/bin/pg_config"
        make -j"$(nproc)"
        make install DESTDIR="$src/stage"
    ) >"$prefix.build.log" 2>&1 || { tail -n 40 "$prefix.build.log" >&2; exit 1; }
    cp -a "$src/stage/usr/lib/postgresql/$v/lib/." "$prefix/lib/postgresql/$v/lib/"
    cp -a "$src/stage/usr/share/postgresql/$v/extension/." "$prefix/share/postgresql/$v/extension/"
    rm -rf "$src"
    chmod -R a+rX "$prefix"
    [ "$(id -u)" = 0 ] && chmod a+rx "$root"
    touch "$stamp"
    echo "$prefix"
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
    local dir=$1 nodes=${2:-2} prefix v bin owner run_as=() i port ports=() name
    prefix=$(build)
    v=$(pg_major)
    bin="$prefix/lib/postgresql/$v/bin"
    owner=$(id -un)
    if [ "$(id -u)" = 0 ]; then
        # PostgreSQL refuses to run as root; the tests' clusters run as this system user.
        owner=pgserver
        id "$owner" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$owner"
        run_as=(runuser -u "$owner" --)
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    chown "$owner" "$dir"
    chmod 700 "$dir"
    for ((i = 0; i <= nodes; i++)); do
        if [ "$i" = 0 ]; then name=coordinator; else name=worker$i; fi
        port=$(free_port)
        ports+=("$port")
        "${run_as[@]}" "$bin/initdb" -D "$dir/$name" -A trust -U postgres --no-sync -E UTF8 \
            --locale=C >"$dir/$name.initdb.log" 2>&1 || { cat "$dir/$name.initdb.log" >&2; exit 1; }
        cat >>"$dir/$name/postgresql.conf" <<CONF
shared_preload_libraries = 'citus'
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 300
shared_buffers = 128MB
fsync = off
synchronous_commit = off
full_page_writes = off
max_prepared_transactions = 100
wal_level = logical
citus.enable_schema_based_sharding = on
citus.shard_replication_factor = 1
CONF
        "${run_as[@]}" "$bin/pg_ctl" -D "$dir/$name" -l "$dir/$name.log" -w -t 60 start >/dev/null \
            || { cat "$dir/$name.log" >&2; exit 1; }
    done
    for ((i = 0; i <= nodes; i++)); do
        "$bin/psql" -qAtX -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${ports[$i]}" -U postgres -d postgres \
            -c "CREATE EXTENSION citus" >/dev/null
    done
    "$bin/psql" -qAtX -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${ports[0]}" -U postgres -d postgres \
        -c "SELECT citus_set_coordinator_host('127.0.0.1', ${ports[0]})" >/dev/null
    for ((i = 1; i <= nodes; i++)); do
        "$bin/psql" -qAtX -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "${ports[0]}" -U postgres -d postgres \
            -c "SELECT citus_add_node('127.0.0.1', ${ports[$i]})" >/dev/null
    done
    echo "$nodes" >"$dir/nodes"
    cat <<ENV
export JOBQ_CITUS_DSN='postgresql://postgres@127.0.0.1:${ports[0]}/postgres'
export JOBQ_CITUS_WORKER_PORTS='${ports[*]:1}'
export JOBQ_CITUS_DIR='$dir'
export JOBQ_CITUS_BIN='$bin'
export JOBQ_CITUS_PGOWNER='$owner'
ENV
}

stop() {
    local dir=$1 prefix v bin d run_as=()
    v=$(pg_major)
    prefix="$(cache_root)/citus-$CITUS_VERSION-pg$v"
    bin="$prefix/lib/postgresql/$v/bin"
    for d in "$dir"/coordinator "$dir"/worker*; do
        [ -f "$d/postmaster.pid" ] || continue
        [ "$(id -u)" = 0 ] && run_as=(runuser -u "$(stat -c %U "$d")" --)
        "${run_as[@]}" "$bin/pg_ctl" -D "$d" -m immediate -w stop >/dev/null 2>&1 || true
    done
    rm -rf "$dir"
}

# Restarts one node of a running cluster (a fault test's "node restarted mid-drain").
restart() {
    local dir=$1 name=$2 prefix v bin run_as=()
    v=$(pg_major)
    prefix="$(cache_root)/citus-$CITUS_VERSION-pg$v"
    bin="$prefix/lib/postgresql/$v/bin"
    [ -d "$dir/$name" ] || { echo "citus.sh: no node $name in $dir" >&2; exit 1; }
    [ "$(id -u)" = 0 ] && run_as=(runuser -u "$(stat -c %U "$dir/$name")" --)
    "${run_as[@]}" "$bin/pg_ctl" -D "$dir/$name" -l "$dir/$name.log" -m fast -w -t 60 restart >/dev/null
}

case "${1:-}" in
build) build ;;
restart) restart "${2:?usage: citus.sh restart DIR NODE}" "${3:?usage: citus.sh restart DIR NODE}" ;;
start) start "${2:?usage: citus.sh start DIR [NODES]}" "${3:-2}" ;;
stop) stop "${2:?usage: citus.sh stop DIR}" ;;
*) echo "usage: citus.sh build | start DIR [NODES] | restart DIR NODE | stop DIR" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Installs what `make test` needs beyond the Python venv: PostgreSQL's server (if missing),
# pgTAP, pg_prove and plpgsql_check, from Debian's packages when running as root.
set -euo pipefail

major() {
    local d
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -n "$d" ]; then basename "$(dirname "$d")"; return; fi
    if command -v pg_config >/dev/null; then pg_config --version | sed -E 's/[^0-9]*([0-9]+).*/\1/'; return; fi
    echo ""
}

v=$(major)
need=()
if [ -z "$v" ]; then
    need+=(postgresql postgresql-contrib)
    v=15
fi
[ -f "/usr/share/postgresql/$v/extension/pgtap.control" ] || need+=("postgresql-$v-pgtap")
[ -f "/usr/share/postgresql/$v/extension/plpgsql_check.control" ] || need+=("postgresql-$v-plpgsql-check")
command -v pg_prove >/dev/null || need+=(libtap-parser-sourcehandler-pgtap-perl)
command -v psql >/dev/null || need+=("postgresql-client")

[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "make test needs these Debian packages: ${need[*]}" >&2
    echo "install them with: sudo apt-get install ${need[*]}" >&2
    exit 1
fi
echo "installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq "${need[@]}" >/dev/null

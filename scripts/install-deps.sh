#!/usr/bin/env bash
# Installs what `make test` needs beyond the Python venv: PostgreSQL's server (if missing),
# pgTAP, pg_prove, plpgsql_check and chromium (the dashboard's browser tests drive it through
# Playwright; no browser is ever downloaded), from Debian's packages when running as root or
# with a password-less sudo. Without them, chromium alone is optional: its tests then skip,
# saying why.
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

[ -x /usr/bin/chromium ] || browser=(chromium)

[ ${#need[@]} -eq 0 ] && [ -z "${browser:-}" ] && exit 0
if [ "$(id -u)" = 0 ]; then
    as_root=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    as_root=(sudo -n)
else
    if [ -n "${browser:-}" ]; then
        echo "chromium is not installed: the dashboard's browser tests will skip" \
             "(install it with: sudo apt-get install --no-install-recommends chromium)" >&2
    fi
    [ ${#need[@]} -eq 0 ] && exit 0
    echo "make test needs these Debian packages: ${need[*]}" >&2
    echo "install them with: sudo apt-get install ${need[*]}" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq >/dev/null
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]}"
    "${as_root[@]}" apt-get install -y -qq "${need[@]}" >/dev/null
fi
if [ -n "${browser:-}" ]; then
    echo "installing chromium (for the dashboard's browser tests)"
    "${as_root[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null \
        || echo "could not install chromium: the dashboard's browser tests will skip" >&2
fi

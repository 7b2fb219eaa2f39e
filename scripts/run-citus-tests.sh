#!/usr/bin/env bash
# make test-citus: builds Citus once (cached, see scripts/citus.sh), starts a coordinator and
# two worker nodes on localhost, runs tests/citus against them, and tears the cluster down.
# Arguments are passed to pytest (e.g. scripts/run-citus-tests.sh -k move). JOBQ_CITUS_NODES=1
# starts one worker node instead of two (for the figures of docs/scaling.md; the tests that
# need two nodes are skipped).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}

scripts/citus.sh build >/dev/null
tmp=$(mktemp -d /tmp/jobq-citus.XXXXXX)
chmod 755 "$tmp"
trap 'scripts/citus.sh stop "$tmp/cluster"; rm -rf "$tmp"' EXIT
eval "$(scripts/citus.sh start "$tmp/cluster" "${JOBQ_CITUS_NODES:-2}")"
echo "== Citus cluster: coordinator $JOBQ_CITUS_DSN, worker nodes on ports $JOBQ_CITUS_WORKER_PORTS"
"$PY" -m pytest -p no:cacheprovider -s tests/citus "$@"

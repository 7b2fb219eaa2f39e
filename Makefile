# jobq — `make help` lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO_STAMP := $(VENV)/.installed-demo

.DEFAULT_GOAL := help
.PHONY: help venv deps check test test-citus lint pgtap pytest demo screenshots bench bench-quick pressure soak retention schema-dump docs clean

help: ## List the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# The command line (python/cli) and the dashboard (python/web) are distributions of their own,
# installed editable beside the client.
DISTS := -e python/cli -e python/web
$(STAMP): pyproject.toml python/cli/pyproject.toml python/web/pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[dev,examples]' $(DISTS)
	touch $(STAMP)

# What the demo runs and nothing more (the client and the jobq command, psycopg's bundled libpq,
# the embedded PostgreSQL, the dashboard for `jobq web`),
# so that a first `make demo` does not wait for the linters and test tools. A venv made by
# `make venv` has all of it already.
$(DEMO_STAMP): pyproject.toml python/cli/pyproject.toml python/web/pyproject.toml
	@if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ] && [ $(STAMP) -nt python/cli/pyproject.toml ] \
	    && [ $(STAMP) -nt python/web/pyproject.toml ]; then touch $@; else \
	    set -e; test -x $(PY) || $(PYTHON) -m venv $(VENV); \
	    echo "installing jobq and the embedded PostgreSQL into $(VENV) (once)"; \
	    $(PY) -m pip install --quiet -e '.[binary,embedded]' $(DISTS); touch $@; fi

venv: $(STAMP) ## Create .venv with jobq, its development tools and what examples/ uses

deps: $(STAMP) ## Install what the tests need (Python venv; pgTAP, pg_prove, plpgsql_check, chromium from Debian)
	@scripts/install-deps.sh

check: deps ## The inner loop: linters, pgTAP, and the pytest tests not marked slow (under 90 s)
	@scripts/run-tests.sh --check

test: deps ## Every test (linters, pgTAP, all of pytest incl. the fault suite), in parallel; what CI runs
	@scripts/run-tests.sh

test-citus: deps ## Build Citus once (cached), start a 3-node cluster on localhost, run tests/citus (not in CI)
	@scripts/run-citus-tests.sh

lint: $(STAMP) ## sqlfluff, ruff, mypy --strict
	$(VENV)/bin/sqlfluff lint --dialect postgres sql/
	$(VENV)/bin/sqlfluff lint --dialect postgres --templater python python/pgq_client/installer/sql/
	$(VENV)/bin/sqlfluff lint --dialect postgres --templater placeholder python/pgq_client/sql/
	$(VENV)/bin/ruff check python tests bench examples
	$(VENV)/bin/mypy

demo: $(DEMO_STAMP) ## Run the demo: a real queue and worker on the embedded database (installs only what it needs)
	$(PY) examples/demo.py

screenshots: deps ## Regenerate docs/img/dashboard-*.png: headless chromium over a seeded throwaway database
	$(PY) scripts/screenshots.py

bench: deps ## Benchmarks against a raw-SQL ceiling (several minutes; never in CI)
	$(PY) -m bench.run

bench-quick: deps ## A one-minute version of `make bench`
	$(PY) -m bench.run --quick

# autovacuum_naptime=10s: what docs/operations.md recommends for thousands of jobs a second
# (with the default minute, the soak's 17,500 jobs/s built a backlog; see docs/guarantees.md).
SOAK_SETTINGS ?= --set autovacuum_naptime=10s

pressure: deps ## The pressure scenario alone: a snapshot held 3 minutes, jobq and raw SQL
	$(PY) -m bench.pressure

soak: deps ## Soak: 10 minutes at 60 % load, then 10 more with a snapshot held 3 minutes (not in CI)
	$(PY) -m bench.soak $(SOAK_SETTINGS)
	$(PY) -m bench.soak --snapshot-hold $(SOAK_SETTINGS)

retention: deps ## Retention of 1M and 10M finished jobs timed, and claim/complete p99 beside the DDL
	$(PY) -m bench.retention

schema-dump: deps ## Rewrite sql/schema.sql from the migrations; list new function files in history.sha256
	@scripts/schema-dump.sh > sql/schema.sql
	@echo "sql/schema.sql rewritten"
	@$(PY) -m tests.function_history

docs: deps ## Regenerate the reference in docs/sql-api.md from the COMMENT ON texts of a fresh install
	@scripts/docs.sh
	@echo "docs/sql-api.md: reference regenerated"

clean: ## Remove the venv and caches
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

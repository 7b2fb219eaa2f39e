"""The throwaway PostgreSQL cluster a benchmark run starts, with fixed, durable settings."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgq_client.migrate import migrate

ROOT = Path(__file__).resolve().parent.parent
TESTDB = ROOT / "scripts" / "testdb.sh"

# Durable settings (scripts/testdb.sh defaults to fsync/synchronous_commit/full_page_writes off,
# for tests; later -c options win). A large max_wal_size and checkpoint_timeout keep
# checkpoints out of the measured intervals: the harness runs CHECKPOINT before each one.
SETTINGS: dict[str, str] = {
    "fsync": "on",
    "synchronous_commit": "on",
    "full_page_writes": "on",
    "max_wal_size": "8GB",
    "checkpoint_timeout": "30min",
}

# Settings read back (SHOW) and recorded with the results.
REPORTED = (
    "server_version",
    "fsync",
    "synchronous_commit",
    "full_page_writes",
    "wal_sync_method",
    "shared_buffers",
    "max_wal_size",
    "checkpoint_timeout",
    "autovacuum",
)

DATABASE = "jobq_bench"

# The raw-SQL ceiling: the smallest table a SKIP LOCKED queue can live in.
RAW_TABLE = """
CREATE TABLE raw_jobs (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload jsonb NOT NULL,
    status text NOT NULL DEFAULT 'pending'
)
"""


@dataclass
class Cluster:
    """``with Cluster() as c:`` starts the cluster, builds the database, and stops it after."""

    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="jobq-bench.")))
    env: dict[str, str] = field(default_factory=dict)
    settings: dict[str, str] = field(default_factory=dict)
    # Whether the jobq functions count for jobq_metrics() (jobq_configure(metrics => ...));
    # None leaves the installation's default (off since migration 0012).
    metrics: bool | None = None

    @property
    def pgdir(self) -> Path:
        return self.workdir / "pg"

    @property
    def admin_dsn(self) -> str:
        return self.env["JOBQ_TEST_DSN"]

    @property
    def dsn(self) -> str:
        return make_conninfo(self.admin_dsn, dbname=DATABASE)

    @property
    def port(self) -> int:
        return int(self.env["JOBQ_TEST_PGPORT"])

    @property
    def bindir(self) -> Path:
        return Path(self.env["JOBQ_TEST_PGCTL"]).parent

    def start(self) -> None:
        # The server runs as another user (postgres) and must reach the data directory.
        self.workdir.chmod(0o755)
        args = [f"{k}={v}" for k, v in SETTINGS.items()]
        out = subprocess.run(
            [str(TESTDB), "start", str(self.pgdir), *args],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        ).stdout
        for line in out.splitlines():
            if line.startswith("export "):
                name, _, value = line[len("export ") :].partition("=")
                self.env[name] = shlex.split(value)[0]
        self._check_settings()
        self._build()

    def _check_settings(self) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            for name in REPORTED:
                row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
                assert row is not None
                self.settings[name] = str(row[0])
        for name in ("fsync", "synchronous_commit", "full_page_writes"):
            if self.settings[name] != "on":
                raise RuntimeError(f"benchmark cluster has {name}={self.settings[name]}, not on")

    def _build(self) -> None:
        with psycopg.connect(self.admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        migrate(self.dsn)
        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(RAW_TABLE)
            if self.metrics is not None:
                conn.execute("SELECT jobq_configure(metrics => %s::boolean)", (self.metrics,))

    def stop(self) -> None:
        subprocess.run(
            [str(TESTDB), "stop", str(self.pgdir)],
            check=False,
            capture_output=True,
            timeout=120,
        )
        subprocess.run(["rm", "-rf", str(self.workdir)], check=False)

    def connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        return psycopg.connect(self.dsn, autocommit=True, **kwargs)

    def __enter__(self) -> Cluster:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def pgbench_env(cluster: Cluster) -> dict[str, str]:
    """Environment for pgbench/psql: the cluster's connection, not the caller's PG* variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env.update(PGHOST="127.0.0.1", PGPORT=str(cluster.port), PGUSER="postgres", PGDATABASE=DATABASE)
    return env

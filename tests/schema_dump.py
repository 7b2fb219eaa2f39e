"""Normalised ``pg_dump --schema-only`` of a database built by the migrations.

Used by ``make schema-dump`` (to write ``sql/schema.sql``) and by the test that checks the
migrations still build exactly the committed schema.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

import psycopg
from psycopg import sql
from psycopg.conninfo import make_conninfo

from pgq_client.migrate import migrate


def normalise(dump: str) -> str:
    lines: list[str] = []
    for line in dump.splitlines():
        if (
            line.startswith("--")
            or line.startswith("SET ")
            or line.startswith("SELECT pg_catalog.set_config")
        ):
            continue
        if line.startswith("\\restrict") or line.startswith("\\unrestrict"):
            continue  # per-dump random keys of newer pg_dump releases
        if not line.strip() and (not lines or not lines[-1].strip()):
            continue
        lines.append(line.rstrip())
    return "\n".join(lines).strip() + "\n"


def dump_schema(dsn: str, schema: str = "public") -> str:
    out = subprocess.run(
        [
            "pg_dump", "--schema-only", "--no-owner", f"--schema={schema}",
            # The dated partitions of jobq_jobs_history depend on the day of the install.
            f"--exclude-table={schema}.jobq__history_*_[0-9]*",
            "--dbname", dsn,
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return normalise(out)


def build_and_dump(admin_dsn: str) -> str:
    name = f"jobq_dump_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        dsn = make_conninfo(admin_dsn, dbname=name)
        migrate(dsn)
        return dump_schema(dsn)
    finally:
        with psycopg.connect(admin_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


if __name__ == "__main__":
    sys.stdout.write(build_and_dump(sys.argv[1]))

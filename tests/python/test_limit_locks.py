"""The advisory locks of limit keys cannot be computed by another role.

jobq__claim_limited locks each limited (group, key) it considers with
pg_try_advisory_xact_lock and skips a key whose lock another session holds. Were the lock's
number a hash of public names alone, any role could take it and stop every claim of that key:
it is seeded with a secret of the installation (jobq_settings.lock_seed), readable by jobq's
owner and admins only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from tests.helpers import MakeRole

from pgq_client.migrate import migrate

Conn = psycopg.Connection[Any]

# The lock number a role could compute from the names alone.
OLD_KEY = (
    "SELECT pg_advisory_lock(hashtextextended("
    "format('jobq limit %%L %%L %%L', %s::text, %s::text, %s::text), 0))"
)


@pytest.fixture
def outsider(dsn: str, make_role: MakeRole) -> Iterator[Conn]:
    """A session of a role without any jobq grant."""
    role = make_role(prefix="jobq_outsider")
    with psycopg.connect(make_conninfo(dsn, user=role), autocommit=True) as c:
        yield c


def test_a_role_without_grants_holding_the_names_lock_does_not_stop_a_keys_claims(
    conn: Conn, outsider: Conn
) -> None:
    conn.execute("SELECT jobq_set_limit('per-customer', max_running => 1)")
    job = conn.execute(
        "SELECT jobq_enqueue('t', limit_group => 'per-customer', limit_key => 'acme')"
    ).fetchone()
    assert job is not None
    # Held at session level by the outsider for as long as it likes.
    outsider.execute(OLD_KEY, ["public", "per-customer", "acme"])
    claimed = conn.execute("SELECT id FROM jobq_dequeue('w1')").fetchall()
    assert claimed == [(job[0],)], "the key's job is claimed despite the outsider's lock"
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        outsider.execute("SELECT lock_seed FROM jobq_settings")


def test_each_installation_has_a_seed_of_its_own(empty_dsn: str) -> None:
    for schema in ("tenant_a", "tenant_b"):
        migrate(empty_dsn, schema=schema)
    with psycopg.connect(empty_dsn, autocommit=True) as c:
        seeds = [
            c.execute(f"SELECT lock_seed FROM {schema}.jobq_settings").fetchone()
            for schema in ("tenant_a", "tenant_b")
        ]
    assert seeds[0] is not None and seeds[1] is not None
    assert seeds[0] != seeds[1] and 0 not in (seeds[0][0], seeds[1][0])

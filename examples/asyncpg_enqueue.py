"""Recipe: enqueue with asyncpg, the plain SQL API (no jobq client: asyncpg is not psycopg).

``jobq_enqueue`` is a function like any other: call it with named arguments in the
transaction that writes the order, and the job exists if and only if the order commits.

    JOBQ_DSN=postgresql://app@db/app python -m examples.asyncpg_enqueue book a@example.com
    jobq worker examples.handlers:HANDLERS --burst

asyncpg takes a ``postgresql://`` URI (not a ``key=value`` DSN).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import uuid

import asyncpg

ENQUEUE = """
SELECT jobq_enqueue(
    job_type => $1::text,
    payload => $2::jsonb,
    idempotency_key => $3::text
)
"""


class OrderRefused(Exception):
    """Raised inside the transaction, after the enqueue: the whole order is rolled back."""


async def place_order(
    conn: asyncpg.Connection, item: str, email: str, *, refuse: bool = False
) -> tuple[int, uuid.UUID]:
    async with conn.transaction():
        order_id: int = await conn.fetchval(
            "INSERT INTO orders (item, email) VALUES ($1, $2) RETURNING id", item, email
        )
        payload = {"to": email, "subject": f"Order {order_id} confirmed"}
        job_id: uuid.UUID = await conn.fetchval(
            ENQUEUE, "send_email", json.dumps(payload), f"order-confirmation:{order_id}"
        )
        if refuse:
            raise OrderRefused(f"order {order_id} refused")
    return order_id, job_id


async def run(
    dsn: str, item: str, email: str, *, refuse: bool = False
) -> tuple[int, uuid.UUID]:
    conn = await asyncpg.connect(dsn)
    try:
        return await place_order(conn, item, email, refuse=refuse)
    finally:
        await conn.close()


def main(argv: list[str]) -> int:
    item, email, *rest = argv
    try:
        order_id, job_id = asyncio.run(
            run(os.environ["JOBQ_DSN"], item, email, refuse="--refuse" in rest)
        )
    except OrderRefused as exc:
        print(f"{exc}: rolled back, no job")
        return 1
    print(f"order {order_id} committed with job {job_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

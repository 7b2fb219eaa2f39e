"""Recipe: enqueue a job in a SQLAlchemy 2 session's transaction, sync and async.

Two ways, both in the session's transaction (a rollback removes the job with the order):

* the SQL function itself, through SQLAlchemy:
  ``session.execute(select(func.jobq_enqueue("send_email", payload)))``, with any driver
  SQLAlchemy has for PostgreSQL (psycopg, asyncpg, ...);
* the jobq client, given the psycopg connection under the session
  (``Queue.enqueue(..., conn=...)``, ``AsyncQueue.enqueue(..., conn=...)``): its checks, typed
  errors and every other method. This needs the psycopg driver (``postgresql+psycopg://``).

    python -m examples.sqlalchemy_enqueue book a@example.com          # sync session
    python -m examples.sqlalchemy_enqueue book a@example.com --async  # AsyncSession
    jobq worker examples.handlers:HANDLERS --burst
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from typing import Any

from psycopg.conninfo import conninfo_to_dict
from sqlalchemy import URL, Engine, create_engine, func, literal, select, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, create_async_engine
from sqlalchemy.orm import Session

from pgq_client import AsyncQueue, Queue

# With conn=, these use the caller's connection only: they never connect by themselves.
jobs = Queue()
async_jobs = AsyncQueue()


def url(dsn: str) -> URL:
    """A SQLAlchemy URL for the psycopg 3 driver, from a libpq DSN (URI or key=value)."""
    params = conninfo_to_dict(dsn)
    port = params.get("port")
    return URL.create(
        "postgresql+psycopg",
        username=params.get("user"),
        password=params.get("password"),
        host=params.get("host"),
        port=int(port) if port else None,
        database=params.get("dbname"),
    )


def confirmation(order_id: int, email: str) -> dict[str, Any]:
    return {"to": email, "subject": f"Order {order_id} confirmed"}


class OrderRefused(Exception):
    """Raised inside the transaction, after the enqueue: the whole order is rolled back."""


# -- sync Session ---------------------------------------------------------------------------------


def place_order(
    engine: Engine, item: str, email: str, *, refuse: bool = False
) -> tuple[int, uuid.UUID, uuid.UUID]:
    """An order, its confirmation job (SQL function) and a reminder (client), in one
    transaction: ``session.begin()`` commits them together, or rolls them all back."""
    with Session(engine) as session, session.begin():
        order_id = session.execute(
            text("INSERT INTO orders (item, email) VALUES (:item, :email) RETURNING id"),
            {"item": item, "email": email},
        ).scalar_one()
        # 1. The SQL function (arguments by position: job_type, payload, idempotency_key).
        job_id = session.execute(
            select(
                func.jobq_enqueue(
                    "send_email",
                    literal(confirmation(order_id, email), JSONB),
                    f"order-confirmation:{order_id}",
                )
            )
        ).scalar_one()
        # 2. The client, on the psycopg connection under the session's.
        psycopg_conn = session.connection().connection.driver_connection
        reminder_id = jobs.enqueue(
            "send_email",
            {"to": email, "subject": f"How is your {item}?"},
            idempotency_key=f"order-reminder:{order_id}",
            conn=psycopg_conn,
        )
        if refuse:
            raise OrderRefused(f"order {order_id} refused")
    return order_id, job_id, reminder_id


# -- AsyncSession ---------------------------------------------------------------------------------


async def place_order_async(
    engine: AsyncEngine, item: str, email: str, *, refuse: bool = False
) -> tuple[int, uuid.UUID, uuid.UUID]:
    """The same with an ``AsyncSession`` (``postgresql+psycopg://`` runs psycopg's
    AsyncConnection under it) and ``AsyncQueue``."""
    async with AsyncSession(engine) as session, session.begin():
        order_id = (
            await session.execute(
                text("INSERT INTO orders (item, email) VALUES (:item, :email) RETURNING id"),
                {"item": item, "email": email},
            )
        ).scalar_one()
        job_id = (
            await session.execute(
                select(
                    func.jobq_enqueue(
                        "send_email",
                        literal(confirmation(order_id, email), JSONB),
                        f"order-confirmation:{order_id}",
                    )
                )
            )
        ).scalar_one()
        raw = await (await session.connection()).get_raw_connection()
        reminder_id = await async_jobs.enqueue(
            "send_email",
            {"to": email, "subject": f"How is your {item}?"},
            idempotency_key=f"order-reminder:{order_id}",
            conn=raw.driver_connection,  # psycopg's AsyncConnection
        )
        if refuse:
            raise OrderRefused(f"order {order_id} refused")
    return order_id, job_id, reminder_id


def main(argv: list[str]) -> int:
    item, email, *rest = argv
    dsn = url(os.environ["JOBQ_DSN"])
    refuse = "--refuse" in rest
    try:
        if "--async" in rest:
            engine = create_async_engine(dsn)
            try:
                order_id, *ids = asyncio.run(place_order_async(engine, item, email, refuse=refuse))
            finally:
                asyncio.run(engine.dispose())
        else:
            sync_engine = create_engine(dsn)
            try:
                order_id, *ids = place_order(sync_engine, item, email, refuse=refuse)
            finally:
                sync_engine.dispose()
    except OrderRefused as exc:
        print(f"{exc}: rolled back, no job")
        return 1
    print(f"order {order_id} committed with jobs {', '.join(map(str, ids))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

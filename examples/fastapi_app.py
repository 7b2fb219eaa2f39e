"""Recipe: FastAPI, with a dependency that yields an ``AsyncQueue`` and one that yields the
request's transaction.

``POST /orders`` writes the order and enqueues its confirmation in one transaction (the
request's, on a connection of the app's ``AsyncConnectionPool``): an error after the enqueue
rolls both back. The Worker that runs the job has an ``async def`` handler.

    JOBQ_DSN=postgresql://app_api@db/app uvicorn examples.fastapi_app:app
    jobq worker examples.fastapi_app:HANDLERS

Its role enqueues (``jobq grant app_api --as producer``) and reads every job's counts for
``/stats`` (``jobq_stats``: ``--as monitor``).
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

import psycopg
from fastapi import Depends, FastAPI, HTTPException, Request
from psycopg_pool import AsyncConnectionPool
from pydantic import BaseModel

from pgq_client import AsyncQueue, Job, PermanentError

log = logging.getLogger(__name__)


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    async with AsyncConnectionPool(os.environ["JOBQ_DSN"], min_size=1, open=False) as pool:
        app.state.pool = pool
        yield


app = FastAPI(lifespan=lifespan)


async def jobs(request: Request) -> AsyncIterator[AsyncQueue]:
    """The jobq client of this request, on the app's pool."""
    async with AsyncQueue(request.app.state.pool) as queue:
        yield queue


async def transaction(request: Request) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
    """A connection with a transaction open for this request: committed when the endpoint
    returns, rolled back when it raises."""
    async with request.app.state.pool.connection() as conn, conn.transaction():
        yield conn


Jobs = Annotated[AsyncQueue, Depends(jobs)]
Transaction = Annotated[psycopg.AsyncConnection[Any], Depends(transaction)]


class Order(BaseModel):
    item: str
    email: str


class Placed(BaseModel):
    order_id: int
    job_id: uuid.UUID


@app.post("/orders", status_code=201)
async def place_order(order: Order, db: Transaction, queue: Jobs) -> Placed:
    cur = await db.execute(
        "INSERT INTO orders (item, email) VALUES (%s, %s) RETURNING id", (order.item, order.email)
    )
    row = await cur.fetchone()
    assert row is not None
    order_id = int(row[0])
    job_id = await queue.enqueue(
        "send_email",
        {"to": order.email, "subject": f"Order {order_id} confirmed"},
        idempotency_key=f"order-confirmation:{order_id}",
        conn=db,  # in the request's transaction
    )
    if order.item == "out of stock":  # refused after the enqueue: nothing of it stays
        raise HTTPException(status_code=409, detail=f"order {order_id}: out of stock")
    return Placed(order_id=order_id, job_id=job_id)


@app.get("/stats")
async def stats(queue: Jobs) -> list[dict[str, Any]]:
    """Any AsyncQueue method, outside a transaction of the request's (``stats``: a monitor's)."""
    return [row.__dict__ for row in await queue.stats()]


async def send_email(job: Job) -> None:
    """An ``async def`` handler: the Worker runs it on its event loop."""
    to = job.payload.get("to")
    if not isinstance(to, str) or "@" not in to:
        raise PermanentError(f"not an e-mail address: {to!r}")
    log.info("would send %r to %s (job %s)", job.payload.get("subject"), to, job.id)


HANDLERS = {"send_email": send_email}

"""Recipe: enqueue a job in a Django view's transaction, on ``django.db.connection``.

Django's PostgreSQL backend uses psycopg 3 when it is installed, so the connection under
``django.db.connection`` is a ``psycopg.Connection``: give it to ``Queue.enqueue(conn=...)``
inside ``transaction.atomic()`` and the job is written in that transaction. If the block
raises, Django rolls back the order and the job together; if it commits, a Worker runs the job.

    python -m examples.django_enqueue book a@example.com  # examples.django_settings
    jobq worker examples.handlers:HANDLERS --burst

The SQL alone works as well, on Django's cursor (no jobq client needed)::

    cursor.execute("SELECT jobq_enqueue(job_type => %s, payload => %s::jsonb)",
                   ["send_email", json.dumps(payload)])
"""

from __future__ import annotations

import os
import sys
import uuid

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "examples.django_settings")

import django
from django.db import connection, transaction

from pgq_client import Queue

# With conn=, a Queue uses the caller's connection only: this one never connects by itself.
jobs = Queue()


class OrderRefused(Exception):
    """Raised inside the transaction, after the enqueue: the whole order is rolled back."""


def place_order(item: str, email: str, *, refuse: bool = False) -> tuple[int, uuid.UUID]:
    """Insert an order and enqueue its confirmation e-mail, in one Django transaction."""
    with transaction.atomic():
        with connection.cursor() as cur:
            cur.execute(
                "INSERT INTO orders (item, email) VALUES (%s, %s) RETURNING id", [item, email]
            )
            order_id = int(cur.fetchone()[0])
        job_id = jobs.enqueue(
            "send_email",
            {"to": email, "subject": f"Order {order_id} confirmed"},
            idempotency_key=f"order-confirmation:{order_id}",
            conn=connection.connection,  # the psycopg.Connection under Django's
        )
        if refuse:
            raise OrderRefused(f"order {order_id} refused")
    return order_id, job_id


def main(argv: list[str]) -> int:
    django.setup()
    item, email, *rest = argv
    try:
        order_id, job_id = place_order(item, email, refuse="--refuse" in rest)
    except OrderRefused as exc:
        print(f"{exc}: rolled back, no job")
        return 1
    print(f"order {order_id} committed with job {job_id}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

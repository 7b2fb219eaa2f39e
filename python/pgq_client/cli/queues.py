"""Pausing queues: ``jobq queue pause|resume|list``."""

from __future__ import annotations

import click

from .base import command, group, settings
from .output import emit, table, yes


@group(
    "queue",
    examples="""
        jobq queue pause mail --reason 'smtp relay down'
        jobq queue list --json
    """,
)
def queue() -> None:
    """Pause and resume queues: a paused queue's jobs wait, pending, until it is resumed."""


@command(queue, "pause", json=True)
@click.argument("name", metavar="QUEUE")
@click.option("--reason", help="Why (shown by `jobq queue list`).")
def pause(name: str, reason: str | None) -> None:
    """Stop the claims of QUEUE: its jobs stay pending (no attempt spent), running ones finish,
    enqueues still succeed (admin)."""
    with settings().queue() as q:
        paused = q.pause(name, reason)
    emit({"queue": name, "paused": paused}, f"paused {name}" if paused else f"{name} was paused")


@command(queue, "resume", json=True)
@click.argument("name", metavar="QUEUE")
def resume(name: str) -> None:
    """Let QUEUE be claimed again; idle workers wake at once (admin)."""
    with settings().queue() as q:
        resumed = q.resume(name)
    emit({"queue": name, "resumed": resumed}, f"resumed {name}" if resumed else (
        f"{name} was not paused"))


@command(queue, "list", json=True)
def list_queues() -> None:
    """Each queue with live jobs or a pause: paused, since when and why, pending and processing
    jobs (admin)."""
    with settings().queue() as q:
        rows = q.queues()
    names = ["queue", "paused", "paused_at", "reason", "pending", "processing"]
    cells = [[yes(r[n]) if n == "paused" else r[n] for n in names] for r in rows]
    emit(rows, lambda: table(names, cells, "no queues"))


COMMANDS = [queue]

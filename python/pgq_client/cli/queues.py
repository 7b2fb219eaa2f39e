"""Pausing queues: ``jobq queue pause|resume|list``."""

from __future__ import annotations

import click

from ..queue import Queue
from .base import call, command, group
from .output import emit, listing, yes


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
    paused = call(Queue.pause, name, reason)
    emit({"queue": name, "paused": paused}, f"paused {name}" if paused else f"{name} was paused")


@command(queue, "resume", json=True)
@click.argument("name", metavar="QUEUE")
def resume(name: str) -> None:
    """Let QUEUE be claimed again; idle workers wake at once (admin)."""
    resumed = call(Queue.resume, name)
    emit(
        {"queue": name, "resumed": resumed},
        f"resumed {name}" if resumed else f"{name} was not paused",
    )


@command(queue, "list", json=True)
def list_queues() -> None:
    """Each queue with live jobs or a pause: paused, since when and why, pending and processing
    jobs (admin)."""
    names = ["queue", "paused", "paused_at", "reason", "pending", "processing"]
    listing(call(Queue.queues), names, "no queues", paused=lambda r: yes(r["paused"]))


COMMANDS = [queue]

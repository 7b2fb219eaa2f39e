"""Workflows: ``jobq jobs graph ID``, the jobs a job depends on and those that depend on it
(``jobq enqueue --after ID`` adds a job that waits, in :mod:`.produce`)."""

from __future__ import annotations

import uuid

import click

from ..queue import Queue
from . import options as opt
from .base import call, command, fail
from .jobs import jobs
from .output import columns, emit


@command(jobs, "graph", json=True)
@opt.ID
def jobs_graph(job_id: uuid.UUID) -> None:
    """The workflow around a job: it, the jobs it waits for and those that wait for it,
    transitively, nearest first, each with its status and dependencies."""
    nodes = call(Queue.job_graph, job_id)
    if not nodes:
        fail(f"no job {job_id}")
    emit(
        nodes,
        lambda: columns(
            nodes, ["id", "job_type", "status", "depends_on"],
            depends_on=lambda n: " ".join(str(d) for d in n.depends_on),
        ),
    )


COMMANDS: list[click.Command] = []  # `graph` is a command of the `jobs` group

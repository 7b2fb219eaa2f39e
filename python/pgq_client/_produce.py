"""The producing operations: one job (:func:`enqueue_call`), a list (:func:`enqueue_many`) and
any iterable in batches (:func:`enqueue_iter`), each batch one statement, on the array path
(``jobq_enqueue_arrays``) or as one JSON document (``jobq_enqueue_many``)."""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

from psycopg.rows import scalar_row, tuple_row

from ._opcore import Call, Op, check_aware, check_text, dump_json, job_ids_of
from ._opcore import payload_json as _payload
from ._sql import Statements
from .errors import InvalidArgument, JobqError
from .models import BulkSummary, RefusedBatch


def enqueue_call(
    s: Statements,
    job_type: str,
    payload: Any,
    idempotency_key: str | None,
    run_at: datetime | None,
    priority: int,
    max_attempts: int,
    queue: str,
    limit_group: str | None = None,
    limit_key: str | None = None,
    depends_on: uuid.UUID | str | Iterable[uuid.UUID | str] | None = None,
    on_dependency_failure: str = "cancel",
) -> Call:
    """The one statement of an enqueue, its one row the id, after the client's checks: not an
    operation, which needs a driver, on every single enqueue's path. Only the arguments that
    differ from jobq_enqueue's defaults are sent and checked (_sql.ENQUEUE_ARGUMENTS)."""
    check_text(job_type, "job_type")
    params: dict[str, Any] = {"job_type": job_type, "payload": _payload(payload)}
    optional: tuple[tuple[str, Any, Any, Callable[[Any, str], None] | None], ...] = (
        ("idempotency_key", idempotency_key, None, check_text),
        ("max_attempts", max_attempts, 5, None),
        ("run_at", run_at, None, check_aware),
        ("priority", priority, 0, None),
        ("queue", queue, "default", check_text),
        ("limit_group", limit_group, None, check_text),
        ("limit_key", limit_key, None, check_text),
        ("depends_on", depends_on, None, None),
        ("on_dependency_failure", on_dependency_failure, "cancel", check_text),
    )
    for name, value, default, check in optional:
        # A default of another type is sent too (priority=False, max_attempts=5.0): the
        # server's coercion or error is the answer, as for any other value.
        if value != default or type(value) is not type(default):
            if check is not None:
                check(value, name)
            params[name] = value
    if depends_on is not None:
        params["depends_on"] = job_ids_of(depends_on, "depends_on")
    return Call(s.enqueue_with(tuple(params)), params, scalar_row, retry_serialization=True)


def enqueue_many(s: Statements, jobs: Sequence[Mapping[str, Any]]) -> Op[list[uuid.UUID]]:
    if isinstance(jobs, Mapping | str | bytes):
        raise TypeError("enqueue_many() takes a list of job dicts")
    elements = list(jobs)
    bad = _not_a_mapping(elements)
    if bad is not None:
        raise TypeError(f"enqueue_many(): element {bad} is not a dict: {elements[bad]!r}")
    if not elements:
        return []
    rows = yield _batch_call(s, elements, 0, True)
    ids: list[uuid.UUID] = rows[0]  # one row: the ids as one array, in input order
    return ids


def enqueue_iter(
    s: Statements,
    jobs: Iterable[Mapping[str, Any]],
    batch_size: int,
    skip_refused: bool,
    progress: Callable[[int], None] | None,
    read_ahead: bool = False,
    alone: bool = False,
) -> Op[BulkSummary]:
    """Queue.enqueue_iter. With ``read_ahead`` (the sync client), the next batch is read and
    its statement built in a thread while the server inserts the current one (a batch takes the
    client about as long to build as the server to insert); batches still go in input order,
    each error raised (or recorded) at its batch's turn.

    With ``alone`` (``jobq enqueue --from``; implies skipping), a refused batch goes again
    without the job its error names (halved when it names none), so that a bad job costs only
    itself: each is a RefusedBatch of one job, and ``progress`` is called once per batch read,
    whatever became of it."""
    if isinstance(jobs, Mapping | str | bytes):
        raise TypeError("enqueue_iter() takes an iterable of job dicts")
    if type(batch_size) is not int or not 1 <= batch_size <= MAX_BATCH:
        raise ValueError(f"batch_size must be an int from 1 to {MAX_BATCH}, got {batch_size!r}")
    source = iter(jobs)

    def read(offset: int) -> tuple[list[Mapping[str, Any]], Call | Exception]:
        """The next batch, and its statement or why it is refused."""
        batch = list(itertools.islice(source, batch_size))
        bad = _not_a_mapping(batch)
        if bad is not None:
            return batch, TypeError(f"jobs[{offset + bad}] is not a dict: {batch[bad]!r}")
        return batch, _built(s, batch, offset)

    def again(batch: list[Mapping[str, Any]], offset: int, where: Sequence[int]) -> _Part:
        """The jobs ``where`` of ``batch`` as a part of their own, named from 0 by the checks:
        they are no longer consecutive in the input."""
        return where, _built(s, [batch[i - offset] for i in where], 0), 0

    enqueued = existing = batches = offset = 0
    refused: list[RefusedBatch] = []
    upcoming = _in_thread(read, 0) if read_ahead else None
    try:
        while True:
            batch, call = upcoming() if upcoming is not None else read(offset)
            if not batch:
                break
            if read_ahead:
                upcoming = _in_thread(read, offset + len(batch))
            before = batches
            # What of the batch is still to go: each part's jobs by their input index, their
            # statement (or why it is refused) and the index its checks name jobs from.
            parts: list[_Part] = [(range(offset, offset + len(batch)), call, offset)]
            while parts:
                where, call, base = parts.pop()
                try:
                    if isinstance(call, Exception):
                        raise call
                    rows = yield call
                except (InvalidArgument, TypeError, ValueError) as exc:
                    named = _job_named(exc, base)
                    if not (alone or skip_refused):
                        raise _in_batch(exc, offset, len(batch), named) from exc
                    if not alone:
                        refused.append(RefusedBatch(offset, len(batch), exc, named))
                        continue
                    # Again without the job the error names, or in halves when it names none.
                    at = None if named is None else named - base
                    if at is None or not 0 <= at < len(where):
                        if len(where) > 1:
                            half = len(where) // 2
                            parts.append(again(batch, offset, where[half:]))
                            parts.append(again(batch, offset, where[:half]))  # goes first
                            continue
                        at = 0
                    refused.append(RefusedBatch(where[at], 1, exc, where[at]))
                    rest = [*where[:at], *where[at + 1 :]]
                    parts += [again(batch, offset, rest)] if rest else []
                    continue
                count, added = rows[0]
                enqueued += count
                existing += count - added
                batches += 1
            if progress is not None and (alone or batches > before):
                progress(enqueued)
            offset += len(batch)
    except Exception:
        # Whatever ended the load, the read ahead ends before the caller gets control back:
        # it must not find ``jobs`` still being read in another thread.
        if upcoming is not None:
            with contextlib.suppress(Exception):  # its own error is not this one's
                upcoming()
        raise
    return BulkSummary(enqueued, batches, tuple(refused), existing)


# A part of a batch: its jobs by their input index, their statement or why it is refused, and
# the index the checks name the first job by.
_Part = tuple[Sequence[int], Call | Exception, int]


def _built(s: Statements, jobs: list[Mapping[str, Any]], offset: int) -> Call | Exception:
    """The counting statement of ``jobs``, or why the client refuses them."""
    try:
        return _batch_call(s, jobs, offset, False)
    except (InvalidArgument, TypeError, ValueError) as exc:
        return exc


_R = TypeVar("_R")


def _in_thread(fn: Callable[[int], _R], arg: int) -> Callable[[], _R]:
    """Start ``fn(arg)`` in a daemon thread (a read that blocks, ``jobq enqueue --from -`` on a
    terminal, must not keep Ctrl-C from ending the process); the function returned waits for
    it and returns its result or raises its exception."""
    outcome: list[tuple[bool, Any]] = []

    def run() -> None:
        try:
            outcome.append((True, fn(arg)))
        except BaseException as exc:  # handed to the caller, whatever it is
            outcome.append((False, exc))

    thread = threading.Thread(target=run, name="jobq-enqueue-read-ahead", daemon=True)
    thread.start()

    def result() -> _R:
        thread.join()
        ok, value = outcome[0]
        if not ok:
            raise value
        return value  # type: ignore[no-any-return]

    return result


# The largest batch: jobq_enqueue_many's and jobq_enqueue_arrays' bound.
MAX_BATCH = 100_000

_SERVER_ELEMENT = re.compile(r"element (\d+) \(counting from 1\)")
_CLIENT_ELEMENT = re.compile(r"jobs\[(\d+)\]")


def _job_named(exc: Exception, offset: int) -> int | None:
    """The input index of the job an error names: the server counts from 1 within the batch,
    the client's checks name jobs[i] of the whole input."""
    text = str(exc)
    if isinstance(exc, JobqError):
        found = _SERVER_ELEMENT.search(text)
        return None if found is None else offset + int(found.group(1)) - 1
    found = _CLIENT_ELEMENT.search(text)
    return None if found is None else int(found.group(1))


def _in_batch(exc: Exception, offset: int, count: int, job: int | None) -> Exception:
    """``exc`` of the same type, saying which batch was refused and that the earlier ones
    stay enqueued."""
    where = f"the batch of jobs {offset} to {offset + count - 1} (counting from 0) was refused"
    if job is not None:
        where += f" at job {job}"
    if offset:
        where += f"; the {offset} jobs before it are enqueued"
    message = f"{exc} ({where})"
    if isinstance(exc, JobqError):
        return type(exc)(message, sqlstate=exc.sqlstate)
    return type(exc)(message)


# The keys of a job on the array path (jobq_enqueue_arrays). A batch with anything else
# (another key, a value of another type) goes as one JSON document to jobq_enqueue_many, whose
# checks name the job and the key.
_ARRAY_KEYS = frozenset((
    "job_type", "payload", "idempotency_key", "max_attempts", "run_at", "priority", "queue",
    "limit_group", "limit_key",
))
_INT4_MIN, _INT4_MAX = -(2**31), 2**31 - 1
_NO_PAYLOAD: dict[str, Any] = {}  # a job without "payload" (never changed: compared by identity)
_DICT_ONLY, _STR_ONLY = frozenset((dict,)), frozenset((str,))


def _not_a_mapping(values: list[Any]) -> int | None:
    """The index of the first of ``values`` that is not a mapping, None when all are. Dicts are
    told by their type first, in C: ``isinstance(v, Mapping)``, an ABC check, is far dearer."""
    if set(map(type, values)) <= _DICT_ONLY:
        return None
    return next((i for i, v in enumerate(values) if not isinstance(v, Mapping)), None)


def _batch_call(
    s: Statements, elements: list[Mapping[str, Any]], offset: int, with_ids: bool
) -> Call:
    """The statement of one batch (one row: its ids, or without ``with_ids`` how many jobs and
    how many of them it added), after the client's checks, which name jobs by their index from
    ``offset``. Only a batch with idempotency keys asks which jobs it added."""
    params = _array_params(elements, offset)
    if params is not None:
        if with_ids:
            return Call(s.enqueue_arrays, params, scalar_row, True, binary=True)
        keyed = params["idempotency_keys"] is not None
        query = s.enqueue_arrays_added if keyed else s.enqueue_arrays_count
        return Call(query, params, tuple_row, retry_serialization=True)
    keyed = False
    json_elements: list[Mapping[str, Any]] = []
    for i, element in enumerate(elements, offset):
        run_at = element.get("run_at")
        if isinstance(run_at, datetime):
            check_aware(run_at, f"jobs[{i}].run_at")
            element = {**element, "run_at": run_at.isoformat()}
        elif run_at is not None:
            raise TypeError(f"jobs[{i}].run_at must be a datetime, got {run_at!r}")
        if element.get("depends_on") is not None:  # ids as their text, for the JSON document
            ids = job_ids_of(element["depends_on"], f"jobs[{i}].depends_on")
            element = {**element, "depends_on": [str(d) for d in ids]}
        keyed = keyed or element.get("idempotency_key") is not None
        json_elements.append(element)
    try:
        jobs_json = dump_json(json_elements, "jobs")  # one encoder pass for the whole batch
    except (TypeError, ValueError):
        for i, element in enumerate(json_elements, offset):  # name the element at fault
            dump_json(element, f"jobs[{i}]")
        raise
    # The ids alone, in input order (no dict per row: a batch is often thousands of jobs).
    if with_ids:
        return Call(s.enqueue_many, {"jobs": jobs_json}, scalar_row, True, binary=True)
    query = s.enqueue_many_added if keyed else s.enqueue_many_count
    return Call(query, {"jobs": jobs_json}, tuple_row, retry_serialization=True)


def _array_params(elements: list[Mapping[str, Any]], offset: int) -> dict[str, Any] | None:
    """The parameters of jobq_enqueue_arrays, one list per column (None for a column no job
    sets), or None when a job has a key or a value type that only the JSON path takes. Column
    by column: a Python loop over each job's keys would cost as much as the server's insert."""
    present: set[Any] = set().union(*elements)  # every key any job names
    if not present <= _ARRAY_KEYS:
        return None
    job_types = [job.get("job_type") for job in elements]
    if not set(map(type, job_types)) <= _STR_ONLY:
        return None
    texts: list[list[Any]] = []
    params: dict[str, Any] = {"jobs": len(elements), "queue": None}
    _one_or_each(params, "job_type", "job_types", job_types, texts)
    for key, name, text_default in (
        ("idempotency_key", "idempotency_keys", None),
        ("queue", "queues", "default"),
        ("limit_group", "limit_groups", None),
        ("limit_key", "limit_keys", None),
    ):
        if key not in present:
            params[name] = None
            continue
        values = [job.get(key, text_default) for job in elements]
        if all(v == text_default for v in values):
            params[name] = None
        elif all(v is None or type(v) is str for v in values):
            if key == "queue":
                _one_or_each(params, "queue", "queues", values, texts)
            else:
                params[name] = values
                texts.append(values)
        else:
            return None
    for key, name, int_default in (
        ("max_attempts", "max_attempts", 5),
        ("priority", "priorities", 0),
    ):
        if key not in present:
            params[name] = None
            continue
        numbers = [job.get(key, int_default) for job in elements]
        if not all(type(v) is int and _INT4_MIN <= v <= _INT4_MAX for v in numbers):
            return None
        params[name] = None if all(v == int_default for v in numbers) else numbers
    run_ats = [job.get("run_at") for job in elements] if "run_at" in present else []
    if all(v is None for v in run_ats):
        params["run_ats"] = None
    elif all(v is None or isinstance(v, datetime) for v in run_ats):
        for i, v in enumerate(run_ats, offset):
            check_aware(v, f"jobs[{i}].run_at")
        params["run_ats"] = run_ats
    else:
        return None
    payloads = [job.get("payload", _NO_PAYLOAD) for job in elements] if "payload" in present else []
    if all(v is _NO_PAYLOAD for v in payloads):
        params["payloads"] = None
    elif _not_a_mapping(payloads) is None:
        try:
            params["payloads"] = dump_json(payloads, "jobs")
        except (TypeError, ValueError):
            for i, v in enumerate(payloads, offset):  # name the payload at fault
                dump_json(v, f"jobs[{i}].payload")
            raise
    else:
        return None
    for text_column in texts:  # what PostgreSQL text cannot hold, one pass per column
        _check_texts(text_column, offset)
    return params


def _one_or_each(
    params: dict[str, Any], one: str, each: str, values: list[Any], texts: list[list[Any]]
) -> None:
    """A text column as its one value when every job has the same (psycopg dumps a list element
    by element, in Python), else as the list, NULLs included, for the server to name."""
    if values and values[0] is not None and values.count(values[0]) == len(values):
        params[one], params[each] = values[0], None
        texts.append(values[:1])
    else:
        params[one], params[each] = None, values
        texts.append(values)


def _check_texts(values: list[str | None], offset: int) -> None:
    joined = "".join(v for v in values if v is not None)
    if "\x00" not in joined:
        try:
            joined.encode("utf-8")
        except UnicodeEncodeError:
            pass
        else:
            return
    for i, v in enumerate(values, offset):  # name the job at fault
        check_text(v, f"jobs[{i}]")

"""Inputs at and past their documented bounds, and clocks: through SQL and through the client.

Bounds are those of docs/sql-api.md "Bounds and errors". A refused input raises (SQL: its
SQLSTATE; client: ``ValueError`` or a ``JobqError`` subclass) and enqueues nothing. Time is the
database's alone: the session TimeZone, a naive datetime, a client whose clock is wrong change
nothing.
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import make_conninfo
from psycopg.types.json import Jsonb

from pgq_client import InvalidArgument, JobqError, Queue
from tests.faults.harness import Fx

# (argument, value at the bound, value past it) for jobq_enqueue's named arguments.
BOUNDS: list[tuple[str, Any, Any]] = [
    ("job_type", "j" * 200, "j" * 201),
    ("queue", "q" * 200, "q" * 201),
    ("idempotency_key", "k" * 1000, "k" * 1001),
    ("priority", 1_000_000, 1_000_001),
    ("priority", -1_000_000, -1_000_001),
    ("max_attempts", 1000, 1001),
    ("max_attempts", 1, 0),
]
# Blank: empty or whitespace only — tabs and newlines are whitespace too.
BLANKS: list[tuple[str, Any]] = [
    ("job_type", ""), ("job_type", "   "), ("job_type", "\t"), ("queue", ""),
    ("queue", " \t"), ("queue", "\n"), ("idempotency_key", ""), ("idempotency_key", "  "),
    ("idempotency_key", " \r\n"), ("max_attempts", -5),
]
SQL_TYPES = {"job_type": "text", "queue": "text", "idempotency_key": "text",
             "priority": "int", "max_attempts": "int"}


def _args(**override: Any) -> dict[str, Any]:
    args: dict[str, Any] = {"job_type": "t", "queue": "default", "idempotency_key": None,
                            "priority": 0, "max_attempts": 5}
    args.update(override)
    return args


def _sql_enqueue(fx: Fx, **override: Any) -> Any:
    args = _args(**override)
    named = ", ".join(f"{k} => %({k})s::{SQL_TYPES[k]}" for k in args)
    return fx.one(f"SELECT jobq_enqueue({named})", args)


def _count(fx: Fx) -> int:
    return int(fx.one("SELECT count(*) FROM jobq_all_jobs"))


@pytest.mark.parametrize(("argument", "ok", "bad"), BOUNDS)
def test_bounds_through_sql_accept_the_bound_and_refuse_past_it(
    fx: Fx, argument: str, ok: Any, bad: Any
) -> None:
    job_id = _sql_enqueue(fx, **{argument: ok})
    assert fx.one(f"SELECT {argument} FROM jobq_all_jobs WHERE id = %(i)s", {"i": job_id}) == ok
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=argument):
        _sql_enqueue(fx, **{argument: bad})
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=argument):
        fx.enqueue_many([_args(**{argument: bad})])
    assert _count(fx) == 1
    fx.check_invariants({job_id: "pending"})


@pytest.mark.parametrize(("argument", "ok", "bad"), BOUNDS)
def test_bounds_through_the_client_accept_the_bound_and_refuse_past_it(
    fx: Fx, argument: str, ok: Any, bad: Any
) -> None:
    with Queue(fx.dsn) as q:
        args = _args(**{argument: ok})
        job_type = args.pop("job_type")
        job_id = q.enqueue(job_type, {}, **args)
        args = _args(**{argument: bad})
        job_type = args.pop("job_type")
        with pytest.raises(InvalidArgument, match=argument) as caught:
            q.enqueue(job_type, {}, **args)
        assert caught.value.sqlstate == "22023"
        with pytest.raises(InvalidArgument, match=argument):
            q.enqueue_many([{"job_type": job_type, **args}])
    assert _count(fx) == 1
    fx.check_invariants({job_id: "pending"})


@pytest.mark.parametrize(("argument", "bad"), BLANKS)
def test_blank_and_non_positive_values_are_refused_naming_the_argument(
    fx: Fx, argument: str, bad: Any
) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match=argument):
        _sql_enqueue(fx, **{argument: bad})
    with Queue(fx.dsn) as q:
        args = _args(**{argument: bad})
        job_type = args.pop("job_type")
        with pytest.raises(InvalidArgument, match=argument):
            q.enqueue(job_type, {}, **args)
    assert _count(fx) == 0


# NUL and lone surrogates, in every text the client sends.
BAD_TEXT = ["nul\x00inside", "lone \ud800 surrogate", "low \udfff alone"]
PLACES = ["job_type", "queue", "idempotency_key", "payload value", "payload key"]


def _client_call(q: Queue, place: str, text: str, many: bool) -> None:
    job_type, queue, key = "t", "default", None
    payload: dict[str, Any] = {"ok": 1}
    if place == "job_type":
        job_type = text
    elif place == "queue":
        queue = text
    elif place == "idempotency_key":
        key = text
    elif place == "payload value":
        payload = {"v": text}
    else:
        payload = {text: 1}
    if many:
        q.enqueue_many([{"job_type": job_type, "queue": queue, "idempotency_key": key,
                         "payload": payload}])
    else:
        q.enqueue(job_type, payload, idempotency_key=key, queue=queue)


def test_client_refuses_nul_and_lone_surrogates_with_a_clear_error(fx: Fx) -> None:
    """NUL, a lone high and a lone low surrogate, in each text the client sends (job_type,
    queue, idempotency_key, a payload value, a payload key), through enqueue and enqueue_many:
    refused with ValueError (docs/sql-api.md: before sending) or a typed JobqError subclass —
    not a bare JobqError, which is what an unmapped driver error becomes — with a message that
    says what is wrong; nothing enqueued, and the Queue still usable."""
    problems: list[str] = []
    with Queue(fx.dsn) as q:
        for text, name in zip(BAD_TEXT, ("NUL", "high surrogate", "low surrogate"), strict=True):
            for place in PLACES:
                for many in (False, True):
                    call = f"{'enqueue_many' if many else 'enqueue'}({name} in {place})"
                    try:
                        _client_call(q, place, text, many)
                    except (ValueError, JobqError) as exc:
                        message = str(exc).lower()
                        if type(exc) is JobqError:
                            problems.append(f"{call}: untyped JobqError (sqlstate"
                                            f" {exc.sqlstate}): {exc}")
                        elif not any(w in message for w in ("nul", "0x00", "surrogate", "utf")):
                            problems.append(f"{call}: unclear {type(exc).__name__}: {exc}")
                    else:
                        problems.append(f"{call}: accepted")
        q.enqueue("t", {"after": True})  # the Queue is still usable
    assert _count(fx) == 1, "a refused job was enqueued"
    assert not problems, f"{len(problems)} of 30 calls:\n  " + "\n  ".join(problems)


def test_sql_refuses_nul_in_payload_and_text(fx: Fx) -> None:
    with pytest.raises(psycopg.errors.UntranslatableCharacter):  # 22P05
        fx.sql("SELECT jobq_enqueue('t', '{\"v\": \"a\\u0000b\"}'::jsonb)")
    with pytest.raises(psycopg.errors.CharacterNotInRepertoire):  # 22021
        fx.sql("SELECT jobq_enqueue(convert_from('\\x610062'::bytea, 'UTF8'))")
    with pytest.raises(psycopg.errors.InvalidTextRepresentation):  # lone surrogate in JSON
        fx.sql("SELECT jobq_enqueue('t', '{\"v\": \"\\ud800\"}'::jsonb)")
    assert _count(fx) == 0


@pytest.mark.parametrize("value", ["infinity", "-infinity"])
def test_infinite_run_at_is_refused(fx: Fx, value: str) -> None:
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="run_at"):
        fx.sql("SELECT jobq_enqueue('t', run_at => %(v)s::timestamptz)", {"v": value})
    with pytest.raises(psycopg.errors.InvalidParameterValue, match="run_at"):
        fx.enqueue_many([{"job_type": "t"}, {"job_type": "t", "run_at": value}])
    assert _count(fx) == 0


def test_arithmetic_backoff_cannot_overflow_at_any_attempt(fx: Fx) -> None:
    """max_attempts 1000 and a backoff of 100 years: every attempt's retry lands at most 365
    days ahead (the cap), without an error, and the 1000th failure dead-letters the job."""
    job_id = fx.one("SELECT jobq_enqueue('t', max_attempts => 1000)")
    for attempt in (1, 2, 3, 10, 365, 500, 998, 999, 1000):
        fx.sql(
            "UPDATE jobq_jobs SET attempts = %(a)s - 1, available_at = now() - interval '1s',"
            " status = 'pending', finished_at = NULL WHERE id = %(i)s",
            {"a": attempt, "i": job_id},
        )
        assert fx.sql("SELECT attempts FROM jobq_dequeue('w')") == [(attempt,)]
        status = fx.one(
            "SELECT jobq_fail(%(i)s, 'w', 'boom', backoff => '100 years', attempt => %(a)s)",
            {"i": job_id, "a": attempt},
        )
        delay = fx.one(
            "SELECT available_at - now() FROM jobq_all_jobs WHERE id = %(i)s", {"i": job_id}
        )
        if attempt < 1000:
            assert status == "pending"
            assert timedelta(0) < delay <= timedelta(days=365), f"attempt {attempt}: {delay}"
        else:
            assert status == "dead_letter"
    # Through the client too (Queue.fail with a timedelta of 100 years).
    with Queue(fx.dsn) as q:
        other = q.enqueue("t", max_attempts=1000)
        claimed = q.dequeue("w")
        assert [j.id for j in claimed] == [other]
        assert q.fail(other, "w", "boom", backoff=timedelta(days=36525), attempt=1) == "pending"
    fx.check_invariants({job_id: "dead_letter", other: "pending"})


ZONES = ["Pacific/Kiritimati", "America/Adak", "UTC", "Asia/Kathmandu"]


def test_session_time_zone_changes_no_stored_time_and_no_availability(fx: Fx) -> None:
    """The same absolute run_at, sent from sessions in four time zones (as a timestamptz and as
    an ISO string with an offset), is stored as the same instant; jobs without run_at are
    available at once whatever the zone of the producer and of the claimer."""
    run_at = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(hours=3)
    later: list[Any] = []
    now_ids: list[Any] = []
    for zone in ZONES:
        tz_dsn = make_conninfo(fx.dsn, options=f"-c TimeZone={zone}")
        with psycopg.connect(tz_dsn, autocommit=True) as c:
            assert c.execute("SHOW TimeZone").fetchone() == (zone,)
            later.append(c.execute("SELECT jobq_enqueue('t', run_at => %(r)s)", {"r": run_at})
                         .fetchone()[0])  # type: ignore[index]
            later.append(c.execute(
                "SELECT id FROM jobq_enqueue_many(%(j)s)",
                {"j": Jsonb([{"job_type": "t", "run_at": run_at.isoformat()}])},
            ).fetchone()[0])  # type: ignore[index]
            now_ids.append(c.execute("SELECT jobq_enqueue('t')").fetchone()[0])  # type: ignore[index]
        with Queue(tz_dsn) as q:
            later.append(q.enqueue("t", run_at=run_at.astimezone(timezone(timedelta(hours=-9)))))
            now_ids.append(q.enqueue("t"))
    stored = {r[0] for r in fx.sql(
        "SELECT available_at FROM jobq_all_jobs WHERE id = ANY(%(i)s)", {"i": later})}
    assert stored == {run_at}
    # Claimed from a session far east: exactly the jobs available now, none of the later ones.
    east = make_conninfo(fx.dsn, options="-c TimeZone=Pacific/Kiritimati")
    with psycopg.connect(east, autocommit=True) as c:
        got = {r[0] for r in c.execute("SELECT id FROM jobq_dequeue('w', batch_size => 100)")}
    assert got == set(now_ids)
    fx.check_invariants({**dict.fromkeys(later, "pending"), **dict.fromkeys(now_ids, "processing")},
                        allow_processing=True)


def test_naive_datetime_is_refused_by_the_client_and_nothing_is_enqueued(fx: Fx) -> None:
    naive = datetime.now() + timedelta(hours=1)
    with Queue(fx.dsn) as q:
        with pytest.raises(ValueError, match="run_at"):
            q.enqueue("t", run_at=naive)
        with pytest.raises(ValueError, match="run_at"):
            q.enqueue_many([{"job_type": "t"}, {"job_type": "t", "run_at": naive}])
    assert _count(fx) == 0


@pytest.mark.parametrize("skew", [86_400, -86_400], ids=["a-day-fast", "a-day-slow"])
def test_worker_with_a_wrong_wall_clock_changes_nothing(fx: Fx, skew: int) -> None:
    """A worker process whose wall clock is a day off (time.time, datetime.now) runs the jobs
    available now, leaves a job scheduled 2 s ahead alone until the server's clock gets there,
    and never takes over another worker's fresh claim (lock timeouts are the server's)."""
    fx.gate("held")
    held = fx.enqueue_many([{"job_type": "fx", "queue": "a", "payload": {"gate": "held"}}])[0]
    fx.spawn("A", "--lock-timeout", "120", "--queue", "a")
    fx.wait_started(held)
    # S serves every queue, the held job's too: it would take the claim over if it judged the
    # lock's age by its own clock.
    fx.spawn("S", "--lock-timeout", "30", env={"FX_CLOCK_SKEW": str(skew)})
    fx.wait_listening(2)  # S is up: the 2 s below are S's, not its interpreter's start
    ready = fx.enqueue_many([{"job_type": "fx"} for _ in range(20)])
    scheduled = fx.one("SELECT jobq_enqueue('fx', run_at => now() + interval '2 seconds')")
    fx.wait_for("S to run the jobs available now", lambda: fx.one(
        "SELECT count(*) FROM jobq_all_jobs WHERE id = ANY(%(i)s) AND status = 'succeeded'",
        {"i": ready}) == 20)
    # Still pending while the server's clock has not reached its run_at (on a loaded machine
    # the 20 jobs can take longer than 2 s; then the ledger check below is the one that counts).
    ((status, early),) = fx.sql(
        "SELECT status, now() < available_at FROM jobq_all_jobs WHERE id = %(i)s", {"i": scheduled}
    )
    assert status == "pending" or not early, f"the scheduled job is {status} before its run_at"
    fx.wait_for("the scheduled job, once due", lambda: fx.job(scheduled)["status"] == "succeeded",
                timeout=30)
    assert fx.one(
        "SELECT started.at >= j.available_at FROM fx_ledger AS started"
        " JOIN jobq_all_jobs AS j ON j.id = started.job_id WHERE started.job_id = %(i)s",
        {"i": scheduled},
    ), "the scheduled job ran before its run_at"
    time.sleep(1.0)  # S polls every 0.2 s: five chances to steal the held claim
    job = fx.job(held)
    assert (job["status"], job["locked_by"], job["attempts"]) == ("processing", "A", 1)
    fx.open_gate("held")
    fx.wait_all_finished(22)
    assert fx.stop_all() == {"A": 0, "S": 0}
    fx.check_invariants([held, scheduled, *ready])


"""The hostile database: a role with CREATE on jobq's schema and on ``public`` plants, for every
function name that jobq's code calls, look-alikes that record that they ran; then everything
jobq runs runs, as a superuser and as each level. Nothing planted may run, and no call may
fail as ambiguous ("is not unique").

The names are derived, not listed by hand: every identifier called as a function in the bodies
of jobq's functions (``pg_proc.prosrc`` of the installed schema) and in the client's SQL texts
(every string constant of the ``pgq_client`` modules), kept when PostgreSQL has a function of
that name (in ``pg_catalog`` or jobq's schema). For each signature of such a function, the
planter creates, in ``public`` and in jobq's schema, one look-alike per argument with that
argument's type swapped to ``text``, ``name`` and ``integer``, one with every argument ``text``
(what an ``unknown`` literal resolves to), an exact copy (where the name is not jobq's own in
its schema), and a ``VARIADIC text[]`` one; none has defaults, each keeps the parameter names
(so that named calls could match it), and each bumps a sequence of the planter's, which a
rollback does not undo.

``test_the_client_chooses_nothing_planted`` plants look-alikes of the built-ins and of jobq's
public functions; ``test_jobq_functions_choose_nothing_planted`` adds the private ``jobq__``
helpers in jobq's schema, which only the calls inside jobq's SQL bodies reach: it fails until
every call between jobq's functions is typed so that no overload can be chosen (today
``jobq__metrics_count`` is called with bare NULLs and a planted overload of it runs).
"""

from __future__ import annotations

import ast
import re
import threading
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from psycopg import sql
from psycopg.conninfo import make_conninfo
from starlette.testclient import TestClient

import pgq_client
from jobq_cli import cli
from jobq_web import create_app
from pgq_client import Queue, Worker
from pgq_client.migrate import migrate
from tests.helpers import MakeRole

SCHEMA = "hostile_jobq"
_CALL = re.compile(r"\b([a-z_][a-z0-9_]*)\s*\(", re.I)
_SWAPS = ("text", "name", "integer")


def _client_texts() -> list[str]:
    """Every string constant of the client's modules and every SQL file of the package (the
    statements it sends live in python/pgq_client/sql/ and installer/sql/)."""
    package = Path(pgq_client.__file__).parent
    texts = [path.read_text(encoding="utf-8") for path in package.rglob("*.sql")]
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                texts.append(node.value)
    return texts


def _called_names(conn: psycopg.Connection[Any]) -> set[str]:
    bodies = [
        str(r[0])
        for r in conn.execute(
            "SELECT p.prosrc FROM pg_proc p WHERE p.pronamespace = %s::regnamespace",
            (SCHEMA,),
        )
    ]
    found = {m.group(1).lower() for text in [*bodies, *_client_texts()]
             for m in _CALL.finditer(text)}
    known = conn.execute(
        "SELECT DISTINCT p.proname::text FROM pg_proc p "
        "WHERE p.pronamespace IN ('pg_catalog'::regnamespace, %s::regnamespace)",
        (SCHEMA,),
    ).fetchall()
    return found & {str(r[0]) for r in known}


def _plants(conn: psycopg.Connection[Any], helpers: bool) -> list[tuple[str, str, str]]:
    """(schema, name, argument list) of every look-alike to plant."""
    names = sorted(_called_names(conn))
    assert {"jobq_enqueue", "jobq_dequeue", "format", "now"} <= set(names), names
    rows = conn.execute(
        """
        SELECT n.nspname::text, p.proname::text, p.proargnames,
               ARRAY(SELECT pg_catalog.format_type(t, NULL)
                     FROM pg_catalog.unnest(p.proargtypes::oid[]) WITH ORDINALITY AS a (t, i)
                     ORDER BY i)
        FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE p.proname = ANY (%s::text[]) AND p.prokind = 'f'
          AND n.nspname IN ('pg_catalog', %s)
        ORDER BY 1, 2, p.oid
        """,
        (names, SCHEMA),
    ).fetchall()
    plants: set[tuple[str, str, str]] = set()
    per_name: dict[str, int] = {}
    for nsp, name, argnames, types in rows:
        if name.startswith("jobq__") and not helpers:
            continue
        if per_name.get(name, 0) >= 4:  # enough overloads of one built-in (format, concat...)
            continue
        per_name[name] = per_name.get(name, 0) + 1
        if types and "internal" in types:
            continue  # not callable from SQL
        # a "any" argument (format, concat) is what a text look-alike matches exactly
        types = ["text" if t == '"any"' else t for t in types or []]
        argn = list(argnames or [])[: len(types)]
        argn += [""] * (len(types) - len(argn))

        def args(ts: list[str], argn: list[str] = argn) -> str:
            return ", ".join(
                f"{sql.Identifier(n).as_string(None)} {t}" if n else t
                for n, t in zip(argn, ts, strict=True)
            )

        variants = [["text"] * len(types)] if types else [[]]
        for i in range(len(types)):
            for swap in _SWAPS:
                if types[i] != swap:
                    variants.append([*types[:i], swap, *types[i + 1:]])
        targets = ["public", SCHEMA]
        for target in targets:
            for v in variants:
                if target == nsp and v == types:
                    continue  # the function itself
                plants.add((target, name, args(v)))
            if target != nsp:
                plants.add((target, name, args(types)))  # an exact copy elsewhere
            plants.add((target, name, "VARIADIC x text[]"))
    return sorted(plants)


def _plant(dsn: str, planter: str, helpers: bool) -> int:
    """Plant every look-alike as ``planter``; returns how many."""
    with psycopg.connect(dsn, autocommit=True) as c:
        for nsp in ("public", SCHEMA):
            c.execute(sql.SQL("GRANT CREATE, USAGE ON SCHEMA {} TO {}").format(
                sql.Identifier(nsp), sql.Identifier(planter)))
        c.execute(sql.SQL("CREATE SCHEMA planted AUTHORIZATION {}").format(
            sql.Identifier(planter)))
        plants = _plants(c, helpers)
        c.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(planter)))
        c.execute("CREATE SEQUENCE planted.ran")
        c.execute("CREATE TABLE planted.names (n int PRIMARY KEY, what text)")
        c.execute("GRANT USAGE ON SCHEMA planted TO PUBLIC")
        c.execute("GRANT USAGE ON SEQUENCE planted.ran TO PUBLIC")
        with c.transaction():
            for n, (nsp, name, args) in enumerate(plants):
                what = f"{nsp}.{name}({args})"
                c.execute("INSERT INTO planted.names VALUES (%s, %s)", (n, what))
                # the sequence's value says which one ran: setval survives a rollback too
                body = (
                    "BEGIN PERFORM pg_catalog.setval('planted.ran', "
                    f"{n + 1}::bigint); RETURN NULL; END"
                )
                try:
                    with c.transaction():
                        c.execute(sql.SQL(
                            "CREATE FUNCTION {}.{}(" + args + ") RETURNS text "
                            "LANGUAGE plpgsql AS {}"
                        ).format(sql.Identifier(nsp), sql.Identifier(name), sql.Literal(body)))
                except psycopg.errors.DuplicateFunction:
                    pass  # the same arguments as another look-alike or the original
                except psycopg.errors.InvalidFunctionDefinition:
                    pass  # a parameter name twice, say
        c.execute("RESET ROLE")
        return len(plants)


def _safe(dsn: str) -> psycopg.Connection[Any]:
    """A connection of the test's own after the planting: it finds nothing planted either."""
    return psycopg.connect(dsn, autocommit=True, options="-c search_path=pg_catalog,pg_temp")


def _ran(dsn: str) -> list[str]:
    """The look-alike that ran last, if any ran (setval keeps the last one's number)."""
    with _safe(dsn) as c:
        row = c.execute("SELECT last_value, is_called FROM planted.ran").fetchone()
        assert row is not None
        if not row[1]:
            return []
        what = c.execute("SELECT what FROM planted.names WHERE n = %s", (row[0] - 1,)).fetchone()
        return [str(what[0]) if what else f"#{row[0]}"]


class _Steps:
    """Runs each step, keeping what failed (a denied call is expected of some levels)."""

    def __init__(self) -> None:
        self.failures: list[str] = []

    def __call__(self, what: str, step: Callable[[], object]) -> None:
        try:
            step()
        except Exception as exc:
            self.failures.append(f"{what}: {type(exc).__name__}: {exc}")

    def ambiguous(self) -> list[str]:
        return [f for f in self.failures if "not unique" in f or "ambiguous" in f]

    def other_than_denied(self) -> list[str]:
        return [f for f in self.failures
                if "42501" not in f and "permission denied" not in f.lower()
                and "PermissionDenied" not in f and "needs the" not in f]


def _cli(steps: _Steps, who: str, dsn: str, *args: str, ok: tuple[int, ...] = (0,)) -> None:
    def go() -> None:
        result = CliRunner().invoke(cli, ["--dsn", dsn, *args, "--schema", SCHEMA])
        if result.exit_code not in ok:
            raise RuntimeError(f"exit {result.exit_code}: {result.output.strip()[-600:]}")

    steps(f"{who}: jobq {' '.join(args)}", go)


def _lifecycle(steps: _Steps, who: str, dsn: str) -> None:
    """Everything a client does, through Queue, a Worker, the dashboard and the CLI."""
    with Queue(dsn, schema=SCHEMA) as q:
        ids: list[Any] = []
        steps(f"{who}: enqueue", lambda: ids.append(q.enqueue("t", {"n": 1}, priority=1)))
        steps(f"{who}: enqueue_many",
              lambda: ids.extend(q.enqueue_many([{"job_type": "t"}, {"job_type": "u"}])))
        steps(f"{who}: status", lambda: q.status(ids))
        steps(f"{who}: wait", lambda: q.wait(ids[:1], timeout=0.2))
        steps(f"{who}: cancel", lambda: q.cancel(ids[-1:]))
        steps(f"{who}: stats", q.stats)
        steps(f"{who}: health", q.health)
        steps(f"{who}: metrics", q.metrics)
        steps(f"{who}: dead_letters", lambda: q.dead_letters())
        steps(f"{who}: schedule", lambda: q.schedule("s", "@hourly", "t"))
        steps(f"{who}: tick", q.tick)
        steps(f"{who}: set_limit", lambda: q.set_limit("g", max_running=2))
        steps(f"{who}: limits", q.limits)
        steps(f"{who}: prune", lambda: q.prune(timedelta(days=1)))
        steps(f"{who}: requeue_dead_letters", lambda: q.requeue_dead_letters())
    # on the application's own connection, whose search_path (jobq's schema, then public) finds
    # the look-alikes: the statements' qualification is what protects them there
    with psycopg.connect(dsn, autocommit=True,
                         options=f"-c search_path={SCHEMA},public") as app_conn:
        app_q = Queue(app_conn)  # no schema: found on this connection's search_path
        steps(f"{who}: app connection: enqueue", lambda: app_q.enqueue("t", {"n": 3}))
        steps(f"{who}: app connection: stats", app_q.stats)
        steps(f"{who}: app connection: wait",
              lambda: app_q.wait(app_q.enqueue("t"), timeout=0.2))
        if app_q.schema not in (None, SCHEMA):
            steps.failures.append(f"{who}: app connection: found schema {app_q.schema}")
    handled: list[Any] = []
    worker = Worker(dsn, handlers={"t": lambda job: handled.append(job.id) or {"ok": 1}},
                    schema=SCHEMA, concurrency=2)
    box: list[BaseException] = []

    def run() -> None:
        try:
            worker.run(burst=True)
        except BaseException as exc:
            box.append(exc)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    if t.is_alive():
        worker.stop()
        t.join(10)
        steps.failures.append(f"{who}: worker: did not finish its burst")
    for exc in box:
        steps.failures.append(f"{who}: worker: {type(exc).__name__}: {exc}")
    if who in ("superuser", "worker") and not handled and not box:
        steps.failures.append(f"{who}: worker: ran no job")

    def web() -> None:
        with TestClient(create_app(dsn, schema=SCHEMA), base_url="http://127.0.0.1") as c:
            for path in ("/", "/jobs?status=pending", "/dead-letters", "/schedules"):
                page = c.get(path)
                if page.status_code >= 500 or "not unique" in page.text:
                    raise RuntimeError(f"{path}: {page.status_code} {page.text[-300:]}")

    steps(f"{who}: web", web)
    _cli(steps, who, dsn, "stats")
    _cli(steps, who, dsn, "metrics")
    _cli(steps, who, dsn, "enqueue", "t", '{"n": 2}')
    _cli(steps, who, dsn, "dead-letter", "list")
    _cli(steps, who, dsn, "schedule", "list")
    _cli(steps, who, dsn, "limit", "list")
    _cli(steps, who, dsn, "jobs", "list")
    _cli(steps, who, dsn, "configure")
    _cli(steps, who, dsn, "prune", "--older-than", "1d")
    _cli(steps, who, dsn, "tick")
    _cli(steps, who, dsn, "health", ok=(0, 1))


def _hostile_run(
    make_role: MakeRole, dsn: str, helpers: bool
) -> tuple[_Steps, list[str], int]:
    migrate(dsn, schema=SCHEMA)
    planter = make_role(prefix="jobq_planter")
    planted = _plant(dsn, planter, helpers)
    steps = _Steps()
    # the administration, as the superuser: migrate (refused without --force: the schema
    # is no longer jobq's owner's alone), doctor (fails for the same reason), grant, revoke
    _cli(steps, "superuser", dsn, "migrate", ok=(1,))
    _cli(steps, "superuser", dsn, "migrate", "--force")
    _cli(steps, "superuser", dsn, "doctor", ok=(1,))
    _lifecycle(steps, "superuser", dsn)
    for level in ("producer", "worker", "admin", "monitor"):
        role = make_role(prefix=f"jobq_{level}")
        _cli(steps, "superuser", dsn, "grant", role, "--as", level)
        _lifecycle(steps, level, make_conninfo(dsn, user=role))
        _cli(steps, "superuser", dsn, "revoke", role)
        with _safe(dsn) as c:
            left = c.execute(
                "SELECT count(*) FROM pg_proc p WHERE p.pronamespace = "
                "%s::regnamespace AND p.proowner = (SELECT relowner FROM pg_class "
                "WHERE oid = %s::regclass) AND has_function_privilege(%s, p.oid, "
                "'EXECUTE')",
                (SCHEMA, f"{SCHEMA}.jobq_migrations", role),
            ).fetchone()
            if left != (0,):
                steps.failures.append(f"revoke {level}: {left} functions left")
    ran = _ran(dsn)
    with _safe(dsn) as c:
        c.execute("DROP SCHEMA planted CASCADE")
    return steps, ran, planted


def test_the_client_chooses_nothing_planted(empty_dsn: str, make_role: MakeRole) -> None:
    steps, ran, planted = _hostile_run(make_role, empty_dsn, helpers=False)
    assert planted > 500, planted
    assert ran == [], f"a planted function ran: {ran}"
    assert steps.ambiguous() == [], "\n".join(steps.ambiguous())
    assert steps.other_than_denied() == [], "\n".join(steps.other_than_denied())


@pytest.mark.timeout(900)
def test_jobq_functions_choose_nothing_planted(empty_dsn: str, make_role: MakeRole) -> None:
    steps, ran, _ = _hostile_run(make_role, empty_dsn, helpers=True)
    assert ran == [], f"a planted function ran: {ran}"
    assert steps.ambiguous() == [], "\n".join(steps.ambiguous())
    assert steps.other_than_denied() == [], "\n".join(steps.other_than_denied())

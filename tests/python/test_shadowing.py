"""No function or operator that another role creates is ever run by a jobq function.

The jobq functions run as their owner with ``search_path = <schema>, pg_temp``. PostgreSQL
searches pg_catalog first, but among all the functions of a name on the path it takes the one
whose argument types fit best: ``public.pg_column_size(jsonb)`` beats
``pg_catalog.pg_column_size("any")`` for a jsonb argument, and the same holds for every
built-in whose parameters are ``"any"``, polymorphic, or need a coercion at the call site, and
for operators. A role that may CREATE in the jobq schema (everyone on PostgreSQL 13/14 in
``public``; a database owner on 15) could so run its code as the owner of jobq.

This test finds every call of a built-in function, aggregate, window function and operator
that the jobq functions make, with the exact argument types at the call site, from
PostgreSQL's own parse trees: ``debug_print_rewritten`` while plpgsql_check prepares every
statement of every PL/pgSQL function (all branches, error paths included), and
``debug_print_plan`` while the core operations run (the LANGUAGE sql functions and the
helpers inlined into their callers). Then an unprivileged role plants a look-alike of each of
them, with exactly those argument types, in the jobq schema and in ``public``; each raises an
error if it is ever called. The core operations then run (enqueue, enqueue_many, dequeue with
a takeover, complete, complete_many, fail, heartbeat, release, requeue, stats, prune,
configure, list, health, and bad input to each) and must all behave as without the
look-alikes.

tests/pgtap/shadowing.sql holds the static check (no unqualified call of a pg_catalog function
in any function's source) and the original finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from psycopg import sql
from tests.helpers import MakeRole

from pgq_client.installer.runner import migrate

Conn = psycopg.Connection[tuple[Any, ...]]

# ---------------------------------------------------------------------------------------------
# PostgreSQL's node-tree text (outfuncs.c), as debug_print_plan / debug_print_rewritten send it
# ---------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[{}()\[\]]|(?:\\.|[^\s{}()\[\]\\])+")


@dataclass
class Node:
    kind: str
    fields: dict[str, list[Any]]

    def get(self, name: str) -> Any:
        items = self.fields.get(name, [])
        return items[0] if len(items) == 1 else items


def _parse(tokens: list[str], i: int) -> tuple[Any, int]:
    """One item at tokens[i]: a node {...}, a list (...), a byte group [...] or a scalar."""
    tok = tokens[i]
    if tok == "{":
        kind = tokens[i + 1]
        i += 2
        fields: dict[str, list[Any]] = {}
        current: list[Any] | None = None
        while tokens[i] != "}":
            if tokens[i].startswith(":"):
                current = fields.setdefault(tokens[i][1:], [])
                i += 1
                continue
            item, i = _parse(tokens, i)
            if current is not None:
                current.append(item)
        return Node(kind, fields), i + 1
    if tok == "(":
        items: list[Any] = []
        i += 1
        while tokens[i] != ")":
            item, i = _parse(tokens, i)
            items.append(item)
        return items, i + 1
    if tok == "[":
        while tokens[i] != "]":
            i += 1
        return None, i + 1
    return tok, i + 1


def parse_tree(text: str) -> Any:
    tokens = _TOKEN.findall(text)
    tree, _ = _parse(tokens, 0)
    return tree


def _walk(item: Any) -> Iterator[Node]:
    if isinstance(item, Node):
        yield item
        for values in item.fields.values():
            for v in values:
                yield from _walk(v)
    elif isinstance(item, list):
        for v in item:
            yield from _walk(v)


_IMPLICIT = "2"  # CoercionForm COERCE_IMPLICIT_CAST
_EXPR_SUBLINK, _ARRAY_SUBLINK = "4", "6"

# element type -> its array type, from pg_type (filled by collect() before parsing)
ARRAY_OF: dict[int, int] = {}


def _list(value: Any) -> list[Any]:
    if isinstance(value, list):
        return value
    return [] if value == "<>" else [value]


def _type_of(node: Any) -> int | None:
    """The type of an expression node, as a caller wrote it (before implicit coercions)."""
    if not isinstance(node, Node):
        return None
    k, g = node.kind, node.get
    if k == "RELABELTYPE" and g("relabelformat") == _IMPLICIT:
        return _type_of(g("arg"))
    if k in ("COERCEVIAIO", "ARRAYCOERCEEXPR") and g("coerceformat") == _IMPLICIT:
        return _type_of(g("arg"))
    if k == "FUNCEXPR" and g("funcformat") == _IMPLICIT:
        args = _list(g("args"))
        return _type_of(args[0]) if args else None
    if k in ("COLLATEEXPR", "NAMEDARGEXPR"):
        return _type_of(g("arg"))
    if k == "SUBLINK":
        kind = g("subLinkType")
        if kind not in (_EXPR_SUBLINK, _ARRAY_SUBLINK):
            return 16  # EXISTS, ANY, ALL: boolean
        targets = [te for te in _list(g("subselect").get("targetList"))
                   if isinstance(te, Node) and te.get("resjunk") == "false"]
        first = _type_of(targets[0].get("expr")) if targets else None
        return ARRAY_OF.get(first) if kind == _ARRAY_SUBLINK and first else first
    if k == "SUBPLAN":
        kind, first = g("subLinkType"), int(g("firstColType"))
        if kind == _ARRAY_SUBLINK:
            return ARRAY_OF.get(first)
        return first if kind == _EXPR_SUBLINK else 16
    if k == "ALTERNATIVESUBPLAN":
        return _type_of(_list(g("subplans"))[0])
    field = {
        "VAR": "vartype", "CONST": "consttype", "PARAM": "paramtype",
        "FUNCEXPR": "funcresulttype", "OPEXPR": "opresulttype", "AGGREF": "aggtype",
        "WINDOWFUNC": "wintype", "RELABELTYPE": "resulttype", "COERCEVIAIO": "resulttype",
        "ARRAYCOERCEEXPR": "resulttype", "CASEEXPR": "casetype",
        "COALESCEEXPR": "coalescetype", "MINMAXEXPR": "minmaxtype",
        "ARRAYEXPR": "array_typeid", "SUBSCRIPTINGREF": "refrestype",
        "FIELDSELECT": "resulttype", "SQLVALUEFUNCTION": "type",
        "COERCETODOMAIN": "resulttype", "CASETESTEXPR": "typeId",
    }.get(k)
    if field is not None:
        return int(g(field))
    if k in ("BOOLEXPR", "NULLTEST", "BOOLEANTEST", "SCALARARRAYOPEXPR", "DISTINCTEXPR"):
        return 16  # boolean
    return None


@dataclass(frozen=True)
class CallSite:
    """A call of a built-in: kind is function, aggregate or operator; oid the built-in's."""

    kind: str
    oid: int
    argtypes: tuple[int, ...]
    argnames: tuple[str | None, ...]  # a named argument (secs => x) needs that name
    result: int
    retset: bool = False
    star: bool = False


def call_sites(tree: Any) -> tuple[set[CallSite], int]:
    """Every call in a tree, and how many had an argument whose type could not be told."""
    found: set[CallSite] = set()
    unknown = 0

    def add(kind: str, oid: str, args: list[Any], result: str, **kw: bool) -> None:
        nonlocal unknown
        types = tuple(_type_of(a) for a in args)
        if any(t is None for t in types):
            unknown += 1
            return
        names = tuple(
            a.get("name") if isinstance(a, Node) and a.kind == "NAMEDARGEXPR" else None
            for a in args
        )
        found.add(CallSite(kind, int(oid), tuple(t for t in types if t is not None), names,
                           int(result), **kw))

    for n in _walk(tree):
        g = n.get
        if n.kind == "FUNCEXPR" and g("funcformat") in ("0", "3"):  # a call, or SQL syntax
            add("function", g("funcid"), _list(g("args")), g("funcresulttype"),
                retset=g("funcretset") == "true")
        elif n.kind == "AGGREF":
            args = [te.get("expr") for te in _list(g("args")) if isinstance(te, Node)]
            add("aggregate", g("aggfnoid"), args, g("aggtype"), star=g("aggstar") == "true")
        elif n.kind == "WINDOWFUNC":
            add("aggregate", g("winfnoid"), _list(g("args")), g("wintype"),
                star=g("winstar") == "true")
        elif n.kind in ("OPEXPR", "DISTINCTEXPR", "NULLIFEXPR"):
            add("operator", g("opno"), _list(g("args")), g("opresulttype"))
        elif n.kind == "SCALARARRAYOPEXPR":
            # the operator is looked up with the array's element type; marked by result 0
            add("operator", g("opno"), _list(g("args")), "0")
    return found, unknown


# ---------------------------------------------------------------------------------------------
# The core operations
# ---------------------------------------------------------------------------------------------


def _q(conn: Conn, schema: str, query: str, params: dict[str, Any] | None = None) -> list[Any]:
    """Run a statement with {s} standing for the jobq schema; return its rows."""
    stmt = sql.SQL(query).format(s=sql.Identifier(schema))
    cur = conn.execute(stmt, params or {})
    return cur.fetchall() if cur.description is not None else []


def _refused(conn: Conn, schema: str, query: str, sqlstate: str) -> None:
    with pytest.raises(psycopg.Error) as info:
        _q(conn, schema, query)
    assert info.value.sqlstate == sqlstate, (query, info.value)


def run_core_operations(conn: Conn, schema: str) -> None:
    """Every core operation, down its main branches, and bad input to each."""
    one = _q(conn, schema, "SELECT {s}.jobq_enqueue('a', '{{\"n\": 1}}')")[0][0]
    again = _q(conn, schema, "SELECT {s}.jobq_enqueue('a', idempotency_key => 'k1')")[0][0]
    assert _q(conn, schema, "SELECT {s}.jobq_enqueue('a', idempotency_key => 'k1')")[0][0] == again
    _q(conn, schema, "SELECT {s}.jobq_enqueue('a', run_at => pg_catalog.now() + interval '1 hour')")
    rows = _q(
        conn, schema,
        "SELECT * FROM {s}.jobq_enqueue_many(%(jobs)s::jsonb)",
        {"jobs": '[{"job_type": "a"}, {"job_type": "a", "queue": "q2", "priority": 2}]'},
    )
    assert [r[0] for r in rows] == [1, 2]
    rows = _q(
        conn, schema,
        "SELECT * FROM {s}.jobq_enqueue_many(%(jobs)s::jsonb)",
        {"jobs": '[{"job_type": "a", "idempotency_key": "k2"},'
                 ' {"job_type": "a", "idempotency_key": "k2"},'
                 ' {"job_type": "a", "idempotency_key": "k1",'
                 '  "run_at": "2030-01-31T08:00:00+01:00", "max_attempts": 3}]'},
    )
    assert rows[0][1] == rows[1][1] and rows[2][1] == again
    for bad, state in [
        ("SELECT {s}.jobq_enqueue('')", "22023"),
        ("SELECT {s}.jobq_enqueue('a', NULL)", "22004"),
        ("SELECT {s}.jobq_enqueue('a', run_at => 'infinity')", "22023"),
        ("SELECT * FROM {s}.jobq_enqueue_many('{{}}')", "22023"),
        ("SELECT * FROM {s}.jobq_enqueue_many('[{{\"job_type\": \"a\", \"x\": 1}}]')", "22023"),
        ("SELECT * FROM {s}.jobq_enqueue_many('[{{\"job_type\": \"a\", "
         "\"run_at\": \"2030-02-30T00:00:00Z\"}}]')", "22023"),
        ("SELECT * FROM {s}.jobq_dequeue('')", "22023"),
        ("SELECT * FROM {s}.jobq_dequeue('w', batch_size => 0)", "22023"),
        ("SELECT {s}.jobq_complete_many('{{}}', 'w', '{{1}}')", "22023"),
        ("SELECT {s}.jobq_fail(pg_catalog.gen_random_uuid(), 'w', 'e', retry => NULL)", "22023"),
        ("SELECT {s}.jobq_prune(statuses => '{{pending}}')", "22023"),
        ("SELECT {s}.jobq_prune(statuses => '{{nope}}')", "22023"),
        ("SELECT * FROM {s}.jobq_list_jobs(statuses => '{{nope}}')", "22023"),
        ("SELECT * FROM {s}.jobq_health(stuck_after => '0')", "22023"),
        ("SELECT {s}.jobq_configure(max_payload_bytes => 0)", "22023"),
    ]:
        _refused(conn, schema, bad, state)
    _q(conn, schema, "SELECT {s}.jobq_configure(max_payload_bytes => 100)")
    big = '{{"s": "' + "x" * 200 + '"}}'
    _refused(conn, schema, "SELECT {s}.jobq_enqueue('a', '" + big + "')", "54000")
    _refused(conn, schema, "SELECT * FROM {s}.jobq_enqueue_many('[{{\"job_type\": \"a\", "
             "\"payload\": " + big + "}}]')", "54000")
    _q(conn, schema, "SELECT {s}.jobq_configure(max_payload_bytes => 1048576)")

    claimed = [r[0] for r in _q(
        conn, schema, "SELECT id FROM {s}.jobq_dequeue('w1', batch_size => 10)")]
    assert one in claimed and len(claimed) == 5
    assert _q(conn, schema, "SELECT {s}.jobq_heartbeat('w1', %(ids)s)", {"ids": claimed})[0][0] == 5
    assert _q(conn, schema, "SELECT {s}.jobq_complete(%(id)s, 'w1')", {"id": claimed[0]})[0][0]
    assert _q(conn, schema, "SELECT {s}.jobq_complete_many(%(ids)s, 'w1', %(att)s)",
              {"ids": claimed[1:2], "att": [1]})[0][0] == 1
    assert _q(conn, schema, "SELECT {s}.jobq_fail(%(id)s, 'w1', 'boom', backoff => '0')",
              {"id": claimed[2]})[0][0] == "pending"
    assert _q(conn, schema, "SELECT {s}.jobq_fail(%(id)s, 'w1', 'no', retry => false)",
              {"id": claimed[3]})[0][0] == "failed"
    assert _q(conn, schema, "SELECT {s}.jobq_release(%(ids)s, 'w1')",
              {"ids": claimed[4:]})[0][0] == 1
    # a stale claim taken over, and one with no attempts left sent to dead_letter
    stale = [r[0] for r in _q(
        conn, schema, "SELECT id FROM {s}.jobq_dequeue('w2', batch_size => 2)")]
    _q(conn, schema, "UPDATE {s}.jobq_jobs SET locked_at = locked_at - interval '1 hour',"
       " locked_until = locked_until - interval '1 hour', "
       "max_attempts = attempts WHERE id = %(id)s", {"id": stale[0]})
    _q(conn, schema, "UPDATE {s}.jobq_jobs SET locked_at = locked_at - interval '1 hour',"
       " locked_until = locked_until - interval '1 hour' "
       "WHERE id = %(id)s", {"id": stale[1]})
    _q(conn, schema, "SELECT * FROM {s}.jobq_dequeue('w3', lock_timeout => '1 minute')")
    statuses = dict(_q(conn, schema,
                       "SELECT id, status FROM {s}.jobq_all_jobs WHERE id = ANY(%(ids)s)",
                       {"ids": stale}))
    assert statuses[stale[0]] == "dead_letter"
    assert _q(conn, schema, "SELECT {s}.jobq_requeue_dead_letter(%(id)s)", {"id": stale[0]})[0][0]
    assert _q(conn, schema, "SELECT {s}.jobq_requeue_dead_letters()")[0][0] == 1  # the failed one
    # a claim whose reply was lost: w4 names none of its jobs, so its one claim is given back
    _q(conn, schema, "SELECT {s}.jobq_enqueue('orphan')")
    assert len(_q(conn, schema, "SELECT * FROM {s}.jobq_dequeue('w4', '{{orphan}}')")) == 1
    assert _q(conn, schema, "SELECT {s}.jobq_release_orphans('w4', '{{}}')")[0][0] == 1
    assert _q(conn, schema, "SELECT pg_catalog.count(*) FROM {s}.jobq_stats()")[0][0] > 0
    assert len(_q(conn, schema, "SELECT * FROM {s}.jobq_list_jobs(statuses => '{{pending}}')")) > 0
    assert len(_q(conn, schema, "SELECT * FROM {s}.jobq_health()")) >= 5
    _q(conn, schema, "UPDATE {s}.jobq_jobs_history"
       " SET finished_at = pg_catalog.now() - interval '30 days' WHERE status = 'succeeded'")
    # one batch of one (through the indexes of finished jobs), then the rest in one statement
    assert _q(conn, schema, "SELECT {s}.jobq_prune(statuses => '{{succeeded,failed,dead_letter}}',"
              " batch_size => 1)")[0][0] == 1
    assert _q(conn, schema, "SELECT {s}.jobq_prune(statuses => '{{succeeded,failed,dead_letter}}')"
              )[0][0] == 1

    # Cancellation, results and waiting, each path that notifies.
    ids = [r[1] for r in _q(
        conn, schema, "SELECT * FROM {s}.jobq_enqueue_many(%(jobs)s::jsonb)",
        {"jobs": "[" + ", ".join(['{"job_type": "c"}'] * 6) + "]"})]
    assert len(_q(conn, schema, "SELECT * FROM {s}.jobq_await(%(ids)s, '0')", {"ids": ids})) == 6
    claimed = [r[0] for r in _q(
        conn, schema, "SELECT id FROM {s}.jobq_dequeue('w4', '{{c}}', 5)")]
    unclaimed = [i for i in ids if i not in claimed]
    rows = _q(conn, schema, "SELECT * FROM {s}.jobq_cancel(%(ids)s, 'stop')",
              {"ids": unclaimed + claimed[:3]})
    assert sorted(r[1] for r in rows) == ["cancel_requested"] * 3 + ["cancelled"]
    assert len(_q(conn, schema, "SELECT * FROM {s}.jobq_cancel_requested(%(ids)s)",
                  {"ids": claimed})) == 3
    assert _q(conn, schema, "SELECT {s}.jobq_fail(%(id)s, 'w4', 'stopped')",
              {"id": claimed[0]})[0][0] == "cancelled"
    assert _q(conn, schema, "SELECT {s}.jobq_release(%(ids)s, 'w4')",
              {"ids": claimed[1:2]})[0][0] == 1
    _q(conn, schema, "UPDATE {s}.jobq_jobs SET locked_at = locked_at - interval '1 hour',"
       " locked_until = locked_until - interval '1 hour' "
       "WHERE id = %(id)s", {"id": claimed[2]})
    _q(conn, schema, "SELECT * FROM {s}.jobq_dequeue('w5', '{{c}}', lock_timeout => '1 minute')")
    assert _q(conn, schema, "SELECT {s}.jobq_complete(%(id)s, 'w4', result => '{{\"n\": 1}}')",
              {"id": claimed[3]})[0][0]
    assert _q(conn, schema, "SELECT {s}.jobq_complete_many(%(ids)s, 'w4', NULL, %(r)s::jsonb[])",
              {"ids": claimed[4:], "r": ['[1, "x"]']})[0][0] == 1
    statuses = dict(_q(conn, schema, "SELECT id, status FROM {s}.jobq_job_status(%(ids)s)",
                       {"ids": ids}))
    assert [statuses[i] for i in claimed] == ["cancelled"] * 3 + ["succeeded"] * 2
    assert len(_q(conn, schema, "SELECT * FROM {s}.jobq_await(%(ids)s, '1 second')",
                  {"ids": ids})) == 6
    _q(conn, schema, "SELECT {s}.jobq_configure(max_payload_bytes => 100)")
    for bad, state in [
        ("SELECT * FROM {s}.jobq_await('{{}}', '10 minutes')", "22023"),
        ("SELECT {s}.jobq_complete(pg_catalog.gen_random_uuid(), 'w', result => "
         "pg_catalog.to_jsonb(pg_catalog.repeat('x', 200)))", "54000"),
        ("SELECT {s}.jobq_complete_many(ARRAY[pg_catalog.gen_random_uuid()], 'w', NULL, "
         "ARRAY[pg_catalog.to_jsonb(pg_catalog.repeat('x', 200))])", "54000"),
        ("SELECT {s}.jobq_complete_many(ARRAY[pg_catalog.gen_random_uuid()], 'w', NULL, "
         "ARRAY[pg_catalog.to_jsonb(pg_catalog.repeat('x', 99))])", "54000"),
    ]:
        _refused(conn, schema, bad, state)
    _q(conn, schema, "SELECT {s}.jobq_configure(max_payload_bytes => 1048576)")
    assert _q(conn, schema, "SELECT {s}.jobq_prune(statuses => '{{cancelled}}', older_than => '0')"
              )[0][0] == 4
    # limits: a concurrency limit and a rate limit, the limited claim, usage, removal (removed
    # first: the second run finds the first run's limits and windows, jobq_jobs aside)
    _q(conn, schema, "SELECT {s}.jobq_set_limit('r')")
    _q(conn, schema, "SELECT {s}.jobq_set_limit('g', max_running => 1)")
    _q(conn, schema, "SELECT {s}.jobq_set_limit('r', max_starts => 2, per => '1 hour')")
    for key in ("x", "x", "y"):
        _q(conn, schema, "SELECT {s}.jobq_enqueue('l', limit_group => 'g', limit_key => %(k)s)",
           {"k": key})
    _q(conn, schema, "SELECT * FROM {s}.jobq_enqueue_many("
       "'[{{\"job_type\": \"l\", \"limit_group\": \"r\"}}, "
       "{{\"job_type\": \"l\", \"limit_group\": \"r\"}}, "
       "{{\"job_type\": \"l\", \"limit_group\": \"r\"}}]')")
    _q(conn, schema, "SELECT {s}.jobq_enqueue('l')")
    limited = [r[0] for r in _q(
        conn, schema, "SELECT id FROM {s}.jobq_dequeue('w6', '{{l}}', 10)")]
    assert len(limited) == 5  # x once, y, r twice, the unlimited one
    assert len(_q(conn, schema, "SELECT * FROM {s}.jobq_dequeue('w6', '{{l}}', 10)")) == 0
    assert len(_q(conn, schema, "SELECT * FROM {s}.jobq_limit_usage()")) == 3
    assert len(_q(conn, schema, "SELECT * FROM {s}.jobq_limits()")) == 2
    _q(conn, schema, "SELECT {s}.jobq_complete_many(%(ids)s, 'w6')", {"ids": limited})
    _q(conn, schema, "SELECT {s}.jobq_set_limit('g')")
    assert len(_q(conn, schema, "SELECT * FROM {s}.jobq_dequeue('w6', '{{l}}', 10)")) == 1
    for bad in [
        "SELECT {s}.jobq_enqueue('l', limit_key => 'k')",
        "SELECT {s}.jobq_set_limit('g', max_starts => 1)",
        "SELECT {s}.jobq_set_limit(' ', 1)",
    ]:
        _refused(conn, schema, bad, "22023")


# ---------------------------------------------------------------------------------------------
# Collecting the call sites, planting the look-alikes
# ---------------------------------------------------------------------------------------------


def collect(conn: Conn, schema: str) -> tuple[set[CallSite], int]:
    trees: list[str] = []

    def on_notice(diag: psycopg.errors.Diagnostic) -> None:
        if diag.severity_nonlocalized == "LOG" and diag.message_detail:
            trees.append(diag.message_detail)

    conn.execute("CREATE SCHEMA jobq_test_check")
    conn.execute("CREATE EXTENSION plpgsql_check SCHEMA jobq_test_check")
    conn.add_notice_handler(on_notice)
    for setting in ("debug_print_rewritten", "debug_print_plan"):
        conn.execute(f"SET {setting} = on")
    conn.execute("SET debug_pretty_print = off")
    conn.execute("SET client_min_messages = log")
    functions = _q(
        conn, schema,
        "SELECT p.oid FROM pg_proc AS p WHERE p.pronamespace = %(s)s::regnamespace "
        "AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')",
        {"s": schema},
    )
    assert len(functions) >= 12
    for (oid,) in functions:
        # A trigger function is checked against the table of its trigger.
        conn.execute(
            "SELECT * FROM jobq_test_check.plpgsql_check_function_tb(%(f)s, relid => coalesce(("
            "SELECT t.tgrelid FROM pg_trigger AS t WHERE t.tgfoid = %(f)s LIMIT 1), 0))",
            {"f": oid},
        )
    conn.execute("RESET client_min_messages")
    conn.execute("SET client_min_messages = log")
    run_core_operations(conn, schema)
    conn.execute("RESET client_min_messages")
    conn.remove_notice_handler(on_notice)
    conn.execute("DROP SCHEMA jobq_test_check CASCADE")

    ARRAY_OF.update(conn.execute(
        "SELECT t.oid, t.typarray FROM pg_catalog.pg_type AS t WHERE t.typarray <> 0"
    ).fetchall())
    sites: set[CallSite] = set()
    unknown = 0
    for text in trees:
        found, missed = call_sites(parse_tree(text))
        sites |= found
        unknown += missed
    return sites, unknown


@dataclass(frozen=True)
class Shadow:
    kind: str
    name: str
    argtypes: tuple[str, ...]  # as declared: "text", or "secs double precision"
    result: str
    retset: bool
    star: bool


def builtin_shadows(conn: Conn, sites: set[CallSite]) -> set[Shadow]:
    """The look-alikes to plant: one per pg_catalog call site, with its exact argument types."""
    types: dict[int, tuple[str, str, int]] = {
        oid: (name, typtype, elem)
        for oid, name, typtype, elem in conn.execute(
            "SELECT t.oid, pg_catalog.format_type(t.oid, NULL), t.typtype, t.typelem "
            "FROM pg_catalog.pg_type AS t"
        )
    }
    procs = dict(conn.execute(
        "SELECT p.oid, p.proname FROM pg_catalog.pg_proc AS p "
        "WHERE p.pronamespace = 'pg_catalog'::regnamespace"
    ).fetchall())
    operators = dict(conn.execute(
        "SELECT o.oid, o.oprname FROM pg_catalog.pg_operator AS o "
        "WHERE o.oprnamespace = 'pg_catalog'::regnamespace"
    ).fetchall())
    shadows: set[Shadow] = set()
    for s in sites:
        argtypes = list(s.argtypes)
        if s.kind == "operator":
            if s.oid not in operators:
                continue
            name = operators[s.oid]
            result = 16 if s.result == 0 else s.result
            if s.result == 0:  # x op ANY (array): the operator takes the element type
                argtypes[-1] = types[argtypes[-1]][2]
        else:
            if s.oid not in procs:
                continue
            name, result = procs[s.oid], s.result
        # A literal passed to an "any" parameter stays unknown; an attacker declares text there,
        # which PostgreSQL prefers for an unknown literal. Other pseudo-types (record, ...)
        # cannot be declared by a role.
        argtypes = [25 if t == 705 else t for t in argtypes]
        if any(types[t][1] == "p" for t in argtypes):
            continue
        declared = tuple(
            types[t][0] if n is None else f"{n} {types[t][0]}"
            for t, n in zip(argtypes, s.argnames, strict=True)
        )
        shadows.add(Shadow(s.kind, name, declared, types[result][0], s.retset, s.star))
    return shadows


def plant(conn: Conn, role: str, schemas: list[str], shadows: set[Shadow]) -> int:
    """Create every look-alike in each schema, as role (unprivileged); each raises if called."""
    for schema in schemas:
        conn.execute(sql.SQL("GRANT USAGE, CREATE ON SCHEMA {} TO {}").format(
            sql.Identifier(schema), sql.Identifier(role)))
    conn.execute(sql.SQL("SET ROLE {}").format(sql.Identifier(role)))
    made = 0
    for schema in schemas:
        s = sql.Identifier(schema)
        for n, sh in enumerate(sorted(shadows, key=repr)):
            args = sql.SQL(", ").join(sql.SQL(t) for t in sh.argtypes)
            body = sql.Literal(
                f"BEGIN RAISE EXCEPTION 'look-alike {sh.kind} {schema}.{sh.name}"
                f"({', '.join(sh.argtypes)}) was called'; END"
            )
            helper = sql.Identifier(f"jobq_test_shadow_{n}")
            if sh.kind == "function":
                conn.execute(sql.SQL(
                    "CREATE FUNCTION {}.{}({}) RETURNS {}{} LANGUAGE plpgsql AS {}"
                ).format(s, sql.Identifier(sh.name), args,
                         sql.SQL("SETOF " if sh.retset else ""), sql.SQL(sh.result), body))
            elif sh.kind == "aggregate":
                state = sql.SQL(sh.result)
                conn.execute(sql.SQL(
                    "CREATE FUNCTION {}.{}({}) RETURNS {} LANGUAGE plpgsql AS {}"
                ).format(s, helper, sql.SQL(", ").join([state, *[sql.SQL(t) for t in sh.argtypes]]),
                         state, body))
                conn.execute(sql.SQL(
                    "CREATE AGGREGATE {}.{}({}) (SFUNC = {}.{}, STYPE = {})"
                ).format(s, sql.Identifier(sh.name), sql.SQL("*") if sh.star else args,
                         s, helper, state))
            else:
                conn.execute(sql.SQL(
                    "CREATE FUNCTION {}.{}({}) RETURNS {} LANGUAGE plpgsql AS {}"
                ).format(s, helper, args, sql.SQL(sh.result), body))
                sides = (["LEFTARG = " + sh.argtypes[0]] if len(sh.argtypes) == 2 else []) + [
                    "RIGHTARG = " + sh.argtypes[-1]]
                conn.execute(sql.SQL("CREATE OPERATOR {}.{} ({}, FUNCTION = {}.{})").format(
                    s, sql.SQL(sh.name), sql.SQL(", ".join(sides)), s, helper))
            made += 1
    conn.execute("RESET ROLE")
    return made


@pytest.fixture
def intruder(make_role: MakeRole) -> str:
    """An unprivileged role (roles belong to the cluster: dropped, with its objects, after)."""
    return make_role(login=False, prefix="jobq_test_intruder")


@pytest.mark.slow  # reads parse trees of every statement, then runs the core operations
@pytest.mark.parametrize("schema", ["public", "jobq"])
def test_no_look_alike_of_a_builtin_is_ever_called(
    empty_dsn: str, intruder: str, schema: str
) -> None:
    migrate(empty_dsn, schema=schema)
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        sites, unknown = collect(conn, schema)
        shadows = builtin_shadows(conn, sites)
        names = {sh.name for sh in shadows}
        # the collection is not vacuous: the calls the functions are known to make are there
        assert {"octet_length", "format", "jsonb_build_object", "now", "count", "array_agg",
                "unnest", "pg_notify", "||", "=", "->>"} <= names, sorted(names)
        assert any(sh.name == "octet_length" and sh.argtypes == ("text",) for sh in shadows)
        assert unknown < len(sites) // 10, (unknown, len(sites))

        # a fresh start, so that the operations below create their jobs anew
        conn.execute(
            sql.SQL("TRUNCATE {0}.jobq_jobs, {0}.jobq_jobs_history").format(sql.Identifier(schema))
        )
        schemas = [schema] if schema == "public" else [schema, "public"]
        made = plant(conn, intruder, schemas, shadows)
        assert made == len(shadows) * len(schemas)

    # a new session: no plan cached from before the look-alikes existed
    with psycopg.connect(empty_dsn, autocommit=True) as conn:
        run_core_operations(conn, schema)

"""The plans of the statements a test runs, nested ones included (the statements inside
jobq's functions), as auto_explain logs them."""

from __future__ import annotations

from typing import Any

import psycopg


def log_plans(c: psycopg.Connection[Any], *settings: str) -> list[str]:
    """From now on, collect the plan of every statement ``c`` runs, nested ones included:
    auto_explain at NOTICE, with ``settings`` (``"name = value"``) set too."""
    plans: list[str] = []
    c.add_notice_handler(lambda diag: plans.append(diag.message_primary or ""))
    c.execute("LOAD 'auto_explain'")
    for setting in (
        "auto_explain.log_min_duration = 0",
        "auto_explain.log_nested_statements = on",
        "auto_explain.log_level = notice",
        *settings,
    ):
        c.execute(f"SET {setting}")
    return plans

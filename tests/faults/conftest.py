"""Fixtures of the fault suite (the shared ones, dsn and pg_restart, are in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults.harness import Fx, install_ledger


@pytest.fixture
def fx(dsn: str, tmp_path: Path) -> Iterator[Fx]:
    """This test's database with the ledger installed; worker processes are killed afterwards."""
    install_ledger(dsn)
    harness = Fx(dsn, tmp_path)
    try:
        yield harness
    finally:
        harness.kill_all()

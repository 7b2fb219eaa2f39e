"""What `make demo` and `make venv` install (read with `make -n`: nothing is installed)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _plan(target: str, venv: Path) -> str:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    result = subprocess.run(
        ["make", "-n", "-C", str(REPO), target, f"VENV={venv}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_demo_installs_the_runtime_the_embedded_server_and_the_dashboard(tmp_path: Path) -> None:
    plan = _plan("demo", tmp_path / "venv")
    assert "-e '.[binary,embedded,web]'" in plan
    assert "[dev]" not in plan
    assert "-m pgq_client.demo" in plan


def test_venv_installs_the_development_tools_and_what_the_recipes_use(tmp_path: Path) -> None:
    plan = _plan("venv", tmp_path / "venv")
    assert "-e '.[dev,examples]'" in plan

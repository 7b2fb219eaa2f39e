"""The `jobq` command is its own distribution, jobq-cli (python/cli, package ``jobq_cli``): the
client works without it or click, says what to install where the command is asked for, and the
command's three entry points are one program."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import distribution, entry_points, requires, version

import pytest

# Run in a fresh interpreter in which jobq_cli and click cannot be imported (None in sys.modules
# is what the import system reads as "not installed"), so that nothing a test imported before
# hides an import: every module of the client is imported, a job goes through the client, and
# `python -m pgq_client` and `python -m pgq_client.embedded` are run.
WITHOUT_THE_CLI = textwrap.dedent(
    """
    import importlib, json, pkgutil, runpy, sys

    sys.modules["jobq_cli"] = None
    sys.modules["click"] = None

    import pgq_client
    from pgq_client import Queue

    imported = []
    for module in pkgutil.walk_packages(pgq_client.__path__, "pgq_client."):
        if module.name != "pgq_client.web":  # the dashboard's names, from jobq-web
            importlib.import_module(module.name)
            imported.append(module.name)
    with Queue(sys.argv[1]) as q:
        job_id = q.enqueue("no_cli", {"n": 1})
        (job,) = q.dequeue("w", job_types=["no_cli"])
        done = q.complete(job.id, "w")
    exits = []
    for entry in ("pgq_client", "pgq_client.embedded"):
        try:
            runpy.run_module(entry, run_name="__main__", alter_sys=True)
            exits.append("ran")
        except SystemExit as exc:
            exits.append(exc.code)
    print(json.dumps({
        "imported": imported, "same_job": job.id == job_id, "done": done, "exits": exits,
        "loaded": sorted({m.split(".")[0] for m, v in sys.modules.items() if v}),
    }))
    """
)


def test_the_client_works_without_the_cli(dsn: str) -> None:
    ran = subprocess.run(
        [sys.executable, "-c", WITHOUT_THE_CLI, dsn],
        capture_output=True, text=True, timeout=120, check=False,
        env={k: v for k, v in os.environ.items() if k not in ("JOBQ_DSN", "DATABASE_URL")},
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    modules = {"queue", "worker", "migrate", "__main__", "installer.runner", "durations"}
    assert {f"pgq_client.{m}" for m in modules} <= set(found["imported"])
    assert found["same_job"] is True and found["done"] is True
    assert "jobq_cli" not in found["loaded"] and "click" not in found["loaded"]
    message = "jobq: the jobq command is the jobq-cli package: pip install jobq-cli"
    # sys.exit(message): the message on stderr, exit status 1
    assert found["exits"] == [f"{message} (jobq_cli is missing)"] * 2


def test_the_distributions_say_who_needs_click() -> None:
    client = [r.replace('"', "'") for r in requires("pgq-client") or []]
    assert not [r for r in client if r.startswith("click")]
    assert "jobq-cli>=0.1.0; extra == 'cli'" in client
    command = requires("jobq-cli") or []
    assert f"pgq-client=={version('pgq-client')}" in command  # released together
    assert any(r.startswith("click") for r in command)
    assert version("jobq-cli") == version("pgq-client")


def test_the_jobq_script_is_the_cli_distributions() -> None:
    (script,) = entry_points(group="console_scripts", name="jobq")
    assert script.value == "jobq_cli:main"
    assert script.dist is not None and script.dist.name == "jobq-cli"
    client_scripts = [e for e in distribution("pgq-client").entry_points
                      if e.group == "console_scripts"]  # fmt: skip
    assert client_scripts == []


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["jobs", "list", "--help"]])
def test_python_m_jobq_cli_and_python_m_pgq_client_are_one_program(args: list[str]) -> None:
    def run(module: str) -> tuple[int, str, str]:
        ran = subprocess.run([sys.executable, "-m", module, *args], capture_output=True,
                             text=True, timeout=120, check=False)  # fmt: skip
        return ran.returncode, ran.stdout, ran.stderr

    via_cli, via_client = run("jobq_cli"), run("pgq_client")
    assert via_cli[0] == 0 and via_cli[1].strip()
    assert via_cli == via_client


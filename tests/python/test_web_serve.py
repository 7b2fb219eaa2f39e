"""`jobq web` as a process: it refuses to start, with one line and before printing a URL, when
it cannot connect or cannot listen, and a SIGTERM stops it cleanly (exit 0)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence

from psycopg.conninfo import make_conninfo
from webtools import free_port

# Longer than connecting takes, shorter than the 30 s the dashboard's pool waits for one.
QUICK = 20.0


def _env() -> dict[str, str]:
    drop = ("JOBQ_DSN", "DATABASE_URL", "JOBQ_WEB_AUTH", "PGPASSWORD")
    return {k: v for k, v in os.environ.items() if k not in drop}


def _jobq(args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pgq_client", *args], env=_env(),
                          capture_output=True, text=True, timeout=60, check=False)


def _unreachable(dsn: str) -> dict[str, str]:
    """A server that is not there (a free port), and a role that does not exist."""
    return {
        "connection refused": make_conninfo(dsn, host="127.0.0.1", port=str(free_port())),
        "no such role": make_conninfo(dsn, user=f"jobq_nobody_{os.getpid()}"),
    }


def test_jobq_web_that_cannot_connect_fails_at_once_with_one_line(dsn: str) -> None:
    """An unreachable server or a refused login ends `jobq web` and `jobq web --check` at once,
    exit 1, with the server's own reason on one line, no URL printed and no pool timeout."""
    for what, bad in _unreachable(dsn).items():
        for extra in ([], ["--check"]):
            port = free_port()
            started = time.monotonic()
            result = _jobq(["web", "--dsn", bad, "--bind", f"127.0.0.1:{port}", *extra])
            took = time.monotonic() - started
            case = f"{what} {extra}: {result.stderr}"
            assert result.returncode == 1, case
            assert took < QUICK, case
            assert "http://" not in result.stderr + result.stdout, case
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("jobq: error: "), case
            assert "couldn't get a connection" not in lines[0], case
            reason = "refused" if what == "connection refused" else "does not exist"
            assert reason in lines[0], case


def test_jobq_web_on_a_busy_port_names_it_and_prints_no_url(dsn: str) -> None:
    """A port another process listens on ends `jobq web` with exit 1 and a line naming the
    address, before any URL is printed."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = _jobq(["web", "--dsn", dsn, "--bind", f"127.0.0.1:{port}"])
    assert result.returncode == 1, result.stderr
    assert "http://" not in result.stderr + result.stdout, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == [f"jobq: error: cannot listen on 127.0.0.1:{port}: Address already in use"]


def test_jobq_web_exits_0_on_sigterm_after_serving(dsn: str) -> None:
    """A served dashboard stops on SIGTERM, as a service manager stops it, with exit 0 (not
    143, the signal's own)."""
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgq_client", "web", "--dsn", dsn, "--bind", f"127.0.0.1:{port}"],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert first.startswith(f"jobq web: http://127.0.0.1:{port}/"), first
        deadline = time.monotonic() + QUICK
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
                    assert page.status == 200
                break
            except OSError:
                assert time.monotonic() < deadline, "the dashboard never answered"
                time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=QUICK) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

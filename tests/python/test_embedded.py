"""The embedded PostgreSQL (pgq_client.embedded) and the demo that runs on it.

Real servers, no mocks: every test gets its own JOBQ_HOME, starts its own embedded cluster in
it (in subprocesses, as the CLI would), and stops it in teardown; a teardown check makes sure
no server of the test is left running. Deselect with ``-m "not embedded"``.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pgq_client.embedded import (
    EmbeddedError,
    describe_embedded,
    embedded_status,
    get_embedded_dsn,
    stop_embedded,
)

pytestmark = [
    pytest.mark.embedded,
    pytest.mark.slow,  # a server of its own per test
    pytest.mark.skipif(sys.platform == "win32", reason="the embedded database needs POSIX"),
]

SUBPROCESS_TIMEOUT = 180


def _postmasters(pgdata: Path) -> list[int]:
    """Live (non-zombie) postmaster processes serving ``pgdata``."""
    found: list[int] = []
    proc = Path("/proc")
    if not proc.is_dir():  # pragma: no cover - Linux-only check
        return found
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state == "Z" or len(cmdline) < 3:
            continue
        args = [a.decode(errors="replace") for a in cmdline]
        if Path(args[0]).name in ("postgres", "postmaster") and str(pgdata) in args:
            found.append(int(entry.name))
    return found


@pytest.fixture
def jobq_home() -> Iterator[Path]:
    """A fresh JOBQ_HOME; whatever server a test starts in it is stopped afterwards.

    Made with mkdtemp in /tmp, not pytest's tmp_path: when the tests run as root, the server
    runs as an unprivileged user that must be able to reach the directory (tmp_path's parent
    is 0700), and the socket path must stay short.
    """
    home = Path(tempfile.mkdtemp(prefix="jobq-test-", dir="/tmp"))
    home.chmod(0o755)
    try:
        yield home
    finally:
        stop_embedded(home)
        leftover = _postmasters(home / "pgdata")
        shutil.rmtree(home, ignore_errors=True)
        assert leftover == [], f"embedded server(s) still running after stop: {leftover}"


def _env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JOBQ_DSN", "DATABASE_URL")}
    env["JOBQ_HOME"] = str(home)
    env.update(extra)
    return env


def _python(code: str, home: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new Python process with JOBQ_HOME=home and no JOBQ_DSN."""
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=_env(home, **extra),
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )


def _ok(result: subprocess.CompletedProcess[str], code: int = 0) -> str:
    assert result.returncode == code, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _down(result: subprocess.CompletedProcess[str]) -> str:
    """The output of ``embedded status`` of a server that does not run, which exits 3."""
    return _ok(result, 3)


_PRINT_DSN = """
    from pgq_client.embedded import get_embedded_dsn
    print(get_embedded_dsn())
"""


def test_embedded_server_starts_migrated_and_listens_on_a_private_socket_only(
    jobq_home: Path,
) -> None:
    dsn = _ok(_python(_PRINT_DSN, jobq_home)).strip()
    pgdata = jobq_home / "pgdata"

    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT 1").fetchone() == (1,)
        assert conn.execute("SELECT current_database()").fetchone() == ("jobq",)
        data_dir = conn.execute("SELECT current_setting('data_directory')").fetchone()
        assert data_dir is not None and Path(data_dir[0]) == pgdata
        # No TCP listener at all; the socket lives in a directory only its owner can enter.
        assert conn.execute("SHOW listen_addresses").fetchone() == ("",)
        applied = conn.execute("SELECT count(*) FROM jobq_migrations").fetchone()
        assert applied is not None and applied[0] >= 1
        job = conn.execute("SELECT jobq_enqueue(job_type => 'probe')").fetchone()
        assert job is not None
        assert conn.info.host.startswith("/"), "must connect over a Unix socket"
    assert (pgdata.stat().st_mode & 0o077) == 0

    [postmaster] = _postmasters(pgdata)
    server_uid = Path(f"/proc/{postmaster}").stat().st_uid
    if os.geteuid() == 0:
        # initdb/postgres refuse root: the cluster belongs to, and runs as, another user.
        assert pgdata.stat().st_uid != 0
        assert server_uid == pgdata.stat().st_uid
        # ... and with that user's group alone, not root's.
        status = Path(f"/proc/{postmaster}/status").read_text()
        [gids] = [line.split()[1:] for line in status.splitlines() if line.startswith("Gid:")]
        assert set(gids) == {str(pgdata.stat().st_gid)} and gids[0] != "0"
        [groups] = [line.split()[1:] for line in status.splitlines() if line.startswith("Groups:")]
        assert set(groups) <= {str(pgdata.stat().st_gid)}
    else:
        assert server_uid == os.geteuid()


def test_embedded_server_survives_the_process_that_started_it(jobq_home: Path) -> None:
    # Process 1 starts the server (via Queue.embedded()), enqueues a job and exits.
    produce = """
        from pgq_client import Queue
        with Queue.embedded() as q:
            print(q.enqueue("thumbnail", {"image": "cat.png"}, idempotency_key="survive:1"))
    """
    job_id = _ok(_python(produce, jobq_home)).strip()
    pgdata = jobq_home / "pgdata"
    [postmaster] = _postmasters(pgdata)

    # Process 2, started after process 1 is gone, reaches the same server and data.
    consume = """
        import psycopg
        from pgq_client.embedded import get_embedded_dsn
        with psycopg.connect(get_embedded_dsn()) as conn:
            row = conn.execute(
                "SELECT jobq_enqueue(job_type => 'thumbnail', idempotency_key => 'survive:1')"
            ).fetchone()
            print(row[0])
    """
    assert _ok(_python(consume, jobq_home)).strip() == job_id
    assert _postmasters(pgdata) == [postmaster], "the same server must have served both"


def test_concurrent_first_use_shares_one_server(jobq_home: Path) -> None:
    """Several commands started at once on a fresh JOBQ_HOME: one initdb, one server."""
    go = jobq_home / "go"
    code = f"""
        import logging, os, time
        import psycopg
        logging.basicConfig(level=logging.INFO, format="%(process)d %(message)s")
        while not os.path.exists({str(go)!r}):
            time.sleep(0.005)
        from pgq_client.embedded import get_embedded_dsn
        with psycopg.connect(get_embedded_dsn()) as conn:
            row = conn.execute(
                "SELECT pg_postmaster_start_time(), current_setting('data_directory')"
            ).fetchone()
        print(row[0].isoformat(), row[1])
    """
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(code)],
            env=_env(jobq_home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    time.sleep(1.0)  # let every interpreter start and wait on the go file
    go.touch()
    outputs = []
    logs = ""
    for proc in procs:
        out, err = proc.communicate(timeout=SUBPROCESS_TIMEOUT)
        assert proc.returncode == 0, f"exit {proc.returncode}\n{out}\n{err}"
        outputs.append(out.strip())
        logs += err
    assert len(set(outputs)) == 1, f"not one server: {outputs}"
    assert logs.count("creating the embedded PostgreSQL cluster") == 1, logs
    assert logs.count("starting the embedded PostgreSQL") == 1, logs
    assert len(_postmasters(jobq_home / "pgdata")) == 1


def test_stop_keeps_the_data_and_the_next_use_starts_the_server_again(jobq_home: Path) -> None:
    dsn = _ok(_python(_PRINT_DSN, jobq_home)).strip()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT jobq_enqueue(job_type => 'ocr', idempotency_key => 'keep:1')")

    assert stop_embedded(jobq_home) is True
    assert _postmasters(jobq_home / "pgdata") == []
    assert embedded_status(jobq_home).running is False
    assert stop_embedded(jobq_home) is False  # nothing left to stop

    assert get_embedded_dsn(jobq_home) == dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT jobs FROM jobq_stats() WHERE job_type = 'ocr' AND status = 'pending'"
        ).fetchall()
    assert rows == [(1,)]
    assert embedded_status(jobq_home).running is True


def test_server_killed_without_cleanup_is_restarted(jobq_home: Path) -> None:
    """A crash (or a reboot) leaves postmaster.pid and the socket lock behind: recovered."""
    dsn = _ok(_python(_PRINT_DSN, jobq_home)).strip()
    pgdata = jobq_home / "pgdata"
    [postmaster] = _postmasters(pgdata)
    os.kill(postmaster, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while _postmasters(pgdata) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (pgdata / "postmaster.pid").exists(), "the crash should leave its pid file"

    assert _ok(_python(_PRINT_DSN, jobq_home)).strip() == dsn
    [restarted] = _postmasters(pgdata)
    assert restarted != postmaster
    with psycopg.connect(dsn) as conn:
        assert conn.execute("SELECT count(*) FROM jobq_migrations").fetchone() is not None


def test_without_pgserver_the_error_says_how_to_install_it(jobq_home: Path) -> None:
    """pgserver brings the PostgreSQL; without it the message names a pip command that works
    from PyPI and from a checkout (the distribution, pgq-client, is on no registry)."""
    code = """
        import sys
        sys.modules["pgserver"] = None  # as if the wheel were not installed
        from pgq_client.embedded import EmbeddedError, get_embedded_dsn
        try:
            get_embedded_dsn()
        except EmbeddedError as exc:
            print(exc)
    """
    out = _ok(_python(code, jobq_home))
    assert "needs the pgserver package" in out
    assert "pip install pgserver" in out
    assert "pip install '.[embedded]'" in out
    assert "--dsn" in out
    assert not (jobq_home / "pgdata").exists()


def test_jobq_pg_bin_chooses_the_postgresql(jobq_home: Path) -> None:
    bin_dirs = sorted(
        (d for d in Path("/usr/lib/postgresql").glob("*/bin") if (d / "initdb").exists()),
        key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0,
    )
    if not bin_dirs:
        pytest.skip("no system PostgreSQL in /usr/lib/postgresql")
    bin_dir = bin_dirs[0]
    code = """
        import psycopg
        from pgq_client.embedded import get_embedded_dsn
        with psycopg.connect(get_embedded_dsn()) as conn:
            print(conn.execute("SHOW server_version_num").fetchone()[0])
    """
    version_num = _ok(_python(code, jobq_home, JOBQ_PG_BIN=str(bin_dir))).strip()
    assert int(version_num) // 10000 == int(bin_dir.parent.name)


def test_no_postgresql_found_says_what_to_install(jobq_home: Path) -> None:
    code = """
        from pgq_client.embedded import EmbeddedError, get_embedded_dsn
        try:
            get_embedded_dsn()
        except EmbeddedError as exc:
            print(exc)
    """
    out = _ok(_python(code, jobq_home, JOBQ_PG_BIN=str(jobq_home / "no-such-bin")))
    assert "no usable PostgreSQL" in out
    assert "pip install pgserver" in out
    assert "--dsn" in out
    assert not (jobq_home / "pgdata").exists()


@pytest.mark.parametrize("chosen_by", ["pgserver", "JOBQ_PG_BIN"])
def test_postgresql_that_cannot_run_here_is_named_with_the_reason(
    jobq_home: Path, chosen_by: str
) -> None:
    """As when pgserver's bundled binaries do not suit the machine (libc, architecture)."""
    bin_dir = jobq_home / "foreign-bin"
    bin_dir.mkdir()
    for program in ("postgres", "initdb", "pg_ctl"):
        (bin_dir / program).write_bytes(b"\x7fELF not for this machine")
        (bin_dir / program).chmod(0o755)
    code = f"""
        from pathlib import Path
        import pgserver
        from pgq_client.embedded import EmbeddedError, get_embedded_dsn
        if {chosen_by == "pgserver"}:
            pgserver.postgres_server.POSTGRES_BIN_PATH = Path({str(bin_dir)!r})
        try:
            get_embedded_dsn()
        except EmbeddedError as exc:
            print(exc)
    """
    extra = {"JOBQ_PG_BIN": str(bin_dir)} if chosen_by == "JOBQ_PG_BIN" else {}
    out = _ok(_python(code, jobq_home, **extra))
    assert "no usable PostgreSQL for the embedded database" in out
    assert "does not run on this machine" in out and "Exec format error" in out
    if chosen_by == "pgserver":
        assert "pgserver's PostgreSQL does not run" in out
        assert "set JOBQ_PG_BIN to the bin directory of a PostgreSQL installed" in out
    else:
        assert f"JOBQ_PG_BIN={bin_dir} does not run" in out
    assert "--dsn" in out
    assert not (jobq_home / "pgdata").exists()


def test_data_made_by_another_major_version_is_refused_and_kept(jobq_home: Path) -> None:
    system = sorted(d for d in Path("/usr/lib/postgresql").glob("*/bin") if (d / "initdb").exists())
    if not system:
        pytest.skip("no system PostgreSQL in /usr/lib/postgresql")
    _ok(_python(_PRINT_DSN, jobq_home, JOBQ_PG_BIN=str(system[0])))
    stop_embedded(jobq_home)
    made_by = (jobq_home / "pgdata" / "PG_VERSION").read_text().strip()
    code = """
        from pgq_client.embedded import EmbeddedError, get_embedded_dsn
        try:
            get_embedded_dsn()
        except EmbeddedError as exc:
            print(exc)
    """
    out = _ok(_python(code, jobq_home))
    if f"made by PostgreSQL {made_by}" not in out:
        pytest.skip(f"pgserver's PostgreSQL is {made_by} too: {out}")
    assert f"set JOBQ_PG_BIN to a PostgreSQL {made_by} bin directory" in out
    assert "jobq embedded reset --yes" in out
    assert (jobq_home / "pgdata" / "PG_VERSION").read_text().strip() == made_by
    assert _postmasters(jobq_home / "pgdata") == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root's server runs as another user")
def test_data_of_an_earlier_server_user_is_handed_to_pgserver_as_root(jobq_home: Path) -> None:
    """An earlier jobq ran root's embedded server as `postgres` (or `jobq`): its data stays."""
    import pwd

    try:
        earlier = pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("no system user postgres")
    dsn = _ok(_python(_PRINT_DSN, jobq_home)).strip()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT jobq_enqueue(job_type => 'ocr', idempotency_key => 'owner:1')")
    stop_embedded(jobq_home)
    pgdata = jobq_home / "pgdata"
    for directory, _, files in os.walk(pgdata):
        for name in (directory, *(os.path.join(directory, f) for f in files)):
            os.lchown(name, earlier.pw_uid, earlier.pw_gid)

    assert _ok(_python(_PRINT_DSN, jobq_home)).strip() == dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute("SELECT jobs FROM jobq_stats() WHERE job_type = 'ocr'").fetchall()
    assert rows == [(1,)]
    runs_as = pwd.getpwnam("pgserver").pw_uid
    assert pgdata.stat().st_uid == runs_as
    assert (pgdata / "global" / "pg_control").stat().st_uid == runs_as


def test_describe_embedded_names_the_data_directory(jobq_home: Path) -> None:
    before = describe_embedded(jobq_home)
    assert before == f"embedded PostgreSQL at {jobq_home / 'pgdata'} (database jobq)"
    assert not (jobq_home / "pgdata").exists(), "describing must not start anything"
    get_embedded_dsn(jobq_home)
    assert re.fullmatch(
        rf"embedded PostgreSQL \d+ at {re.escape(str(jobq_home / 'pgdata'))} \(database jobq\)",
        describe_embedded(jobq_home),
    )


def test_error_is_a_jobq_error_for_an_unusable_home() -> None:
    from pgq_client.errors import JobqError

    assert issubclass(EmbeddedError, JobqError)
    with pytest.raises(EmbeddedError, match="cannot create the jobq data directory"):
        get_embedded_dsn(Path("/proc/jobq-cannot-be-here"))


# --------------------------------------------------------------------------------------
# jobq embedded ...
# --------------------------------------------------------------------------------------


def _jobq(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgq_client", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )


@pytest.mark.parametrize("placement", ["after", "before"])
def test_every_embedded_subcommand_takes_home_before_or_after_its_name(
    jobq_home: Path, placement: str
) -> None:
    """JOBQ_HOME points at a decoy: a command that ignored --home would act on it instead."""
    decoy = jobq_home / "decoy"
    env = _env(jobq_home, JOBQ_HOME=str(decoy))
    home = ["--home", str(jobq_home)]

    def run(command: str, *rest: str) -> subprocess.CompletedProcess[str]:
        where = [command, *home] if placement == "after" else [*home, command]
        return _jobq("embedded", *where, *rest, env=env)

    pgdata = jobq_home / "pgdata"
    assert _down(run("status")) == f"embedded PostgreSQL at {pgdata} (database jobq): not created\n"
    dsn = _ok(run("dsn")).strip()
    assert f"host={pgdata} " in dsn and "dbname=jobq" in dsn
    [postmaster] = _postmasters(pgdata)
    status = _ok(run("status")).splitlines()
    assert status[0].endswith(f"(database jobq): running (pid {postmaster})")
    assert status[1] == dsn
    psql = _ok(run("psql", "-X", "-A", "-t", "-c", "SELECT current_database()"))
    assert psql.strip() == "jobq"
    assert re.match(
        rf"stopped embedded PostgreSQL \d+ at {re.escape(str(pgdata))} ", _ok(run("stop"))
    )
    assert _postmasters(pgdata) == []
    assert _down(run("status")).strip().endswith(": stopped")
    refused = run("reset")
    assert refused.returncode == 2 and "add --yes" in refused.stderr
    assert (pgdata / "PG_VERSION").exists()
    assert _ok(run("reset", "--yes")) == f"deleted {pgdata}\n"
    assert not pgdata.exists()
    assert not decoy.exists()


def test_python_m_pgq_client_embedded_is_jobq_embedded(jobq_home: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pgq_client.embedded", "status", "--home", str(jobq_home)],
        env=_env(jobq_home / "decoy"),
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )
    assert (
        _down(result)
        == f"embedded PostgreSQL at {jobq_home / 'pgdata'} (database jobq): not created\n"
    )


# --------------------------------------------------------------------------------------
# The demo
# --------------------------------------------------------------------------------------


DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.py"


def _run_demo(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(DEMO)],
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )


def _story(output: str) -> str:
    """The demo's output without what changes from run to run (ids, times)."""
    output = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "<id>", output)
    output = re.sub(r"\d{4}-\d\d-\d\d[T ][\d:.]+(\+\d\d(:\d\d)?|Z)?", "<time>", output)
    return re.sub(r"\d+(\.\d+)?\s?(s|ms)\b", "<duration>", output)


def test_demo_runs_end_to_end_on_the_embedded_database_and_reruns_the_same(
    jobq_home: Path,
) -> None:
    started = time.monotonic()
    first = _run_demo(_env(jobq_home))
    elapsed = time.monotonic() - started
    out = _ok(first)
    assert "using embedded PostgreSQL" in out
    assert "dead_letter" in out
    assert "jobq dead-letter requeue" in out
    assert "jobq_requeue_dead_letter" in out
    assert elapsed < 60, f"the demo took {elapsed:.1f}s"

    second = _ok(_run_demo(_env(jobq_home)))
    assert _story(second) == _story(out), "a rerun must tell the same story"


def test_demo_uses_jobq_dsn_when_set(dsn: str, jobq_home: Path) -> None:
    out = _ok(_run_demo(_env(jobq_home, JOBQ_DSN=dsn)))
    assert "dead_letter" in out
    assert "embedded" not in out.splitlines()[0]
    assert not (jobq_home / "pgdata").exists(), "with JOBQ_DSN the embedded server stays off"


REPO = Path(__file__).resolve().parents[2]


def test_demo_hints_work_as_printed_from_a_shell_without_the_venv(jobq_home: Path) -> None:
    """`make demo` runs the venv's Python in the repository; the user's shell has not
    necessarily activated the venv. Every command the demo prints must run as printed there."""
    venv_bin = str(Path(sys.executable).parent)
    env = _env(jobq_home, PWD=str(REPO))
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p != venv_bin)
    demo = subprocess.run(
        [sys.executable, str(DEMO)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUBPROCESS_TIMEOUT,
        check=False,
    )
    out = _ok(demo)
    [requeue] = [line.strip() for line in out.splitlines() if " dead-letter requeue " in line]
    jobq = requeue.split(" dead-letter requeue ")[0]
    assert jobq != "jobq", "jobq is not on this shell's PATH"
    hints = [line.strip() for line in out.split("Look around:")[1].splitlines()]
    hints = [line for line in hints if line.startswith(jobq + " ")]
    assert len(hints) == 6, out

    def shell(line: str, stdin: str = "") -> str:
        result = subprocess.run(
            ["bash", "-c", line],
            cwd=REPO,
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=SUBPROCESS_TIMEOUT,
            check=False,
        )
        return _ok(result)

    # The requeue of step 5 is shown while the job is a dead letter; the demo then requeues
    # it itself, so make it one again.
    job_id = shlex.split(requeue)[-3]
    with psycopg.connect(get_embedded_dsn(jobq_home), autocommit=True) as conn:
        conn.execute(
            "UPDATE jobq_demo.jobq_jobs_history SET status = 'dead_letter' WHERE id = %s::uuid",
            (job_id,),
        )
        jobs = conn.execute("SELECT count(*) FROM jobq_demo.jobq_all_jobs").fetchone()
    # the story's jobs, one per line of the demo's step 1
    assert jobs is not None and jobs[0] == 8
    assert shell(requeue).strip() == f"requeued {job_id}"

    stats, dead, web, psql_c, psql, stop = hints
    assert "send_email  pending" in shell(stats)
    assert re.search(r"thumbnail +demo +failed +1/5", shell(dead))
    # the dashboard, on a free port (8080 may be taken here), shows the demo's jobs
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = web.split("#")[0].strip() + f" --bind 127.0.0.1:{port}"
    server = subprocess.Popen(
        ["bash", "-c", f"exec {command}"], cwd=REPO, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + SUBPROCESS_TIMEOUT
        page = ""
        while not page and time.monotonic() < deadline:
            assert server.poll() is None, server.communicate()
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/jobs?status=failed", timeout=10
                ) as response:
                    page = response.read().decode()
            except OSError:
                time.sleep(0.2)
        assert '<tr data-id="' in page and "thumbnail" in page, page
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=SUBPROCESS_TIMEOUT)
    assert f"({jobs[0]} rows)" in shell(psql_c)
    typed = psql.split("# then:")[1].strip()
    assert "scan-corrupt.gif" in shell(psql, stdin=typed)
    assert shell(stop).startswith("stopped embedded PostgreSQL")
    assert _postmasters(jobq_home / "pgdata") == []

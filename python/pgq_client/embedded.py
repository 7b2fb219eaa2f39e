"""The embedded PostgreSQL that jobq starts for itself when no database is given
(docs/embedded.md): :func:`start` starts (or reuses) a server of the ``pgserver`` package in a
per-user data directory, on a Unix socket in that directory only, creates and migrates the
database ``jobq`` in it and returns its DSN. The server outlives the process that started it
and is shared by every jobq command of the user; ``jobq embedded`` manages it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

from pgq_client import _sql
from pgq_client.errors import JobqError

__all__ = [
    "DATABASE", "EmbeddedError", "EmbeddedStatus", "describe_embedded", "embedded_home",
    "embedded_status", "get_embedded_dsn", "psql_path", "reset_embedded", "start",
    "stop_embedded",
]

logger = logging.getLogger("pgq_client.embedded")

DATABASE = "jobq"
SUPERUSER = "postgres"  # the role that pgserver's initdb creates
ROOT_RUNS_AS = "pgserver"  # the system user pgserver runs the server as, for root
INSTALL_HINT = "pip install pgserver (from a jobq checkout: pip install '.[embedded]')"
_STOP_TIMEOUT = 60.0
# sun_path holds 104 bytes with its NUL on macOS (108 on Linux).
_SOCKET_PATH_MAX = 103


class EmbeddedError(JobqError):
    """The embedded database cannot be provided; the message says why and what to do."""


def embedded_home() -> Path:
    """Directory that holds the embedded data (``pgdata``) and its lock file."""
    configured = os.environ.get("JOBQ_HOME")
    if configured:
        return Path(configured).expanduser()
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # Not under /root: the unprivileged server user must be able to reach it.
        return Path("/var/lib/jobq")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "jobq"
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "jobq"


def _pgdata(home: Path | None) -> Path:
    return (Path(home).expanduser() if home is not None else embedded_home()).resolve() / "pgdata"


def _pgserver() -> ModuleType:
    try:
        with warnings.catch_warnings():
            # Its import asks platformdirs for a runtime directory, which warns on every
            # command where XDG_RUNTIME_DIR is unset (containers, CI, ssh sessions).
            warnings.simplefilter("ignore")
            import pgserver
    except ImportError as exc:
        raise EmbeddedError(
            f"the embedded PostgreSQL needs the pgserver package ({exc}): {INSTALL_HINT}; "
            "or pass --dsn / set JOBQ_DSN to use a PostgreSQL server you already have"
        ) from None
    # At INFO it logs every command it runs with its whole output.
    logging.getLogger("pgserver").setLevel(logging.WARNING)
    runs: Any = pgserver.postgres_server
    if not hasattr(runs.pg_ctl, "drops_groups"):
        # As root it runs initdb and pg_ctl with subprocess's user= alone, so the server would
        # keep root's group (gid 0): give it its user's group and no other.
        for name in ("initdb", "pg_ctl"):
            setattr(runs, name, _drop_groups(getattr(runs, name)))
    return pgserver


def _drop_groups(command: Callable[..., str]) -> Callable[..., str]:
    def run(args: list[str], pgdata: Path | None = None, **kwargs: Any) -> str:
        if kwargs.get("user") is not None:
            import pwd

            kwargs.update(group=pwd.getpwnam(kwargs["user"]).pw_gid, extra_groups=[])
        return command(args, pgdata=pgdata, **kwargs)

    run.drops_groups = True  # type: ignore[attr-defined]
    return run


@contextlib.contextmanager
def _locked(pgdata: Path) -> Iterator[None]:
    """An exclusive lock beside the data, so that commands started at once create, start,
    migrate and stop one server (pgserver's lock covers only the start)."""
    if sys.platform == "win32":
        raise EmbeddedError("the embedded database needs a POSIX system; pass --dsn")
    import fcntl

    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(pgdata.parent / "embedded.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise EmbeddedError(
            f"cannot create the jobq data directory {pgdata.parent}: {exc} "
            "(set JOBQ_HOME to a writable directory, or pass --dsn)"
        ) from exc
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _pid_file(pgdata: Path) -> list[str]:
    try:
        return (pgdata / "postmaster.pid").read_text().splitlines()
    except OSError:
        return []


def _postmaster_pid(pgdata: Path) -> int | None:
    """The pid of the live server of ``pgdata``: not a zombie, and started on ``pgdata`` (not
    a process that got the pid after a reboot), which pgserver's own check does not tell."""
    _pgserver()
    import psutil

    try:
        pid = int(_pid_file(pgdata)[0])
        process = psutil.Process(pid)
        if process.status() != psutil.STATUS_ZOMBIE and any(
            os.path.realpath(arg) == str(pgdata) for arg in process.cmdline()[1:]
        ):
            return pid
    except (IndexError, ValueError, psutil.Error):
        pass
    return None


def _dsn(pgdata: Path) -> str:
    lines = _pid_file(pgdata)
    # postmaster.pid's 4th and 5th lines: the port and the socket directory.
    port, socket_dir = (lines[3], lines[4]) if len(lines) >= 5 else ("5432", str(pgdata))
    return make_conninfo(host=socket_dir, port=port, user=SUPERUSER, dbname=DATABASE)


def _bin_dir(pgserver: ModuleType) -> tuple[Path, bool]:
    """Where the PostgreSQL programs are: ``JOBQ_PG_BIN`` (True), else pgserver's own."""
    override = os.environ.get("JOBQ_PG_BIN")
    if override:
        return Path(override).expanduser().absolute(), True
    return Path(pgserver.postgres_server.POSTGRES_BIN_PATH), False


def _check_startable(pgserver: ModuleType, pgdata: Path) -> None:
    """Say clearly what pgserver would otherwise fail on, or silently work around."""
    if len(os.fsencode(pgdata / ".s.PGSQL.5432")) > _SOCKET_PATH_MAX:
        # pgserver would put the socket elsewhere, in a directory other users can enter.
        raise EmbeddedError(
            f"{pgdata} is too long a path for the server's Unix socket; set JOBQ_HOME to a "
            "shorter one"
        )
    bin_dir, chosen = _bin_dir(pgserver)
    source = f"the PostgreSQL in JOBQ_PG_BIN={bin_dir}" if chosen else "pgserver's PostgreSQL"
    # pgserver runs initdb and pg_ctl from the directory in this variable.
    pgserver._commands.POSTGRES_BIN_PATH = bin_dir
    try:
        version = subprocess.run(
            [str(bin_dir / "postgres"), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
        major = re.search(r"\(PostgreSQL\) (\d+)", version)
        if major is None:
            raise OSError(f"unexpected output of postgres --version: {version!r}")
    except (OSError, subprocess.SubprocessError) as exc:
        detail = str(getattr(exc, "stderr", "") or exc).strip()
        instead = (
            f"point JOBQ_PG_BIN at another or unset it to use pgserver's ({INSTALL_HINT})"
            if chosen
            else "set JOBQ_PG_BIN to the bin directory of a PostgreSQL installed on this machine"
            " (Debian: /usr/lib/postgresql/NN/bin)"
        )
        raise EmbeddedError(
            f"no usable PostgreSQL for the embedded database: {source} does not run on this "
            f"machine ({detail}); {instead}, or pass --dsn / set JOBQ_DSN"
        ) from None
    made_by = (pgdata / "PG_VERSION").read_text().strip() if _initialized(pgdata) else None
    if made_by is not None and made_by != major[1]:
        raise EmbeddedError(
            f"the embedded data in {pgdata} was made by PostgreSQL {made_by}, and {source} is "
            f"PostgreSQL {major[1]}: set JOBQ_PG_BIN to a PostgreSQL {made_by} bin directory to "
            "keep its jobs, or delete them with `jobq embedded reset --yes`"
        )
    if os.geteuid() == 0 and made_by is not None:
        # Data that an earlier jobq ran as another user (postgres, jobq) becomes pgserver's.
        owner = pgserver.utils.ensure_user_exists(ROOT_RUNS_AS)
        if pgdata.stat().st_uid != owner.pw_uid:
            for directory, _, files in os.walk(pgdata):
                for name in (directory, *(os.path.join(directory, f) for f in files)):
                    os.lchown(name, owner.pw_uid, owner.pw_gid)


def _initialized(pgdata: Path) -> bool:
    return (pgdata / "PG_VERSION").exists()


def _start(pgdata: Path) -> None:
    """Pre: the lock is held. Post: the server of ``pgdata`` runs."""
    if _postmaster_pid(pgdata) is not None:
        return
    pgserver = _pgserver()
    lines = _pid_file(pgdata)
    if lines:
        # postgres, too, refuses to start while either lock file names a live pid.
        logger.info("removing the stale postmaster.pid of %s", pgdata)
        (pgdata / "postmaster.pid").unlink(missing_ok=True)
        if len(lines) >= 5:
            Path(lines[4], f".s.PGSQL.{lines[3]}.lock").unlink(missing_ok=True)
    _check_startable(pgserver, pgdata)
    if not _initialized(pgdata):
        logger.info("creating the embedded PostgreSQL cluster in %s", pgdata)
        pgdata.mkdir(mode=0o700, exist_ok=True)
    logger.info("starting the embedded PostgreSQL in %s", pgdata)
    try:
        # Not get_server(): it caches servers per process, including one stopped since.
        pgserver.PostgresServer(pgdata, cleanup_mode=None)
    except (OSError, subprocess.SubprocessError, AssertionError) as exc:
        log = (pgdata / "log").read_text(errors="replace") if (pgdata / "log").exists() else ""
        tail = "\n".join(log.splitlines()[-15:]) or "(no server log)"
        raise EmbeddedError(
            f"the embedded PostgreSQL in {pgdata} did not start ({exc!r}); its log ends with:"
            f"\n{tail}\n`jobq embedded reset --yes` deletes the data so that it is recreated"
        ) from None


def start(home: Path | None = None, *, migrate: bool = True) -> str:
    """Start (or reuse) the embedded PostgreSQL, migrate its ``jobq`` database, return its DSN
    (``Queue(start())``, or ``Queue.embedded()``). ``home`` overrides ``$JOBQ_HOME``.
    :class:`EmbeddedError` says what to install or change."""
    from pgq_client.installer.files import MigrationError
    from pgq_client.installer.runner import migrate as run_migrations

    pgdata = _pgdata(home)
    with _locked(pgdata):
        _start(pgdata)
        dsn = _dsn(pgdata)
        try:
            with psycopg.connect(
                make_conninfo(dsn, dbname="postgres"), autocommit=True,
                **_sql.connect_kwargs(dsn)
            ) as conn:
                found = conn.execute(
                    "SELECT FROM pg_catalog.pg_database"
                    " WHERE datname OPERATOR(pg_catalog.=) %s::pg_catalog.name",
                    (DATABASE,),
                )
                if found.fetchone() is None:
                    logger.info("creating database %s in the embedded server", DATABASE)
                    conn.execute(f'CREATE DATABASE "{DATABASE}"')
            applied = run_migrations(dsn) if migrate else []
        except (MigrationError, psycopg.Error) as exc:
            raise EmbeddedError(
                f"cannot prepare the embedded database in {pgdata}: {exc}. It is meant to be "
                "disposable: `jobq embedded reset --yes` deletes it (and its jobs) so that the "
                "next command recreates it"
            ) from exc
    if applied:
        logger.info("embedded database: applied migrations %s", ", ".join(applied))
    return dsn


# The name the CLI uses.
get_embedded_dsn = start


def describe_embedded(home: Path | None = None) -> str:
    """One line naming the embedded database, for messages; starts nothing."""
    pgdata = _pgdata(home)
    version = "PostgreSQL"
    if _initialized(pgdata):
        version += " " + (pgdata / "PG_VERSION").read_text().strip()
    return f"embedded {version} at {pgdata} (database {DATABASE})"


@dataclasses.dataclass(frozen=True)
class EmbeddedStatus:
    """What :func:`embedded_status` found."""

    pgdata: Path
    initialized: bool
    running: bool
    pid: int | None
    dsn: str


def embedded_status(home: Path | None = None) -> EmbeddedStatus:
    """Whether the embedded data exists and its server runs; starts nothing."""
    pgdata = _pgdata(home)
    pid = _postmaster_pid(pgdata)
    return EmbeddedStatus(pgdata, _initialized(pgdata), pid is not None, pid, _dsn(pgdata))


def stop_embedded(home: Path | None = None, *, timeout: float = _STOP_TIMEOUT) -> bool:
    """Stop the embedded server as ``pg_ctl stop -m fast`` does, needing no PostgreSQL
    programs (sessions end, data stays); whether it ran."""
    pgdata = _pgdata(home)
    if not pgdata.exists():
        return False
    with _locked(pgdata):
        pid = _postmaster_pid(pgdata)
        if pid is None:
            return False
        logger.info("stopping the embedded PostgreSQL (pid %s) in %s", pid, pgdata)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + timeout
        # Its pid file goes near the end; then the process exits (a zombie where nothing reaps
        # it counts as gone). A start right after must not meet it still attached.
        while _postmaster_pid(pgdata) == pid or not _gone(pid):
            if time.monotonic() > deadline:
                raise EmbeddedError(f"the embedded server (pid {pid}) did not stop in {timeout}s")
            time.sleep(0.05)
        return True


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has exited (a zombie has: only its parent can reap it)."""
    import psutil  # pgserver's, imported by _postmaster_pid before

    try:
        return psutil.Process(pid).status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.NoSuchProcess:
        return True
    except psutil.AccessDenied:
        return False  # alive, another user's


def reset_embedded(home: Path | None = None) -> bool:
    """Stop the embedded server and delete its data, every job in it; whether there was any."""
    pgdata = _pgdata(home)
    stop_embedded(home)
    if not pgdata.exists():
        return False
    with _locked(pgdata):
        logger.info("deleting %s", pgdata)
        shutil.rmtree(pgdata)
    return True


def psql_path() -> str | None:
    """pgserver's psql (the server's version), else the one on PATH."""
    with contextlib.suppress(EmbeddedError):
        bundled = _bin_dir(_pgserver())[0] / "psql"
        if bundled.is_file():
            return str(bundled)
    return shutil.which("psql")


if __name__ == "__main__":
    # `python -m pgq_client.embedded ARGS` is `jobq embedded ARGS`.
    from pgq_client.__main__ import run

    run(["embedded", *sys.argv[1:]])

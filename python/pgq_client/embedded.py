"""The embedded PostgreSQL that jobq starts for itself when no database is given.

With no ``--dsn``, ``JOBQ_DSN`` or ``DATABASE_URL``, the CLI calls :func:`get_embedded_dsn`:
it starts (or reuses) a private PostgreSQL cluster kept in a per-user data directory, creates
the database ``jobq`` in it, applies the migrations and returns a connection string.

* Where: ``$JOBQ_HOME/pgdata``; without ``JOBQ_HOME`` ``$XDG_DATA_HOME/jobq/pgdata``
  (``~/.local/share/jobq/pgdata``; ``~/Library/Application Support/jobq/pgdata`` on macOS),
  and ``/var/lib/jobq/pgdata`` for root.
* Which PostgreSQL: ``$JOBQ_PG_BIN`` if set, else the one bundled with the ``pgserver``
  wheel (``pip install 'pgq-client[embedded]'``), else one found on ``PATH`` or in the usual
  install directories (``/usr/lib/postgresql/*/bin``, ...).
* Root: ``initdb`` and ``postgres`` refuse to run as root, so the cluster is owned by and run
  as an unprivileged user: ``$JOBQ_EMBEDDED_USER``, else the owner of an existing cluster,
  else the system user ``postgres`` if there is one, else a system user ``jobq`` created
  with ``useradd``.
* Lifetime: the server is started detached and keeps running after the Python process exits,
  so ``jobq enqueue`` and a later ``jobq worker`` see the same data. Stop it with
  ``python -m pgq_client.embedded stop`` (or :func:`stop_embedded`).
* Concurrency: creating, starting, migrating and stopping happen under an inter-process file
  lock (``$JOBQ_HOME/embedded.lock``), so commands started at once share one server.
* Network: none. The server listens on a Unix socket only (``listen_addresses = ''``), in a
  directory only its owner can enter; authentication is ``trust`` for that socket alone.

This is a convenience for trying jobq and for development. Production passes ``--dsn``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import importlib.util
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from pgq_client.errors import JobqError

__all__ = [
    "DATABASE",
    "EmbeddedError",
    "EmbeddedStatus",
    "describe_embedded",
    "embedded_home",
    "embedded_status",
    "get_embedded_dsn",
    "main",
    "reset_embedded",
    "stop_embedded",
]

logger = logging.getLogger("pgq_client.embedded")

#: The database jobq uses inside the embedded cluster.
DATABASE = "jobq"
#: The superuser role ``initdb`` creates (a PostgreSQL role, not a system user).
SUPERUSER = "postgres"
#: Only names the socket file (``.s.PGSQL.5432``): the server opens no TCP port, and its
#: socket directory is private, so this cannot clash with another server.
PORT = 5432

_LOCK_TIMEOUT = 120.0  # seconds to wait for another process creating/starting the server
_START_TIMEOUT = 60  # seconds for pg_ctl start (includes crash recovery after an unclean stop)
_STOP_TIMEOUT = 60.0
_SOCKET_PATH_MAX = 100  # sun_path is 108 bytes on Linux, 104 on macOS; keep a margin
_LOG_MAX_BYTES = 10 * 1024 * 1024
_DEFAULT_RUN_AS = "jobq"
_CONF_NAME = "jobq.conf"
_REQUIRED_PROGRAMS = ("initdb", "pg_ctl", "postgres")


class EmbeddedError(JobqError):
    """The embedded database cannot be provided; the message says why and what to do."""


# --------------------------------------------------------------------------------------
# Locations
# --------------------------------------------------------------------------------------


def embedded_home() -> Path:
    """Directory that holds the embedded cluster (``pgdata``) and its lock file."""
    configured = os.environ.get("JOBQ_HOME")
    if configured:
        return Path(configured).expanduser().absolute()
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        # Not /root/...: the unprivileged server user would need to traverse /root.
        return Path("/var/lib/jobq")
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "jobq"
    xdg = os.environ.get("XDG_DATA_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "jobq"


@dataclasses.dataclass(frozen=True)
class _Paths:
    home: Path

    @property
    def pgdata(self) -> Path:
        return self.home / "pgdata"

    @property
    def lock_file(self) -> Path:
        return self.home / "embedded.lock"

    @property
    def log_file(self) -> Path:
        return self.pgdata / "server.log"

    @property
    def pid_file(self) -> Path:
        return self.pgdata / "postmaster.pid"

    @property
    def socket_dir(self) -> Path:
        """The pgdata directory itself, unless the socket path would be too long there."""
        if len(os.fsencode(self.pgdata / f".s.PGSQL.{PORT}")) <= _SOCKET_PATH_MAX:
            return self.pgdata
        digest = hashlib.sha256(os.fsencode(self.pgdata)).hexdigest()[:12]
        # A fixed /tmp, not $TMPDIR: every process must agree on where the socket is.
        return Path("/tmp") / f"jobq-{digest}"

    def dsn(self, dbname: str = DATABASE) -> str:
        return make_conninfo(host=str(self.socket_dir), port=PORT, user=SUPERUSER, dbname=dbname)


def _paths(home: Path | None) -> _Paths:
    return _Paths(Path(home).absolute() if home is not None else embedded_home())


# --------------------------------------------------------------------------------------
# The inter-process lock
# --------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(paths: _Paths, timeout: float = _LOCK_TIMEOUT) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``embedded.lock`` (released if the process dies)."""
    if sys.platform == "win32":
        raise EmbeddedError(
            "the embedded database is not supported on Windows; "
            "pass --dsn or set JOBQ_DSN to use a PostgreSQL server"
        )
    import fcntl

    _make_home(paths.home)
    fd = os.open(paths.lock_file, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited:
                    logger.info("waiting for another jobq process using %s", paths.lock_file)
                    waited = True
                if time.monotonic() > deadline:
                    raise EmbeddedError(
                        f"timed out after {timeout:.0f}s waiting for the lock {paths.lock_file} "
                        "held by another jobq process starting the embedded database"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _make_home(home: Path) -> None:
    if home.is_dir():
        return
    try:
        # 0755 for root: the unprivileged server user must traverse it.
        mode = 0o755 if _is_root() else 0o700
        home.mkdir(parents=True, exist_ok=True, mode=mode)
    except OSError as exc:
        raise EmbeddedError(
            f"cannot create the jobq data directory {home}: {exc} "
            "(set JOBQ_HOME to a writable directory, or pass --dsn)"
        ) from exc


# --------------------------------------------------------------------------------------
# Running as an unprivileged user when we are root
# --------------------------------------------------------------------------------------


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@dataclasses.dataclass(frozen=True)
class _RunAs:
    name: str
    uid: int
    gid: int


def _server_user(paths: _Paths) -> _RunAs | None:
    """The user to run initdb/pg_ctl as: None (ourselves) unless we are root."""
    if not _is_root():
        return None
    import pwd

    name = os.environ.get("JOBQ_EMBEDDED_USER")
    if not name and paths.pgdata.exists():
        owner = paths.pgdata.stat().st_uid
        if owner != 0:
            with contextlib.suppress(KeyError):
                name = pwd.getpwuid(owner).pw_name
    if not name:
        try:
            pwd.getpwnam("postgres")
            name = "postgres"
        except KeyError:
            name = _DEFAULT_RUN_AS
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        _create_system_user(name)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            raise EmbeddedError(
                f"could not create the system user {name!r} for the embedded PostgreSQL; "
                "create an unprivileged user and set JOBQ_EMBEDDED_USER to it, run jobq as a "
                "regular user, or pass --dsn"
            ) from None
    if entry.pw_uid == 0:
        raise EmbeddedError(f"JOBQ_EMBEDDED_USER={name} is root; PostgreSQL refuses to run as root")
    return _RunAs(name=name, uid=entry.pw_uid, gid=entry.pw_gid)


def _create_system_user(name: str) -> None:
    logger.warning(
        "running as root: creating system user %r to own and run the embedded PostgreSQL "
        "(initdb refuses to run as root)",
        name,
    )
    useradd = shutil.which("useradd")
    adduser = shutil.which("adduser")
    if useradd:
        cmd = [
            useradd,
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            name,
        ]
    elif adduser:  # BusyBox (Alpine)
        cmd = [adduser, "-S", "-D", "-H", name]
    else:
        raise EmbeddedError(
            f"running as root, the embedded PostgreSQL needs an unprivileged user, and there is "
            f"no user {name!r} and no useradd/adduser to create one; create a user and set "
            "JOBQ_EMBEDDED_USER to it, run jobq as a regular user, or pass --dsn"
        )
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        logger.warning("%s: %s", " ".join(cmd), (result.stderr or result.stdout).strip())


def _untraversable(path: Path, run_as: _RunAs) -> Path | None:
    """The first directory from / to ``path`` that ``run_as`` cannot enter, if any."""
    groups = {run_as.gid}
    with contextlib.suppress(Exception):
        import grp
        import pwd

        user_name = pwd.getpwuid(run_as.uid).pw_name
        groups.update(g.gr_gid for g in grp.getgrall() if user_name in g.gr_mem)
    current = Path(path.anchor)
    for part in path.parts[1:]:
        current = current / part
        if not current.exists():
            break
        st = os.stat(current)
        if st.st_uid == run_as.uid:
            ok = bool(st.st_mode & 0o100)
        elif st.st_gid in groups:
            ok = bool(st.st_mode & 0o010)
        else:
            ok = bool(st.st_mode & 0o001)
        if not ok:
            return current
    return None


# --------------------------------------------------------------------------------------
# Finding PostgreSQL binaries
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Binaries:
    bin_dir: Path
    source: str  # "JOBQ_PG_BIN", "pgserver", "PATH", "system"

    def __getitem__(self, program: str) -> str:
        return str(self.bin_dir / program)


_INSTALL_HINT = (
    "install the bundled server with: pip install 'pgq-client[embedded]' (it brings pgserver), "
    "or install the PostgreSQL server binaries (Debian/Ubuntu: apt-get install postgresql; "
    "Fedora/RHEL: dnf install postgresql-server; macOS: brew install postgresql), "
    "or pass --dsn / set JOBQ_DSN to use a PostgreSQL server you already have"
)


def _pgserver_bin_dir() -> Path | None:
    """pgserver's bundled ``pginstall/bin``, located without importing pgserver (its import
    has side effects: platformdirs warnings, psutil)."""
    try:
        spec = importlib.util.find_spec("pgserver")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "pginstall" / "bin"
        if candidate.is_dir():
            return candidate
    return None


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", str(path))) or (0,)


def _candidate_bin_dirs() -> list[_Binaries]:
    override = os.environ.get("JOBQ_PG_BIN")
    if override:
        return [_Binaries(Path(override).expanduser().absolute(), "JOBQ_PG_BIN")]
    found: list[_Binaries] = []
    bundled = _pgserver_bin_dir()
    if bundled is not None:
        found.append(_Binaries(bundled, "pgserver"))
    on_path = shutil.which("pg_ctl")
    if on_path:
        found.append(_Binaries(Path(on_path).resolve().parent, "PATH"))
    patterns = (
        "/usr/lib/postgresql/*/bin",  # Debian, Ubuntu
        "/usr/pgsql-*/bin",  # PGDG RPMs
        "/usr/local/pgsql/bin",  # source builds
        "/opt/homebrew/opt/postgresql*/bin",  # Homebrew (Apple silicon)
        "/usr/local/opt/postgresql*/bin",  # Homebrew (Intel)
        "/Applications/Postgres.app/Contents/Versions/*/bin",
    )
    for pattern in patterns:
        anchor = Path("/")
        for match in sorted(anchor.glob(pattern.lstrip("/")), key=_version_key, reverse=True):
            found.append(_Binaries(match, "system"))
    unique: list[_Binaries] = []
    seen: set[Path] = set()
    for item in found:
        resolved = item.bin_dir.resolve()
        if resolved not in seen:
            seen.add(resolved)
            unique.append(item)
    return unique


def _major_version(binaries: _Binaries) -> int | None:
    """Major version reported by ``postgres --version`` (None if it does not run)."""
    try:
        out = subprocess.run(
            [binaries["postgres"], "--version"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"\(PostgreSQL\)\s+(\d+)", out)
    return int(match.group(1)) if match else None


def _cluster_major(paths: _Paths) -> int | None:
    try:
        return int((paths.pgdata / "PG_VERSION").read_text().strip())
    except (OSError, ValueError):
        return None


def _select_binaries(paths: _Paths, run_as: _RunAs | None) -> _Binaries:
    """The first usable PostgreSQL whose major version matches an existing cluster."""
    wanted = _cluster_major(paths)
    rejected: list[str] = []
    candidates = _candidate_bin_dirs()
    for binaries in candidates:
        missing = [p for p in _REQUIRED_PROGRAMS if not (binaries.bin_dir / p).is_file()]
        if missing:
            rejected.append(f"{binaries.bin_dir} ({binaries.source}): no {', '.join(missing)}")
            continue
        if run_as is not None:
            blocked = _untraversable(binaries.bin_dir / "postgres", run_as)
            if blocked is not None:
                rejected.append(
                    f"{binaries.bin_dir} ({binaries.source}): user {run_as.name} cannot "
                    f"enter {blocked}"
                )
                continue
        major = _major_version(binaries)
        if major is None:
            rejected.append(f"{binaries.bin_dir} ({binaries.source}): postgres does not run")
            continue
        if wanted is not None and major != wanted:
            rejected.append(
                f"{binaries.bin_dir} ({binaries.source}): PostgreSQL {major}, "
                f"but the cluster was created by PostgreSQL {wanted}"
            )
            continue
        logger.debug("using PostgreSQL %s from %s (%s)", major, binaries.bin_dir, binaries.source)
        return binaries
    if not candidates:
        raise EmbeddedError(f"no PostgreSQL found for the embedded database: {_INSTALL_HINT}")
    detail = "; ".join(rejected)
    if wanted is not None:
        raise EmbeddedError(
            f"no usable PostgreSQL {wanted} for the embedded cluster in {paths.pgdata} "
            f"(tried: {detail}). Install PostgreSQL {wanted}, or set JOBQ_PG_BIN to its bin "
            "directory, or remove the cluster with `python -m pgq_client.embedded reset`"
        )
    raise EmbeddedError(
        f"no usable PostgreSQL for the embedded database (tried: {detail}); {_INSTALL_HINT}"
    )


# --------------------------------------------------------------------------------------
# Running programs and the server
# --------------------------------------------------------------------------------------


def _child_env() -> dict[str, str]:
    # libpq/pg_ctl read PG* variables (PGDATA, PGPORT, PGOPTIONS...): none of them applies here.
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    env["LC_MESSAGES"] = "C"
    return env


def _run(
    cmd: Sequence[str],
    run_as: _RunAs | None,
    *,
    timeout: float,
    new_session: bool = False,
) -> str:
    """Run a PostgreSQL program (as ``run_as`` when root); return its output, raise on error."""
    logger.debug("running %s%s", " ".join(cmd), f" as {run_as.name}" if run_as else "")
    # Output goes to a file, not a pipe: `pg_ctl start` leaves a daemon behind, and a pipe
    # inherited by it would keep us waiting for EOF.
    with tempfile.TemporaryFile("w+") as out:
        try:
            proc = subprocess.run(
                list(cmd),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd="/",
                env=_child_env(),
                timeout=timeout,
                start_new_session=new_session,
                umask=0o077,
                check=False,
                user=run_as.uid if run_as else None,
                group=run_as.gid if run_as else None,
                extra_groups=[] if run_as else None,
            )
        except subprocess.TimeoutExpired as exc:
            raise EmbeddedError(
                f"{Path(cmd[0]).name} did not finish within {timeout:.0f}s"
            ) from exc
        except OSError as exc:
            raise EmbeddedError(f"cannot run {cmd[0]}: {exc}") from exc
        out.seek(0)
        output = out.read()
    if proc.returncode != 0:
        raise EmbeddedError(
            f"{Path(cmd[0]).name} failed (exit {proc.returncode}): {output.strip()}"
        )
    return output


def _ping(paths: _Paths, dbname: str = "postgres") -> bool:
    """Whether our server accepts connections on its socket (and is really ours)."""
    socket = paths.socket_dir / f".s.PGSQL.{PORT}"
    if not socket.exists():
        return False
    try:
        with psycopg.connect(paths.dsn(dbname), connect_timeout=5, autocommit=True) as conn:
            row = conn.execute("SELECT current_setting('data_directory')").fetchone()
    except psycopg.Error as exc:
        # Up, but every connection slot is taken: it is running, starting it again won't help.
        return exc.sqlstate == "53300"
    if row is None or Path(str(row[0])).resolve() != paths.pgdata.resolve():
        raise EmbeddedError(
            f"the socket {socket} belongs to a server for {row[0] if row else '?'}, "
            f"not {paths.pgdata}; stop that server or set JOBQ_HOME elsewhere"
        )
    return True


def _read_pid_file(path: Path) -> int | None:
    """The pid on the first line of a postmaster.pid or socket lock file."""
    try:
        return int(path.read_text().splitlines()[0].strip())
    except (OSError, IndexError, ValueError):
        return None


def _read_pid(paths: _Paths) -> int | None:
    return _read_pid_file(paths.pid_file)


def _is_our_postmaster(pid: int, paths: _Paths) -> bool | None:
    """True/False if we can tell whether ``pid`` is the postmaster of this pgdata; None if
    we cannot tell (no /proc and no ps)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, owned by someone else
    cmdline: str | None = None
    proc = Path(f"/proc/{pid}/cmdline")
    if proc.exists():
        with contextlib.suppress(OSError):
            cmdline = proc.read_bytes().replace(b"\0", b" ").decode(errors="replace")
    else:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            cmdline = subprocess.run(
                ["ps", "-o", "command=", "-p", str(pid)],
                capture_output=True,
                text=True,
                timeout=10,
                check=False,
            ).stdout
    if cmdline is None:
        return None
    # An empty cmdline is a zombie; anything else must name our pgdata (pg_ctl passes -D).
    return "postgres" in cmdline and str(paths.pgdata) in cmdline


def _private_socket_dir(paths: _Paths, run_as: _RunAs | None) -> None:
    """Create the socket directory when it is not pgdata: owned by the server user, 0700."""
    directory = paths.socket_dir
    if directory == paths.pgdata:
        return
    uid = run_as.uid if run_as else os.getuid()
    try:
        directory.mkdir(mode=0o700)
        if run_as is not None:
            os.chown(directory, run_as.uid, run_as.gid)
    except FileExistsError:
        pass
    st = directory.lstat()
    if not directory.is_dir() or directory.is_symlink() or st.st_uid != uid or st.st_mode & 0o077:
        raise EmbeddedError(
            f"the socket directory {directory} exists but is not a private directory of uid "
            f"{uid}; remove it or set JOBQ_HOME to a shorter path"
        )


def _initdb(paths: _Paths, binaries: _Binaries, run_as: _RunAs | None) -> None:
    """Create the cluster in a scratch directory and rename it into place, so a crash or a
    failure never leaves a half-made pgdata behind."""
    if paths.pgdata.exists():
        if any(paths.pgdata.iterdir()):
            raise EmbeddedError(
                f"{paths.pgdata} exists but is not a PostgreSQL data directory (no PG_VERSION); "
                "move it away or set JOBQ_HOME elsewhere"
            )
        paths.pgdata.rmdir()
    scratch = paths.home / "pgdata.initdb"
    if scratch.exists():
        shutil.rmtree(scratch)
    scratch.mkdir(mode=0o700)
    if run_as is not None:
        blocked = _untraversable(paths.home, run_as)
        if blocked is not None:
            shutil.rmtree(scratch)
            raise EmbeddedError(
                f"running as root, the embedded PostgreSQL runs as user {run_as.name} (initdb "
                f"refuses root), and that user cannot enter {blocked} to reach {paths.home}. "
                "Set JOBQ_HOME to a directory it can reach (the default for root is "
                "/var/lib/jobq), run jobq as a regular user, or pass --dsn"
            )
        os.chown(scratch, run_as.uid, run_as.gid)
    logger.info("creating the embedded PostgreSQL cluster in %s", paths.pgdata)
    try:
        _run(
            [
                binaries["initdb"],
                "-D",
                str(scratch),
                "-U",
                SUPERUSER,
                "--encoding=UTF8",
                "--no-locale",
                "--auth-local=trust",
                "--auth-host=reject",
            ],
            run_as,
            timeout=300,
        )
    except EmbeddedError:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    os.rename(scratch, paths.pgdata)
    with (paths.pgdata / "postgresql.conf").open("a") as conf:
        conf.write(
            f"\n# Added by jobq: its own settings live in {_CONF_NAME}.\n"
            f"include_if_exists = '{_CONF_NAME}'\n"
        )


def _quote_conf(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _write_conf(paths: _Paths, run_as: _RunAs | None) -> None:
    """Rewritten before every start, so a moved JOBQ_HOME gets its new socket directory."""
    text = (
        "# Written by jobq before each start of the embedded server; edits are lost.\n"
        "listen_addresses = ''\n"
        f"port = {PORT}\n"
        f"unix_socket_directories = {_quote_conf(str(paths.socket_dir))}\n"
        "unix_socket_permissions = 0700\n"
    )
    target = paths.pgdata / _CONF_NAME
    target.write_text(text)
    if run_as is not None:
        os.chown(target, run_as.uid, run_as.gid)


def _rotate_log(paths: _Paths) -> None:
    log = paths.log_file
    with contextlib.suppress(OSError):
        if log.stat().st_size > _LOG_MAX_BYTES:
            os.replace(log, log.with_name(log.name + ".1"))


def _log_tail(paths: _Paths, lines: int = 15) -> str:
    try:
        return "\n".join(paths.log_file.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def _ensure_running(paths: _Paths) -> None:
    """Pre: the lock is held. Post: our server accepts connections."""
    if _ping(paths):
        return
    deadline = time.monotonic() + _START_TIMEOUT
    # A postmaster that is still starting up (or shutting down) owns the pid file: wait for
    # it rather than start a second one. A pid file whose process is gone, a zombie or some
    # unrelated process (pid reused after a reboot) is stale.
    while (pid := _read_pid(paths)) is not None:
        ours = _is_our_postmaster(pid, paths)
        if ours is False:
            logger.info("removing stale %s (pid %s is not its server)", paths.pid_file, pid)
            paths.pid_file.unlink(missing_ok=True)
            break
        if ours is None:
            break  # cannot tell; let pg_ctl decide
        if _ping(paths):
            return
        if time.monotonic() > deadline:
            raise EmbeddedError(
                f"the embedded server (pid {pid}) in {paths.pgdata} does not accept "
                f"connections; its log ends with:\n{_log_tail(paths)}"
            )
        time.sleep(0.1)

    # The socket's lock file names the postmaster too; postgres trusts any live pid there
    # (a zombie included), so a stale one would block the start just the same.
    socket_lock = paths.socket_dir / f".s.PGSQL.{PORT}.lock"
    lock_pid = _read_pid_file(socket_lock)
    if lock_pid is not None and _is_our_postmaster(lock_pid, paths) is False:
        logger.info("removing stale %s (pid %s is not its server)", socket_lock, lock_pid)
        socket_lock.unlink(missing_ok=True)

    run_as = _server_user(paths)
    binaries = _select_binaries(paths, run_as)
    if not (paths.pgdata / "PG_VERSION").exists():
        _initdb(paths, binaries, run_as)
    _private_socket_dir(paths, run_as)
    _write_conf(paths, run_as)
    _rotate_log(paths)
    logger.info("starting the embedded PostgreSQL in %s", paths.pgdata)
    try:
        _run(
            [
                binaries["pg_ctl"],
                "start",
                "-D",
                str(paths.pgdata),
                "-l",
                str(paths.log_file),
                "-w",
                "-t",
                str(_START_TIMEOUT),
            ],
            run_as,
            timeout=_START_TIMEOUT + 15,
            new_session=True,  # detached: a Ctrl-C in the terminal must not reach it
        )
    except EmbeddedError as exc:
        raise EmbeddedError(f"{exc}\nserver log ({paths.log_file}):\n{_log_tail(paths)}") from exc
    if not _ping(paths):
        raise EmbeddedError(
            f"the embedded server in {paths.pgdata} started but does not accept connections "
            f"on {paths.socket_dir}; its log ends with:\n{_log_tail(paths)}"
        )


def _ensure_database(paths: _Paths) -> None:
    with psycopg.connect(paths.dsn("postgres"), autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)
        ).fetchone()
        if exists is None:
            logger.info("creating database %s in the embedded server", DATABASE)
            with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                conn.execute(f'CREATE DATABASE "{DATABASE}"')


def _migrate(paths: _Paths, dsn: str) -> None:
    from pgq_client.migrate import MigrationError, migrate

    try:
        applied = migrate(dsn)
    except MigrationError as exc:
        raise EmbeddedError(
            f"cannot migrate the embedded database in {paths.pgdata}: {exc}. The embedded "
            "database is meant to be disposable: `python -m pgq_client.embedded reset --yes` "
            "deletes it (and its jobs) so that it is recreated"
        ) from exc
    except psycopg.Error as exc:
        raise EmbeddedError(
            f"cannot migrate the embedded database in {paths.pgdata}: {exc}"
        ) from exc
    if applied:
        logger.info("embedded database: applied migrations %s", ", ".join(applied))


# --------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------


def get_embedded_dsn(home: Path | None = None, *, migrate: bool = True) -> str:
    """Start (or reuse) the embedded PostgreSQL, migrate its ``jobq`` database, return its DSN.

    Safe to call from several processes at once: they share one server. The server keeps
    running after this process exits. ``home`` overrides ``$JOBQ_HOME``.

    Raises :class:`EmbeddedError` with a message that says what to install or change.
    """
    paths = _paths(home)
    with _locked(paths):
        _ensure_running(paths)
        _ensure_database(paths)
        dsn = paths.dsn()
        if migrate:
            _migrate(paths, dsn)
    return dsn


def describe_embedded(home: Path | None = None) -> str:
    """One line naming the embedded database, e.g. for ``using <this>`` in the CLI.

    Starts nothing: it only looks at the data directory.
    """
    paths = _paths(home)
    major = _cluster_major(paths)
    version = f"PostgreSQL {major}" if major is not None else "PostgreSQL"
    return f"embedded {version} at {paths.pgdata} (database {DATABASE})"


@dataclasses.dataclass(frozen=True)
class EmbeddedStatus:
    """What :func:`embedded_status` found."""

    pgdata: Path
    initialized: bool
    running: bool
    pid: int | None
    dsn: str


def embedded_status(home: Path | None = None) -> EmbeddedStatus:
    """Whether the embedded cluster exists and its server runs (starts nothing)."""
    paths = _paths(home)
    running = _ping(paths)
    return EmbeddedStatus(
        pgdata=paths.pgdata,
        initialized=(paths.pgdata / "PG_VERSION").exists(),
        running=running,
        pid=_read_pid(paths) if running else None,
        dsn=paths.dsn(),
    )


def stop_embedded(home: Path | None = None, *, timeout: float = _STOP_TIMEOUT) -> bool:
    """Stop the embedded server (fast shutdown: sessions are ended, data is kept).

    Returns whether a server was running. Needs no PostgreSQL binaries: it signals the
    postmaster, exactly as ``pg_ctl stop -m fast`` does, and waits for it to finish.
    """
    paths = _paths(home)
    if not paths.home.exists():
        return False
    with _locked(paths):
        pid = _read_pid(paths)
        if pid is None or _is_our_postmaster(pid, paths) is False:
            return False
        logger.info("stopping the embedded PostgreSQL (pid %s) in %s", pid, paths.pgdata)
        try:
            os.kill(pid, signal.SIGINT)
        except ProcessLookupError:
            return False
        deadline = time.monotonic() + timeout
        # The postmaster removes its pid file as the very last step of a shutdown.
        while paths.pid_file.exists() and _is_our_postmaster(pid, paths) is not False:
            if time.monotonic() > deadline:
                raise EmbeddedError(
                    f"the embedded server (pid {pid}) did not stop within {timeout:.0f}s"
                )
            time.sleep(0.05)
        return True


def reset_embedded(home: Path | None = None) -> bool:
    """Stop the embedded server and delete its data: every job in it is lost.

    Returns whether there was anything to delete.
    """
    paths = _paths(home)
    stop_embedded(home)
    if not paths.home.exists():
        return False
    deleted = False
    with _locked(paths):
        for directory in (paths.pgdata, paths.home / "pgdata.initdb"):
            if directory.exists():
                logger.info("deleting %s", directory)
                shutil.rmtree(directory)
                deleted = True
        if paths.socket_dir != paths.pgdata and paths.socket_dir.exists():
            shutil.rmtree(paths.socket_dir, ignore_errors=True)
    return deleted


# --------------------------------------------------------------------------------------
# python -m pgq_client.embedded
# --------------------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pgq_client.embedded {start,status,stop,reset,dsn,psql}``."""
    parser = argparse.ArgumentParser(
        prog="python -m pgq_client.embedded",
        description="Manage the embedded PostgreSQL that jobq uses when no --dsn is given.",
    )
    parser.add_argument(
        "--home",
        type=Path,
        default=None,
        help="data directory (default: $JOBQ_HOME or the per-user data dir)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log what is done")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("start", help="start (creating and migrating if needed), print the DSN")
    sub.add_parser("status", help="say whether it exists and runs")
    sub.add_parser("stop", help="stop the server (data is kept)")
    reset = sub.add_parser("reset", help="stop the server and DELETE all its data")
    reset.add_argument("--yes", action="store_true", help="confirm the deletion")
    sub.add_parser("dsn", help="start if needed and print the connection string")
    sub.add_parser("psql", help="start if needed and open psql on the jobq database")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    home: Path | None = args.home
    try:
        if args.command in ("start", "dsn"):
            dsn = get_embedded_dsn(home)
            if args.command == "start":
                print(f"running: {describe_embedded(home)}")
            print(dsn)
        elif args.command == "status":
            st = embedded_status(home)
            state = "running" if st.running else ("stopped" if st.initialized else "not created")
            print(f"{describe_embedded(home)}: {state}" + (f" (pid {st.pid})" if st.pid else ""))
            if st.running:
                print(st.dsn)
        elif args.command == "stop":
            stopped = stop_embedded(home)
            print(("stopped " if stopped else "not running: ") + describe_embedded(home))
        elif args.command == "reset":
            if not args.yes:
                print(
                    f"this deletes {_paths(home).pgdata} and every job in it; add --yes to confirm",
                    file=sys.stderr,
                )
                return 2
            if reset_embedded(home):
                print(f"deleted {_paths(home).pgdata}")
            else:
                print(f"nothing to delete: {_paths(home).pgdata} does not exist")
        elif args.command == "psql":
            dsn = get_embedded_dsn(home)
            psql = shutil.which("psql")
            bundled = _pgserver_bin_dir()
            if bundled is not None and (bundled / "psql").is_file():
                psql = str(bundled / "psql")
            if psql is None:
                print(f"psql not found; connect with: {dsn}", file=sys.stderr)
                return 1
            os.execv(psql, [psql, dsn])
    except EmbeddedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

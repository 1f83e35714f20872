"""A throwaway Postgres cluster for tests and benchmarks: `initdb` in a temporary folder, the server on a
free loopback port, stopped by its own process id.

Postgres refuses to run as root; when this process is root (CI), initdb and the server run as the
unprivileged user `nobody`, in a temporary folder that user owns. The binaries are looked up on PATH and
then where Debian's `postgresql` package puts them (`/usr/lib/postgresql/<version>/bin`, not on PATH).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

READY = "database system is ready to accept connections"
START_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
SUPERUSER = "pal"
# A test server: nothing here must survive a power cut, and the disk is shared with everyone else.
SERVER_SETTINGS = ("fsync=off", "synchronous_commit=off", "full_page_writes=off", "max_connections=200")


def find_binaries() -> Path | None:
    """The folder holding `initdb` and `postgres`, or None when Postgres is not installed."""
    on_path = shutil.which("initdb")
    candidates = [Path(on_path).resolve().parent] if on_path else []
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version, reverse=True)
    for folder in candidates:
        if (folder / "initdb").is_file() and (folder / "postgres").is_file():
            return folder
    return None


def _version(folder: Path) -> int:
    name = folder.parent.name
    return int(name) if name.isdigit() else 0


@dataclass
class PostgresCluster:
    """One running server; `url(database)` connects to it as the superuser `pal` (trust auth, loopback)."""

    binaries: Path
    settings: tuple[str, ...] = SERVER_SETTINGS
    """`-c name=value` settings of the server (the default trades durability for speed: tests only)."""
    root: Path = field(init=False)
    port: int = field(init=False, default=0)
    process: subprocess.Popen[str] | None = field(init=False, default=None)
    log: list[str] = field(init=False, default_factory=list)
    reader: threading.Thread | None = field(init=False, default=None)

    def start(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="pal-pg-"))
        as_user = self._unprivileged()
        if as_user is not None:
            os.chown(self.root, as_user.pw_uid, as_user.pw_gid)
        try:
            self._run(
                [
                    str(self.binaries / "initdb"),
                    "--pgdata",
                    str(self.root / "data"),
                    "--username",
                    SUPERUSER,
                    "--auth",
                    "trust",
                    "--encoding",
                    "UTF8",
                    "--no-locale",
                    "--no-sync",
                ],
                as_user,
            )
            self._serve(as_user)
        except BaseException:
            self.stop()
            raise

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def restart(self) -> None:
        """Stop the server (fast shutdown, by its pid) and start it again on the same port and data: what
        clients see of a database restart."""
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            process.wait(timeout=STOP_TIMEOUT)
        if self.reader is not None:
            self.reader.join(timeout=STOP_TIMEOUT)
            self.reader = None
        self.log.clear()
        self._serve(self._unprivileged(), port=self.port)

    def stop(self) -> None:
        """Fast shutdown (SIGINT) of our server by its pid, then remove the folder."""
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT)
        if self.reader is not None:
            self.reader.join(timeout=STOP_TIMEOUT)  # it closes the log pipe once the server has gone
            self.reader = None
        self.process = None
        if getattr(self, "root", None) is not None:
            shutil.rmtree(self.root, ignore_errors=True)

    # --- internals ----------------------------------------------------------------------------------------

    @staticmethod
    def _unprivileged() -> pwd.struct_passwd | None:
        """The user to run Postgres as when we are root (it refuses root), else None."""
        if os.geteuid() != 0:
            return None
        try:
            return pwd.getpwnam("nobody")
        except KeyError:
            raise RuntimeError("running as root and there is no user 'nobody' to run Postgres as") from None

    def _environment(self) -> dict[str, str]:
        return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C", "HOME": str(self.root)}

    def _credentials(self, as_user: pwd.struct_passwd | None) -> dict[str, object]:
        if as_user is None:
            return {}
        return {"user": as_user.pw_uid, "group": as_user.pw_gid, "extra_groups": []}

    def _run(self, command: list[str], as_user: pwd.struct_passwd | None) -> None:
        result = subprocess.run(
            command,
            cwd=self.root,
            env=self._environment(),
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT,
            check=False,
            **self._credentials(as_user),  # type: ignore[arg-type]
        )
        if result.returncode != 0:
            raise RuntimeError(
                f"{command[0]} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
            )

    def _serve(self, as_user: pwd.struct_passwd | None, *, port: int | None = None) -> None:
        """Start the server on a free port (or `port`), waiting (bounded) for the line that says it accepts
        connections; a port taken between choosing and binding it is retried on another."""
        for _attempt in range(5):
            self.port = port or _free_port()
            command = [str(self.binaries / "postgres"), "-D", str(self.root / "data"), "-p", str(self.port)]
            command += ["-k", str(self.root), "-c", "listen_addresses=127.0.0.1"]
            for setting in self.settings:
                command += ["-c", setting]
            self.process = subprocess.Popen(
                command,
                cwd=self.root,
                env=self._environment(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                **self._credentials(as_user),  # type: ignore[arg-type]
            )
            ready = threading.Event()
            self.reader = threading.Thread(target=self._drain, args=(self.process, ready), daemon=True)
            self.reader.start()
            if not ready.wait(START_TIMEOUT):
                raise RuntimeError(
                    f"Postgres did not start within {START_TIMEOUT:g} s:\n" + "".join(self.log[-30:])
                )
            if self.process.poll() is None:
                return
            self.reader.join(timeout=STOP_TIMEOUT)
            if not any("could not bind" in line or "in use" in line for line in self.log):
                raise RuntimeError("Postgres exited while starting:\n" + "".join(self.log[-30:]))
        raise RuntimeError("Postgres could not bind a free loopback port in 5 attempts")

    def _drain(self, process: subprocess.Popen[str], ready: threading.Event) -> None:
        """Read the server's log for as long as it runs (a full pipe would stall it); signal readiness or exit."""
        assert process.stderr is not None
        with process.stderr:
            for line in process.stderr:
                self.log.append(line)
                if READY in line:
                    ready.set()
        process.wait()
        ready.set()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def running_cluster() -> Iterator[PostgresCluster]:
    """A cluster started for the duration and stopped by its own pid; the test asking for it is skipped,
    saying why, where PostgreSQL's binaries or psycopg are missing."""
    import pytest

    binaries = find_binaries()
    if binaries is None:
        pytest.skip(
            "PostgreSQL is not installed (no initdb/postgres on PATH or in /usr/lib/postgresql/*/bin); "
            "install Debian's postgresql package (.ci/run does)"
        )
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed: pip install 'pal-bridge[postgres]'")
    cluster = PostgresCluster(binaries)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()

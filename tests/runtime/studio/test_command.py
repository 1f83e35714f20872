"""`pal studio` as users run it: what it prints, and the errors it gives before serving anything."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.runtime.session.processes import environment

pytestmark = pytest.mark.slow


def _studio(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "runtime.cli", "studio", *args],
        cwd=folder,
        env=environment(folder),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_store_that_is_not_one_is_refused(tmp_path: Path) -> None:
    done = _studio(tmp_path, "--store", "bogus://x", "--port", "0")
    assert done.returncode == 2 and done.stdout == ""
    assert "unknown store 'bogus'" in done.stderr


def test_a_port_in_use_is_refused(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _studio(tmp_path, "--store", "memory://", "--port", str(port))
    assert done.returncode == 2 and done.stdout == ""
    assert f"error: cannot serve on 127.0.0.1:{port}:" in done.stderr


def test_a_bad_port_is_refused_by_the_parser(tmp_path: Path) -> None:
    done = _studio(tmp_path, "--port", "70000")
    assert done.returncode == 2 and "70000 is not a port number" in done.stderr


def test_a_store_file_that_does_not_exist_is_refused_not_made(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "runs.db"
    done = _studio(tmp_path, "--store", f"sqlite:///{missing}", "--port", "0")
    assert done.returncode == 2 and done.stdout == ""
    assert "does not exist" in done.stderr
    assert not missing.parent.exists()

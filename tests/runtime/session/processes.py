"""Running `pal` (through the crash driver) as separate processes, for the session tests that kill them."""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DRIVER = Path(__file__).with_name("crash_driver.py")
FIXTURES = REPO / "tests" / "fixtures" / "session"
SHOP = FIXTURES / "shop.pal"
SHOP_ANSWERS = FIXTURES / "shop-answers.jsonl"
SHOP_MESSAGES = ("tea please", "yes")
TIMEOUT = 120
"""Seconds one `pal` process may take (a busy shared machine; it takes well under one)."""


@dataclass
class Finished:
    """How a `pal` process ended."""

    pid: int
    code: int
    """Its exit code; -9 when it was killed with SIGKILL."""
    out: str
    err: str


def environment(folder: Path, **extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PAL_TEST_")}
    env["PYTHONPATH"] = str(REPO)
    env["PAL_HOME"] = str(folder / "home")
    env.update(extra)
    return env


def pal(folder: Path, *args: str, env: dict[str, str]) -> Finished:
    """`pal <args>` through the crash driver, in `folder`, with no input on stdin."""
    process = subprocess.Popen(
        [sys.executable, "-P", str(DRIVER), *args],
        cwd=folder,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = process.communicate(timeout=TIMEOUT)
    return Finished(pid=process.pid, code=process.returncode, out=out, err=err)


def start(folder: Path, *args: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """`pal <args>` started with a pipe for its standard input (a user at a console who has not typed)."""
    return subprocess.Popen(
        [sys.executable, "-P", str(DRIVER), *args],
        cwd=folder,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def read_until(process: subprocess.Popen[bytes], marker: bytes, timeout: float = TIMEOUT) -> bytes:
    """What the process writes on stdout until `marker` appears (AssertionError if it has not within
    `timeout` seconds, or the process ended first)."""
    assert process.stdout is not None
    seen = b""
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while marker not in seen:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no {marker!r} within {timeout} s; the process wrote {seen!r}"
            if not selector.select(remaining):
                continue
            chunk = os.read(process.stdout.fileno(), 65536)
            assert chunk, f"the process ended before writing {marker!r}; it wrote {seen!r}"
            seen += chunk
    return seen


def json_lines(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

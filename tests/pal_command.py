"""Running `pal` as a user's shell runs it: a separate process with its own working directory.

`python -P` leaves the current directory off `sys.path`, as the installed `pal` script does (`python -m`
would put it there and hide whether the runtime finds the user's modules by itself). PYTHONPATH names this
checkout only, for our own packages; never the user's module folder.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PAL = [sys.executable, "-P", "-m", "runtime.cli"]
"""The `pal` command, run by this interpreter like the console script (no reliance on PATH)."""
TIMEOUT = 180
"""Seconds a command may take: generous, for a busy shared machine (imports of litellm, LangGraph)."""


def no_model(folder: Path) -> list[str]:
    """`--model scripted:<no answers>`: for programs the runtime runs alone, so `pal run` does not load the
    bundled model (seconds) only to never call it; a model call would fail the run."""
    answers = folder / "no-answers.jsonl"
    answers.write_text("", encoding="utf-8")
    return ["--model", f"scripted:{answers}"]


def pal_environment(extra: Mapping[str, str] | None = None, *, drop: Sequence[str] = ()) -> dict[str, str]:
    """The environment of a `pal` process: ours, with PYTHONPATH set to this checkout only."""
    env = {key: value for key, value in os.environ.items() if key not in drop}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra or {})
    return env


def run_pal(
    *args: str,
    cwd: Path,
    stdin: str | None = None,
    env: Mapping[str, str] | None = None,
    drop_env: Sequence[str] = (),
) -> subprocess.CompletedProcess[str]:
    """`pal <args>` in `cwd`; its exit code, standard output and standard error."""
    return subprocess.run(
        [*PAL, *args],
        cwd=cwd,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=pal_environment(env, drop=drop_env),
        check=False,
    )

"""The `mcpServers` entry that makes Claude Desktop (or any client using that file format) start
`pal mcp serve prog.pal` over stdio. Paths are absolute: such clients start servers from their own
working directory with a short PATH."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def pal_command(python: str | Path | None = None) -> list[str]:
    """The absolute command that runs `pal`: the `pal` script beside the interpreter when installed there,
    else the interpreter running the CLI module."""
    interpreter = Path(python or sys.executable).absolute()
    script = interpreter.with_name("pal")
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [str(interpreter), "-m", "runtime.cli"]


def parse_env(assignments: Iterable[str], environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """`KEY=VALUE` pairs, or a bare `KEY` whose value is taken from `environ`; ValueError naming a bad one."""
    source = os.environ if environ is None else environ
    env: dict[str, str] = {}
    for assignment in assignments:
        key, equals, value = assignment.partition("=")
        key = key.strip()
        if not _ENV_NAME.match(key):
            raise ValueError(f"--env {assignment!r}: {key!r} is not an environment variable name")
        if not equals:
            if key not in source:
                raise ValueError(f"--env {key}: the variable is not set here; write --env {key}=VALUE")
            value = source[key]
        env[key] = value
    return env


def claude_desktop_entry(
    program: str | Path,
    *,
    name: str | None = None,
    model: str | None = None,
    env: Mapping[str, str] | None = None,
    python: str | Path | None = None,
) -> dict[str, Any]:
    """`{"mcpServers": {name: {"command": ..., "args": [...], "env": {...}}}}` for serving `program` over
    stdio; `name` defaults to the program's file name without suffix."""
    path = Path(program).expanduser().resolve()
    if not path.is_file():
        raise FileNotFoundError(f"{program}: no such program file")
    command, *prefix = pal_command(python)
    args = [*prefix, "mcp", "serve", str(path)]
    if name:
        args += ["--name", name]
    if model:
        # A model file (scripted:, replay:, a .gguf) is found from the server's own working directory.
        from runtime.models.registry import absolute_spec

        args += ["--model", absolute_spec(model)]
    server: dict[str, Any] = {"command": command, "args": args}
    if env:
        server["env"] = dict(env)
    return {"mcpServers": {name or path.stem: server}}

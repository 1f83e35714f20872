"""The `pal` command line as a new user meets it (issue 14, finding 8): one table of commands, each run in
its own process and folder, with the exit code and what it must and must not print."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from runtime.cli import build_parser
from tests.pal_command import run_pal

FAST = """# Hello
Says hello without a model.

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:QUE Say("user", "Hello!")
02:RET
"""
NEEDS_MODEL = """# Greeter
Greets in its own words.

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:QUE Say(user, Greet the user warmly)
02:RET
"""
RAISES = """# Broken
Fails in Python.

```python
@playbook
async def Explode() -> None:
    raise ValueError("the fuse was lit")
```

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:QUE Explode()
02:YLD call
03:RET
"""
SCALE = """# Math
Doubles.

## Double($x:int) -> int
metadata:
  public: true
---
### Steps
01:RET $x * 2
"""
LABELS = """# Shop
Labels with brackets and quotes.

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:EXE $first = $items[0]
02:QUE Say("user", "a \\"quoted\\" <word> #1")
03:RET
"""
TWINS = """# Front
Front desk.

## Main() -> None
### Steps
01:RET

# Back
Back office.

## Main() -> None
### Steps
01:RET
"""
BAD_MARKDOWN = """# Shop
A shop.

## Main
### Triggers
- At the beginning
### Steps
- Ask the user for their order
- Otherwise
  - Ask again
"""
GOOD_MARKDOWN = """# Shop
A shop.

## Main
### Triggers
- At the beginning
### Steps
- Say hello to the user
"""
FILES = {
    "fast.pal": FAST,
    "model.pal": NEEDS_MODEL,
    "raises.pal": RAISES,
    "scale.pal": SCALE,
    "labels.pal": LABELS,
    "twins.pal": TWINS,
    "bad.pb": BAD_MARKDOWN,
    "good.pb": GOOD_MARKDOWN,
    "none.jsonl": "",
}
NO_MODEL = "scripted:none.jsonl"


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One command and what it must do."""

    args: tuple[str, ...]
    """The arguments after `pal`."""
    code: int
    """The exit code."""
    err: tuple[str, ...] = ()
    """Texts standard error must contain."""
    out: tuple[str, ...] = ()
    """Texts standard output must contain."""
    absent: tuple[str, ...] = ()
    """Texts neither output may contain."""
    once: str | None = None
    """A text that must appear exactly once in both outputs together."""
    before: tuple[tuple[tuple[str, ...], str], ...] = ()
    """Commands run first, each (args, file its standard output is saved to)."""
    drop_env: tuple[str, ...] = ()
    """Environment variables the command runs without."""
    stdin: str = ""
    """Standard input."""
    extra: dict[str, str] = field(default_factory=dict)
    """Environment variables to set."""


CASES = {
    "version": Case(args=("--version",), code=0, out=("pal ",)),
    "help names every option of run": Case(
        args=("run", "--help"),
        code=0,
        out=("--max-model-calls N", "model calls the whole run may make", "--retries N", "re-asks after"),
    ),
    "a negative count is refused naming the flag": Case(
        args=("run", "fast.pal", "--max-model-calls", "-1"),
        code=2,
        err=("argument --max-model-calls: must be a whole number >= 0, got '-1'",),
    ),
    "a negative retry count is refused": Case(
        args=("run", "fast.pal", "--retries", "-2"), code=2, err=("argument --retries: must be",)
    ),
    "a zero timeout is refused": Case(
        args=("run", "fast.pal", "--timeout", "0"),
        code=2,
        err=("argument --timeout: must be a positive number of seconds, got '0'",),
    ),
    "mcp serve refuses a negative count too": Case(
        args=("mcp", "serve", "fast.pal", "--max-model-calls", "-3"),
        code=2,
        err=("argument --max-model-calls: must be a whole number >= 0, got '-3'",),
    ),
    "a spent budget names the flag, not an internal parameter": Case(
        args=("run", "model.pal", "--model", NO_MODEL, "--max-model-calls", "0", "--no-input"),
        code=1,
        err=("limit of 0 model calls", "--max-model-calls"),
        absent=("max_calls",),
    ),
    "an unknown model fails before the run with the accepted forms": Case(
        args=("run", "model.pal", "--model", "foo", "--no-input"),
        code=2,
        err=("model 'foo': litellm knows no provider for it", "openai/gpt-4o-mini", "scripted:answers.jsonl"),
        absent=("model call", "BadRequestError"),
    ),
    "a missing API key is reported as such": Case(
        args=("run", "model.pal", "--model", "openai/gpt-4o-mini", "--no-input"),
        code=2,
        err=("needs the API key OPENAI_API_KEY in the environment",),
        absent=("InternalServerError", "HTTP 500"),
        drop_env=("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"),
    ),
    "a failed run prints its error once": Case(
        args=("run", "raises.pal", "--model", NO_MODEL, "--no-input"),
        code=1,
        err=("[failed; 0 model calls, ",),
        once="the fuse was lit",
    ),
    "unread --message values are reported": Case(
        args=("run", "fast.pal", "--model", NO_MODEL, "--message", "hi", "--message", "there", "--no-input"),
        code=0,
        err=("warning: 2 --message value(s) never read: 'hi', 'there'",),
    ),
    "a program that finished says done, not idle": Case(
        args=("run", "fast.pal", "--model", NO_MODEL, "--no-input"),
        code=0,
        out=("Hello!",),
        err=("[finished: ", "; 0 model calls, "),
        absent=("idle",),
    ),
    "a missing program file is named": Case(
        args=("run", "nowhere.pal"), code=2, err=("error: nowhere.pal: no such file",), absent=("Errno",)
    ),
    "--input JSON errors name --input": Case(
        args=("run", "scale.pal", "--input", '{"x": 2'),
        code=2,
        err=("error: --input: not valid JSON: Expecting ',' delimiter at column 8",),
    ),
    "fmt on markdown says to compile it first": Case(
        args=("fmt", "bad.pb"),
        code=1,
        err=(
            "bad.pb: this is Playbooks markdown; pal fmt reads PAL text. Compile it first: pal compile bad.pb",
        ),
        absent=("PAL003",),
    ),
    "compile on PAL says it is PAL already": Case(
        args=("compile", "fast.pal"),
        code=1,
        err=("fast.pal: this is PAL already; pal compile reads Playbooks markdown (.pb, .md)",),
        absent=("PAL0",),
    ),
    "validate on markdown shows the marked source line": Case(
        args=("validate", "bad.pb"),
        code=1,
        out=("bad.pb:9:3: PAL106", "    - Otherwise\n      ^^"),
    ),
    "pal json output is read back by validate": Case(
        args=("validate", "prog.json"),
        code=0,
        err=("1 file(s): 0 error(s), 0 warning(s)",),
        before=((("json", "fast.pal"), "prog.json"),),
    ),
    "pal json output is read back by run": Case(
        args=("run", "prog.json", "--input", '{"x": 21}', "--quiet"),
        code=0,
        out=("42",),
        before=((("json", "scale.pal"), "prog.json"),),
    ),
    "pal json output is read back by graph": Case(
        args=("graph", "prog.json", "Main"),
        code=0,
        out=("flowchart TD",),
        before=((("json", "fast.pal"), "prog.json"),),
    ),
    "graph keeps brackets and quotes in labels": Case(
        args=("graph", "labels.pal", "Main"),
        code=0,
        out=(
            "$first = $items[0]",
            "Say(#quot;user#quot;, #quot;a \\#quot;quoted\\#quot; #lt;word#gt; #35;1#quot;)",
        ),
    ),
    "graph refuses an ambiguous playbook name with the choices": Case(
        args=("graph", "twins.pal", "Main"),
        code=1,
        err=("twins.pal: 'Main' names 2 playbooks; name one of: Front.Main, Back.Main",),
    ),
    "graph draws the one named by agent": Case(
        args=("graph", "twins.pal", "Back.Main"), code=0, out=('start(["Main"])',)
    ),
    "mcp config makes a model file absolute": Case(
        args=("mcp", "config", "fast.pal", "--model", "scripted:none.jsonl"), code=0, out=("scripted:/",)
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_the_command_line(name: str, tmp_path: Path) -> None:
    case = CASES[name]
    for file_name, text in FILES.items():
        (tmp_path / file_name).write_text(text, encoding="utf-8")
    for args, saved in case.before:
        first = run_pal(*args, cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        (tmp_path / saved).write_text(first.stdout, encoding="utf-8")
    result = run_pal(*case.args, cwd=tmp_path, stdin=case.stdin, env=case.extra, drop_env=case.drop_env)
    shown = f"exit {result.returncode}\n--- stdout\n{result.stdout}\n--- stderr\n{result.stderr}"
    assert result.returncode == case.code, shown
    for text in case.err:
        assert text in result.stderr, shown
    for text in case.out:
        assert text in result.stdout, shown
    for text in case.absent:
        assert text not in result.stdout + result.stderr, shown
    if case.once is not None:
        assert (result.stdout + result.stderr).count(case.once) == 1, shown
    if name == "mcp config makes a model file absolute":
        entry = json.loads(result.stdout)["mcpServers"]["fast"]
        assert entry["args"][-1] == f"scripted:{(tmp_path / 'none.jsonl').resolve()}"


def test_every_option_of_every_command_has_help() -> None:
    missing: list[str] = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
            elif not action.help and not isinstance(action, argparse._HelpAction):
                missing.append(f"{path} {'/'.join(action.option_strings) or action.dest}")

    walk(build_parser(), "pal")
    assert missing == []

"""Hostile and careless input to the parser and the tools (issue 13, findings 4, 5 and 7): nesting past
the documented depth is a positioned diagnostic and never a RecursionError, in any tool; a file that is
not UTF-8 is `file: not UTF-8 at byte N`; a UTF-8 byte order mark is accepted; a playbook with steps and a
`python:` binding is a validator error."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pal_core import jsonform
from pal_core.compiler import compile_file, compile_markdown
from pal_core.errors import PalError, PalSyntaxError
from pal_core.flow import PlaybookFlow
from pal_core.graph import mermaid
from pal_core.ir import MAX_STEP_DEPTH, Agent, Playbook, Program, Step
from pal_core.parser import parse, parse_file
from pal_core.sources import SourceEncodingError, load_program, read_source
from pal_core.validate import validate, validate_text
from pal_core.writer import write
from runtime.cli import main


def nested_pal(depth: int) -> str:
    """A playbook whose first step holds conditions nested `depth` levels, the innermost returning."""
    lines = ["# Deep", "Nests conditions.", "", "## Main() -> None", "Nests.", "### Steps"]
    number: list[str] = []
    for level in range(depth - 1):
        number.append("01")
        lines.append("  " * level + ".".join(number) + ":CND If $x > 0")
    number.append("01")
    lines.append("  " * (depth - 1) + ".".join(number) + ":RET")
    lines.append("02:RET")
    return "\n".join(lines) + "\n"


def nested_markdown(depth: int) -> str:
    lines = ["# Deep", "", "## Main", "### Triggers", "- At the beginning", "### Steps"]
    lines.extend("  " * level + "- If x is positive" for level in range(depth - 1))
    lines.append("  " * (depth - 1) + "- Return")
    return "\n".join(lines) + "\n"


def nested_steps(depth: int) -> Step:
    step = Step(line=".".join(["01"] * depth), opcode="RET")
    for level in range(depth - 1, 0, -1):
        step = Step(line=".".join(["01"] * level), opcode="CND", text="If $x > 0", children=(step,))
    return step


def built_program(depth: int) -> Program:
    """A program made in code (as an importer would), not read from text."""
    playbook = Playbook(name="Main", steps=(nested_steps(depth), Step(line="02", opcode="RET")))
    return Program(agents=(Agent(name="Deep", playbooks=(playbook,)),))


def deep_in_the_stack(frames: int, work: Callable[[], Any]) -> Any:
    """Run `work` under `frames` extra Python frames, as a tool embedded in a deep call chain would."""
    if frames == 0:
        return work()
    return deep_in_the_stack(frames - 1, work)


# --- finding 4: nesting --------------------------------------------------------------------------------


def test_the_documented_depth_works_in_every_tool_even_deep_in_a_call_stack() -> None:
    text = nested_pal(MAX_STEP_DEPTH)

    def every_tool() -> None:
        program = parse(text, file="deep.pal")
        assert validate(program) == []
        assert parse(write(program)) == program
        assert jsonform.loads(jsonform.dumps(program)) == program
        playbook = program.agents[0].playbooks[0]
        assert "flowchart TD" in mermaid(playbook)
        assert len(PlaybookFlow(playbook).by_line) == MAX_STEP_DEPTH + 1
        compiled = compile_markdown(nested_markdown(MAX_STEP_DEPTH), file="deep.pb")
        assert validate(parse(write(compiled))) == []

    # About 300 frames of callers: more than pytest, asyncio and a framework add together.
    deep_in_the_stack(300, every_tool)


@pytest.mark.parametrize("depth", [MAX_STEP_DEPTH + 1, 500, 3000])
def test_deeper_nesting_is_a_positioned_diagnostic(depth: int) -> None:
    with pytest.raises(PalSyntaxError) as caught:
        parse(nested_pal(depth), file="deep.pal")
    (error,) = caught.value.errors
    assert error.code == "PAL012"
    # Reported at the first step past the limit: its line, and the column where its number starts.
    assert (error.line, error.column) == (7 + MAX_STEP_DEPTH, 1 + 2 * MAX_STEP_DEPTH)
    assert error.message.startswith(
        f"step nested {MAX_STEP_DEPTH + 1} levels deep in playbook Main; steps nest at most 100 levels"
    )
    assert [d.code for d in validate_text(nested_pal(depth), "deep.pal")] == ["PAL012"]


def test_deeper_markdown_nesting_is_a_positioned_diagnostic() -> None:
    with pytest.raises(PalSyntaxError) as caught:
        compile_markdown(nested_markdown(600), file="deep.pb")
    (error,) = caught.value.errors
    assert (error.code, error.line, error.column) == ("PAL012", 7 + MAX_STEP_DEPTH, 1 + 2 * MAX_STEP_DEPTH)
    assert error.message == "list item nested 101 levels deep; steps nest at most 100 levels"


def test_deeply_nested_json_is_refused_with_its_path() -> None:
    data = jsonform.to_json(parse(nested_pal(MAX_STEP_DEPTH)))

    def nested_more(extra: int) -> dict[str, Any]:
        deeper = json.loads(json.dumps(data))
        step = deeper["agents"][0]["playbooks"][0]["steps"][0]
        while step.get("children"):
            step = step["children"][0]
        for _ in range(extra):
            step["children"] = [{"line": "01", "opcode": "RET"}]
            step = step["children"][0]
        return deeper

    with pytest.raises(jsonform.PalJsonError) as caught:
        jsonform.loads(json.dumps(nested_more(1)))
    assert str(caught.value) == (
        "$.agents[0].playbooks[0]: steps nested 101 levels deep; a program's steps nest at most 100 levels"
    )
    # Deeper than the reader recurses: refused before reading, at the first value past the limit.
    for deep in (nested_more(200), nested_more(5000)):
        with pytest.raises(jsonform.PalJsonError) as caught:
            jsonform.from_json(deep)
        assert caught.value.path.startswith("$.agents[0].playbooks[0].steps[0].children[0]")
        assert caught.value.message.endswith("a program's steps nest at most 100 levels")
    with pytest.raises(jsonform.PalJsonError, match=r"^\$: nested too deeply to read$"):
        jsonform.loads("[" * 100_000 + "]" * 100_000)


def test_a_too_deep_program_built_in_code_is_refused_by_every_tool() -> None:
    program = built_program(500)
    (diagnostic,) = validate(program)
    assert diagnostic.code == "PAL012"
    assert diagnostic.message == "step nested 101 levels deep in playbook Main; steps nest at most 100 levels"
    playbook = program.agents[0].playbooks[0]
    for tool in (lambda: write(program), lambda: jsonform.to_json(program), lambda: mermaid(playbook)):
        with pytest.raises(
            PalError, match=r"steps nested 101 levels deep .*; at most 100 levels are allowed"
        ):
            tool()
    assert [step.line for step in nested_steps(2000).walk()][-1] == ".".join(["01"] * 2000)


@pytest.mark.parametrize("command", ["validate", "json", "fmt", "graph"])
def test_the_commands_report_deep_nesting_without_a_traceback(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / "deep.pal"
    deep.write_text(nested_pal(3000), encoding="utf-8")
    assert main([command, str(deep)]) == 1
    out = capsys.readouterr()
    assert f"{deep}:{7 + MAX_STEP_DEPTH}:{1 + 2 * MAX_STEP_DEPTH}: PAL012 step nested 101 levels deep" in (
        out.out + out.err
    )
    assert "Traceback" not in out.out + out.err


# --- finding 5: encodings ------------------------------------------------------------------------------


def test_a_file_that_is_not_utf8_says_so_with_the_byte(tmp_path: Path) -> None:
    latin = tmp_path / "cafe.pal"
    latin.write_bytes("# Café\nA café.\n".encode("latin-1"))
    message = f"{latin}: not UTF-8 at byte 5 (line 1: byte 0xe9); save the file as UTF-8"
    for read in (read_source, parse_file, load_program, compile_file):
        with pytest.raises(SourceEncodingError) as caught:
            read(latin)
        assert str(caught.value) == message


@pytest.mark.parametrize("command", ["validate", "fmt", "json", "graph", "compile", "run"])
def test_every_command_reports_a_non_utf8_file_by_name(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `pal compile` reads markdown (it refuses a .pal file by its form before reading it).
    latin = tmp_path / ("cafe.pb" if command == "compile" else "cafe.pal")
    latin.write_bytes("# Shop\nSells café.\n\n## Main() -> None\n### Steps\n01:RET\n".encode("latin-1"))
    arguments = [command, str(latin)] + (["--no-input"] if command == "run" else [])
    assert main(arguments) in (1, 2)
    err = capsys.readouterr().err
    assert f"{latin}: not UTF-8 at byte 16 (line 2: byte 0xe9); save the file as UTF-8" in err
    assert "Traceback" not in err


def test_a_utf8_byte_order_mark_is_accepted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "# Shop\nSells things.\n\n## Main() -> None\nGreets.\n### Steps\n01:QUE Say(user, Hello)\n02:RET\n"
    with_bom = tmp_path / "shop.pal"
    with_bom.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert parse_file(with_bom) == parse(text)
    assert parse("\ufeff" + text) == parse(text)
    assert main(["validate", str(with_bom)]) == 0
    assert "0 error(s)" in capsys.readouterr().err
    markdown = tmp_path / "shop.pb"
    markdown.write_bytes(b"\xef\xbb\xbf# Shop\n\n## Main\n### Steps\n- Say hello to the user\n")
    assert compile_file(markdown).agents[0].name == "Shop"


# --- finding 7: a playbook with steps and a python binding ----------------------------------------------


def test_steps_beside_a_python_binding_are_an_error() -> None:
    text = (
        "# Shop\nSells.\n\n## Checkout($cart:list) -> float\nmetadata:\n  python: shop.pay:checkout\n---\n"
        "Charges.\n### Steps\n01:QUE Say(user, Thanks)\n02:RET\n"
    )
    (diagnostic,) = validate_text(text, "shop.pal")
    assert (diagnostic.code, diagnostic.line) == ("PAL148", 4)
    assert diagnostic.message == (
        "playbook Checkout has steps and python: 'shop.pay:checkout'; the function would run and the steps "
        "never: remove the steps (the function is the playbook) or the binding"
    )


@pytest.mark.parametrize(
    ("text", "code", "message"),
    [
        (
            f"---\nx: {'[' * 5000}{']' * 5000}\n---\n# A\nAn agent.\n",
            "PAL006",
            "values nest more than 50 levels deep",
        ),
        (
            f"# A\nAn agent.\n\n## Main() -> None\nmetadata:\n  x: {'{a: ' * 60}1{'}' * 60}\n---\n### Steps\n01:RET\n",
            "PAL006",
            "values nest more than 50 levels deep",
        ),
        (
            "---\n" + "".join("  " * i + f"k{i}:\n" for i in range(600)) + "---\n# A\nAn agent.\n",
            "PAL006",
            "values nest more than 50 levels deep",
        ),
        (
            f"# A\nAn agent.\n\n```public.json\n{'[' * 100_000}{']' * 100_000}\n```\n",
            "PAL009",
            "public.json is nested too deeply to read",
        ),
        (
            f"# A\nAn agent.\n\n```python\nx = {'-' * 100_000}1\n```\n",
            "PAL008",
            "Python syntax error: the code is nested too deeply to read",
        ),
    ],
)
def test_deeply_nested_metadata_json_and_python_are_syntax_errors(text: str, code: str, message: str) -> None:
    with pytest.raises(PalSyntaxError) as caught:
        parse(text, file="deep.pal")
    (error,) = caught.value.errors
    assert (error.code, error.message) == (code, message)

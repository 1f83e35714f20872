"""One input validator (runtime.inputs) for `pal run --input`, the Python API, MCP tool calls and the
exporters: the same values are refused everywhere with the same words, and what comes out is JSON."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import anyio
import pytest

from importers.langgraph import import_target
from pal_core.parser import parse
from pal_core.writer import write
from runtime.api import run_playbook
from runtime.errors import CallError
from runtime.inputs import InputError, bind_input, check_arguments, parse_json_object
from tests.pal_command import REPO, no_model, run_pal

SCALE = """# Math
Scales numbers.

## Scale($x:int, $factor:float=1.5) -> float
metadata:
  public: true
---
### Steps
01:RET $x * $factor

## Keep($data:dict) -> dict
metadata:
  public: true
---
### Steps
01:RET $data
"""
PROGRAM = parse(SCALE)
SCALE_PLAYBOOK = PROGRAM.agents[0].playbooks[0]
KEEP_PLAYBOOK = PROGRAM.agents[0].playbooks[1]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"x": 1e400}', "--input: not valid JSON: the number 1e400 is too large"),
        ('{"x": NaN}', "--input: not valid JSON: NaN is not a JSON number"),
        ('{"x": -Infinity}', "--input: not valid JSON: -Infinity is not a JSON number"),
        ('{"x": 1, "x": 2}', "--input: not valid JSON: the key 'x' appears twice"),
        ('{"x": 2', "--input: not valid JSON: Expecting ',' delimiter at column 8"),
        ('{"x": 2}}', "--input: not valid JSON: extra text at column 9"),
        ("[1]", "--input must be a JSON object such as '{\"x\": 1}', got an array"),
        ('"x"', "--input must be a JSON object such as '{\"x\": 1}', got a string"),
    ],
)
def test_json_input_is_strict_and_names_the_option(text: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_json_object(text, option="--input")
    assert str(caught.value) == message


def test_json_errors_on_later_lines_give_line_and_column() -> None:
    with pytest.raises(InputError, match=r"at line 2, column 6"):
        parse_json_object('{"a": 1,\n "b" 2}', option="--input")


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"x": 2.5}, "x must be an integer, got number 2.5"),
        ({"x": math.inf}, "x must be a finite number, got inf"),
        ({"x": 1, "factor": math.nan}, "factor must be a finite number, got nan"),
        ({"x": "2"}, 'x must be an integer, got string "2"'),
        ({}, "x is required"),
        ({"x": 1, "y": 2}, "y is not a parameter (parameters: x, factor)"),
    ],
)
def test_arguments_must_fit_the_declared_types(arguments: dict[str, Any], problem: str) -> None:
    with pytest.raises(InputError) as caught:
        check_arguments(SCALE_PLAYBOOK, arguments)
    assert problem in caught.value.problems
    assert str(caught.value).startswith("Scale: invalid arguments: ")


def test_lossless_values_are_converted_and_nested_non_finite_numbers_refused() -> None:
    assert check_arguments(SCALE_PLAYBOOK, {"x": 4.0, "factor": 2}) == {"x": 4, "factor": 2.0}
    with pytest.raises(InputError, match=r"data\.deep\[1\] must be a finite number"):
        check_arguments(KEEP_PLAYBOOK, {"data": {"deep": [1.0, -math.inf]}})


def test_an_empty_object_is_the_whole_input_of_a_single_dict_parameter() -> None:
    invoke = parse("# G\nA graph.\n\n## Invoke($input:dict) -> dict\n### Steps\n01:RET $input\n")
    playbook = invoke.agents[0].playbooks[0]
    assert bind_input(playbook, {}) == {"input": {}}
    assert bind_input(playbook, {"x": 1}) == {"input": {"x": 1}}
    assert bind_input(playbook, {"input": {"x": 1}}) == {"input": {"x": 1}}
    assert bind_input(SCALE_PLAYBOOK, {"x": 1}) == {"x": 1}
    with pytest.raises(CallError, match=r"Scale has no parameter\(s\) y \(parameters: x, factor\)"):
        bind_input(SCALE_PLAYBOOK, {"y": 1})


@pytest.mark.anyio
async def test_the_python_api_uses_the_same_validator() -> None:
    with anyio.fail_after(30):
        assert await run_playbook(PROGRAM, "Scale", x=4.0, factor=2) == 8.0
        assert await run_playbook(PROGRAM, "Scale", 3) == 4.5
        with pytest.raises(InputError, match=r"x must be an integer, got number 2\.5"):
            await run_playbook(PROGRAM, "Scale", x=2.5)
        with pytest.raises(InputError, match="x must be a finite number"):
            await run_playbook(PROGRAM, "Scale", x=math.nan)


@pytest.mark.anyio
async def test_mcp_tool_calls_use_the_same_validator() -> None:
    from mcp_bridge.server import PlaybookServer

    async with PlaybookServer(PROGRAM) as served:
        with anyio.fail_after(30):
            refused = await served.call("Scale", {"x": 2.5})
            infinite = await served.call("Scale", {"x": 1, "factor": math.inf})
            fine = await served.call("Scale", {"x": 4.0})
    assert refused.is_error and refused.content[0].text == (
        "Scale: invalid arguments: x must be an integer, got number 2.5"
    )
    assert infinite.is_error and "factor must be a finite number, got inf" in infinite.content[0].text
    assert not fine.is_error and fine.structured_content == {"result": 6.0}


def test_exporters_use_the_same_validator() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.tools import ToolException

    from exporters import ExportError
    from exporters.langgraph import as_langchain_tool, as_langgraph_node

    node = as_langgraph_node(PROGRAM, playbook="Scale", output_key="scaled")
    tool = as_langchain_tool(PROGRAM, playbook="Scale")
    try:
        assert node.invoke({"x": 4.0}) == {"scaled": 6.0}
        with pytest.raises(ExportError, match="x must be a finite number, got inf"):
            node.invoke({"x": math.inf})
        with pytest.raises(ToolException, match=r"x must be an integer, got number 2\.5"):
            tool.run({"x": 2.5})
    finally:
        node.close()
        tool.close()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("given", "message"),
    [
        ('{"x": 2.5}', "error: --input for Scale: invalid arguments: x must be an integer, got number 2.5"),
        ('{"x": 1e400}', "error: --input: not valid JSON: the number 1e400 is too large"),
        ('{"x": Infinity}', "error: --input: not valid JSON: Infinity is not a JSON number"),
    ],
)
def test_pal_run_input_uses_the_same_validator(tmp_path: Path, given: str, message: str) -> None:
    program = tmp_path / "scale.pal"
    program.write_text(SCALE, encoding="utf-8")
    result = run_pal("run", str(program), "--playbook", "Scale", "--input", given, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip() == message
    assert result.stdout == ""


@pytest.mark.slow
def test_pal_run_prints_valid_json_for_any_result(tmp_path: Path) -> None:
    program = tmp_path / "big.pal"
    program.write_text(
        "# Big\nHuge numbers.\n\n```python\n@playbook(public=True)\nasync def Huge(x: float) -> dict:\n"
        "    return {'value': x * 1e308, 'list': (1, 2)}\n```\n",
        encoding="utf-8",
    )
    result = run_pal(
        "run", str(program), "--input", '{"x": 10}', "--quiet", *no_model(tmp_path), cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"value": "inf", "list": [1, 2]}


@pytest.mark.slow
def test_pal_run_input_reads_interrupt_answers_from_standard_input(tmp_path: Path) -> None:
    """`echo Ada | pal run interrupt.pal --input '{}'`: the question goes to standard error, the answer
    comes from standard input, and standard output is the final state alone."""
    pytest.importorskip("langgraph")
    program = tmp_path / "interrupt.pal"
    program.write_text(
        write(import_target("tests.fixtures.langgraph.interrupt:graph").program), encoding="utf-8"
    )
    result = run_pal(
        "run", str(program), "--input", "{}", *no_model(tmp_path), cwd=REPO, stdin="  Ada \ngo on\n"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"name": "Ada", "greeting": "Hello, Ada!"}
    assert "What is your name?" in result.stderr
    closed = run_pal("run", str(program), "--input", "{}", *no_model(tmp_path), cwd=REPO, stdin="")
    assert closed.returncode == 3
    assert "waiting for user input" in closed.stderr or "no more input" in closed.stderr


@pytest.mark.slow
def test_pal_run_input_takes_an_empty_state(tmp_path: Path) -> None:
    """`graph.invoke({})` works on a graph whose state may be empty, and so does `--input '{}'`."""
    pytest.importorskip("langgraph")
    from tests.fixtures.langgraph.counter import graph

    program = tmp_path / "counter.pal"
    program.write_text(write(import_target("tests.fixtures.langgraph.counter:graph").program), "utf-8")
    result = run_pal("run", str(program), "--input", "{}", "--quiet", *no_model(tmp_path), cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == graph.invoke({}) == {"count": 1, "note": "counted"}


@pytest.mark.slow
def test_langchain_messages_in_the_result_are_json_objects(tmp_path: Path) -> None:
    """`pal run --input` prints messages as the objects LangChain dumps, not `HumanMessage(content=...)`."""
    pytest.importorskip("langgraph")
    from tests.fixtures.langgraph.chat import INPUTS, graph

    program = tmp_path / "chat.pal"
    program.write_text(write(import_target("tests.fixtures.langgraph.chat:graph").program), "utf-8")
    state = INPUTS[0]
    result = run_pal(
        "run", str(program), "--input", json.dumps(state), "--quiet", *no_model(tmp_path), cwd=REPO
    )
    assert result.returncode == 0, result.stderr
    expected = {"messages": [m.model_dump(mode="json") for m in graph.invoke(state)["messages"]]}
    assert json.loads(result.stdout) == expected
    assert [(m["type"], m["content"]) for m in expected["messages"]] == [
        ("human", "hello"),
        ("ai", "you said: hello"),
    ]

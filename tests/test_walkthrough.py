"""A user's first hour, as a user does it (issue 14): a LangGraph graph in their own folder is imported,
run there and from elsewhere, served over MCP, and called as one tool by an MCP client.

Every command is its own process whose working directory is the user's folder; PYTHONPATH names this
checkout only (our packages), never the user's folder, and `python -P` keeps the current directory off
the path, as the installed `pal` script does. What LangGraph itself returns is asked the way the user
would check it: `python -c` in their folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.pal_command import PAL, no_model, pal_environment, run_pal

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
pytest.importorskip("langgraph")
pytest.importorskip("mcp")

GRAPH_MODULE = '''"""Plan, then execute one step per turn until the plan is done."""

import operator
from typing import Annotated, Literal, TypedDict

from langgraph.graph import END, START, StateGraph

from wording import shout


class State(TypedDict, total=False):
    task: str
    plan: list[str]
    done: Annotated[list[str], operator.add]
    answer: str


def plan(state: State) -> dict:
    return {"plan": [f"{index}. {word}" for index, word in enumerate(state["task"].split(), start=1)]}


def execute(state: State) -> dict:
    step = state["plan"][len(state.get("done", []))]
    return {"done": [shout(step)]}


def next_step(state: State) -> Literal["execute", "finish"]:
    return "execute" if len(state.get("done", [])) < len(state["plan"]) else "finish"


def finish(state: State) -> dict:
    return {"answer": " / ".join(state["done"])}


builder = StateGraph(State)
builder.add_node("plan", plan)
builder.add_node("execute", execute)
builder.add_node("finish", finish)
builder.add_edge(START, "plan")
builder.add_conditional_edges("plan", next_step)
builder.add_conditional_edges("execute", next_step)
builder.add_edge("finish", END)
graph = builder.compile()
'''
HELPER_MODULE = """def shout(text: str) -> str:
    return text.upper() + "!"
"""
STATE = {"task": "boil water steep tea"}


def _langgraph_answer(folder: Path, state: dict) -> dict:
    """What `graph.invoke` returns, asked in the user's folder as they would ask it."""
    script = f"import json; from plan_execute import graph; print(json.dumps(graph.invoke({state!r})))"
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env=pal_environment(),
        check=True,
    )
    return json.loads(result.stdout)


async def test_import_run_serve_and_call_a_graph_from_the_users_folder(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "plan_execute.py").write_text(GRAPH_MODULE, encoding="utf-8")
    (project / "wording.py").write_text(HELPER_MODULE, encoding="utf-8")
    expected = _langgraph_answer(project, STATE)
    assert expected["answer"] == "1. BOIL! / 2. WATER! / 3. STEEP! / 4. TEA!"

    imported = run_pal("import", "langgraph", "plan_execute:graph", "-o", "pe.pal", "--strict", cwd=project)
    assert imported.returncode == 0, imported.stderr
    assert "0 diagnostic(s)" in imported.stderr

    ran = run_pal("run", "pe.pal", "--input", json.dumps(STATE), cwd=project)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == expected

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    program = str(project / "pe.pal")
    again = run_pal("run", program, "--input", json.dumps(STATE), *no_model(elsewhere), cwd=elsewhere)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == expected

    from mcp import Client, StdioServerParameters

    command, *arguments = PAL
    server = StdioServerParameters(
        command=command, args=[*arguments, "mcp", "serve", "pe.pal"], cwd=str(project), env=pal_environment()
    )
    with anyio.fail_after(180):
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            called = await client.call_tool("plan_execute_graph", STATE)
            refused = await client.call_tool("plan_execute_graph", {"task": 42})
    assert [tool.name for tool in tools] == ["plan_execute_graph"]
    assert tools[0].input_schema["properties"]["task"] == {"type": "string"}
    assert not called.is_error, called.content
    assert called.structured_content == {"result": expected}
    assert refused.is_error
    assert (
        refused.content[0].text
        == "plan_execute_graph: invalid arguments: task must be a string, got integer 42"
    )

"""What a user gives an imported graph from outside, and what they see when it cannot start.

- `pal run --input` is the graph's input state whatever its keys are called, a key named `input` included.
- `pal run --context` is the graph's context (LangGraph's `context_schema`); a missing required field is
  an input error naming it.
- A module that fails to load is one line naming the module, its file and the exception, under `pal run`
  as under `pal import`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pal_command import no_model, run_pal

pytestmark = pytest.mark.slow

GRAPH_MODULE = '''"""A graph of one node: no model."""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    text: str
    shout: str


def shout(state: State) -> dict:
    return {"shout": state["text"].upper()}


builder = StateGraph(State)
builder.add_node("shout", shout)
builder.add_edge(START, "shout")
builder.add_edge("shout", END)
graph = builder.compile()
'''


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def test_a_module_that_fails_to_load_is_one_line_under_pal_import_and_pal_run(tmp_path: Path) -> None:
    (tmp_path / "shouting.py").write_text(GRAPH_MODULE, encoding="utf-8")
    imported = run_pal("import", "langgraph", "shouting:graph", "-o", "shouting.pal", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    ran = run_pal("run", "shouting.pal", "--input", '{"text": "hi"}', "-q", *no_model(tmp_path), cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {"text": "hi", "shout": "HI"}

    # The module now needs something the environment does not have, as a client made at import time does.
    broken = 'import os\n\nAPI_KEY = os.environ["SHOUTING_API_KEY"]\n' + GRAPH_MODULE
    (tmp_path / "shouting.py").write_text(broken, encoding="utf-8")
    ran = run_pal("run", "shouting.pal", "--input", '{"text": "hi"}', "-q", *no_model(tmp_path), cwd=tmp_path)
    assert ran.returncode != 0
    line = _one_line(ran.stderr)
    assert "module shouting" in line and str(tmp_path / "shouting.py") in line
    assert "raised KeyError: 'SHOUTING_API_KEY' while loading" in line

    imported = run_pal("import", "langgraph", "shouting:graph", "-o", "again.pal", cwd=tmp_path)
    assert imported.returncode != 0
    line = _one_line(imported.stderr)
    assert "module shouting" in line and "KeyError: 'SHOUTING_API_KEY'" in line

    (tmp_path / "shouting.py").write_text("def shout(state:\n", encoding="utf-8")
    ran = run_pal("run", "shouting.pal", "--input", '{"text": "hi"}', "-q", *no_model(tmp_path), cwd=tmp_path)
    assert f"module shouting ({tmp_path / 'shouting.py'}:1) has a syntax error" in _one_line(ran.stderr)


INPUT_KEY_MODULE = '''"""A graph whose state has a key named `input` (and one named `context`)."""

from typing import TypedDict

from langgraph.graph import END, START, StateGraph


class State(TypedDict, total=False):
    input: str
    context: dict
    answer: str


def answer(state: State) -> dict:
    return {"answer": f"{state['input']}{state.get('context', {}).get('mark', '!')}"}


builder = StateGraph(State)
builder.add_node("answer", answer)
builder.add_edge(START, "answer")
builder.add_edge("answer", END)
graph = builder.compile()
'''


def test_pal_run_input_is_the_graphs_input_whatever_its_keys_are_called(tmp_path: Path) -> None:
    (tmp_path / "echo.py").write_text(INPUT_KEY_MODULE, encoding="utf-8")
    imported = run_pal("import", "langgraph", "echo:graph", "-o", "echo.pal", cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr
    assert "## Invoke($graph_input:dict) -> dict" in (tmp_path / "echo.pal").read_text(encoding="utf-8")
    for given, expected in (
        ({"input": "hello"}, {"input": "hello", "answer": "hello!"}),
        (
            {"input": "hi", "context": {"mark": "?"}},
            {"input": "hi", "context": {"mark": "?"}, "answer": "hi?"},
        ),
        (
            {"context": {"mark": "."}, "input": "ok"},
            {"input": "ok", "context": {"mark": "."}, "answer": "ok."},
        ),
    ):
        ran = run_pal(
            "run", "echo.pal", "--input", json.dumps(given), "-q", *no_model(tmp_path), cwd=tmp_path
        )
        assert ran.returncode == 0, ran.stderr
        assert json.loads(ran.stdout) == expected

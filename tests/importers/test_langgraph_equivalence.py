"""Imported graphs run by our runtime end in the same state as `graph.invoke` on the same input.

The programs run on the deterministic fast path: no model is configured and none may be called, so any
step the runtime could not execute by itself would fail the run.
"""

from __future__ import annotations

import copy
import importlib
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from importers.langgraph import import_graph
from pal_core.parser import parse
from pal_core.writer import write
from runtime.api import run_playbook
from runtime.program_run import RunLimits

ROOT = Path(__file__).resolve().parents[2]
EQUIVALENT_GRAPHS = (
    "linear",
    "branch",
    "loop",
    "send_fanout",
    "subgraph",
    "parallel",
    "command",
    "routes",
    "pydantic_state",
    "async_nodes",
    "map_reduce",
    "parallel_goto",
    "counter",
)
RUN_SECONDS = 30


@dataclass(frozen=True, slots=True, kw_only=True)
class StateComparison:
    """One input run both ways."""

    input: dict[str, Any]
    """The input state."""
    expected: Any
    """What `graph.invoke` returned."""
    actual: Any
    """What the imported program's `Invoke` returned."""

    @property
    def equal(self) -> bool:
        """Same keys in the same order, with equal values."""
        return (
            isinstance(self.actual, dict)
            and self.expected == self.actual
            and list(self.expected) == list(self.actual)
        )


async def run_graph_state_equivalence(
    graph: Any, inputs: list[dict[str, Any]], *, messages: list[str] | None = None
) -> list[StateComparison]:
    """Import `graph` (strictly: nothing may be left unexpressed), write it as PAL text and read it back,
    then run its `Invoke` with our runtime and no model on each input, next to `graph.ainvoke` (which
    runs sync and async nodes alike, as `invoke` does sync ones)."""
    program = parse(write(import_graph(graph, strict=True).program))
    comparisons = []
    for state in inputs:
        with anyio.fail_after(RUN_SECONDS):
            expected = await graph.ainvoke(copy.deepcopy(state))
            actual = await run_playbook(
                program,
                "Invoke",
                model=None,
                messages=messages,
                limits=RunLimits(max_model_calls=0),
                input=copy.deepcopy(state),
            )
        comparisons.append(StateComparison(input=state, expected=expected, actual=actual))
    return comparisons


@pytest.mark.anyio
@pytest.mark.parametrize("name", EQUIVALENT_GRAPHS)
async def test_the_imported_graph_ends_in_the_same_state_as_invoke(name: str) -> None:
    module = importlib.import_module(f"tests.fixtures.langgraph.{name}")
    comparisons = await run_graph_state_equivalence(module.graph, module.INPUTS)
    assert len(comparisons) == len(module.INPUTS) >= 2
    for comparison in comparisons:
        assert comparison.equal, (comparison.input, comparison.expected, comparison.actual)


@pytest.mark.anyio
async def test_an_interrupting_graph_ends_like_a_resumed_langgraph_run() -> None:
    from langgraph.types import Command

    from tests.fixtures.langgraph.interrupt import graph

    config = {"configurable": {"thread_id": "equivalence"}}
    paused = graph.invoke({}, config)
    assert paused["__interrupt__"][0].value == "What is your name?"
    graph.invoke(Command(resume="  Ada "), config)  # answers, then pauses before greet
    expected = graph.invoke(None, config)
    program = parse(write(import_graph(graph, strict=True).program))
    with anyio.fail_after(RUN_SECONDS):
        # The first message answers interrupt(); the second resumes the pause before greet (YLD user).
        actual = await run_playbook(
            program,
            "Invoke",
            model=None,
            messages=["  Ada ", "go on"],
            limits=RunLimits(max_model_calls=0),
            input={},
        )
    assert actual == expected == {"name": "Ada", "greeting": "Hello, Ada!"}


def test_the_comparison_sees_different_values_and_a_different_key_order() -> None:
    same = StateComparison(input={}, expected={"x": 5, "trail": []}, actual={"x": 5, "trail": []})
    assert same.equal
    assert not StateComparison(input={}, expected={"x": 5, "trail": []}, actual={"trail": [], "x": 5}).equal
    assert not StateComparison(input={}, expected={"x": 5}, actual={"x": 6}).equal
    assert not StateComparison(input={}, expected={"x": 5}, actual=None).equal


def test_pal_run_prints_the_final_state_as_json(tmp_path: Path) -> None:
    """`pal run out.pal --input '{...}'` on an imported graph prints what `graph.invoke` returns."""
    from importers.langgraph import import_target
    from tests.fixtures.langgraph import command

    program = tmp_path / "command.pal"
    program.write_text(
        write(import_target("tests.fixtures.langgraph.command:graph").program), encoding="utf-8"
    )
    state = {"ticket": "refund please"}
    completed = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "run", str(program), "--input", json.dumps(state), "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert json.loads(completed.stdout) == command.graph.invoke(state)

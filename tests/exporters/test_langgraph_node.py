"""exporters.langgraph.as_langgraph_node: PAL playbooks as nodes of real LangGraph StateGraphs."""

from __future__ import annotations

import dataclasses
import importlib
import operator
from typing import Annotated, Any, TypedDict

import anyio
import pytest
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from exporters import ExportError, get_exporter
from exporters.langgraph import PalNode, as_langgraph_node
from importers import get_importer
from pal_core.ir import Program
from pal_core.parser import parse
from runtime.embedding import EmbeddedPlaybook
from runtime.errors import PlaybookFailed


class ScoreState(TypedDict, total=False):
    x: int
    y: int
    total: int
    product: int
    doubled: int
    report: str
    said: list[str]
    log: Annotated[list[str], operator.add]


def prepare(state: ScoreState) -> dict[str, Any]:
    return {"y": state["x"] + 1, "log": ["prepare"]}


def score(state: ScoreState) -> dict[str, Any]:
    return {"total": state["x"] + state["y"], "product": state["x"] * state["y"]}


def report(state: ScoreState) -> dict[str, Any]:
    return {"report": f"{state['total']}/{state['product']}", "log": ["report"]}


def line_graph(middle: Any) -> Any:
    """START -> prepare -> score -> report -> END, with `middle` as the score node."""
    builder = StateGraph(ScoreState)
    builder.add_node("prepare", prepare)
    builder.add_node("score", middle)
    builder.add_node("report", report)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "score")
    builder.add_edge("score", "report")
    builder.add_edge("report", END)
    return builder.compile()


# --- mixing PAL nodes and native nodes -------------------------------------------------------------------


def test_a_pal_node_between_native_nodes_gives_the_native_result(scorer: Program) -> None:
    node = as_langgraph_node(scorer, playbook="Score")
    try:
        assert isinstance(node, PalNode)
        assert node.name == "Score"
        native = line_graph(score)
        mixed = line_graph(node)
        for x in (0, 3, -7):
            assert mixed.invoke({"x": x}) == native.invoke({"x": x})
        assert mixed.invoke({"x": 2}) == {
            "x": 2,
            "y": 3,
            "total": 5,
            "product": 6,
            "report": "5/6",
            "log": ["prepare", "report"],
        }
    finally:
        node.close()


@pytest.mark.anyio
async def test_the_same_graph_runs_with_ainvoke(scorer: Program) -> None:
    node = as_langgraph_node(scorer, playbook="Score")
    try:
        native = line_graph(score)
        mixed = line_graph(node)
        with anyio.fail_after(20):
            for x in (0, 3, -7):
                assert await mixed.ainvoke({"x": x}) == await native.ainvoke({"x": x})
    finally:
        with anyio.fail_after(30):
            await node.aclose()


@pytest.mark.anyio
async def test_sync_invoke_from_inside_a_running_loop(scorer: Program) -> None:
    node = as_langgraph_node(scorer, playbook="Score")
    try:
        assert line_graph(node).invoke({"x": 4})["report"] == "9/20"
    finally:
        with anyio.fail_after(30):
            await node.aclose()


def test_inputs_rename_state_keys_and_output_key_names_the_result(scorer: Program) -> None:
    double = as_langgraph_node(scorer, playbook="Double", inputs={"n": "total"}, output_key="doubled")
    builder = StateGraph(ScoreState)
    builder.add_node("score", score)
    builder.add_node("double", double)
    builder.add_edge(START, "score")
    builder.add_edge("score", "double")
    builder.add_edge("double", END)
    try:
        assert builder.compile().invoke({"x": 2, "y": 5}) == {
            "x": 2,
            "y": 5,
            "total": 7,
            "product": 10,
            "doubled": 14,
            "log": [],
        }
    finally:
        double.close()


def test_parallel_pal_nodes_in_one_superstep(scorer: Program) -> None:
    # LangGraph runs the two branches of a superstep at once, in worker threads when invoked sync.
    builder = StateGraph(ScoreState)
    scored = as_langgraph_node(scorer, playbook="Score", name="scored")
    doubled = as_langgraph_node(scorer, playbook="Double", inputs={"n": "x"}, output_key="doubled")
    builder.add_node(scored)
    builder.add_node("doubled", doubled)
    builder.add_node("report", report)
    builder.add_edge(START, "scored")
    builder.add_edge(START, "doubled")
    builder.add_edge(["scored", "doubled"], "report")
    builder.add_edge("report", END)
    graph = builder.compile()
    try:
        for x in range(5):
            result = graph.invoke({"x": x, "y": 10})
            assert (result["total"], result["product"], result["doubled"]) == (x + 10, x * 10, 2 * x)
    finally:
        scored.close()
        doubled.close()


def test_state_does_not_leak_between_invocations(scorer: Program) -> None:
    class MarkState(TypedDict, total=False):
        mark: str
        seen: list[Any]

    visit = as_langgraph_node(scorer, playbook="Visit", output_key="seen")
    builder = StateGraph(MarkState)
    builder.add_node("visit", visit)
    builder.add_edge(START, "visit")
    builder.add_edge("visit", END)
    graph = builder.compile()
    try:
        assert graph.invoke({"mark": "a"})["seen"] == [None, "a"]
        assert graph.invoke({"mark": "b"})["seen"] == [None, "b"]
    finally:
        visit.close()


def test_user_messages_go_to_a_state_key(scorer: Program) -> None:
    class Talk(TypedDict, total=False):
        who: str
        said: list[str]

    announce = as_langgraph_node(scorer, playbook="Announce", user_messages_key="said")
    builder = StateGraph(Talk)
    builder.add_node("announce", announce)
    builder.add_edge(START, "announce")
    builder.add_edge("announce", END)
    try:
        assert builder.compile().invoke({"who": "Ann"}) == {"who": "Ann", "said": ["Ann", "is here"]}
    finally:
        announce.close()


class PydanticScores(BaseModel):
    x: int
    y: int = 0
    total: int | None = None
    product: int | None = None


def test_a_pydantic_state(scorer: Program) -> None:
    node = as_langgraph_node(scorer, playbook="Score")
    builder = StateGraph(PydanticScores)
    builder.add_node("score", node)
    builder.add_edge(START, "score")
    builder.add_edge("score", END)
    try:
        assert builder.compile().invoke({"x": 3, "y": 4}) == {"x": 3, "y": 4, "total": 7, "product": 12}
    finally:
        node.close()


COMMANDS = '''# Router
Routes by size.

```python
from langgraph.types import Command


@playbook
async def Route(value: int):
    """Go to `big` or `small`, noting the route."""
    return Command(goto="big" if value >= 10 else "small", update={"route": "by size"})
```
'''


def test_a_command_result_routes_the_graph() -> None:
    class Routed(TypedDict, total=False):
        value: int
        route: str
        size: str

    route = as_langgraph_node(parse(COMMANDS), playbook="Route")
    builder = StateGraph(Routed)
    builder.add_node("route", route, destinations=("big", "small"))
    builder.add_node("big", lambda state: {"size": "big"})
    builder.add_node("small", lambda state: {"size": "small"})
    builder.add_edge(START, "route")
    builder.add_edge("big", END)
    builder.add_edge("small", END)
    graph = builder.compile()
    try:
        assert graph.invoke({"value": 12}) == {"value": 12, "route": "by size", "size": "big"}
        assert graph.invoke({"value": 2}) == {"value": 2, "route": "by size", "size": "small"}
    finally:
        route.close()


KEYS = """# Keys
Lists state keys.

```python
@playbook
async def Keys(state: dict) -> dict:
    \"\"\"The keys of `state` that have a value.\"\"\"
    return {"keys": sorted(key for key, value in state.items() if value is not None)}
```
"""


@dataclasses.dataclass
class DataclassState:
    a: int = 0
    b: str = ""
    keys: list[str] | None = None


def test_the_whole_state_of_a_dataclass_state() -> None:
    keys = as_langgraph_node(parse(KEYS), playbook="Keys", inputs={"state": "*"})
    builder = StateGraph(DataclassState)
    builder.add_node("keys", keys)
    builder.add_edge(START, "keys")
    builder.add_edge("keys", END)
    try:
        assert builder.compile().invoke({"a": 1, "b": "x"}) == {"a": 1, "b": "x", "keys": ["a", "b"]}
        with pytest.raises(ExportError, match=r"node 'Keys' \(Keys.Keys\): the graph state is a int"):
            keys.invoke(3)
    finally:
        keys.close()


def test_node_and_tool_can_share_one_embedded_playbook(scorer: Program) -> None:
    embedded = EmbeddedPlaybook(scorer, "Double")
    node = as_langgraph_node(embedded, inputs={"n": "x"}, output_key="doubled")
    with embedded:
        assert node.invoke({"x": 4}) == {"doubled": 8}
        assert node.embedded is embedded
    with pytest.raises(ExportError, match="playbook cannot be given with an EmbeddedPlaybook"):
        as_langgraph_node(embedded, playbook="Score")


# --- bad options and bad state ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"playbook": "Nope"}, r"cannot export: the program has no playbook Nope"),
        (
            {"playbook": "Score", "inputs": {"z": "x"}},
            r"inputs names 'z', which is not a parameter \(\$x, \$y\)",
        ),
        (
            {"playbook": "Score", "inputs": {"x": "x"}},
            r"inputs gives no state key for \$y, which have no default",
        ),
        ({"playbook": "Score", "inputs": "x"}, r"not the string 'x'; write \['x'\]"),
        (
            {"playbook": "Score", "inputs": {"x": "*", "y": "y"}},
            r"\$x is int, so it cannot take the whole state",
        ),
        (
            {"playbook": "Score", "inputs": {"x": "", "y": "y"}},
            r"state key of \$x must be a non-empty string",
        ),
        ({"playbook": "Score", "output_key": ""}, r"output_key must be a state key name"),
        ({"playbook": "Score", "output_key": "a", "user_messages_key": "a"}, r"are both 'a'"),
    ],
)
def test_options_that_cannot_work_are_refused_up_front(
    scorer: Program, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ExportError, match=message):
        as_langgraph_node(scorer, **options)


def test_state_the_playbook_cannot_take_is_refused_naming_node_and_keys(scorer: Program) -> None:
    node = as_langgraph_node(scorer, playbook="Score", name="scoring")
    renamed = as_langgraph_node(scorer, playbook="Double", inputs={"n": "count"}, output_key="doubled")
    try:
        with pytest.raises(
            ExportError, match=r"node 'scoring' \(Scorer.Score\): the state has no value for 'y'"
        ):
            node.invoke({"x": 1})
        with pytest.raises(ExportError, match=r"x must be an integer, got string \"one\""):
            node.invoke({"x": "one", "y": 2})
        with pytest.raises(
            ExportError, match=r"no value for 'count' \(for \$n\); state keys with values: 'x'"
        ):
            renamed.invoke({"x": 1})
        with pytest.raises(
            ExportError, match=r"n must be an integer, got array \[1\] \(n is state key 'count'\)"
        ):
            renamed.invoke({"count": [1]})
    finally:
        node.close()
        renamed.close()


def test_a_result_that_is_no_update_needs_an_output_key(scorer: Program) -> None:
    node = as_langgraph_node(scorer, playbook="Double", name="twice")
    try:
        with pytest.raises(ExportError, match=r"node 'twice': Scorer.Double returned int 4, not a dict"):
            node.invoke({"n": 2})
    finally:
        node.close()


def test_playbook_failures_propagate(scorer: Program) -> None:
    node = as_langgraph_node(scorer, playbook="Explode")
    try:
        with pytest.raises(PlaybookFailed, match="ValueError: kaboom"):
            node.invoke({"reason": "kaboom"})
    finally:
        node.close()


# --- LangGraph -> PAL -> LangGraph -------------------------------------------------------------------------


def _wrapped(state_schema: type, inner: Any) -> Any:
    builder = StateGraph(state_schema)
    builder.add_node("inner", inner)
    builder.add_edge(START, "inner")
    builder.add_edge("inner", END)
    return builder.compile()


ROUND_TRIP = [
    "linear",
    "branch",
    "loop",
    "parallel",
    "send_fanout",
    "subgraph",
    "command",
    "routes",
    "pydantic_state",
]
"""Fixture graphs of the importer whose imports run as they are (no interrupts, no LLM agents)."""


def _round_trip(fixture: str) -> tuple[Any, Any, Any, Any]:
    """The fixture module, the exported node, and the original and exported graphs, each the only node of
    the same outer graph (so a reducer applies the node's output the same way to both)."""
    module = importlib.import_module(f"tests.fixtures.langgraph.{fixture}")
    imported = get_importer("langgraph")(f"tests.fixtures.langgraph.{fixture}:graph")
    # Invoke($input:dict): the state has no `input` key, so the whole state is the argument.
    node = as_langgraph_node(imported.program, playbook="Invoke")
    schema = module.graph.builder.state_schema
    return module, node, _wrapped(schema, module.graph), _wrapped(schema, node)


@pytest.mark.parametrize("fixture", ROUND_TRIP)
def test_an_imported_graph_exported_back_as_a_node_gives_the_same_result(fixture: str) -> None:
    module, node, original, exported = _round_trip(fixture)
    try:
        for inputs in module.INPUTS:
            assert exported.invoke(inputs) == original.invoke(inputs), inputs
    finally:
        node.close()


@pytest.mark.anyio
@pytest.mark.parametrize("fixture", [*ROUND_TRIP, "async_nodes"])
async def test_the_round_trip_with_ainvoke(fixture: str) -> None:
    module, node, original, exported = _round_trip(fixture)
    try:
        with anyio.fail_after(30):
            for inputs in module.INPUTS:
                assert await exported.ainvoke(inputs) == await original.ainvoke(inputs), inputs
    finally:
        with anyio.fail_after(30):
            await node.aclose()


def test_an_imported_graph_without_reducers_gives_what_the_graph_itself_gives() -> None:
    from tests.fixtures.langgraph import branch

    imported = get_importer("langgraph")("tests.fixtures.langgraph.branch:graph")
    node = as_langgraph_node(imported.program, playbook="Invoke")
    try:
        exported = _wrapped(branch.State, node)
        for inputs in branch.INPUTS:
            assert exported.invoke(inputs) == branch.graph.invoke(inputs)
    finally:
        node.close()


# --- the registry --------------------------------------------------------------------------------------


def test_the_registry_makes_nodes_and_tools(scorer: Program) -> None:
    exporter = get_exporter("langgraph")
    node = exporter.make("node", scorer, playbook="Double", inputs=["n"], output_key="doubled")
    tool = exporter.make("tool", scorer, playbook="Double")
    try:
        assert node.invoke({"n": 3}) == {"doubled": 6}
        assert tool.invoke({"n": 3}) == 6
    finally:
        node.close()
        tool.close()
    with pytest.raises(ExportError, match=r"makes no 'agent' \(it makes: node, tool\)"):
        exporter.make("agent", scorer)

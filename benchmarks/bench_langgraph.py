"""An exported PAL node against a plain function node doing the same work, in the same LangGraph graph.
Goal (issue 7): the graph with the PAL node takes at most 1.2x the time of the graph with the plain node.

The graph is START -> prepare -> score -> report -> END. `score` is either a plain Python function, or the
PAL playbook `Score` (a Python playbook, no model) exported with `as_langgraph_node`; the other nodes are
the same plain functions. Both graphs are invoked with the same inputs, alternately (so drift in machine
load hits both alike), many times; the figures are medians. Sync (`invoke`, plain `def` node) and async
(`ainvoke`, plain `async def` node) are measured separately.
Run: python benchmarks/bench_langgraph.py [invocations]

`python benchmarks/bench_langgraph.py react [runs] [local runs]` measures an imported ReAct agent instead
(issue 23): a hand-written loop (a model node with a system prompt and two tools, a ToolNode,
tools_condition), run as a bare LangGraph graph with LangChain's fake chat model making two decisions (call
a tool, then answer), against the imported program making the same decisions with a ScriptedModel, and the
imported program on the bundled model (`local/smollm2`, within a budget of 4 model calls of at most 160
tokens): seconds per model turn of each, measured in this one run.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from exporters.langgraph import as_langgraph_node
from pal_core.parser import parse
from runtime.embedding import EmbeddedPlaybook

GOAL = 1.2
WARM_UP = 200
INVOCATIONS = 3000

PROGRAM = '''# Scorer
Scores pairs of numbers.

```python
@playbook(public=True)
async def Score(x: int, y: int) -> dict:
    """Score two numbers: their total and their product."""
    return {"total": x + y, "product": x * y}
```
'''


class State(TypedDict, total=False):
    x: int
    y: int
    total: int
    product: int
    report: str


def prepare(state: State) -> dict[str, Any]:
    return {"y": state["x"] + 1}


def score(state: State) -> dict[str, Any]:
    return {"total": state["x"] + state["y"], "product": state["x"] * state["y"]}


async def score_async(state: State) -> dict[str, Any]:
    return {"total": state["x"] + state["y"], "product": state["x"] * state["y"]}


def report(state: State) -> dict[str, Any]:
    return {"report": f"{state['total']}/{state['product']}"}


def graph_with(middle: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("prepare", prepare)
    builder.add_node("score", middle)
    builder.add_node("report", report)
    builder.add_edge(START, "prepare")
    builder.add_edge("prepare", "score")
    builder.add_edge("score", "report")
    builder.add_edge("report", END)
    return builder.compile()


def inputs(count: int) -> list[State]:
    return [{"x": n % 97} for n in range(count)]


def measure_sync(plain: Any, pal: Any, count: int) -> tuple[float, float]:
    """Median seconds per invoke of each graph, invoked alternately."""
    timings: tuple[list[float], list[float]] = ([], [])
    for index, state in enumerate(inputs(WARM_UP + count)):
        for graph, times in ((plain, timings[0]), (pal, timings[1])):
            start = time.perf_counter()
            result = graph.invoke(state)
            elapsed = time.perf_counter() - start
            if index >= WARM_UP:
                times.append(elapsed)
        if result["report"] != f"{2 * state['x'] + 1}/{state['x'] * (state['x'] + 1)}":
            raise AssertionError(f"wrong result {result} for {state}")
    return statistics.median(timings[0]), statistics.median(timings[1])


async def measure_async(plain: Any, pal: Any, count: int) -> tuple[float, float]:
    timings: tuple[list[float], list[float]] = ([], [])
    for index, state in enumerate(inputs(WARM_UP + count)):
        for graph, times in ((plain, timings[0]), (pal, timings[1])):
            start = time.perf_counter()
            result = await graph.ainvoke(state)
            elapsed = time.perf_counter() - start
            if index >= WARM_UP:
                times.append(elapsed)
        if result["report"] != f"{2 * state['x'] + 1}/{state['x'] * (state['x'] + 1)}":
            raise AssertionError(f"wrong result {result} for {state}")
    return statistics.median(timings[0]), statistics.median(timings[1])


def per_call(function: Callable[[], Any], count: int) -> float:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def per_call_async(function: Callable[[], Awaitable[Any]], count: int) -> float:
    times = []
    for _ in range(count):
        start = time.perf_counter()
        await function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def line(label: str, plain: float, pal: float) -> str:
    ratio = pal / plain
    verdict = "meets" if ratio <= GOAL else "MISSES"
    return (
        f"{label:<6} plain node {plain * 1e6:8.1f} µs   PAL node {pal * 1e6:8.1f} µs   "
        f"+{(pal - plain) * 1e6:6.1f} µs   ratio {ratio:.3f}x ({verdict} the {GOAL}x goal)"
    )


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else INVOCATIONS
    program = parse(PROGRAM)
    node = as_langgraph_node(program, playbook="Score")
    print(
        f"graph START -> prepare -> score -> report -> END; medians of {count} invocations each, alternated"
    )
    try:
        sync_plain, sync_pal = measure_sync(graph_with(score), graph_with(node), count)
        print(line("sync", sync_plain, sync_pal))
    finally:
        node.close()

    async def run_async() -> tuple[float, float]:
        try:
            return await measure_async(graph_with(score_async), graph_with(node), count)
        finally:
            await node.aclose()

    async_plain, async_pal = asyncio.run(run_async())
    print(line("async", async_plain, async_pal))

    embedded = EmbeddedPlaybook(program, "Score")
    arguments = {"x": 3, "y": 4}
    with embedded:
        sync_call = per_call(lambda: embedded.call_sync(arguments), count)

    async def async_calls() -> float:
        try:
            return await per_call_async(lambda: embedded.call(arguments), count)
        finally:
            await embedded.aclose()

    async_call = asyncio.run(async_calls())
    print(
        f"the playbook call alone (EmbeddedPlaybook): call_sync {sync_call * 1e6:.1f} µs, "
        f"await call {async_call * 1e6:.1f} µs"
    )


REACT_MODULE = '''"""The graph the react benchmark imports: a hand-written ReAct loop over a fake chat model."""

from typing import Annotated, TypedDict

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, SystemMessage
from langchain_core.tools import tool
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

PROMPT = "You are a travel desk. Use the tools for weather and distances, then answer in one sentence."


class Fake(GenericFakeChatModel):
    def bind_tools(self, tools, **kwargs):
        return self


@tool
def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"It is sunny and 24 degrees in {city}."


@tool
def distance_km(origin: str, destination: str) -> int:
    """The road distance between two cities, in kilometres."""
    return 313


model = Fake(messages=iter([]))


class State(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def call_model(state: State) -> dict:
    return {"messages": [model.bind_tools([get_weather, distance_km]).invoke([SystemMessage(PROMPT), *state["messages"]])]}


def decide() -> None:
    model.messages = iter(
        [
            AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Porto"}, "id": "c1", "type": "tool_call"}]),
            AIMessage("It is sunny and 24 degrees in Porto."),
        ]
    )


builder = StateGraph(State)
builder.add_node("agent", call_model)
builder.add_node("tools", ToolNode([get_weather, distance_km]))
builder.add_edge(START, "agent")
builder.add_conditional_edges("agent", tools_condition)
builder.add_edge("tools", "agent")
graph = builder.compile()
'''
REACT_QUESTION = {"messages": [{"role": "user", "content": "What is the weather in Porto?"}]}
REACT_ANSWERS = [
    '`$w = GetWeather(city="Porto")`\nyld call',
    'Return["It is sunny and 24 degrees in Porto."]\nyld return',
]
REACT_TURNS = 2
"""Model turns of one run: call the tool, then answer."""


def react_benchmark(runs: int, local_runs: int) -> None:
    import importlib
    import tempfile

    from importers.langgraph import import_target
    from pal_core.writer import write
    from runtime.api import run_playbook
    from runtime.models import resolve_model
    from runtime.models.scripted import ScriptedModel
    from runtime.program_run import RunLimits
    from runtime.trace import Tracer

    folder = tempfile.mkdtemp(prefix="bench-langgraph-")
    with open(f"{folder}/bench_react_graph.py", "w", encoding="utf-8") as file:
        file.write(REACT_MODULE)
    sys.path.insert(0, folder)
    module = importlib.import_module("bench_react_graph")
    program = parse(write(import_target("bench_react_graph:graph", strict=True).program))

    async def bare() -> float:
        module.decide()
        start = time.perf_counter()
        state = await module.graph.ainvoke(REACT_QUESTION)
        elapsed = time.perf_counter() - start
        if state["messages"][-1].content != "It is sunny and 24 degrees in Porto.":
            raise AssertionError(f"wrong LangGraph state {state}")
        return elapsed

    async def scripted() -> float:
        module.model.messages = iter([])  # the imported program must not call the graph's own model
        start = time.perf_counter()
        state = await run_playbook(
            program, "Invoke", model=ScriptedModel(REACT_ANSWERS), input=REACT_QUESTION
        )
        elapsed = time.perf_counter() - start
        if state["messages"][-1].content != "It is sunny and 24 degrees in Porto.":
            raise AssertionError(f"wrong imported state {state}")
        return elapsed

    async def alternate() -> tuple[float, float]:
        lg: list[float] = []
        pal: list[float] = []
        for index in range(10 + runs):
            first, second = await bare(), await scripted()
            if index >= 10:
                lg.append(first)
                pal.append(second)
        return statistics.median(lg), statistics.median(pal)

    lg_run, pal_run = asyncio.run(alternate())
    print(f"imported ReAct loop, medians of {runs} runs each, alternated ({REACT_TURNS} model turns a run):")
    print(
        f"  bare LangGraph, fake chat model      {lg_run / REACT_TURNS * 1e3:8.2f} ms per turn\n"
        f"  imported program, ScriptedModel      {pal_run / REACT_TURNS * 1e3:8.2f} ms per turn   "
        f"ratio {pal_run / lg_run:.2f}x"
    )
    if local_runs <= 0:
        return
    limits = RunLimits(seed=7, max_model_calls=4, max_retries=4, max_answer_tokens=160)
    model = resolve_model("local/smollm2")

    async def on_the_bundled_model() -> tuple[float, int, int, str]:
        tracer = Tracer()
        module.model.messages = iter([])
        start = time.perf_counter()
        try:
            await run_playbook(
                program, "Invoke", model=model, limits=limits, tracer=tracer, input=REACT_QUESTION
            )
            ending = "final state"
        except Exception as error:
            ending = (
                "budget stop" if _limit_reached(error) else f"{type(error).__name__}: {error}".splitlines()[0]
            )
        elapsed = time.perf_counter() - start
        calls = sum(1 for event in tracer.events if event.event == "model_call")
        refused = sum(1 for event in tracer.events if event.event == "violation")
        return elapsed, calls, refused, ending

    for index in range(local_runs):
        elapsed, calls, refused, ending = asyncio.run(on_the_bundled_model())
        per_turn = elapsed / max(calls, 1)
        print(
            f"  imported program, {DEFAULT_LOCAL} run {index + 1}: {calls} model turns, {calls - refused} accepted, "
            f"{per_turn:.1f} s per turn ({per_turn / (lg_run / REACT_TURNS):,.0f}x the bare LangGraph turn); {ending}"
        )


DEFAULT_LOCAL = "local/smollm2"


def _limit_reached(error: BaseException) -> bool:
    from runtime.models.limits import ModelCallLimitExceeded

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ModelCallLimitExceeded):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "react":
        react_benchmark(
            int(sys.argv[2]) if len(sys.argv) > 2 else 200, int(sys.argv[3]) if len(sys.argv) > 3 else 3
        )
    else:
        main()

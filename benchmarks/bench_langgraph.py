"""An exported PAL node against a plain function node doing the same work, in the same LangGraph graph.
Goal (issue 7): the graph with the PAL node takes at most 1.2x the time of the graph with the plain node.

The graph is START -> prepare -> score -> report -> END. `score` is either a plain Python function, or the
PAL playbook `Score` (a Python playbook, no model) exported with `as_langgraph_node`; the other nodes are
the same plain functions. Both graphs are invoked with the same inputs, alternately (so drift in machine
load hits both alike), many times; the figures are medians. Sync (`invoke`, plain `def` node) and async
(`ainvoke`, plain `async def` node) are measured separately.
Run: python benchmarks/bench_langgraph.py [invocations]
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


if __name__ == "__main__":
    main()

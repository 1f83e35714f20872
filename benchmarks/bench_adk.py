"""An exported PAL agent against a native custom ADK agent doing the same work, under ADK's Runner.
Goal (issue 15): the run with the PAL agent takes at most 1.2x the time of the run with the native agent.

The tree is SequentialAgent(prepare, score, report). `score` is either a custom `BaseAgent` whose
`_run_async_impl` computes the total and product of state keys `x` and `y` and yields them as a state
delta, or the PAL Python playbook `Score` (no model) exported with `as_adk_agent`; `prepare` and `report`
are the same custom agents in both trees. Each invocation is one `Runner.run_async` on a fresh session of
an InMemorySessionService; the two trees are run alternately (so drift in machine load hits both alike),
many times; the figures are medians. Both runs are checked against the expected final state.
Run: python benchmarks/bench_adk.py [invocations]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import warnings
from collections.abc import AsyncGenerator
from typing import Any

from google.adk.agents import BaseAgent
from google.adk.events import Event, EventActions
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.genai import types

from exporters.adk import as_adk_agent
from pal_core.parser import parse

GOAL = 1.2
WARM_UP = 100
INVOCATIONS = 1500

PROGRAM = '''# Scorer
Scores pairs of numbers.

```python
@playbook(public=True)
async def Score(x: int, y: int) -> dict:
    """Score two numbers: their total and their product."""
    return {"total": x + y, "product": x * y}
```
'''


class Prepare(BaseAgent):
    async def _run_async_impl(self, ctx: Any) -> AsyncGenerator[Event, None]:
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            actions=EventActions(state_delta={"y": ctx.session.state["x"] + 1}),
        )


class NativeScore(BaseAgent):
    async def _run_async_impl(self, ctx: Any) -> AsyncGenerator[Event, None]:
        state = ctx.session.state
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            actions=EventActions(
                state_delta={"total": state["x"] + state["y"], "product": state["x"] * state["y"]}
            ),
        )


class Report(BaseAgent):
    async def _run_async_impl(self, ctx: Any) -> AsyncGenerator[Event, None]:
        state = ctx.session.state
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            actions=EventActions(state_delta={"report": f"{state['total']}/{state['product']}"}),
        )


def tree(score: BaseAgent) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from google.adk.agents import SequentialAgent

        return SequentialAgent(
            name="pipeline", sub_agents=[Prepare(name="prepare"), score, Report(name="report")]
        )


class Harness:
    """One Runner over one session service; `invoke` runs the tree on a fresh session."""

    def __init__(self, root: Any) -> None:
        self.service = InMemorySessionService()
        self.runner = Runner(app_name="bench", agent=root, session_service=self.service)
        self.message = types.Content(role="user", parts=[types.Part(text="score")])

    async def invoke(self, x: int) -> dict[str, Any]:
        session = await self.service.create_session(app_name="bench", user_id="u", state={"x": x})
        async for _ in self.runner.run_async(user_id="u", session_id=session.id, new_message=self.message):
            pass
        final = await self.service.get_session(app_name="bench", user_id="u", session_id=session.id)
        assert final is not None
        return final.state


async def measure(native: Harness, pal: Harness, count: int) -> tuple[float, float]:
    """Median seconds per run of each tree, run alternately."""
    timings: tuple[list[float], list[float]] = ([], [])
    for index in range(WARM_UP + count):
        x = index % 97
        expected = {
            "x": x,
            "y": x + 1,
            "total": 2 * x + 1,
            "product": x * (x + 1),
            "report": f"{2 * x + 1}/{x * (x + 1)}",
        }
        for harness, times in ((native, timings[0]), (pal, timings[1])):
            start = time.perf_counter()
            state = await harness.invoke(x)
            elapsed = time.perf_counter() - start
            if index >= WARM_UP:
                times.append(elapsed)
            if state != expected:
                raise AssertionError(f"wrong state {state}, expected {expected}")
    return statistics.median(timings[0]), statistics.median(timings[1])


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else INVOCATIONS
    exported = as_adk_agent(parse(PROGRAM), playbook="Score", name="score")

    async def run() -> tuple[float, float]:
        try:
            return await measure(Harness(tree(NativeScore(name="score"))), Harness(tree(exported)), count)
        finally:
            await exported.aclose()

    native, pal = asyncio.run(run())
    ratio = pal / native
    verdict = "meets" if ratio <= GOAL else "MISSES"
    print(f"SequentialAgent(prepare, score, report) under Runner; medians of {count} runs each, alternated")
    print(
        f"native score {native * 1e6:8.1f} µs   PAL score {pal * 1e6:8.1f} µs   +{(pal - native) * 1e6:6.1f} µs   "
        f"ratio {ratio:.3f}x ({verdict} the {GOAL}x goal)"
    )


if __name__ == "__main__":
    main()

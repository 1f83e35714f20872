"""AutoGen both ways, timed (issue 16).

1. An exported PAL agent against a native custom BaseChatAgent doing the same work, taking turns in the same
   RoundRobinGroupChat in the same run. A turn's time is the gap between the message before it and its own
   message in `run_stream` (the manager's selection, the agent's `on_messages`, the publishing), so both
   agents are timed under the same load, alternately. Goal: the PAL agent's median turn at most 1.2x the
   native agent's.
2. The imported 10-message round robin (three deterministic agents, MaxMessageTermination(10)) run by our
   runtime as `pal run --input` does (a fresh run per task: start, the meeting, shutdown), against the
   original team's `run` (after `reset`), alternately; medians. The issue's bound: well under a second.

Run: python benchmarks/bench_autogen.py [turns] [chats]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Sequence

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import CancellationToken

from exporters.autogen import as_autogen_agent
from importers.autogen import import_target
from pal_core.parser import parse
from runtime.api import run_playbook
from runtime.embedding import EmbeddedPlaybook

GOAL = 1.2
TURNS = 2000
CHATS = 100
WARM_UP_CHATS = 5

PROGRAM = '''# Reviewer
Reviews the conversation.

```python
@playbook(public=True)
async def Review(messages: list) -> str:
    """How much of the conversation it saw and who spoke last."""
    return f"reviewed {len(messages)} messages, last from {messages[-1]['source']}"
```
'''


class NativeReviewer(BaseChatAgent):
    """The same work as the playbook, as a custom agent: it keeps the conversation and describes it."""

    def __init__(self, name: str) -> None:
        super().__init__(name, "Reviews the conversation.")
        self.history: list[dict[str, str]] = []

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> Response:
        self.history.extend({"source": m.source, "content": m.to_text()} for m in messages)
        text = f"reviewed {len(self.history)} messages, last from {self.history[-1]['source']}"
        self.history.append({"source": self.name, "content": text})
        return Response(chat_message=TextMessage(source=self.name, content=text))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self.history.clear()


async def turns_in_one_team(turns: int) -> tuple[float, float]:
    """Median turn time (seconds) of the native agent and of the exported PAL agent, in one run."""
    embedded = EmbeddedPlaybook(parse(PROGRAM), "Review")
    pal = as_autogen_agent(embedded, name="pal")
    team = RoundRobinGroupChat(
        [NativeReviewer("native"), pal], termination_condition=MaxMessageTermination(turns + 1)
    )
    gaps: dict[str, list[float]] = {"native": [], "pal": []}
    last = time.perf_counter()
    async for item in team.run_stream(task="Review the draft"):
        now = time.perf_counter()
        source = getattr(item, "source", None)
        if source in gaps:
            gaps[source].append(now - last)
        last = now
    await embedded.aclose()
    warm = 50
    return statistics.median(gaps["native"][warm:]), statistics.median(gaps["pal"][warm:])


async def chats(count: int) -> tuple[float, float, int]:
    """Median wall time of the original round robin and of the imported one; model calls of the latter."""
    import tests.fixtures.autogen.teams as teams
    from runtime.models import ScriptedModel

    team = teams.round_robin_max
    program = import_target("tests.fixtures.autogen.teams:round_robin_max").program
    original: list[float] = []
    imported: list[float] = []
    calls = 0
    for index in range(WARM_UP_CHATS + count):
        await team.reset()
        started = time.perf_counter()
        result = await team.run(task="Plan a picnic")
        original_time = time.perf_counter() - started
        await team.reset()
        model = ScriptedModel([])
        started = time.perf_counter()
        value = await run_playbook(program, "Run", task="Plan a picnic", model=model)
        imported_time = time.perf_counter() - started
        calls += model.calls
        assert (
            len(value["messages"])
            == len([m for m in result.messages if isinstance(m, BaseChatMessage)])
            == 10
        )
        if index >= WARM_UP_CHATS:
            original.append(original_time)
            imported.append(imported_time)
    return statistics.median(original), statistics.median(imported), calls


async def main() -> None:
    turns = int(sys.argv[1]) if len(sys.argv) > 1 else TURNS
    count = int(sys.argv[2]) if len(sys.argv) > 2 else CHATS
    native, pal = await turns_in_one_team(turns)
    ratio = pal / native
    print(f"exported agent in a RoundRobinGroupChat, {turns} turns in one run (median turn):")
    print(f"  native BaseChatAgent {native * 1e6:8.0f} µs")
    print(
        f"  PAL agent            {pal * 1e6:8.0f} µs   {ratio:.2f}x  (goal <= {GOAL}x: {'met' if ratio <= GOAL else 'NOT met'})"
    )
    original, imported, calls = await chats(count)
    print(f"10-message round robin, {count} runs each, alternated (median wall time):")
    print(f"  AutoGen team.run     {original * 1e3:8.1f} ms")
    print(
        f"  imported, pal run    {imported * 1e3:8.1f} ms   {imported / original:.2f}x  ({calls} model calls)"
    )


if __name__ == "__main__":
    asyncio.run(main())

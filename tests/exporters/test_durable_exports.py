"""Exported playbooks with a store keep their thread across calls (issue 17): a LangGraph node per graph
`thread_id`, an ADK agent per session, an AutoGen agent per conversation (saved and loaded with its
state). A new exporter object on the same store (a new process) continues the thread from its log."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import anyio
import pytest

from exporters import ExportError
from pal_core.parser import parse

RUN_SECONDS = 60

TALLY = parse(
    '''# Tally
Adds numbers to a running total.

```python
@playbook(public=True)
async def Add(n: int) -> int:
    """Adds n to the agent's total and returns it."""
    variables = agent.state.variables
    total = variables.get("total", 0) + n
    variables["total"] = total
    return total
```

## Greet($who:str) -> str
metadata:
  public: true
---
### Steps
01:RET "Hello, " + $who
''',
    file="tally.pal",
)


class State(TypedDict, total=False):
    n: int
    total: int


def _graph(node: Any) -> Any:
    from langgraph.graph import END, START, StateGraph

    builder = StateGraph(State)
    builder.add_node("add", node)
    builder.add_edge(START, "add")
    builder.add_edge("add", END)
    return builder.compile()


def test_a_langgraph_node_keeps_its_thread_per_graph_thread_id(tmp_path: Path) -> None:
    from exporters.langgraph import as_langgraph_node

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    node = as_langgraph_node(TALLY, playbook="Add", output_key="total", store=store)
    graph = _graph(node)
    try:
        one = {"configurable": {"thread_id": "one"}}
        two = {"configurable": {"thread_id": "two"}}
        assert graph.invoke({"n": 2}, one)["total"] == 2
        assert graph.invoke({"n": 3}, one)["total"] == 5
        assert graph.invoke({"n": 10}, two)["total"] == 10  # another thread, its own state
        assert graph.invoke({"n": 1})["total"] == 1  # no thread_id: a thread of its own
    finally:
        node.close()
    again = as_langgraph_node(TALLY, playbook="Add", output_key="total", store=store)
    try:  # a new node on the same store (another process): thread "one" goes on from its log
        assert _graph(again).invoke({"n": 4}, one)["total"] == 9
    finally:
        again.close()


@pytest.mark.anyio
async def test_an_adk_agent_keeps_its_thread_per_session(tmp_path: Path) -> None:
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    from exporters.adk import as_adk_agent

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    agent = as_adk_agent(TALLY, playbook="Add", output_key="total", store=store)
    runner = InMemoryRunner(agent=agent, app_name="tally")
    message = types.Content(role="user", parts=[types.Part(text="add")])

    async def turn(session_id: str, n: int) -> Any:
        service = runner.session_service
        session = await service.get_session(app_name="tally", user_id="u", session_id=session_id)
        assert session is not None
        await service.append_event(
            session,
            _state_event({"n": n}),
        )
        async for _ in runner.run_async(user_id="u", session_id=session_id, new_message=message):
            pass
        done = await service.get_session(app_name="tally", user_id="u", session_id=session_id)
        assert done is not None
        return done.state["total"]

    with anyio.fail_after(RUN_SECONDS):
        first = await runner.session_service.create_session(app_name="tally", user_id="u")
        second = await runner.session_service.create_session(app_name="tally", user_id="u")
        assert await turn(first.id, 2) == 2
        assert await turn(first.id, 5) == 7
        assert await turn(second.id, 1) == 1
        await runner.close()
        await agent.aclose()
    from runtime.store import open_store

    async with open_store(store) as opened:
        threads = {thread.id for thread in await opened.list_threads()}
    assert threads == {f"{first.id}:Add", f"{second.id}:Add"}


def _state_event(delta: dict[str, Any]) -> Any:
    from google.adk.events import Event, EventActions

    return Event(author="user", actions=EventActions(state_delta=delta))


@pytest.mark.anyio
async def test_an_autogen_agent_keeps_its_thread_and_saves_it_with_its_state(tmp_path: Path) -> None:
    from autogen_agentchat.messages import TextMessage
    from autogen_core import CancellationToken

    from exporters.autogen import as_autogen_agent

    program = parse(
        """# Turns
Counts its turns.

```python
@playbook
async def Count() -> int:
    variables = agent.state.variables
    variables["count"] = variables.get("count", 0) + 1
    return variables["count"]
```

## Turn($messages:list) -> str
metadata:
  public: true
---
### Steps
01:EXE $count:int = Count()
02:RET "turn " + str($count)
""",
        file="turns.pal",
    )
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    said = [TextMessage(source="user", content="hi")]
    with anyio.fail_after(RUN_SECONDS):
        agent = as_autogen_agent(program, playbook="Turn", store=store, name="counter")
        assert (await agent.on_messages(said, CancellationToken())).chat_message.content == "turn 1"
        assert (await agent.on_messages(said, CancellationToken())).chat_message.content == "turn 2"
        saved = await agent.save_state()
        await agent.close()
        # Another process loads the saved state: the same thread, and the conversation so far.
        restored = as_autogen_agent(program, playbook="Turn", store=store, name="counter")
        await restored.load_state(saved)
        assert restored.thread == agent.thread and len(restored.history) == 4
        assert (await restored.on_messages(said, CancellationToken())).chat_message.content == "turn 3"
        await restored.on_reset(CancellationToken())
        assert restored.thread != agent.thread  # a new conversation: a new thread
        assert (await restored.on_messages(said, CancellationToken())).chat_message.content == "turn 1"
        await restored.close()


def test_a_thread_needs_a_store() -> None:
    from exporters.autogen import as_autogen_tool

    with pytest.raises(ExportError, match="needs a store"):
        as_autogen_tool(TALLY, playbook="Add", thread="t")

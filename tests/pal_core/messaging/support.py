"""Helpers shared by the messaging tests: a registry populated with real participants."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from pal_core.messaging import (
    AgentParticipant,
    AsyncMessageQueue,
    ChannelRegistry,
    HumanParticipant,
    MeetingManager,
    Message,
    StreamChunkEvent,
    StreamCompleteEvent,
    StreamStartEvent,
)


@dataclass
class World:
    """A registry, its meeting manager, and the agents registered in it."""

    registry: ChannelRegistry
    meetings: MeetingManager
    agents: dict[str, AgentParticipant]
    human: HumanParticipant | None = None

    def inbox(self, agent_id: str) -> AsyncMessageQueue:
        return self.agents[agent_id].inbox


def make_world(klasses: list[str], *, with_human: bool = False, first_id: int = 1000) -> World:
    """Agents with ids first_id, first_id+1, ... of the given classes, plus a human if asked."""
    registry = ChannelRegistry()
    agents: dict[str, AgentParticipant] = {}
    for offset, klass in enumerate(klasses):
        agent_id = str(first_id + offset)
        agent = AgentParticipant(id=agent_id, klass=klass, inbox=AsyncMessageQueue(f"inbox of {agent_id}"))
        registry.register(agent)
        agents[agent_id] = agent
    human = None
    if with_human:
        human = HumanParticipant(inbox=AsyncMessageQueue("inbox of human"))
        registry.register(human)
    return World(registry=registry, meetings=MeetingManager(registry), agents=agents, human=human)


@dataclass
class RecordingObserver:
    """A stream observer that keeps every event it gets."""

    events: list[StreamStartEvent | StreamChunkEvent | StreamCompleteEvent] = field(default_factory=list)

    async def on_stream_start(self, event: StreamStartEvent) -> None:
        self.events.append(event)

    async def on_stream_chunk(self, event: StreamChunkEvent) -> None:
        self.events.append(event)

    async def on_stream_complete(self, event: StreamCompleteEvent) -> None:
        self.events.append(event)


def message(sender: str = "1000", content: str = "hi", **fields: object) -> Message:
    """A direct message with sensible defaults."""
    return Message(sender_id=sender, sender_klass="Tester", content=content, **fields)  # type: ignore[arg-type]


def other_tasks() -> set[asyncio.Task[object]]:
    """Every task of the running loop except the current one."""
    current = asyncio.current_task()
    return {task for task in asyncio.all_tasks() if task is not current}

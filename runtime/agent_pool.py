"""Pools of agent instances for calls from outside a run (framework nodes, tools, MCP tool calls).

A started run lives on; each call checks out an instance of the called agent with fresh state (variables,
artifacts, session log, unread messages; with `reload_python`, the agent's Python blocks executed anew),
runs its playbook, and checks the instance back in. Concurrent calls never share an instance, and nothing
a call sets is visible to the next one. Building and tearing down a whole run per call costs ten times
more (see benchmarks/bench_mcp.py).

What calls do share: the program's other agents (a playbook calling `Other.Playbook` reaches the same
`Other` every time) and, without `reload_python`, module-level variables of the agent's Python blocks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pal_core.ir import Agent
from pal_core.messaging import Message
from runtime.state import Variables
from runtime.triggers import TriggerWatcher

if TYPE_CHECKING:
    from runtime.agent import AgentInstance
    from runtime.program_run import ProgramRun


class AgentPool:
    """Instances of one agent class in a started run, handed out one call at a time."""

    def __init__(self, run: ProgramRun, agent: Agent, *, reload_python: bool = False) -> None:
        self.run = run
        self.agent = agent
        self.reload_python = reload_python
        """Execute the agent's Python blocks anew for each call (module-level state is then fresh too)."""
        self.free: list[AgentInstance] = []
        """Pooled instances not in a call."""
        self.pool_ids: set[str] = set()
        """The ids of every pooled instance."""
        self.watch_triggers = False
        """Whether the agent has CND triggers the runtime checks itself (their watcher is re-installed on
        the fresh variables of each call)."""

    async def checkout(self) -> AgentInstance:
        """A pooled instance with fresh state, made if none is free."""
        if self.free:
            instance = self.free.pop()
            if self.reload_python:
                instance.load_python(self.run.python_namespace(instance))
        else:
            instance = await self.run.create_instance(self.agent)
            self.pool_ids.add(instance.id)
            self.watch_triggers = bool(TriggerWatcher(instance).watched)
        await self._reset(instance)
        return instance

    def checkin(self, instance: AgentInstance) -> None:
        """Give back an instance whose call ended normally."""
        self.free.append(instance)

    def discard(self, instance: AgentInstance) -> None:
        """Drop an instance whose call failed or was cancelled mid-way (its state is not trusted again)."""
        self.pool_ids.discard(instance.id)
        self.run.forget_instance(instance)

    async def _reset(self, instance: AgentInstance) -> None:
        state = instance.state
        # A new Variables object (not cleared in place): the python blocks' `agent.state` stays the same
        # AgentState, so `agent.state.variables` reaches the fresh variables.
        state.variables = Variables(self.run.value_limits)
        state.artifacts.clear()
        state.session_log.entries.clear()
        state.joined_meetings.clear()
        instance.unread.clear()
        instance.pending_triggers.clear()
        if len(instance.inbox):
            await instance.inbox.get_batch(min_messages=0)
        if self.watch_triggers:
            TriggerWatcher(instance).install()

    async def take_said(self, instance: AgentInstance) -> tuple[str, ...]:
        """What `instance` said to the user during its call; messages of agents outside the pool to the user
        (nobody reads them here) are dropped so the human inbox does not grow."""
        self.run.messages_to_user.clear()  # the run's own transcript would only grow here
        inbox = self.run.human_inbox
        if not len(inbox):
            return ()
        pool_ids = self.pool_ids
        mine: list[Message] = await inbox.get_batch(
            lambda message: message.sender_id == instance.id, min_messages=0
        )
        if len(inbox):
            await inbox.get_batch(lambda message: message.sender_id not in pool_ids, min_messages=0)
        return tuple(message.content for message in mine)

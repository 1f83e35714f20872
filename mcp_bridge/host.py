"""Running a served program's playbooks for tool calls, with no MCP code: the server module adapts this.

One run of the program lives as long as the server. By default every call gets fresh agent state
(`state: fresh`): an instance of the called agent from a pool (runtime.agent_pool) with new variables,
artifacts and session log and its Python blocks executed anew, so calls cannot see each other's state and
concurrent calls never share an instance. The program's other agents live on across calls (a playbook
that calls `Other.Playbook` reaches the same `Other`). A new run per call would isolate those too, at ten
times the cost per call. A program that wants its agents to remember across calls says so in its front
matter:

    ---
    mcp:
      state: shared
    ---

and then calls take turns (one at a time) on the agents' one instance each, since they share its variables.

Remote agents of the served program connect once, when the server starts (standby ones on first use), and
the run borrows those connections: starting an MCP server process per tool call would be far too slow.
A pooled connection whose server went away is reopened on the next call that needs it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio

from mcp_bridge.tools import PlaybookTool, playbook_tools, tools_by_name
from pal_core.ir import Agent, Playbook, Program
from runtime.agent import AgentInstance
from runtime.agent_pool import AgentPool
from runtime.budget import Budget
from runtime.errors import ProgramError, ProgramExit
from runtime.execution import Execution
from runtime.humans import NoHuman
from runtime.models.base import Model
from runtime.program_run import ProgramRun, RunLimits
from runtime.remote import RemoteConnection, RemoteTool, connector_for
from runtime.trace import TraceEvent, Tracer

logger = logging.getLogger(__name__)

STATE_MODES = ("fresh", "shared")
"""How agent state lives across calls: a fresh run per call, or one run shared by all calls."""
SHUTDOWN_TIMEOUT = 30.0
"""Seconds a run's shutdown may take (it runs even when the call was cancelled)."""

StepListener = Callable[[TraceEvent], None]
"""Called with every trace event of a call (the server turns `step` events into progress)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallOutcome:
    """What a tool call produced."""

    value: Any
    """The playbook's return value (None when it returned nothing or yielded exit)."""
    said: tuple[str, ...] = ()
    """What the playbook said to the user, in order."""


def state_mode(program: Program) -> str:
    """The program's `mcp: {state: ...}` front matter setting (default `fresh`); ProgramError when invalid."""
    settings = program.frontmatter.get("mcp")
    if settings is None:
        return "fresh"
    if not isinstance(settings, Mapping):
        raise ProgramError(
            f"front matter `mcp` must be a mapping such as `mcp: {{state: shared}}`, got {settings!r}"
        )
    mode = settings.get("state", "fresh")
    if mode not in STATE_MODES:
        raise ProgramError(f"front matter `mcp.state` must be one of {', '.join(STATE_MODES)}, got {mode!r}")
    return str(mode)


class RemotePool:
    """The served program's remote-agent connections, opened once and lent to every run."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[RemoteConnection, list[RemoteTool]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def open_startup_agents(self, program: Program) -> None:
        """Connect every remote agent that is not `standby` (fail now rather than at the first call)."""
        for agent in program.agents:
            if agent.metadata.remote is not None and (agent.metadata.startup_mode or "default") != "standby":
                await self.get(agent)

    async def get(self, agent: Agent) -> tuple[RemoteConnection, list[RemoteTool]]:
        """The live connection of a remote agent and its tools, connecting (again) when needed."""
        lock = self._locks.setdefault(agent.name, asyncio.Lock())
        async with lock:
            entry = self._entries.get(agent.name)
            if entry is not None and getattr(entry[0], "alive", True):
                return entry
            if entry is not None:
                self._entries.pop(agent.name)
                await _close_quietly(entry[0])
            spec = agent.metadata.remote
            if spec is None:
                raise ProgramError(f"agent {agent.name} is not a remote agent")
            connector = connector_for(spec.type)
            try:
                connection = await connector(spec, agent.name)
            except ProgramError:
                raise
            except Exception as error:
                raise ProgramError(
                    f"remote agent {agent.name} ({spec.type}) could not connect: {error}"
                ) from error
            try:
                tools = await connection.list_tools()
            except BaseException:
                await _close_quietly(connection)
                raise
            entry = (connection, tools)
            self._entries[agent.name] = entry
            return entry

    async def close(self) -> None:
        """Close every connection (stopping stdio servers)."""
        entries, self._entries = self._entries, {}
        for connection, _ in entries.values():
            await _close_quietly(connection)


async def _close_quietly(connection: RemoteConnection) -> None:
    try:
        await connection.close()
    except Exception:  # closing must not hide what the caller is doing
        return


class _Borrowed:
    """A remote agent's pooled connection as one run sees it: looked up at every call (so a run started
    before its server died uses the reopened connection), and never closed by the run."""

    def __init__(self, pool: RemotePool, agent: Agent) -> None:
        self._pool = pool
        self._agent = agent

    async def list_tools(self) -> list[RemoteTool]:
        return (await self._pool.get(self._agent))[1]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        connection, _ = await self._pool.get(self._agent)
        return await connection.call_tool(name, arguments)

    async def close(self) -> None:
        return None


class ServedRun(ProgramRun):
    """A program run whose remote agents borrow the server's pooled connections; long-lived, so each call
    brings a budget of its own."""

    long_lived = True

    def __init__(self, program: Program, *, pool: RemotePool, **options: Any) -> None:
        super().__init__(program, remote_connector=self._borrow, **options)
        self._pool = pool

    async def _borrow(self, agent: Agent) -> tuple[RemoteConnection, list[RemoteTool]]:
        _, tools = await self._pool.get(agent)
        return _Borrowed(self._pool, agent), tools


async def _shut_down(run: ProgramRun) -> None:
    # Shielded: agent tasks and borrowed connections must not outlive a cancelled close.
    with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_TIMEOUT):
        await run.shutdown()


class PlaybookHost:
    """Runs a program's public playbooks on request; open it before use, close it after."""

    def __init__(
        self, program: Program, *, model: Model | None = None, limits: RunLimits | None = None
    ) -> None:
        self.program = program
        self.model = model
        self.limits = limits or RunLimits()
        self.mode = state_mode(program)
        self.tools: Mapping[str, PlaybookTool] = {}
        self._pool = RemotePool()
        self._run: ServedRun | None = None
        self._agent_pools: dict[str, AgentPool] = {}
        self._shared_lock = asyncio.Lock()
        self._calls: set[Budget] = set()
        self._no_calls = asyncio.Event()
        self._no_calls.set()
        self._stopping: str | None = None

    async def open(self) -> Mapping[str, PlaybookTool]:
        """Connect remote agents, start the run (so a broken Python block fails here, not at the first
        call), and find the tools. ProgramError or PalError when the program cannot serve."""
        try:
            await self._pool.open_startup_agents(self.program)
            # A server lives for days: events go to the listeners of each call and are not kept.
            self._run = ServedRun(
                self.program,
                pool=self._pool,
                model=self.model,
                limits=self.limits,
                human=NoHuman(),
                tracer=Tracer(keep=False),
            )
            await self._run.start()
            self._run.start_loops()
            self.tools = _tools(await _local_playbooks(self._run, self.program))
        except BaseException:
            await self.close()
            raise
        return self.tools

    async def close(self) -> None:
        """Stop the run and close remote connections; idempotent."""
        run, self._run = self._run, None
        self._agent_pools.clear()
        if run is not None:
            await _shut_down(run)
        await self._pool.close()

    async def call(
        self, tool: PlaybookTool, arguments: Mapping[str, Any], *, listener: StepListener | None = None
    ) -> CallOutcome:
        """Run the tool's playbook with keyword arguments; raises what the runtime raises (PalError and
        ModelError for failures the caller reports, InputExhausted when it waits for a user)."""
        run = self._run
        if run is None:
            raise ProgramError("the playbook host is not open")
        if self.mode == "shared":
            return await self._call_shared(run, tool, arguments, listener)
        pool = self._agent_pool(run, tool.agent)
        instance = await pool.checkout()
        # Only this call's agent instance reports progress to this call's client.
        watch = _events_of(instance.id, listener) if listener is not None else None
        if watch is not None:
            run.tracer.listeners.append(watch)
        try:
            value = await self._execute(run, instance, tool, arguments)
            said = await pool.take_said(instance)
        except BaseException:
            pool.discard(instance)  # a failed or cancelled call's instance is not trusted again
            raise
        finally:
            if watch is not None:
                run.tracer.listeners.remove(watch)
        pool.checkin(instance)
        return CallOutcome(value=value, said=said)

    async def _execute(
        self, run: ServedRun, instance: AgentInstance, tool: PlaybookTool, arguments: Mapping[str, Any]
    ) -> Any:
        """Run the call's playbook under a budget of its own (steps, seconds, model calls: RunLimits)."""
        budget = run.new_budget()
        if self._stopping is not None:
            budget.stop(self._stopping)
        self._calls.add(budget)
        self._no_calls.clear()
        try:
            async with budget.bound():
                playbook = instance.playbooks[tool.playbook.name]
                return await Execution(instance).execute(playbook, [], dict(arguments))
        except ProgramExit:
            return None  # `yld exit` ends the call; what was said is its output
        finally:
            self._calls.discard(budget)
            if not self._calls:
                self._no_calls.set()

    def stop_calls(self, reason: str) -> int:
        """End every call in progress, and every later one, with RunStopped(`reason`) (a server shutting
        down); the number of calls stopped."""
        self._stopping = reason
        calls = list(self._calls)
        for budget in calls:
            budget.stop(reason)
        return len(calls)

    async def calls_done(self) -> None:
        """Return when no call is in progress."""
        await self._no_calls.wait()

    def _agent_pool(self, run: ServedRun, agent_name: str) -> AgentPool:
        pool = self._agent_pools.get(agent_name)
        if pool is None:
            agent = self.program.agent(agent_name)
            if agent is None:
                raise ProgramError(f"the program has no agent {agent_name}")
            pool = self._agent_pools[agent_name] = AgentPool(run, agent, reload_python=True)
        return pool

    async def _call_shared(
        self, run: ServedRun, tool: PlaybookTool, arguments: Mapping[str, Any], listener: StepListener | None
    ) -> CallOutcome:
        async with self._shared_lock:
            if listener is not None:
                run.tracer.listeners.append(listener)
            first_said = len(run.messages_to_user)
            try:
                value = await self._execute(run, await _instance(run, tool), tool, arguments)
                return CallOutcome(value=value, said=tuple(run.messages_to_user[first_said:]))
            finally:
                if listener is not None:
                    run.tracer.listeners.remove(listener)
                # A server lives for days: keep no transcript of past calls.
                del run.messages_to_user[first_said:]


def _events_of(agent_id: str, listener: StepListener) -> StepListener:
    def forward(event: TraceEvent) -> None:
        if event.agent_id == agent_id:
            listener(event)

    return forward


def _tools(agents: Iterable[tuple[str, Iterable[Playbook]]]) -> Mapping[str, PlaybookTool]:
    try:
        return tools_by_name(playbook_tools(agents))
    except ValueError as error:  # two playbooks would share one tool name
        raise ProgramError(str(error)) from None


async def _instance(run: ProgramRun, tool: PlaybookTool) -> AgentInstance:
    instance = await run.agent_instance(tool.agent)
    if instance is None:
        raise ProgramError(f"agent {tool.agent} could not be started")
    return instance


async def _local_playbooks(run: ProgramRun, program: Program) -> list[tuple[str, list[Playbook]]]:
    """(agent name, playbooks) of every local agent, from live instances so that playbooks of Python
    modules the program names are included."""
    found: list[tuple[str, list[Playbook]]] = []
    for agent in program.agents:
        if agent.metadata.remote is not None:
            continue
        instance = await run.agent_instance(agent.name)
        if instance is None:
            raise ProgramError(f"agent {agent.name} could not be started")
        found.append((agent.name, list(instance.playbooks.values())))
    return found

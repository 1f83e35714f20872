"""Running a served program's playbooks for tool calls, with no MCP code: the server module adapts this.

By default every call runs in a fresh run of the program (`state: fresh`): new agent instances, new
variables, Python blocks loaded anew, as `runtime.api.run_playbook` does, so calls cannot see each
other. To keep that cost off each call's latency, the next run is started while the server waits for
the next request, and a finished run is shut down after its result has gone out. A program that wants
its agents to remember across calls says so in its front matter:

    ---
    mcp:
      state: shared
    ---

and then one run lives as long as the server and calls take turns (one at a time), since they share the
agents' variables.

Remote agents of the served program connect once, when the server starts (standby ones on first use), and
every run borrows those connections: starting an MCP server process per tool call would be far too slow.
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
    """A program run whose remote agents borrow the server's pooled connections."""

    def __init__(self, program: Program, *, pool: RemotePool, **options: Any) -> None:
        super().__init__(program, remote_connector=self._borrow, **options)
        self._pool = pool

    async def _borrow(self, agent: Agent) -> tuple[RemoteConnection, list[RemoteTool]]:
        _, tools = await self._pool.get(agent)
        return _Borrowed(self._pool, agent), tools


class FreshRuns:
    """Fresh runs for `state: fresh` calls, kept off the latency path: one run is started ahead of time
    (while the server waits for the next request), and a run whose call succeeded is shut down after the
    result has gone out. A failed or cancelled call's run is shut down before the call returns."""

    def __init__(self, make: Callable[[], ServedRun]) -> None:
        self._make = make
        self._spare: asyncio.Task[ServedRun] | None = None
        self._stopping: set[asyncio.Task[None]] = set()
        self._closed = False

    async def take(self) -> ServedRun:
        """A started run no call has used."""
        spare, self._spare = self._spare, None
        if spare is not None and not spare.done():
            self._spare = spare  # still starting: the next call will have it
        elif spare is not None and not spare.cancelled() and spare.exception() is None:
            self._refill()
            return spare.result()
        # No spare, or it failed to start (starting again here raises the same error to this caller).
        run = await self._started()
        self._refill()
        return run

    async def _started(self) -> ServedRun:
        run = self._make()
        try:
            await run.start()
            run.start_loops()
        except BaseException:
            await _shut_down(run)
            raise
        return run

    def _refill(self) -> None:
        if self._spare is None and not self._closed:
            self._spare = asyncio.get_running_loop().create_task(self._started(), name="spare run")

    def release(self, run: ServedRun) -> None:
        """Shut a finished run down in the background."""
        task = asyncio.get_running_loop().create_task(_shut_down_quietly(run), name="run shutdown")
        self._stopping.add(task)
        task.add_done_callback(self._stopping.discard)

    async def discard(self, run: ServedRun) -> None:
        """Shut a run down now, even while the caller is being cancelled."""
        await _shut_down(run)

    async def close(self) -> None:
        """Shut down the spare and every run still stopping; idempotent."""
        self._closed = True
        spare, self._spare = self._spare, None
        if spare is not None:
            spare.cancel()
            outcome = (await asyncio.gather(spare, return_exceptions=True))[0]
            if isinstance(outcome, ServedRun):
                await _shut_down(outcome)
        if self._stopping:
            await asyncio.gather(*self._stopping, return_exceptions=True)


async def _shut_down(run: ProgramRun) -> None:
    # Shielded: agent tasks and borrowed connections must not outlive a cancelled call.
    with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_TIMEOUT):
        await run.shutdown()


async def _shut_down_quietly(run: ProgramRun) -> None:
    try:
        await _shut_down(run)
    except Exception:  # nobody awaits a background shutdown: log it rather than lose it
        logger.exception("shutting down a finished run failed")


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
        self._shared: ServedRun | None = None
        self._shared_lock = asyncio.Lock()
        self._fresh = FreshRuns(lambda: self._new_run(Tracer()))

    async def open(self) -> Mapping[str, PlaybookTool]:
        """Connect remote agents, load every local agent once (so a broken Python block fails here, not at
        the first call), and find the tools. ProgramError or PalError when the program cannot serve."""
        try:
            await self._pool.open_startup_agents(self.program)
            if self.mode == "shared":
                self._shared = self._new_run(Tracer())
                await self._shared.start()
                self._shared.start_loops()
                self.tools = _tools(await _local_playbooks(self._shared, self.program))
            else:
                probe = self._new_run(Tracer())
                try:
                    self.tools = _tools(await _local_playbooks(probe, self.program, create=True))
                finally:
                    await probe.shutdown()
        except BaseException:
            await self.close()
            raise
        return self.tools

    async def close(self) -> None:
        """Stop the runs (spare, shared, still stopping) and close remote connections; idempotent."""
        await self._fresh.close()
        shared, self._shared = self._shared, None
        if shared is not None:
            await shared.shutdown()
        await self._pool.close()

    def _new_run(self, tracer: Tracer) -> ServedRun:
        return ServedRun(
            self.program,
            pool=self._pool,
            model=self.model,
            limits=self.limits,
            human=NoHuman(),
            tracer=tracer,
        )

    async def call(
        self, tool: PlaybookTool, arguments: Mapping[str, Any], *, listener: StepListener | None = None
    ) -> CallOutcome:
        """Run the tool's playbook with keyword arguments; raises what the runtime raises (PalError and
        ModelError for failures the caller reports, InputExhausted when it waits for a user)."""
        if self.mode == "shared":
            return await self._call_shared(tool, arguments, listener)
        run = await self._fresh.take()
        if listener is not None:
            run.tracer.listeners.append(listener)
        try:
            instance = await _instance(run, tool)
            try:
                value = await Execution(instance).execute(
                    instance.playbooks[tool.playbook.name], [], dict(arguments)
                )
            except ProgramExit:
                value = None  # `yld exit` ends the call; what was said is its output
        except BaseException:
            await self._fresh.discard(run)
            raise
        if listener is not None:
            run.tracer.listeners.remove(listener)
        outcome = CallOutcome(value=value, said=tuple(run.messages_to_user))
        self._fresh.release(run)
        return outcome

    async def _call_shared(
        self, tool: PlaybookTool, arguments: Mapping[str, Any], listener: StepListener | None
    ) -> CallOutcome:
        run = self._shared
        if run is None:
            raise ProgramError("the playbook host is not open")
        async with self._shared_lock:
            if listener is not None:
                run.tracer.listeners.append(listener)
            first_said = len(run.messages_to_user)
            try:
                instance = await _instance(run, tool)
                try:
                    value = await Execution(instance).execute(
                        instance.playbooks[tool.playbook.name], [], dict(arguments)
                    )
                except ProgramExit:
                    value = None
                return CallOutcome(value=value, said=tuple(run.messages_to_user[first_said:]))
            finally:
                if listener is not None:
                    run.tracer.listeners.remove(listener)
                # A server lives for days: keep neither the trace nor the transcript of past calls.
                run.tracer.events.clear()
                del run.messages_to_user[first_said:]


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


async def _local_playbooks(
    run: ProgramRun, program: Program, *, create: bool = False
) -> list[tuple[str, list[Playbook]]]:
    """(agent name, playbooks) of every local agent, from live instances so that playbooks of Python
    modules the program names are included. `create` builds instances directly (no start-up run)."""
    found: list[tuple[str, list[Playbook]]] = []
    for agent in program.agents:
        if agent.metadata.remote is not None:
            continue
        instance = await run.create_instance(agent) if create else await run.agent_instance(agent.name)
        if instance is None:
            raise ProgramError(f"agent {agent.name} could not be started")
        found.append((agent.name, list(instance.playbooks.values())))
    return found

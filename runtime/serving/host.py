"""Running a served program's playbooks for calls from outside, with no protocol code: the MCP server
(mcp_bridge.server) and the A2A server (exporters.a2a) both adapt this one host, so a program is served the
same way whatever the protocol: the same playbooks (runtime.serving.playbooks), the same argument check (at
the door, runtime.session.PlaybookCalls), the same runs, threads and leases.

One run of the program lives as long as the server, and the calls are answered by
runtime.session.PlaybookCalls. By default every call gets fresh agent state (`state: fresh`): an instance
of the called agent from a pool (runtime.agent_pool) with new variables, artifacts and session log and its
Python blocks executed anew, so calls cannot see each other's state and concurrent calls never share an
instance. The program's other agents live on across calls (a playbook that calls `Other.Playbook` reaches
the same `Other`). A new run per call would isolate those too, at ten times the cost per call. A program
that wants its agents to remember across calls says so in its front matter:

    ---
    mcp:
      state: shared
    ---

and then calls take turns (one at a time) on the agents' one instance each, since they share its variables.

With a store (`pal mcp serve --store URL`, and always for A2A, whose tasks are threads), every call is
recorded as a thread: a new thread per call, or the one the caller names (an MCP request's `_meta`
`{"pal/thread": "T"}`, an A2A task id), whose agents keep their state from call to call; with `state:
shared`, all calls continue one thread (`--thread`, default `mcp-<server name>`). Threads live in the
store, so several server processes behind one address share them (Postgres): a call continues a thread
whatever process served its earlier calls, and a call that waits for the user is answered from any of them
(`resume`).

Remote agents of the served program connect once, when the server starts (standby ones on first use), and
the runs borrow those connections: starting an MCP server process per tool call would be far too slow.
A pooled connection whose server went away is reopened on the next call that needs it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import anyio

from pal_core.errors import PalError
from pal_core.ir import Agent, Playbook, Program
from pal_core.messaging import StreamObserver
from runtime.errors import ProgramError
from runtime.humans import NoHuman
from runtime.inputs import check_arguments
from runtime.models.base import Model
from runtime.program_run import ProgramRun, RunLimits
from runtime.remote import RemoteConnection, RemoteTool, connector_for
from runtime.session import CallOutcome
from runtime.session.playbook_calls import PlaybookCalls
from runtime.store import Store
from runtime.trace import TraceEvent, Tracer

from .playbooks import ServedPlaybook, by_name, served_playbooks

STATE_MODES = ("fresh", "shared")
"""How agent state lives across calls: a fresh run per call, or one run shared by all calls."""
SHUTDOWN_TIMEOUT = 30.0
"""Seconds a run's shutdown may take (it runs even when the call was cancelled)."""

StepListener = Callable[[TraceEvent], None]
"""Called with every trace event of a call (the MCP server turns `step` events into progress)."""

__all__ = ["CallOutcome", "PlaybookHost", "RemotePool", "ServedRun", "state_mode"]


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
    brings a budget of its own. Its trace keeps no events: they go to the listeners of each call."""

    long_lived = True

    def __init__(
        self,
        program: Program,
        *,
        pool: RemotePool,
        listeners: tuple[Callable[[TraceEvent], None], ...] = (),
        **options: Any,
    ) -> None:
        # A server lives for days: no events kept; each call's own listeners, and the server's (metrics).
        options["tracer"] = Tracer(keep=False, listeners=listeners)
        super().__init__(program, remote_connector=self._borrow, **options)
        self._pool = pool

    async def _borrow(self, agent: Agent) -> tuple[RemoteConnection, list[RemoteTool]]:
        _, tools = await self._pool.get(agent)
        return _Borrowed(self._pool, agent), tools


class PlaybookHost:
    """Runs a program's public playbooks on request, for any protocol; open it before use, close it after."""

    def __init__(
        self,
        program: Program,
        *,
        model: Model | None = None,
        limits: RunLimits | None = None,
        store: Store | str | None = None,
        shared_thread: str | None = None,
        lease: float | None = None,
    ) -> None:
        """`store` records every call as a thread; `shared_thread` is the thread of a `state: shared`
        program's calls (default `mcp-<first agent>`); `lease`: seconds of a thread's lease while a call
        runs (runtime.session.CallSession.lease)."""
        self.program = program
        self.model = model
        self.limits = limits or RunLimits()
        self.mode = state_mode(program)
        self.store = store
        self.shared_thread = shared_thread
        self.lease = lease
        self.served: Mapping[str, ServedPlaybook] = {}
        """The served playbooks by name (filled by `open`)."""
        self.trace_listeners: list[StepListener] = []
        """Called with every trace event of every run the server starts (the metrics count model calls)."""
        self._pool = RemotePool()
        self._calls: PlaybookCalls | None = None
        self._stopping: str | None = None

    async def open(self) -> Mapping[str, ServedPlaybook]:
        """Connect remote agents, start the run (so a broken Python block fails here, not at the first
        call), and find the served playbooks. ProgramError or PalError when the program cannot serve."""
        shared = self.mode == "shared"
        default_thread = None
        if shared and self.store is not None:
            first = self.program.agents[0].name if self.program.agents else "program"
            default_thread = self.shared_thread or f"mcp-{first}"
        try:
            await self._pool.open_startup_agents(self.program)
            calls = PlaybookCalls(
                self.program,
                model=self.model,
                limits=self.limits,
                human=NoHuman(),
                tracer=None,
                run_factory=self._served_run,
                store=self.store,
                reload_python=True,
                shared=shared,
                default_thread=default_thread,
                lease=self.lease,
            )
            self._calls = calls
            run = await calls.open()
            self.served = _served(await _local_playbooks(run, self.program))
        except BaseException:
            await self.close()
            raise
        if self._stopping is not None:
            calls.stop(self._stopping)
        return self.served

    def _served_run(self, program: Program, **options: Any) -> ServedRun:
        return ServedRun(program, pool=self._pool, listeners=(self._on_trace,), **options)

    def _on_trace(self, event: TraceEvent) -> None:
        for listener in self.trace_listeners:
            listener(event)

    @property
    def is_open(self) -> bool:
        """Whether the host takes calls (opened, not closed)."""
        return self._calls is not None and self._calls.run is not None

    @property
    def opened_store(self) -> Store | None:
        """The store the calls are recorded in, once open (None without one)."""
        return self._calls.store if self._calls is not None else None

    async def not_ready(self) -> str | None:
        """Why the host cannot take calls now (not open, its store not answering), or None: what a
        server's `/readyz` reports, with the server's own reasons before it."""
        if not self.is_open:
            return "the server is not open"
        store = self.opened_store
        if store is not None:
            try:
                await store.ping()
            except (PalError, OSError) as error:
                return f"the store does not answer: {error}"
        return None

    async def close(self) -> None:
        """Stop the runs and close remote connections and the store; idempotent."""
        calls, self._calls = self._calls, None
        if calls is not None:
            with anyio.CancelScope(shield=True), anyio.move_on_after(SHUTDOWN_TIMEOUT):
                await calls.close()
        await self._pool.close()

    async def call(
        self,
        served: ServedPlaybook,
        arguments: Mapping[str, Any],
        *,
        listener: StepListener | None = None,
        observer: StreamObserver | None = None,
        thread: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> CallOutcome:
        """Run the served playbook with keyword arguments as the client sent them (in `thread`, with a
        store; `metadata` is stored with a new thread). The arguments are checked first: InputError naming
        each wrong one, headed by the served name. Raises what the runtime raises (PalError and ModelError
        for failures the caller reports, InputExhausted when it waits for a user); `observer` sees what the
        call says to the user as it is said (with a store)."""
        calls = self._open_calls()
        if served.arguments_parameter is not None:
            # The whole arguments object is one parameter (an imported graph's input state), checked against
            # the schema its author wrote.
            given = check_arguments(served.playbook, arguments, label=served.name, schema=served.input_schema)
            arguments = {served.arguments_parameter: given}
        return await calls.call(
            served.agent,
            served.playbook.name,
            arguments,
            thread=thread,
            listener=listener,
            observer=observer,
            label=served.name,
            metadata=metadata,
        )

    async def resume(
        self,
        thread: str,
        messages: Iterable[str] = (),
        *,
        listener: StepListener | None = None,
        observer: StreamObserver | None = None,
        wait: float | None = None,
    ) -> CallOutcome:
        """Finish the unfinished call of `thread` (waiting for the user, or left by a process that died),
        `messages` answering its waits; raises as `call` does (ThreadStateError when nothing is unfinished,
        or when another process holds the thread longer than `wait` seconds; 0: do not wait)."""
        return await self._open_calls().resume(
            thread, messages, listener=listener, observer=observer, wait=wait
        )

    async def checked_arguments(self, served: ServedPlaybook, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The arguments `call` would run `served` with, checked as its door checks them (InputError
        naming each wrong one); for a protocol that must refuse bad arguments before it answers."""
        calls = self._open_calls()
        if served.arguments_parameter is not None:
            given = check_arguments(served.playbook, arguments, label=served.name, schema=served.input_schema)
            arguments = {served.arguments_parameter: given}
        return await calls.checked_arguments(served.agent, served.playbook.name, arguments, label=served.name)

    async def open_thread(self, thread: str, metadata: Mapping[str, Any] | None = None) -> None:
        """Make `thread` in the store now (`metadata` with it), before its first call."""
        await self._open_calls().open_thread(thread, metadata)

    async def forget(self, thread: str) -> None:
        """Let go of the run this host keeps for `thread` (its calls are over here for now)."""
        if self._calls is not None:
            await self._calls.forget(thread)

    def _open_calls(self) -> PlaybookCalls:
        calls = self._calls
        if calls is None:
            raise ProgramError("the playbook host is not open")
        return calls

    def stop_calls(self, reason: str) -> int:
        """End every call in progress, and every later one, with RunStopped(`reason`) (a server shutting
        down); the number of calls stopped."""
        self._stopping = reason
        return self._calls.stop(reason) if self._calls is not None else 0

    async def calls_done(self) -> None:
        """Return when no call is in progress."""
        if self._calls is not None:
            await self._calls.idle()


def _served(agents: Iterable[tuple[str, Iterable[Playbook]]]) -> Mapping[str, ServedPlaybook]:
    try:
        return by_name(served_playbooks(agents))
    except ValueError as error:  # two playbooks would share one name
        raise ProgramError(str(error)) from None


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

"""PlaybookCalls: calls of a program's playbooks from outside the program, on one event loop. The embedded
playbooks of the exporters (runtime.embedding) and the MCP server (mcp_bridge.host) both answer their calls
here. (runtime/calls.py is another thing: a call written in PAL, run inside a playbook.)

One long-lived run of the program is started once. Without a store, each call gets an instance of the
called agent from a pool with fresh state (variables, artifacts, session log; with `reload_python`, its
Python blocks executed anew), so calls never see each other's state and concurrent calls never share an
instance, while the program's other agents are shared by all calls; with `shared=True`, calls take turns
on each agent's one instance instead (a program that wants its agents to remember).

With a store, every call is recorded as a thread (runtime.session.CallSession, a run of its own per
thread): a call that names a thread continues it (its agents have the state the thread's earlier calls
left, in this process or any other that shares the store), and a call that names none gets a new thread.
A program shared by all calls (`shared=True`) keeps its state in one thread, `default_thread`.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from pal_core.ir import Program
from runtime.agent import AgentInstance
from runtime.agent_pool import AgentPool
from runtime.budget import Budget
from runtime.errors import ProgramError, ProgramExit
from runtime.execution import Execution
from runtime.humans import HumanInput
from runtime.models.base import Model
from runtime.program_run import ProgramRun, RunLimits
from runtime.store import Store
from runtime.trace import TraceEvent, Tracer

from .entry import CallOutcome
from .session import CallSession, RunFactory, opened_store, shielded

StepListener = Callable[[TraceEvent], None]
"""Called with every trace event of a call (the MCP server turns `step` events into progress)."""

KEEP_THREADS = 64
"""Threads whose run stays in memory between their calls (the least recently used beyond are closed, and
resumed from the store when called again)."""


class PlaybookCalls:
    """Answers calls of a program's playbooks on the event loop it was opened on."""

    def __init__(
        self,
        program: Program,
        *,
        model: Model | None,
        limits: RunLimits,
        human: HumanInput,
        tracer: Tracer | None,
        run_factory: RunFactory,
        store: Store | str | None = None,
        reload_python: bool = False,
        shared: bool = False,
        default_thread: str | None = None,
        lease: float | None = None,
    ) -> None:
        self.program = program
        self.model = model
        self.limits = limits
        self.human = human
        self.tracer = tracer
        self.shared = shared
        """Calls take turns on each agent's one instance (state shared by all calls)."""
        self.default_thread = default_thread
        """With a store, the thread a call that names none continues (None: a new thread per call)."""
        self.lease = lease
        """Seconds of a thread's lease while one of its calls runs (None: CallSession's default)."""
        self._run_factory = run_factory
        self._store_given = store
        self._reload_python = reload_python
        self.store: Store | None = None
        """The open store (None without one)."""
        self._owns_store = False
        self.run: ProgramRun | None = None
        """The long-lived run (pooled and shared calls; the MCP server lists its tools from it)."""
        self._pools: dict[str, AgentPool] = {}
        self._shared_lock = asyncio.Lock()
        self._threads: OrderedDict[str, CallSession] = OrderedDict()
        self._threads_lock = asyncio.Lock()
        self._calls: set[Budget | CallSession] = set()
        """The calls in progress: a pooled or shared call's budget, a thread call's session."""
        self._no_calls = asyncio.Event()
        self._no_calls.set()
        self._stopping: str | None = None

    async def open(self) -> ProgramRun:
        """Open the store and start the run: its start-up agents and every agent's message loop."""
        if self._store_given is not None:
            self.store, self._owns_store = await opened_store(self._store_given)
        run = self._run_factory(
            self.program, model=self.model, limits=self.limits, human=self.human, tracer=self.tracer
        )
        try:
            await run.start()
            run.start_loops()
        except BaseException:
            await shielded(run.shutdown())
            raise
        self.run = run
        return run

    async def close(self) -> None:
        """Shut down the run and the threads' runs, and close the store the calls opened; idempotent."""
        run, self.run = self.run, None
        self._pools.clear()
        threads = list(self._threads.values())
        self._threads.clear()
        for session in threads:
            await shielded(session.close())
        if run is not None:
            await shielded(run.shutdown())
        if self._owns_store and self.store is not None:
            self._owns_store = False
            await self.store.close()

    async def call_ready(self, agent: str) -> None:
        """Make the agent's own instance now (a playbook of the agent is about to be called)."""
        run = self._ready_run()
        if await run.agent_instance(agent) is None:  # pragma: no cover - the agent exists
            raise ProgramError(f"agent {agent} could not be started")

    # --- calls -----------------------------------------------------------------------------------------

    async def call(
        self,
        agent: str,
        playbook: str,
        arguments: Mapping[str, Any],
        *,
        thread: str | None = None,
        listener: StepListener | None = None,
    ) -> CallOutcome:
        """Run `agent.playbook` with checked keyword arguments. Raises what the runtime raises (PalError and
        ModelError for failures; InputExhausted when the playbook waits for a user nobody plays)."""
        if self.run is None:
            raise ProgramError("the playbook calls are not open (or already closed)")
        if self.store is not None:
            return await self._in_thread(agent, playbook, arguments, thread or self.default_thread, listener)
        if thread is not None:
            raise ProgramError(
                f"thread {thread!r} asked for, but these calls keep no threads (no store given)"
            )
        if self.shared:
            return await self._on_shared(agent, playbook, arguments, listener)
        return await self._pooled(agent, playbook, arguments, listener)

    async def _pooled(
        self, agent: str, playbook: str, arguments: Mapping[str, Any], listener: StepListener | None
    ) -> CallOutcome:
        run = self._ready_run()
        pool = await self._pool(run, agent)
        instance = await pool.checkout()
        # Only this call's agent instance reports to this call's listener.
        watch = _events_of(instance.id, listener) if listener is not None else None
        if watch is not None:
            run.tracer.listeners.append(watch)
        try:
            value = await self._execute(run, instance, playbook, arguments)
            said = await pool.take_said(instance)
        except BaseException:
            pool.discard(instance)  # a failed or cancelled call's instance is not trusted again
            raise
        finally:
            if watch is not None:
                run.tracer.listeners.remove(watch)
        pool.checkin(instance)
        return CallOutcome(value=value, said_to_user=said)

    async def _on_shared(
        self, agent: str, playbook: str, arguments: Mapping[str, Any], listener: StepListener | None
    ) -> CallOutcome:
        run = self._ready_run()
        async with self._shared_lock:
            if listener is not None:
                run.tracer.listeners.append(listener)
            first_said = len(run.messages_to_user)
            try:
                instance = await run.agent_instance(agent)
                if instance is None:
                    raise ProgramError(f"agent {agent} could not be started")
                value = await self._execute(run, instance, playbook, arguments)
                return CallOutcome(value=value, said_to_user=tuple(run.messages_to_user[first_said:]))
            finally:
                if listener is not None:
                    run.tracer.listeners.remove(listener)
                del run.messages_to_user[first_said:]  # a long-lived run keeps no transcript of past calls

    async def _execute(
        self, run: ProgramRun, instance: AgentInstance, playbook: str, arguments: Mapping[str, Any]
    ) -> Any:
        """Run the call's playbook under a budget of its own (steps, seconds, model calls: RunLimits)."""
        budget = run.new_budget()
        self._track(budget)
        try:
            async with budget.bound():
                return await Execution(instance).execute(instance.playbooks[playbook], [], dict(arguments))
        except ProgramExit:
            return None  # `yld exit` ends the call; what was said is its output
        finally:
            self._untrack(budget)

    async def _in_thread(
        self,
        agent: str,
        playbook: str,
        arguments: Mapping[str, Any],
        thread: str | None,
        listener: StepListener | None,
    ) -> CallOutcome:
        session = await self._session(thread)
        self._track(session)
        try:
            return await session.call(f"{agent}.{playbook}", arguments, listener=listener)
        finally:
            self._untrack(session)
            if thread is None:
                await shielded(session.close())  # a thread of its own: nothing will call it again here

    async def _session(self, thread: str | None) -> CallSession:
        """The open session of `thread` (kept for its next calls), or of a new thread."""
        assert self.store is not None
        async with self._threads_lock:
            if thread is not None and thread in self._threads:
                self._threads.move_to_end(thread)
                return self._threads[thread]
            session = await CallSession.open(
                self.program,
                store=self.store,
                thread=thread,
                model=self.model,
                limits=self.limits,
                human=self.human,
                tracer=self.tracer,
                run_factory=self._run_factory,
            )
            if self.lease is not None:
                session.lease = self.lease
            if thread is not None:
                self._threads[thread] = session
                while len(self._threads) > KEEP_THREADS:
                    _, evicted = self._threads.popitem(last=False)
                    # Closed in the background once its calls are done (it resumes from the store).
                    asyncio.get_running_loop().create_task(
                        evicted.close(),
                        context=contextvars.Context(),
                        name=f"close thread {evicted.thread_id}",
                    )
            return session

    # --- stopping --------------------------------------------------------------------------------------

    def stop(self, reason: str) -> int:
        """End every call in progress, and every later one, with RunStopped(`reason`) (a server shutting
        down); the number of calls stopped."""
        self._stopping = reason
        calls = list(self._calls)
        for call in calls:
            call.stop(reason)
        return len(calls)

    async def idle(self) -> None:
        """Return when no call is in progress."""
        await self._no_calls.wait()

    def _track(self, call: Budget | CallSession) -> None:
        if self._stopping is not None:
            call.stop(self._stopping)
        self._calls.add(call)
        self._no_calls.clear()

    def _untrack(self, call: Budget | CallSession) -> None:
        self._calls.discard(call)
        if not self._calls:
            self._no_calls.set()

    def _ready_run(self) -> ProgramRun:
        if self.run is None:
            raise ProgramError("the playbook calls are not open (or already closed)")
        return self.run

    async def _pool(self, run: ProgramRun, agent_name: str) -> AgentPool:
        pool = self._pools.get(agent_name)
        if pool is None:
            agent = self.program.agent(agent_name)
            if agent is None:
                raise ProgramError(f"the program has no agent {agent_name}")
            # The agent's own instance first, so that other agents reaching it by class name never land on
            # a pooled instance in the middle of someone's call (pooled instances are made after it).
            if await run.agent_instance(agent_name) is None:  # pragma: no cover - the agent exists
                raise ProgramError(f"agent {agent_name} could not be started")
            pool = self._pools.setdefault(
                agent_name, AgentPool(run, agent, reload_python=self._reload_python)
            )
        return pool


def _events_of(agent_id: str, listener: StepListener) -> StepListener:
    def forward(event: TraceEvent) -> None:
        if event.agent_id == agent_id:
            listener(event)

    return forward

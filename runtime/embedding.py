"""Calling one playbook of a program many times from other Python code: framework nodes, tools, servers.

`run_playbook` builds, starts and shuts down a whole run for every call, which is right for one call and
far too slow for a graph node invoked thousands of times. An `EmbeddedPlaybook` loads the program once and
keeps one started run per event loop (made on the first call from that loop), and answers each call
there through runtime.session.PlaybookCalls: the call gets an agent instance of its own from a small pool,
with its state reset (variables, artifacts, session log, unread messages), and runs the playbook in a
fresh execution context (its own call stack). Nothing a call sets is visible to the next call; concurrent
calls never share an instance.

What is shared by the calls of one run: the Python modules of the agent's python blocks (one per pooled
instance, loaded once: module-level variables there live as long as the run), and the other agents of
the program (started once; a playbook that calls `Other.Playbook` talks to the same `Other` every time).

With a store (`store="sqlite:///runs.db"`, a Postgres URL, or a Store), every call is recorded as a thread
(runtime.session.CallSession): `call(arguments, thread="T")` continues thread T, whose agents keep their
state from one call to the next, in this process and in any other process sharing the store (the thread
is resumed from its log); a call without a thread gets a new one. The exporters name the thread from the
framework's own (a LangGraph `thread_id`, an ADK session).

Per call, the budgets of `RunLimits` (model calls, steps, wall-clock seconds) are the budgets of that call,
not of the run (runtime.budget); work other agents do outside any call (a message loop reacting to a
message) gets a budget of the same size per batch of messages. No trace is kept unless a `Tracer` is given (a long-lived tracer keeps every
event: give one to debug, not in production). What the playbook says to the user is returned with the
value (`CallOutcome.said_to_user`) and not kept anywhere else.

Sync callers (`call_sync`): a thread that runs no event loop gets a loop of its own, kept for its later
calls and run only while it calls (the run must outlive each call, which `asyncio.run` per call cannot
give; and no thread hop: through another thread, a sync call took 3.5 times as long on a busy machine, a
LangGraph sync node 15 times). A thread that already runs a loop cannot run another, so its calls go to an
anyio blocking portal (a loop in a thread of its own) while the calling loop waits.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import threading
import weakref
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal

from pal_core.ir import Program
from runtime.humans import HumanInput, NoHuman
from runtime.loader import load
from runtime.models.base import Model
from runtime.program_run import ProgramRun, RunLimits
from runtime.session import CallOutcome, resolve_playbook
from runtime.session.playbook_calls import PlaybookCalls
from runtime.store import Store
from runtime.trace import Tracer

__all__ = ["CallOutcome", "EmbeddedPlaybook", "resolve_playbook"]

CLOSE_TIMEOUT = 30.0
"""Seconds `close()` waits for the sync runner's run to shut down and its thread to end."""


class _EmbeddedRun(ProgramRun):
    """A long-lived ProgramRun (each call brings its own budget) that builds no trace events when nobody
    reads them."""

    long_lived = True

    def __init__(self, *args: Any, keep_trace: bool, **kwargs: Any) -> None:
        super().__init__(*args, tracing=keep_trace, **kwargs)


# --- sync calls ------------------------------------------------------------------------------------

_Sessions = dict[asyncio.AbstractEventLoop, "PlaybookCalls | asyncio.Task[PlaybookCalls]"]


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def _shutdown_loop_work(session: PlaybookCalls | asyncio.Task[PlaybookCalls] | None) -> None:
    """Shut a loop's calls down (their runs, their store), then cancel and await whatever else is left."""
    if isinstance(session, PlaybookCalls):
        await session.close()
    current = asyncio.current_task()
    pending = [task for task in asyncio.all_tasks() if task is not current]
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)


class _CallerLoop:
    """An event loop owned by one calling thread and run only while that thread makes a call."""

    def __init__(self, thread: threading.Thread) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = weakref.ref(thread)
        self.lock = threading.Lock()
        """Held while the loop runs, so closing (from any thread) never overlaps a call."""

    def alive(self) -> bool:
        thread = self.thread()
        return thread is not None and thread.is_alive()

    def run(self, make_call: Callable[[], Coroutine[Any, Any, CallOutcome]]) -> CallOutcome | None:
        """The call's outcome, or None when the loop was closed meanwhile (the caller makes a new one)."""
        with self.lock:
            if self.loop.is_closed():
                return None
            return self.loop.run_until_complete(make_call())

    def close(self, sessions: _Sessions, *, wait: bool) -> None:
        """Shut the loop's session down and close the loop; from a thread that runs no loop. Without
        `wait`, a loop in use is left alone."""
        if not self.lock.acquire(blocking=wait):
            return
        try:
            if self.loop.is_closed():
                return
            try:
                self.loop.run_until_complete(_shutdown_loop_work(sessions.pop(self.loop, None)))
                self.loop.run_until_complete(self.loop.shutdown_asyncgens())
            finally:
                self.loop.close()
        finally:
            self.lock.release()


class _Portal:
    """An anyio blocking portal (an event loop in a thread of its own), for sync calls from threads that
    already run a loop; started on first use."""

    def __init__(self, name: str, sessions: _Sessions) -> None:
        self._sessions = sessions
        self._stack = contextlib.ExitStack()
        self.portal: BlockingPortal = self._stack.enter_context(start_blocking_portal(name=name))

    def run(self, make_call: Callable[[], Coroutine[Any, Any, CallOutcome]]) -> CallOutcome:
        return self.portal.call(make_call)

    def stop(self, timeout: float | None) -> None:
        """Shut the portal's session down and stop its loop, waiting up to `timeout` seconds (None: in the
        background, without waiting)."""

        async def shut_down() -> None:
            # The session's run cancels its own tasks; the portal's loop ends the rest when it stops.
            session = self._sessions.pop(asyncio.get_running_loop(), None)
            if isinstance(session, asyncio.Task):
                try:
                    session = await session
                except Exception:  # it failed to start: nothing to shut down
                    session = None
            if isinstance(session, PlaybookCalls):
                await session.close()

        def stop() -> None:
            try:
                self.portal.start_task_soon(shut_down).result(timeout)
            finally:
                self._stack.close()  # stops the loop and joins its thread

        if timeout is None:
            threading.Thread(target=stop, name="pal portal stop", daemon=True).start()
        else:
            stop()


class _SyncLoops:
    """The event loops serving the sync calls of one embedded playbook.

    A thread that runs no event loop gets a loop of its own, run only during its calls (no thread hop:
    about 10 µs a call). A thread that already runs a loop cannot run a second one, so its calls go to a
    blocking portal, a loop in a thread of its own (a hop of about 100 µs), and block the caller until they end. The loop
    of a thread that has ended is closed when the next thread's loop is made; `close` closes them all.
    Holds no reference to the embedded playbook, so it can be its finalizer.
    """

    def __init__(self, name: str, sessions: _Sessions) -> None:
        self._name = name
        self._sessions = sessions
        self._local = threading.local()
        self._owned: list[_CallerLoop] = []
        self._runner: _Portal | None = None
        self._lock = threading.Lock()

    def run(self, make_call: Callable[[], Coroutine[Any, Any, CallOutcome]]) -> CallOutcome:
        if _running_loop() is not None:
            return self._runner_thread().run(make_call)
        while True:
            caller: _CallerLoop | None = getattr(self._local, "loop", None)
            if caller is None or caller.loop.is_closed():
                caller = self._new_caller_loop()
            outcome = caller.run(make_call)
            if outcome is not None:
                return outcome

    def _new_caller_loop(self) -> _CallerLoop:
        caller = _CallerLoop(threading.current_thread())
        with self._lock:
            ended = [owned for owned in self._owned if not owned.alive()]
            self._owned = [owned for owned in self._owned if owned.alive() and not owned.loop.is_closed()]
            self._owned.append(caller)
        for owned in ended:
            owned.close(self._sessions, wait=True)
        self._local.loop = caller
        return caller

    def _runner_thread(self) -> _Portal:
        with self._lock:
            if self._runner is None:
                self._runner = _Portal(f"pal {self._name}", self._sessions)
            return self._runner

    def close(self, timeout: float | None = CLOSE_TIMEOUT) -> None:
        """Close every loop (waiting for calls in progress) and stop the portal; `timeout=None`
        (the finalizer) closes only loops not in use and does not wait for the runner."""
        with self._lock:
            owned, self._owned = self._owned, []
            runner, self._runner = self._runner, None

        def close_loops() -> None:
            for caller in owned:
                caller.close(self._sessions, wait=timeout is not None)

        if _running_loop() is None:
            close_loops()
        else:  # run_until_complete cannot run on a thread that runs a loop
            helper = threading.Thread(target=close_loops, name=f"pal {self._name} close", daemon=True)
            helper.start()
            if timeout is not None:
                helper.join(timeout)
        if runner is not None:
            runner.stop(timeout)


# --- the embedded playbook -------------------------------------------------------------------------


class EmbeddedPlaybook:
    """One playbook of a program, callable many times (async or sync) without a new run per call."""

    def __init__(
        self,
        program: Program | str | Path,
        playbook: str | None = None,
        *,
        agent: str | None = None,
        model: Model | str | None = None,
        limits: RunLimits | None = None,
        human: HumanInput | None = None,
        tracer: Tracer | None = None,
        store: Store | str | None = None,
    ) -> None:
        """`program` is a Program or a file; `playbook` (`Playbook` or `Agent.Playbook`) and `agent` pick
        the playbook (default: the entry playbook, see `resolve_playbook`). `model` is a Model or a model
        string (resolved now); without one, only playbooks the runtime executes alone can run. `limits`
        apply per call; `human` answers a playbook that waits for the user (default: nobody, so waiting
        raises InputExhausted); `tracer` records every event of every call (default: none kept); `store`
        (a URL, opened on each event loop that calls, or an open Store, used from its own loop) records
        every call as a thread."""
        self.program: Program = program if isinstance(program, Program) else load(program)
        """The loaded program."""
        self.agent, self.playbook = resolve_playbook(self.program, agent, playbook)
        if isinstance(model, str):
            from runtime.models.registry import resolve_model

            model = resolve_model(model)
        self.model: Model | None = model
        """The model for steps the runtime cannot execute alone (None: no model)."""
        self.limits: RunLimits = limits or RunLimits()
        """The limits; the budgets (model calls, steps, seconds) apply to each call."""
        self.human: HumanInput = human or NoHuman()
        """Who answers when the playbook waits for the user."""
        self.tracer = tracer
        """Where events go (None: nowhere)."""
        self.store = store
        """Where calls are recorded as threads (None: not recorded; each call has fresh state)."""
        self._sessions: _Sessions = {}
        self._sessions_lock = threading.Lock()
        self._sync = _SyncLoops(self.qualified_name, self._sessions)
        weakref.finalize(self, self._sync.close, None)

    @property
    def qualified_name(self) -> str:
        """`Agent.Playbook`."""
        return f"{self.agent.name}.{self.playbook.name}"

    def __repr__(self) -> str:
        return f"EmbeddedPlaybook({self.qualified_name})"

    # --- calls -------------------------------------------------------------------------------------

    async def call(self, arguments: Mapping[str, Any], *, thread: str | None = None) -> CallOutcome:
        """Run the playbook with `arguments` (parameter name -> value) on the running event loop. With a
        store, the call is recorded in `thread` (continued, with the state its earlier calls left) or, when
        None, in a new thread (`CallOutcome.thread`).

        User errors raise CallError or ProgramError (a wrong argument, a playbook that cannot run); failures
        raise RunError (PlaybookFailed when Python raised) or ModelError.
        """
        loop = asyncio.get_running_loop()
        calls = self._sessions.get(loop)
        if not isinstance(calls, PlaybookCalls):
            calls = await self._session(loop)
        return await calls.call(self.agent.name, self.playbook.name, arguments, thread=thread)

    def call_sync(self, arguments: Mapping[str, Any], *, thread: str | None = None) -> CallOutcome:
        """`call` from synchronous code. A thread without an event loop runs the call on a loop of its own
        (kept for its next calls); inside a running loop the call runs in a blocking portal (a loop in a thread of its own) and the calling
        loop waits (blocked) for it."""
        return self._sync.run(lambda: self.call(arguments, thread=thread))

    # --- sessions ----------------------------------------------------------------------------------

    async def _session(self, loop: asyncio.AbstractEventLoop) -> PlaybookCalls:
        with self._sessions_lock:
            entry = self._sessions.get(loop)
            if entry is None:
                for other in [other for other in self._sessions if other.is_closed()]:
                    del self._sessions[other]
                # An empty context: the agents' message loops must not inherit the first caller's context.
                entry = loop.create_task(self._start_session(), context=contextvars.Context())
                self._sessions[loop] = entry
        if isinstance(entry, PlaybookCalls):
            return entry
        try:
            session = await asyncio.shield(entry)
        except BaseException:
            if entry.done():
                with self._sessions_lock:
                    if self._sessions.get(loop) is entry:
                        del self._sessions[loop]  # the next call tries again
            raise
        with self._sessions_lock:
            if self._sessions.get(loop) is entry:
                self._sessions[loop] = session
        return session

    async def _start_session(self) -> PlaybookCalls:
        calls = PlaybookCalls(
            self.program,
            model=self.model,
            limits=self.limits,
            human=self.human,
            tracer=self.tracer,
            run_factory=functools.partial(_EmbeddedRun, keep_trace=self.tracer is not None),
            store=self.store,
        )
        await calls.open()
        try:
            await calls.call_ready(self.agent.name)
        except BaseException:
            await calls.close()
            raise
        return calls

    # --- closing -----------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Shut down the run on the running event loop, and the loops of sync calls (`close`). Calls after
        this start new runs."""
        loop = asyncio.get_running_loop()
        with self._sessions_lock:
            entry = self._sessions.pop(loop, None)
        if isinstance(entry, asyncio.Task):
            try:
                entry = await asyncio.shield(entry)  # a run still starting is let start, then shut down
            except Exception:  # it failed to start: nothing to shut down
                entry = None
        if entry is not None:
            await entry.close()
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Shut down the runs of sync calls and close their loops (waiting up to CLOSE_TIMEOUT seconds for
        calls in progress). Runs on other event loops are shut down by `await aclose()` on those loops."""
        self._sync.close(CLOSE_TIMEOUT)

    def __enter__(self) -> EmbeddedPlaybook:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> EmbeddedPlaybook:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

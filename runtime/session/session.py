"""Sessions: a program's run, or a series of calls of its playbooks, as one thread in a store.

    async with await ProgramSession.open("support.pal", store="sqlite:///runs.db", thread="order-1234",
                                         model="openai/gpt-4o-mini") as session:
        result = await session.run(messages=["my order is 1234"])     # runs, or resumes, the program

    async with await CallSession.open("shop.pal", store=store, thread="cart-7") as session:
        outcome = await session.call("Shop.Add", {"item": "tea"})      # the agents keep their state
        outcome = await session.call("Shop.Total")                      # across the thread's calls

A session owns a run of its own (runtime.program_run.ProgramRun) with a journal (runtime.session.journal)
that commits the run's inputs to the thread before acting on them. Opening a thread that has entries
resumes it: the run executes the program again, answered from the log (no model call for a committed
turn, no Python call for a committed result, no prompt for a committed user input), and goes live where
the log ends. Without a store, a session keeps its thread in memory (`memory://`).

A program thread is one run of the whole program (BGN playbooks, then message loops) that stops when it
exits, goes idle, fails, or waits for the user with no input left; `run(messages=...)` continues it. A
thread of calls runs one playbook call after another on the same agents; a call that fails is rolled back
(the thread's state is as before it), a call that waits for the user is left unfinished for `resume`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

from pal_core.errors import PalError
from pal_core.ir import Program
from pal_core.messaging import StreamChunkEvent, StreamCompleteEvent, StreamObserver, StreamStartEvent
from runtime.budget import Budget
from runtime.errors import CallError, InputExhausted, ProgramError, ProgramExit, RunError, RunStopped
from runtime.execution import Execution
from runtime.humans import ChainedHuman, HumanInput, NoHuman, ScriptedHuman
from runtime.loader import load
from runtime.models.base import Model, ModelError, with_capabilities
from runtime.program_run import ProgramRun, RunLimits, RunResult
from runtime.store import (
    Entry,
    Store,
    StoreError,
    Thread,
    ThreadExists,
    ThreadStatus,
    open_store,
)
from runtime.trace import TraceEvent, Tracer

from . import codec
from .entry import CallOutcome, program_ref, resolve_playbook
from .journal import PAYLOAD_VERSION, THREAD, Journal, ReplayMismatch, ThreadTakenOver

logger = logging.getLogger(__name__)

RunFactory = Callable[..., ProgramRun]
"""Makes a session's run: `factory(program, model=, limits=, human=, tracer=, observers=)`."""

DEFAULT_LEASE = 15.0
"""Seconds of a thread's lease (CallSession.lease): how long a thread whose process died stays blocked
before another process takes it over; well below a call's wait (CallSession.busy_wait, 300 s)."""
MAX_ATTEMPTS = 20
"""Times a call reads its thread again after finding it moved on (another process's write, a call taken
over) before it gives up; each means some call of the thread went ahead."""
SHUTDOWN_TIMEOUT = 30.0
"""Seconds a session's run may take to shut down."""


class ProgramChanged(ProgramError):
    """The program a thread ran is not the program given to resume it."""


class ThreadStateError(PalError):
    """The thread is not in a state to do what was asked (answer a thread that is not waiting, call a
    playbook in a thread whose last call is unfinished, resume a thread of another kind)."""


def _program(program: Program | str | Path) -> Program:
    return program if isinstance(program, Program) else load(program)


def _model(model: Model | str | None) -> Model | None:
    if model is None or not isinstance(model, str):
        return model
    from runtime.models.registry import resolve_model

    return resolve_model(model)


async def opened_store(store: Store | str | None) -> tuple[Store, bool]:
    """(an open store, whether the caller must close it): a URL is opened here, None is a new memory store,
    a Store is used as it is (opened by its owner)."""
    if isinstance(store, Store):
        return store, False
    made = open_store("memory://" if store is None else store)
    await made.open()
    return made, True


class _SessionObserver:
    """The run's stream observer: keeps the thread's transcript and passes on to the caller's observers what
    the user has not seen before (what a replaying agent says was shown by the run that recorded it)."""

    def __init__(self, journal: Journal, observers: tuple[StreamObserver, ...]) -> None:
        self.journal = journal
        self.observers = observers
        self._muted: set[str] = set()

    async def on_stream_start(self, event: StreamStartEvent) -> None:
        if self.journal.replaying(event.sender_id):
            self._muted.add(event.stream_id)
            return
        for observer in self.observers:
            await observer.on_stream_start(event)

    async def on_stream_chunk(self, event: StreamChunkEvent) -> None:
        if event.stream_id in self._muted:
            return
        for observer in self.observers:
            await observer.on_stream_chunk(event)

    async def on_stream_complete(self, event: StreamCompleteEvent) -> None:
        self.journal.transcript.append({"from": event.sender_klass, "text": event.message.content})
        if event.stream_id in self._muted:
            self._muted.discard(event.stream_id)
            return
        for observer in self.observers:
            await observer.on_stream_complete(event)


class Session:
    """One thread of a program in a store: open it (`await Kind.open(...)`), use it, close it."""

    kind: ClassVar[str] = ""
    """`program` (a run of the whole program) or `calls` (playbook calls); kept in the thread's metadata."""

    def __init__(
        self,
        program: Program,
        store: Store,
        thread: Thread,
        *,
        owns_store: bool,
        model: Model | None,
        limits: RunLimits | None,
        human: HumanInput | None,
        tracer: Tracer | None,
        observers: tuple[StreamObserver, ...],
        run_factory: RunFactory | None,
    ) -> None:
        self.program = program
        """The program the thread runs."""
        self.store = store
        """Where the thread lives."""
        self.thread = thread
        """The thread as it was when the session opened it."""
        self.model = model
        self.limits = limits or RunLimits()
        self.human: HumanInput = human or NoHuman()
        """Who answers when the run waits for the user (besides the messages a call brings)."""
        self.tracer = tracer
        self.observers = observers
        self._run_factory: RunFactory = run_factory or ProgramRun
        self._owns_store = owns_store
        self._lock = asyncio.Lock()

    @property
    def thread_id(self) -> str:
        """The thread's id."""
        return self.thread.id

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.thread_id!r} in {self.store.url}>"

    @classmethod
    async def open(
        cls,
        program: Program | str | Path,
        *,
        store: Store | str | None = None,
        thread: str | None = None,
        model: Model | str | None = None,
        limits: RunLimits | None = None,
        human: HumanInput | None = None,
        tracer: Tracer | None = None,
        observers: Iterable[StreamObserver] = (),
        run_factory: RunFactory | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Self:
        """The thread `thread` of `store` (a Store, a URL, or None for a new memory store), made if it does
        not exist (a new id when `thread` is None). A thread that exists must run this program (else
        ProgramChanged) and be of this kind (else ThreadStateError). `metadata` is stored with a new thread."""
        loaded = _program(program)
        resolved = _model(model)
        opened, owned = await opened_store(store)
        try:
            record = await _open_thread(opened, loaded, thread, cls.kind, metadata, resolved)
        except BaseException:
            if owned:
                await opened.close()
            raise
        return cls(
            loaded,
            opened,
            record,
            owns_store=owned,
            model=resolved,
            limits=limits,
            human=human,
            tracer=tracer,
            observers=tuple(observers),
            run_factory=run_factory,
        )

    async def close(self) -> None:
        """Shut the session's run down and close the store if the session opened it; idempotent."""
        await self._shut_down()
        if self._owns_store:
            self._owns_store = False
            await self.store.close()

    async def _shut_down(self) -> None:
        return None

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    # --- the thread's run --------------------------------------------------------------------------------

    async def _journal(self) -> Journal:
        """The thread's log as it is now, ready to replay."""
        entries = await self.store.read_entries(self.thread_id)
        self.thread = await self.store.get_thread(self.thread_id)
        last = entries[-1].number if entries else 0
        return Journal(self.store, self.thread_id, entries, last=last)

    def _new_run(self, journal: Journal, human: HumanInput) -> ProgramRun:
        run = self._run_factory(
            self.program,
            model=self.model,
            limits=self.limits,
            human=human,
            tracer=self.tracer,
            observers=(_SessionObserver(journal, self.observers),),
            recorder=journal,
        )
        if journal.answers_in_log and self.model is not None:
            # A scripted model continues where the thread's answers end (a capability of the Model protocol).
            with_capabilities(self.model).resume_thread(journal.answers_in_log)
        return run

    def _human(self, messages: Iterable[str]) -> HumanInput:
        given = list(messages)
        return ChainedHuman(ScriptedHuman(given), self.human) if given else self.human

    async def answer(self, text: str) -> int:
        """Answer the thread's wait for the user (see `answer_thread`); the session's run, if any, is
        rebuilt from the log at its next use."""
        async with self._lock:
            await self._shut_down()
            return await answer_thread(self.store, self.thread_id, text)


class ProgramSession(Session):
    """A thread that runs the whole program: BGN playbooks, then the agents' message loops."""

    kind = "program"

    async def run(self, messages: Iterable[str] = ()) -> RunResult:
        """Run the program, resuming the thread from its log, until it exits, goes idle, fails, or waits for
        the user with nobody to answer (status `needs_input`; `run(messages=[...])` or `answer` continues
        it). `messages` answer the program's questions first, then the session's human. A thread that has
        finished is not run again: its recorded result is returned."""
        async with self._lock:
            journal = await self._journal()
            if self.thread.status is ThreadStatus.FINISHED:
                return await recorded_result(self.store, self.thread_id)
            run = self._new_run(journal, self._human(messages))
            try:
                result = await run.run()
            except BaseException:
                await shielded(_quietly(journal.finish(ThreadStatus.INTERRUPTED, "the run was interrupted")))
                raise
            await self._conclude(journal, result)
            return result

    async def _conclude(self, journal: Journal, result: RunResult) -> None:
        error = result.error
        if isinstance(error, ThreadTakenOver | ReplayMismatch):
            return  # this process's view is stale, or the log is not this program's: write nothing
        if result.status != "error" and journal.unreplayed:
            mismatch = ReplayMismatch(
                f"thread {self.thread_id!r}: the resumed run ended ({result.status}) before it reached "
                f"{journal.unreplayed} entr{'y' if journal.unreplayed == 1 else 'ies'} of its log; the program "
                "or pal-bridge changed since the thread ran"
            )
            result.status, result.reason, result.error = "error", str(mismatch), mismatch
            return
        outcome = {"outcome": result.status}
        if result.status in ("exit", "idle"):
            await journal.finish(ThreadStatus.FINISHED, result.reason, outcome)
        elif result.status == "error":
            await journal.finish(ThreadStatus.FAILED, result.reason, outcome)


class CallSession(Session):
    """A thread of playbook calls: each call runs on the thread's agents, which keep their state from one
    call to the next (in this process, and in any process that resumes the thread)."""

    kind = "calls"

    busy_wait: float = 300.0
    """Seconds a call waits for another process's call in the thread to end (that process holds the
    thread's lease) before giving up. 0: the thread is this caller's alone (a command line): its
    unfinished call is resumed by making the same call again, and a call in progress elsewhere is refused."""
    lease: float = DEFAULT_LEASE
    """Seconds of the thread's lease a call takes and keeps renewing (every third of it) while it runs. A
    process that dies mid-call stops renewing it: another process takes the thread over once it lapses,
    finishing the dead one's call (at least once) before its own."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        """Who this session is when it holds a thread's lease."""
        self._run: ProgramRun | None = None
        self._journal_now: Journal | None = None
        self._unfinished: Entry | None = None
        self._budgets: set[Budget] = set()
        self._stopping: str | None = None
        self.live_model_calls = 0
        """Model calls this session's calls made (answers replayed from the log are not calls)."""
        self.taken_over = 0
        """Calls of other processes this session finished after their process stopped renewing its lease."""

    async def call(
        self,
        playbook: str | None = None,
        arguments: Mapping[str, Any] | None = None,
        *,
        agent: str | None = None,
        listener: Callable[[TraceEvent], None] | None = None,
    ) -> CallOutcome:
        """Call a playbook (`Playbook` or `Agent.Playbook`, default the entry playbook) with checked
        arguments, in the thread. `listener` gets every trace event of the call. Raises what the runtime
        raises (CallError, RunError, ModelError; InputExhausted when the call waits for the user and nobody
        answers: the call stays unfinished, see `resume`)."""
        if agent is None and playbook and "." in playbook:
            qualified = playbook  # a playbook of a Python module the program names is not in its text
        else:
            target_agent, target = resolve_playbook(self.program, agent, playbook)
            qualified = f"{target_agent.name}.{target.name}"
        given = dict(arguments or {})
        async with self._lock, self._holding_lease(qualified):
            for _ in range(MAX_ATTEMPTS):
                run, journal = await self._ready()
                unfinished = self._unfinished
                if unfinished is not None:
                    if self.busy_wait <= 0 and _same_call(unfinished, qualified, given):
                        return await self._finish_unfinished(run, journal, self.human, listener)
                    await self._take_over(unfinished)
                    continue
                try:
                    await journal.begin_call(qualified, given)
                except ThreadTakenOver:
                    await self._shut_down()  # another process wrote meanwhile: catch up, then try again
                    continue
                return await self._live(run, journal, qualified, given, listener)
        raise ThreadStateError(
            f"thread {self.thread_id!r}: the call of {qualified} found the thread moved on by other writers "
            f"{MAX_ATTEMPTS} times in a row; nothing of it was run"
        )

    async def resume(
        self, messages: Iterable[str] = (), *, listener: Callable[[TraceEvent], None] | None = None
    ) -> CallOutcome:
        """Finish the thread's unfinished call (interrupted, or waiting for the user), `messages` answering
        it first. ThreadStateError when the last call finished."""
        async with self._lock, self._holding_lease("its unfinished call"):
            run, journal = await self._ready()
            if self._unfinished is None:
                raise ThreadStateError(f"thread {self.thread_id!r} has no unfinished call to resume")
            return await self._finish_unfinished(run, journal, self._human(messages), listener)

    @contextlib.asynccontextmanager
    async def _holding_lease(self, what: str) -> AsyncIterator[None]:
        """Hold the thread's lease while the block runs (renewed every third of it). Waits while another
        process holds it (up to `busy_wait`; at once ThreadStateError with busy_wait 0)."""
        deadline = time.monotonic() + self.busy_wait
        pause = 0.02
        while True:
            lease = await self.store.take_lease(self.thread_id, self.owner, seconds=self.lease)
            if lease.held:
                break
            if self.busy_wait <= 0 or time.monotonic() >= deadline:
                raise ThreadStateError(
                    f"thread {self.thread_id!r}: another process runs a call in it ({lease.owner} holds the "
                    f"thread for {lease.expires_in:.1f} s more, renewing it while its call runs); the call "
                    f"of {what} did not get a turn"
                    + (f" in {self.busy_wait:g} s" if self.busy_wait > 0 else "; try again when it is done")
                )
            # Polling a store that has no notifications, bounded by the holder's lease and busy_wait.
            await asyncio.sleep(min(pause, max(lease.expires_in, 0.001), max(deadline - time.monotonic(), 0)))
            pause = min(pause * 2, 0.5)
        done = asyncio.Event()
        renewing = asyncio.ensure_future(self._renew_lease(done))
        try:
            yield
        finally:
            # Stopped between renewals, never cancelled in the middle of one (a store call cut short can
            # leave its connection busy).
            done.set()
            await shielded(asyncio.gather(renewing, return_exceptions=True))
            await shielded(_quietly(self.store.release_lease(self.thread_id, self.owner)))

    async def _renew_lease(self, done: asyncio.Event) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(done.wait(), self.lease / 3)
            if done.is_set():
                return
            try:
                lease = await self.store.take_lease(self.thread_id, self.owner, seconds=self.lease)
            except (StoreError, OSError) as error:  # the store is away: try again at the next renewal
                logger.warning("thread %s: the lease was not renewed: %s", self.thread_id, error)
                continue
            if not lease.held:
                logger.warning(
                    "thread %s: the lease lapsed and %s took the thread over; this call's writes will be refused",
                    self.thread_id,
                    lease.owner,
                )

    def stop(self, reason: str) -> None:
        """End the call in progress (and refuse later ones) with RunStopped(`reason`): a server stopping."""
        self._stopping = reason
        for budget in list(self._budgets):
            budget.stop(reason)

    @property
    def unfinished_call(self) -> str | None:
        """`Agent.Playbook` of the thread's unfinished call, once the session has loaded the thread."""
        return None if self._unfinished is None else str(self._unfinished.payload.get("playbook"))

    # --- the run and its replay ------------------------------------------------------------------------

    async def _ready(self) -> tuple[ProgramRun, Journal]:
        """The thread's run, made and brought up to date with its log if needed: a run kept from an
        earlier call is used only while no other process has written to the thread since."""
        if self._run is not None and self._journal_now is not None:
            thread = await self.store.get_thread(self.thread_id)
            if thread.last_entry == self._journal_now.last:
                return self._run, self._journal_now
            await self._shut_down()  # another process went on with the thread: read it again
        journal = await self._journal()
        run = self._new_run(journal, self.human)
        try:
            await run.start()
            run.start_loops()
            self._unfinished = await self._replay(run, journal)
        except BaseException:
            await shielded(_shut(run))
            raise
        self._run, self._journal_now = run, journal
        return run, journal

    async def _replay(self, run: ProgramRun, journal: Journal) -> Entry | None:
        """Execute the thread's recorded calls again, answered from the log; a call that failed is skipped
        (its effects were rolled back). Returns the recorded call that never finished, if any."""
        finished = journal.recorded(THREAD, "result")
        while journal.pending_call() is not None:
            if finished == 0:
                return journal.pending_call()
            entry = journal.next_recorded_call()
            assert entry is not None
            ended = journal.recorded_result()
            finished -= 1
            if ended is None:  # pragma: no cover - counted above
                return entry
            if "error" in ended.payload:
                journal.skip(entry.number, ended.number)
                continue
            said_from = len(run.messages_to_user)
            try:
                await self._execute(
                    run, str(entry.payload["playbook"]), codec.decode(entry.payload["arguments"])
                )
            except (RunError, ProgramError, ModelError) as error:
                if isinstance(error, ReplayMismatch):
                    raise
                raise journal.mismatch(
                    ended, "a call that finished", f"failed replaying it: {error}"
                ) from error
            finally:
                del run.messages_to_user[said_from:]
        return None

    async def _execute(
        self, run: ProgramRun, qualified: str, arguments: Mapping[str, Any], budget: Budget | None = None
    ) -> Any:
        agent_name, _, playbook_name = qualified.rpartition(".")
        instance = await run.agent_instance(agent_name)
        if instance is None:
            raise ProgramError(f"agent {agent_name} could not be started")
        playbook = instance.playbooks.get(playbook_name)
        if playbook is None:
            raise CallError(f"agent {agent_name} has no playbook {playbook_name}")
        budget = budget or run.new_budget()
        try:
            async with budget.bound():
                return await run.guard(Execution(instance).execute(playbook, [], dict(arguments)))
        except ProgramExit:
            return None  # `yld exit` ends the call; what was said is its output

    async def _live(
        self,
        run: ProgramRun,
        journal: Journal,
        qualified: str,
        arguments: Mapping[str, Any],
        listener: Callable[[TraceEvent], None] | None,
    ) -> CallOutcome:
        said_from = len(run.messages_to_user)
        budget = run.new_budget()
        if self._stopping is not None:
            budget.stop(self._stopping)
        self._budgets.add(budget)
        if listener is not None:
            run.tracer.listeners.append(listener)
        try:
            value = await self._execute(run, qualified, arguments, budget)
        except (InputExhausted, ThreadTakenOver, ReplayMismatch, RunStopped):
            await self._shut_down()  # unfinished: resumable from the log; this run's state is not kept
            raise
        except (PalError, ModelError) as error:
            said = list(run.messages_to_user[said_from:])
            await self._shut_down()  # the call is rolled back: the next one starts from the log
            with contextlib.suppress(ThreadTakenOver):
                await journal.end_call(value=None, said=said, error=f"{type(error).__name__}: {error}")
            raise
        except BaseException:
            await self._shut_down()
            raise
        finally:
            self.live_model_calls += budget.limiter.calls
            self._budgets.discard(budget)
            if listener is not None and listener in run.tracer.listeners:
                run.tracer.listeners.remove(listener)
        said = tuple(run.messages_to_user[said_from:])
        del run.messages_to_user[said_from:]  # a long-lived run keeps no transcript (the journal does)
        try:
            await journal.end_call(value=value, said=list(said), error=None)
        except BaseException:
            # Not recorded (the store went away, another process took over): the call stays unfinished in
            # the log, so this run's state, which includes it, must not serve the next call.
            await self._shut_down()
            raise
        return CallOutcome(value=value, said_to_user=said, thread=self.thread_id)

    async def _finish_unfinished(
        self,
        run: ProgramRun,
        journal: Journal,
        human: HumanInput,
        listener: Callable[[TraceEvent], None] | None,
    ) -> CallOutcome:
        entry = self._unfinished
        assert entry is not None
        journal.next_recorded_call()
        self._unfinished = None
        run.human = human
        try:
            return await self._live(
                run,
                journal,
                str(entry.payload["playbook"]),
                codec.decode(entry.payload["arguments"]),
                listener,
            )
        finally:
            run.human = self.human

    async def _take_over(self, unfinished: Entry) -> None:
        """The thread's last call is unfinished and this session holds the lease, so no process is running
        it: finish it here (at least once), unless it waits for the user; then start over from the log."""
        if self.thread.status is ThreadStatus.WAITING_FOR_USER or self.busy_wait <= 0:
            raise ThreadStateError(
                f"thread {self.thread_id!r}: its call of {unfinished.payload.get('playbook')} (entry "
                f"{unfinished.number}) is unfinished"
                + (" and waits for the user" if self.thread.status is ThreadStatus.WAITING_FOR_USER else "")
                + f"; finish it first (`pal resume {self.thread_id}`, with `--message ...` to answer it)"
            )
        run, journal = await self._ready()
        logger.warning(
            "thread %s: taking over its unfinished call of %s (entry %d): the process that ran it stopped "
            "renewing its lease",
            self.thread_id,
            unfinished.payload.get("playbook"),
            unfinished.number,
        )
        self.taken_over += 1
        with contextlib.suppress(PalError, ModelError):
            await self._finish_unfinished(run, journal, self.human, None)

    async def _shut_down(self) -> None:
        run, self._run, self._journal_now = self._run, None, None
        self._unfinished = None
        if run is not None:
            await shielded(_shut(run))


# --- helpers ---------------------------------------------------------------------------------------------


async def _open_thread(
    store: Store,
    program: Program,
    thread_id: str | None,
    kind: str,
    metadata: Mapping[str, Any] | None,
    model: Model | None,
) -> Thread:
    ref = program_ref(program)
    found = await store.find_thread(thread_id) if thread_id is not None else None
    if found is None:
        details: dict[str, Any] = {"kind": kind, "payloads": PAYLOAD_VERSION}
        if model is not None:
            details["model"] = str(getattr(model, "name", "")) or type(model).__name__
        try:
            return await store.create_thread(
                ref, thread_id=thread_id, metadata={**dict(metadata or {}), "pal": details}
            )
        except ThreadExists:
            found = await store.get_thread(str(thread_id))  # another process made it first
    recorded = thread_kind(found)
    if recorded != kind:
        raise ThreadStateError(
            f"thread {found.id!r} is a {_KIND_NAMES.get(recorded, recorded)}, not a {_KIND_NAMES[kind]}"
        )
    if found.program.sha256 != ref.sha256:
        raise ProgramChanged(
            f"thread {found.id!r} ran {found.program.path} (sha256 {found.program.sha256[:12]}...), and "
            f"{ref.path} is not that program (sha256 {ref.sha256[:12]}...): a thread resumes only the "
            "program it ran; restore it, or start a new thread"
        )
    return found


_KIND_NAMES = {"program": "run of a whole program", "calls": "thread of playbook calls"}


def thread_kind(thread: Thread) -> str:
    """`program` or `calls`, as the session that made the thread recorded it."""
    details = thread.metadata.get("pal")
    kind = details.get("kind") if isinstance(details, Mapping) else None
    return str(kind) if kind else "program"


async def answer_thread(store: Store, thread_id: str, text: str) -> int:
    """Answer a thread's wait for the user, from any process: the message is committed to its log (the entry
    number is returned) and the run that resumes the thread reads it there. ThreadStateError when the
    thread does not wait for the user."""
    entries = await store.read_entries(thread_id)
    journal = Journal(store, thread_id, entries, last=entries[-1].number if entries else 0)
    label = journal.unanswered_wait()
    if label is None:
        thread = await store.get_thread(thread_id)
        raise ThreadStateError(
            f"thread {thread_id!r} is not waiting for the user (it is {thread.status.value})"
        )
    return await journal.commit_input(label, text)


async def recorded_result(store: Store, thread_id: str) -> RunResult:
    """The result of a finished program thread, read from its log and last snapshot (no replay)."""
    loaded = await store.load(thread_id)
    thread = loaded.thread
    state = loaded.snapshot.state if loaded.snapshot is not None else {}
    entries = await store.read_entries(thread_id, first=max(thread.last_entry, 1))
    payload = entries[-1].payload if entries else {}
    outcome = payload.get("result") if isinstance(payload.get("result"), Mapping) else {}
    transcript = state.get("transcript") or []
    return RunResult(
        status=str(outcome.get("outcome", "exit")),
        reason=str(payload.get("reason", "finished")),
        model_calls=0,
        variables={
            f"{agent['class']}:{agent['id']}": dict(agent["variables"])
            for agent in (state.get("agents") or {}).values()
        },
        messages_to_user=[item["text"] for item in transcript if item.get("from") != "user"],
    )


def _same_call(entry: Entry, qualified: str, arguments: Mapping[str, Any]) -> bool:
    return entry.payload.get("playbook") == qualified and codec.decode(
        entry.payload.get("arguments")
    ) == dict(arguments)


async def _shut(run: ProgramRun) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(SHUTDOWN_TIMEOUT):
            await run.shutdown()


async def _quietly(work: Any) -> None:
    """Best effort (recording an interruption): a store that fails now must not hide why the run stopped."""
    with contextlib.suppress(PalError, StoreError, OSError):
        await work


async def shielded(work: Awaitable[Any]) -> None:
    """Await `work` to its end even if this task is cancelled meanwhile (closing must finish), then let
    the cancellation go on."""
    task = asyncio.ensure_future(work)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await task
        raise

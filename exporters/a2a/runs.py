"""A task's call running in this server, and everyone listening to it.

A `TaskRun` runs one call of a task (its first, or a resume after an answer or a take-over) in a task of its
own, not in the request that started it: a client that goes away does not stop the task, and another
request can follow it (`SubscribeToTask`) or cancel it. What the call says to the user becomes a status
update (`WORKING` with the agent's message) as it is said; the end becomes the artifact and the last status
update (`COMPLETED`), or `INPUT_REQUIRED` with the question, `FAILED` with the reason, `CANCELED`.

The thread in the store is the truth: when the call ends in a way the run cannot describe itself (another
process moved the thread on: a cancel from another server, a take-over), the task is read from the store.
A call stopped because this server is shutting down stays unfinished in its thread (another server sharing
the store takes it over once its lease lapses); its listeners are told so and let go.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from a2a.types import a2a_pb2 as pb

from exporters.a2a.tasks import (
    INTERRUPTED,
    TERMINAL,
    TaskRecord,
    message_id,
    result_artifact,
    status_of,
)
from pal_core.errors import PalError
from pal_core.messaging import StreamChunkEvent, StreamCompleteEvent, StreamStartEvent
from runtime.errors import InputExhausted, RunStopped
from runtime.models.base import ModelError
from runtime.session import CallOutcome, ReplayMismatch, ThreadStateError, ThreadTakenOver

if TYPE_CHECKING:
    from pal_core.messaging import StreamObserver

logger = logging.getLogger(__name__)
calls_log = logging.getLogger("a2a_bridge.calls")
"""One line per task run (runtime.serving.logs)."""

Event = pb.Task | pb.TaskStatusUpdateEvent | pb.TaskArtifactUpdateEvent
"""What a task's stream carries."""
Work = Callable[["StreamObserver"], Awaitable[CallOutcome]]
"""Runs the call (or resumes it), telling the observer what it says to the user."""
Ended = Callable[["TaskRun", str, str | None, float], None]
"""Told when a run ends: (the run, its outcome `ok`/`error`/`input_required`/`cancelled`/`stopped`, the
kind of failure, seconds)."""


class TaskStore(Protocol):
    """Where a run reads its task when the store knows better, and records a cancellation."""

    async def read(self, task_id: str) -> pb.Task:
        """The task as the store has it."""
        ...

    async def record_cancel(self, task_id: str, reason: str) -> None:
        """Record in the store that the task is canceled."""
        ...

    async def release(self, task_id: str) -> None:
        """The run is over: let go of what the server keeps for the task's thread."""
        ...


class TaskRun:
    """One call of a task running here (see the module docstring)."""

    def __init__(self, task: pb.Task, record: TaskRecord, *, next_message: int) -> None:
        self.task = task
        """The task as it stands: status, history, artifacts (a copy goes to each new listener)."""
        self.record = record
        self.done = asyncio.Event()
        """Set when the run ended (the task's state is then final or waiting, or the server stops)."""
        self._listeners: list[asyncio.Queue[Event | None]] = []
        self._next_message = next_message
        self._since_answer: list[str] = []
        self._job: asyncio.Task[None] | None = None
        self._canceled: str | None = None
        self._began = False
        self.quiet_if_busy = False
        """A take-over attempt: when the thread turns out to be held by a live server (or finished), the run
        ends silently, with no event, and `busy` is set."""
        self.busy = False
        """The take-over found the thread held by a live server, or nothing left to finish."""

    @property
    def task_id(self) -> str:
        return self.task.id

    # --- listening ---------------------------------------------------------------------------------------

    @contextlib.contextmanager
    def listening(self) -> Any:
        """A queue of the events from now on (None after the last), while the block runs."""
        queue: asyncio.Queue[Event | None] = asyncio.Queue()
        if self.done.is_set():
            queue.put_nowait(None)
        self._listeners.append(queue)
        try:
            yield queue
        finally:
            self._listeners.remove(queue)

    async def events(self, *, first: pb.Task | None = None) -> AsyncIterator[Event]:
        """The task (`first`, or the task as it stands), then every event until the run ends."""
        with self.listening() as queue:
            snapshot = pb.Task()
            snapshot.CopyFrom(first if first is not None else self.task)
            yield snapshot
            while True:
                event = await queue.get()
                if event is None:
                    return
                yield event

    def _emit(self, event: Event) -> None:
        if isinstance(event, pb.TaskStatusUpdateEvent):
            self.task.status.CopyFrom(event.status)
        elif isinstance(event, pb.TaskArtifactUpdateEvent):
            self.task.artifacts.append(event.artifact)
        for queue in self._listeners:
            queue.put_nowait(event)

    def _status(self, state: int, text: str | None = None) -> None:
        self._emit(
            pb.TaskStatusUpdateEvent(
                task_id=self.task_id,
                context_id=self.record.context_id,
                status=status_of(state, text, task_id=self.task_id, context_id=self.record.context_id,
                                 when=_now()),
            )
        )  # fmt: skip

    def _finish(self) -> None:
        self.done.set()
        for queue in self._listeners:
            queue.put_nowait(None)

    # --- what the call says ------------------------------------------------------------------------------

    async def on_stream_start(self, event: StreamStartEvent) -> None:
        return None

    async def on_stream_chunk(self, event: StreamChunkEvent) -> None:
        return None

    async def on_stream_complete(self, event: StreamCompleteEvent) -> None:
        """A line the call said to the user: into the history, and out as a WORKING status update."""
        text = event.message.content
        self._since_answer.append(text)
        said = pb.Message(
            message_id=message_id(self.task_id, self._next_message),
            role=pb.Role.ROLE_AGENT,
            parts=[pb.Part(text=text)],
            task_id=self.task_id,
            context_id=self.record.context_id,
        )
        self._next_message += 1
        self.task.history.append(said)
        update = pb.TaskStatusUpdateEvent(task_id=self.task_id, context_id=self.record.context_id)
        update.status.state = pb.TaskState.TASK_STATE_WORKING
        update.status.message.CopyFrom(said)
        update.status.timestamp.FromDatetime(_now())
        self._emit(update)

    # --- running -----------------------------------------------------------------------------------------

    def start(self, work: Work, tasks: TaskStore, ended: Ended) -> None:
        """Run the call in a task of its own."""
        self._job = asyncio.get_running_loop().create_task(
            self._run(work, tasks, ended), name=f"A2A task {self.task_id}"
        )

    def cancel(self, reason: str) -> None:
        """Stop the call now; the task becomes CANCELED."""
        self._canceled = reason
        # A job that has not begun is left to begin: it finds the cancel and records it (a task cancelled
        # before its first step would never run its own cleanup).
        if self._job is not None and self._began and not self._job.done():
            self._job.cancel()

    async def _run(self, work: Work, tasks: TaskStore, ended: Ended) -> None:
        started = time.perf_counter()
        outcome, failure = "error", None
        self._began = True
        try:
            try:
                if self._canceled is not None:
                    raise asyncio.CancelledError
                self._status(pb.TaskState.TASK_STATE_WORKING)
                result = await work(self)
            except asyncio.CancelledError:
                if self._canceled is None:
                    raise
                outcome = "cancelled"
                await _quietly(tasks.record_cancel(self.task_id, self._canceled))
                self._adopt(await tasks.read(self.task_id))
                return
            except InputExhausted:
                outcome = "input_required"
                self._status(pb.TaskState.TASK_STATE_INPUT_REQUIRED, "\n".join(self._since_answer) or None)
                return
            except RunStopped as stopped:
                outcome, failure = "stopped", type(stopped).__name__
                # Unfinished in its thread: another server sharing the store takes it over.
                self._status(
                    pb.TaskState.TASK_STATE_WORKING,
                    f"{stopped}; the task goes on when a server sharing its store takes it over "
                    "(follow it with GetTask or SubscribeToTask)",
                )
                return
            except ThreadStateError as moved:
                if self.quiet_if_busy:
                    outcome, self.busy = "busy", True
                    logger.debug("task %s: not taken over: %s", self.task_id, moved)
                    return
                outcome, failure = "error", type(moved).__name__
                logger.info("task %s: %s; reading it from the store", self.task_id, moved)
                self._adopt(await tasks.read(self.task_id))
                return
            except (ThreadTakenOver, ReplayMismatch) as moved:
                # Another process moved the thread on (a cancel, a take-over): the store says what it is now.
                outcome, failure = "error", type(moved).__name__
                logger.info("task %s: %s; reading it from the store", self.task_id, moved)
                self._adopt(await tasks.read(self.task_id))
                return
            except (PalError, ModelError) as error:
                outcome, failure = "error", type(error).__name__
                self._status(pb.TaskState.TASK_STATE_FAILED, f"{self.record.skill} failed: {error}")
                return
            except Exception as error:  # a bug in a playbook's Python or in ours: report it, keep serving
                logger.exception("task %s raised", self.task_id)
                outcome, failure = "error", "InternalError"
                self._status(
                    pb.TaskState.TASK_STATE_FAILED,
                    f"{self.record.skill} failed: {type(error).__name__}: {error}",
                )
                return
            outcome = "ok"
            artifact = result_artifact(result.value, list(result.said_to_user))
            if artifact is not None:
                self._emit(
                    pb.TaskArtifactUpdateEvent(
                        task_id=self.task_id, context_id=self.record.context_id, artifact=artifact,
                        last_chunk=True,
                    )
                )  # fmt: skip
            self._status(pb.TaskState.TASK_STATE_COMPLETED)
        finally:
            await _shielded(tasks.release(self.task_id))
            self._finish()
            ended(self, outcome, failure, time.perf_counter() - started)

    def _adopt(self, stored: pb.Task) -> None:
        """Take the store's view of the task (its status and artifacts) and tell the listeners."""
        known = {artifact.artifact_id for artifact in self.task.artifacts}
        for artifact in stored.artifacts:
            if artifact.artifact_id in known:
                continue
            self._emit(
                pb.TaskArtifactUpdateEvent(
                    task_id=self.task_id,
                    context_id=self.record.context_id,
                    artifact=artifact,
                    last_chunk=True,
                )
            )
        self._emit(
            pb.TaskStatusUpdateEvent(
                task_id=self.task_id, context_id=self.record.context_id, status=stored.status
            )
        )


def ends_stream(event: Event) -> bool:
    """Whether a stream stops after this event: a status that is final or waits for the client."""
    if isinstance(event, pb.Task):
        return event.status.state in TERMINAL or event.status.state in INTERRUPTED
    if isinstance(event, pb.TaskStatusUpdateEvent):
        return event.status.state in TERMINAL or event.status.state in INTERRUPTED
    return False


async def _shielded(work: Awaitable[Any]) -> None:
    """Run `work` to its end even when the run is being cancelled."""
    task = asyncio.ensure_future(work)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception):
            await task
        raise


async def _quietly(work: Awaitable[Any]) -> None:
    try:
        await work
    except (PalError, OSError) as error:
        logger.warning("recording a cancellation failed: %s", error)


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)

"""The A2A request handler of a served PAL agent: the SDK's JSON-RPC (and 0.3) dispatcher calls it.

- `SendMessage` / `SendStreamingMessage`: a message without a task starts one (the skill and arguments it
  names, exporters.a2a.parts; arguments checked at the host's door before the task exists, so wrong ones
  are a JSON-RPC error and no task); a message on a task waiting for input answers it (committed to the
  thread first, so the answer survives this server); a message on a finished task is refused. Blocking
  sends wait for the task to end or to need input (`returnImmediately` does not wait); streams carry the
  task, then its status and artifact updates.
- `GetTask`, `ListTasks`: read the store, so any server sharing it answers for any task.
- `CancelTask`: stops the call running here, or records the cancel in the thread for the server running it
  (which stops at its next write), or cancels a task waiting for input.
- `SubscribeToTask`: follows a task running here live; one running on another server is followed through
  the store; one whose server died is taken over.

Tasks whose server died (their thread `running`, its lease lapsed) are taken over by the sweeper every
half lease: the call is finished from the thread's log, no committed model turn asked again.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import uuid
from collections.abc import AsyncGenerator, Callable, Mapping
from datetime import UTC, datetime, timedelta

from a2a.server.context import ServerCallContext
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.task import apply_history_length, validate_history_length, validate_page_size

from exporters.a2a.parts import MessageRefused, call_message, entry_skill, message_text, skill_call
from exporters.a2a.runs import Ended, Event, TaskRun, ends_stream
from exporters.a2a.tasks import (
    INTERRUPTED,
    TERMINAL,
    TaskRecord,
    read_task,
    record_cancel,
    status_of,
    task_metadata,
    task_record,
)
from pal_core.messaging import StreamObserver
from runtime.inputs import InputError
from runtime.serving.host import PlaybookHost
from runtime.serving.playbooks import ServedPlaybook
from runtime.session import CallOutcome, ThreadStateError, answer_thread
from runtime.store import Store, Thread, ThreadStatus

logger = logging.getLogger(__name__)

DEFAULT_PAGE_SIZE = 50
"""Tasks a ListTasks page holds when the request does not say."""
SCAN_CHUNK = 200
"""Threads read at a time when listing tasks."""
POLL_FIRST, POLL_MOST = 0.05, 1.0
"""Seconds between two reads of a task followed through the store (doubling up to the most)."""
FOLLOW_SLACK = 60.0
"""Seconds a subscription to a task running elsewhere may last beyond the call's own time budget."""
CANCEL_WAIT = 30.0
"""Seconds CancelTask waits for a call running here to stop."""
MAX_ID = 200
"""The longest message or context id kept with a task (they are stored in its thread's metadata)."""


class PalRequestHandler(RequestHandler):
    """Answers A2A requests for one agent's skills from a PlaybookHost and its store (module docstring)."""

    def __init__(
        self,
        host: PlaybookHost,
        *,
        agent: str,
        skills: Mapping[str, ServedPlaybook],
        lease: float,
        follow_for: float | None,
        started: Callable[[TaskRun], None],
        ended: Ended,
    ) -> None:
        self.host = host
        self.agent = agent
        """The served agent: tasks of other agents (or threads that are not tasks) are not this server's."""
        self.skills = dict(skills)
        self.entry = entry_skill(list(skills.values()))
        """The skill text goes to."""
        self.lease = lease
        """Seconds of a thread's lease: the sweeper looks for lapsed ones every half of it."""
        self.follow_for = follow_for
        """Longest a subscription follows a task running elsewhere (None: no call budget, an hour)."""
        self.runs: dict[str, TaskRun] = {}
        """The task calls running in this server, by task id."""
        self._started = started
        self._ended = ended
        self._stopping: str | None = None
        self._sweeping: asyncio.Task[None] | None = None

    @property
    def store(self) -> Store:
        store = self.host.opened_store
        if store is None:  # pragma: no cover - A2AServer always gives the host a store
            raise RuntimeError("the A2A handler needs its host open, with a store")
        return store

    # --- messages ----------------------------------------------------------------------------------------

    async def on_message_send(self, params: pb.SendMessageRequest, context: ServerCallContext) -> pb.Task:
        validate_history_length(params.configuration)
        run = await self._start(params.message)
        if not params.configuration.return_immediately:
            await (
                run.done.wait()
            )  # bounded by the call's budgets (RunLimits.max_seconds) and the server's stop
        task = pb.Task()
        task.CopyFrom(run.task)
        return apply_history_length(task, params.configuration)

    async def on_message_send_stream(
        self, params: pb.SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        validate_history_length(params.configuration)
        run = await self._start(params.message)
        first = True
        async for event in run.events():
            if first and isinstance(event, pb.Task):
                event = apply_history_length(event, params.configuration)
                first = False
            yield event

    async def _start(self, message: pb.Message) -> TaskRun:
        if self._stopping is not None:
            raise UnsupportedOperationError(message=f"{self._stopping}; send the message to another server")
        for field, value in (("messageId", message.message_id), ("contextId", message.context_id)):
            if len(value) > MAX_ID:
                raise InvalidParamsError(message=f"{field} is {len(value)} characters long; at most {MAX_ID}")
        if message.task_id:
            return await self._answer(message)
        try:
            call = skill_call(message, self.skills, self.entry)
            await self.host.checked_arguments(call.served, call.arguments)
        except MessageRefused as refused:
            raise InvalidParamsError(message=str(refused)) from None
        except InputError as error:
            raise InvalidParamsError(message=str(error)) from None
        task_id = uuid.uuid4().hex
        record = TaskRecord(
            agent=self.agent,
            skill=call.served.name,
            context_id=message.context_id or uuid.uuid4().hex,
            by_text=call.by_text,
            message_id=message.message_id,
        )
        task = pb.Task(id=task_id, context_id=record.context_id, metadata=task_metadata(record))
        task.status.CopyFrom(
            status_of(pb.TaskState.TASK_STATE_SUBMITTED, None, task_id=task_id, context_id=record.context_id,
                      when=datetime.now(UTC))
        )  # fmt: skip
        task.history.append(
            call_message(call, message_id=message.message_id, task_id=task_id, context_id=record.context_id)
        )
        run = TaskRun(task, record, next_message=1)
        # The thread exists before the task's id goes out: any server can be asked about it at once.
        await self.host.open_thread(task_id, record.metadata())

        async def work(observer: StreamObserver) -> CallOutcome:
            return await self.host.call(
                call.served, call.arguments, observer=observer, thread=task_id, metadata=record.metadata()
            )

        self._launch(run, work)
        return run

    async def _answer(self, message: pb.Message) -> TaskRun:
        """A message on an existing task: the answer to its question, when it waits for one."""
        task_id = message.task_id
        running = self.runs.get(task_id)
        if running is not None and not running.done.is_set():
            raise UnsupportedOperationError(
                message=f"task {task_id} is working; wait until it needs input or ends (SubscribeToTask), or "
                "cancel it"
            )
        thread, record = await self._thread(task_id)
        if message.context_id and message.context_id != record.context_id:
            raise InvalidParamsError(
                message=f"context {message.context_id} is not the context {record.context_id} of task {task_id}"
            )
        state = (await self._read(thread, record, history=False)).status.state
        if state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {task_id} is {pb.TaskState.Name(state)} and takes no more messages; send the "
                "message without a taskId to start a new task"
            )
        if state not in INTERRUPTED:
            raise UnsupportedOperationError(
                message=f"task {task_id} is working on another server; follow it with SubscribeToTask"
            )
        try:
            await answer_thread(self.store, task_id, message_text(message))
        except ThreadStateError as error:  # answered meanwhile, through another server
            raise UnsupportedOperationError(message=str(error)) from None
        task = await self._read(await self.store.get_thread(task_id), record)
        run = TaskRun(task, record, next_message=len(task.history))

        async def work(observer: StreamObserver) -> CallOutcome:
            return await self.host.resume(task_id, observer=observer)

        self._launch(run, work)
        return run

    def _launch(self, run: TaskRun, work: Callable[[StreamObserver], object]) -> None:
        self.runs[run.task_id] = run
        self._started(run)

        def ended(finished: TaskRun, outcome: str, failure: str | None, seconds: float) -> None:
            if self.runs.get(finished.task_id) is finished:
                del self.runs[finished.task_id]
            self._ended(finished, outcome, failure, seconds)

        run.start(work, self, ended)  # type: ignore[arg-type]

    # --- reading tasks -----------------------------------------------------------------------------------

    async def read(self, task_id: str) -> pb.Task:
        """The task as the store has it (TaskNotFoundError for a thread that is not this agent's task)."""
        thread, record = await self._thread(task_id)
        return await self._read(thread, record)

    async def record_cancel(self, task_id: str, reason: str) -> None:
        """Record the cancellation in the task's thread."""
        await record_cancel(self.store, task_id, reason)

    async def release(self, task_id: str) -> None:
        """A task's run is over: the host lets its thread's run go (the next message resumes it from the
        store)."""
        await self.host.forget(task_id)

    async def _thread(self, task_id: str) -> tuple[Thread, TaskRecord]:
        from runtime.store import StoreError

        try:
            thread = await self.store.find_thread(task_id)
        except StoreError:  # not even a thread id
            thread = None
        record = task_record(thread) if thread is not None else None
        if thread is None or record is None or record.agent != self.agent:
            raise TaskNotFoundError(message=f"task {task_id!r} not found")
        return thread, record

    async def _read(self, thread: Thread, record: TaskRecord, *, history: bool = True) -> pb.Task:
        return await read_task(self.store, thread, record, self.skills.get(record.skill), history=history)

    async def on_get_task(self, params: pb.GetTaskRequest, context: ServerCallContext) -> pb.Task | None:
        validate_history_length(params)
        try:
            task = await self.read(params.id)
        except TaskNotFoundError:
            running = self.runs.get(params.id)
            if running is None:
                raise
            task = pb.Task()
            task.CopyFrom(running.task)  # made here a moment ago: its thread is being written
        return apply_history_length(task, params)

    async def on_list_tasks(
        self, params: pb.ListTasksRequest, context: ServerCallContext
    ) -> pb.ListTasksResponse:
        validate_history_length(params)
        if params.HasField("page_size"):
            validate_page_size(params.page_size)
        size = params.page_size or DEFAULT_PAGE_SIZE
        start = _offset(params.page_token)
        after = (
            params.status_timestamp_after.ToDatetime(UTC)
            if params.HasField("status_timestamp_after")
            else None
        )
        matching: list[tuple[Thread, TaskRecord]] = []
        scanned = 0
        statuses = _thread_statuses(params.status)
        while True:
            threads = await self.store.list_threads(status=statuses, limit=SCAN_CHUNK, offset=scanned)
            scanned += len(threads)
            for thread in threads:
                record = task_record(thread)
                if record is None or record.agent != self.agent:
                    continue
                if params.context_id and record.context_id != params.context_id:
                    continue
                if after is not None and thread.updated < after:
                    continue
                matching.append((thread, record))
            if len(threads) < SCAN_CHUNK:
                break
        tasks: list[pb.Task] = []
        wanted_history = not params.HasField("history_length") or params.history_length > 0
        for thread, record in matching:
            task = await self._read(thread, record, history=wanted_history)
            if params.status and task.status.state != params.status:
                continue
            if not params.include_artifacts:
                task.ClearField("artifacts")
            tasks.append(apply_history_length(task, params))
        page = tasks[start : start + size]
        response = pb.ListTasksResponse(tasks=page, page_size=size, total_size=len(tasks))
        if start + size < len(tasks):
            response.next_page_token = _token(start + size)
        return response

    # --- cancel ------------------------------------------------------------------------------------------

    async def on_cancel_task(
        self, params: pb.CancelTaskRequest, context: ServerCallContext
    ) -> pb.Task | None:
        reason = "the client canceled the task"
        running = self.runs.get(params.id)
        if running is not None and not running.done.is_set():
            running.cancel(reason)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CANCEL_WAIT):
                    await running.done.wait()
            return await self.read(params.id)
        thread, record = await self._thread(params.id)
        state = (await self._read(thread, record, history=False)).status.state
        if state in TERMINAL or not await record_cancel(self.store, params.id, reason):
            raise TaskNotCancelableError(
                message=f"task {params.id} is {pb.TaskState.Name(state)}; a task that ended cannot be canceled"
            )
        return await self.read(params.id)

    # --- following a task --------------------------------------------------------------------------------

    async def on_subscribe_to_task(
        self, params: pb.SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        running = self.runs.get(params.id)
        if running is not None and not running.done.is_set():
            async for event in running.events():
                yield event
            return
        thread, record = await self._thread(params.id)
        task = await self._read(thread, record)
        if task.status.state in TERMINAL:
            raise UnsupportedOperationError(
                message=f"task {params.id} is in terminal state {pb.TaskState.Name(task.status.state)}"
            )
        async for event in self._follow(task, thread, record):
            yield event

    async def _follow(self, task: pb.Task, thread: Thread, record: TaskRecord) -> AsyncGenerator[Event, None]:
        """Follow a task not running here: its updates as the store shows them, until it ends or waits for
        input; taken over here if its server died."""
        yield task
        if ends_stream(task):
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.follow_for or 3600.0) + self.lease + FOLLOW_SLACK
        pause = POLL_FIRST
        seen = (task.status.state, len(task.history))
        while loop.time() < deadline:
            await asyncio.sleep(pause)
            pause = min(pause * 2, POLL_MOST)
            running = self.runs.get(task.id)
            lapsed = datetime.now(UTC) - thread.updated > timedelta(seconds=self.lease)
            if running is None and thread.status is ThreadStatus.RUNNING and lapsed:
                running = await self._take_over(task.id, record, quiet=True)
            if running is not None:
                async for event in running.events():
                    if not isinstance(event, pb.Task):
                        yield event
                if not running.busy:
                    return
                # Held by a live server after all: go on reading the store.
            thread = await self.store.get_thread(task.id)
            task = await self._read(thread, record)
            now = (task.status.state, len(task.history))
            if now != seen:
                seen = now
                pause = POLL_FIRST
                for artifact in task.artifacts:
                    yield pb.TaskArtifactUpdateEvent(
                        task_id=task.id, context_id=record.context_id, artifact=artifact, last_chunk=True
                    )
                yield pb.TaskStatusUpdateEvent(
                    task_id=task.id, context_id=record.context_id, status=task.status
                )
                if ends_stream(task):
                    return
        yield pb.TaskStatusUpdateEvent(
            task_id=task.id,
            context_id=record.context_id,
            status=status_of(
                task.status.state, "stopped following the task: it ran past its time budget",
                task_id=task.id, context_id=record.context_id, when=datetime.now(UTC),
            ),
        )  # fmt: skip

    # --- take-over -----------------------------------------------------------------------------------------

    async def _take_over(self, task_id: str, record: TaskRecord, *, quiet: bool) -> TaskRun | None:
        """Finish the call of a task whose server stopped renewing its lease, here; None when the task is
        held by a live server (or running here already)."""
        if task_id in self.runs or self._stopping is not None:
            return self.runs.get(task_id)
        try:
            task = await self.read(task_id)
        except TaskNotFoundError:
            return None
        if task.status.state != pb.TaskState.TASK_STATE_WORKING:
            return None
        run = TaskRun(task, record, next_message=len(task.history))
        run.quiet_if_busy = quiet

        async def work(observer: StreamObserver) -> CallOutcome:
            # Without waiting: a thread another live server holds is that server's.
            return await self.host.resume(task_id, observer=observer, wait=0)

        self._launch(run, work)
        return run

    def start_sweeping(self) -> None:
        """Look for tasks whose server died every half lease, and take them over."""
        if self._sweeping is None:
            self._sweeping = asyncio.get_running_loop().create_task(
                self._sweep(), name="A2A take-over sweeper"
            )

    async def _sweep(self) -> None:
        from pal_core.errors import PalError

        interval = max(self.lease / 2, 0.5)
        while self._stopping is None:
            await asyncio.sleep(interval)
            try:
                await self.sweep_once()
            except (PalError, OSError) as error:  # the store is away: try again at the next sweep
                logger.warning("looking for tasks to take over failed: %s", error)

    async def sweep_once(self) -> int:
        """Take over every task of this agent whose thread runs and was last written over a lease ago;
        the number of take-overs started (each finds out whether the lease really lapsed)."""
        before = datetime.now(UTC) - timedelta(seconds=self.lease)
        started = 0
        threads = await self.store.list_threads(
            status=ThreadStatus.RUNNING, updated_before=before, limit=SCAN_CHUNK
        )
        for thread in threads:
            record = task_record(thread)
            if record is None or record.agent != self.agent or thread.id in self.runs:
                continue
            if await self._take_over(thread.id, record, quiet=True) is not None:
                started += 1
        return started

    # --- stopping ----------------------------------------------------------------------------------------

    def stop(self, reason: str) -> None:
        """Refuse new messages from now on (the host stops the calls in progress)."""
        self._stopping = reason
        if self._sweeping is not None:
            self._sweeping.cancel()

    async def close(self) -> None:
        """Stop the sweeper and wait (briefly) for the runs to let go."""
        self.stop(self._stopping or "the server is closing")
        if self._sweeping is not None:
            await asyncio.gather(self._sweeping, return_exceptions=True)
        runs = [run.done.wait() for run in self.runs.values()]
        if runs:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(CANCEL_WAIT):
                    await asyncio.gather(*runs)

    # --- what this agent does not do -------------------------------------------------------------------------

    async def on_create_task_push_notification_config(
        self, params: pb.TaskPushNotificationConfig, context: ServerCallContext
    ) -> pb.TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError(message="this agent sends no push notifications")

    async def on_get_task_push_notification_config(
        self, params: pb.GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> pb.TaskPushNotificationConfig:
        raise PushNotificationNotSupportedError(message="this agent sends no push notifications")

    async def on_list_task_push_notification_configs(
        self, params: pb.ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> pb.ListTaskPushNotificationConfigsResponse:
        raise PushNotificationNotSupportedError(message="this agent sends no push notifications")

    async def on_delete_task_push_notification_config(
        self, params: pb.DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        raise PushNotificationNotSupportedError(message="this agent sends no push notifications")

    async def on_get_extended_agent_card(
        self, params: pb.GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> pb.AgentCard:
        raise UnsupportedOperationError(message="this agent has no extended card")


def _thread_statuses(state: int) -> tuple[ThreadStatus, ...] | None:
    """The thread statuses a task state filter can match (None: all)."""
    by_state = {
        pb.TaskState.TASK_STATE_SUBMITTED: (ThreadStatus.RUNNING,),
        pb.TaskState.TASK_STATE_WORKING: (ThreadStatus.RUNNING,),
        pb.TaskState.TASK_STATE_INPUT_REQUIRED: (ThreadStatus.WAITING_FOR_USER,),
        pb.TaskState.TASK_STATE_COMPLETED: (ThreadStatus.FINISHED,),
        pb.TaskState.TASK_STATE_FAILED: (ThreadStatus.FAILED, ThreadStatus.INTERRUPTED),
        pb.TaskState.TASK_STATE_CANCELED: (ThreadStatus.FAILED,),
    }
    return by_state.get(state)  # type: ignore[call-overload]


def _token(offset: int) -> str:
    return base64.urlsafe_b64encode(f"offset:{offset}".encode()).decode()


def _offset(token: str) -> int:
    if not token:
        return 0
    try:
        kind, _, number = base64.urlsafe_b64decode(token.encode()).decode().partition(":")
        if kind == "offset" and number.isdigit():
            return int(number)
    except ValueError:
        pass
    raise InvalidParamsError(
        message=f"invalid page token {token!r}: use the nextPageToken of a ListTasks answer"
    )

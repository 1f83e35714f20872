"""What the studio's buttons do, through runtime.session's public API (the code `pal resume` and `pal fork`
run): answer a thread that waits for the user (`answer_thread`, committed first), resume a thread (a
`ProgramSession` runs it, or a `CallSession` finishes its unfinished call), fork a thread at an entry
(`Store.fork_thread`). A resumed run goes on in the studio's process, in the background; the page follows
it through the store like any other run.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path

from pal_core.errors import PalError
from runtime.errors import InputExhausted
from runtime.models.base import Model, ModelError
from runtime.session import CallSession, ProgramSession, Session, ThreadStateError, answer_thread, thread_kind
from runtime.store import Store, StoreError, Thread, ThreadStatus

logger = logging.getLogger(__name__)

STOP_WAIT = 30.0
"""Seconds the studio gives its runs to stop when it shuts down."""


class ActionRefused(PalError):
    """The thread cannot do what was asked now (the message says why and what to do instead)."""


class BadRequest(PalError):
    """A request the studio cannot read (no thread named, a body that is not the JSON it needs)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Started:
    """A run the studio started."""

    thread: str
    """The thread it runs."""
    answered: int | None = None
    """The entry holding the user's answer, when the run was started by one."""


class Runs:
    """The runs the studio started, one per thread at most, and the last thing each of them said went wrong
    outside the thread's log (the log records how a run ended; a session that cannot even open does not)."""

    def __init__(self, store: Store, model: Model | None) -> None:
        self.store = store
        self.model = model
        """The model resumed runs use for live turns (None: only what the runtime runs itself)."""
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self.notices: dict[str, str] = {}
        """By thread: what went wrong with the studio's last run of it (cleared when a new one starts)."""

    def running(self, thread_id: str) -> bool:
        task = self._tasks.get(thread_id)
        return task is not None and not task.done()

    async def answer(self, thread_id: str, text: str) -> Started:
        """Commit `text` as the user's answer to the thread's wait, then resume it here."""
        if not text.strip():
            raise BadRequest("the answer is empty")
        thread = await self._resumable(thread_id, answering=True)
        session = await self._open(thread)
        try:
            number = await answer_thread(self.store, thread.id, text)
        except BaseException:
            await session.close()
            raise
        self._start(thread.id, session)
        return Started(thread=thread.id, answered=number)

    async def resume(self, thread_id: str) -> Started:
        """Resume the thread here from its last committed entry, as `pal resume` does."""
        thread = await self._resumable(thread_id, answering=False)
        self._start(thread.id, await self._open(thread))
        return Started(thread=thread.id)

    async def fork(self, thread_id: str, at: int, new_thread_id: str | None = None) -> Thread:
        """A new thread with entries 1..`at` of this one (which is not touched), as `pal fork` makes."""
        return await self.store.fork_thread(thread_id, at=at, new_thread_id=new_thread_id)

    async def settled(self, thread_id: str) -> None:
        """Wait until the studio's run of the thread (if any) has ended."""
        task = self._tasks.get(thread_id)
        if task is not None:
            await asyncio.gather(task, return_exceptions=True)

    async def close(self) -> None:
        """Stop the studio's runs (each records that it was interrupted; `resume` goes on later)."""
        tasks = [task for task in self._tasks.values() if not task.done()]
        for task in tasks:
            task.cancel()
        if tasks:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(STOP_WAIT):
                    await asyncio.gather(*tasks, return_exceptions=True)

    # --- helpers -----------------------------------------------------------------------------------------

    async def _resumable(self, thread_id: str, *, answering: bool) -> Thread:
        thread = await self.store.get_thread(thread_id)
        if self.running(thread.id):
            raise ActionRefused(f"thread {thread.id!r} is already running in this studio")
        if thread.status is ThreadStatus.FINISHED:
            raise ActionRefused(f"thread {thread.id!r} has finished; fork it at an entry to run it again")
        if answering and thread.status is not ThreadStatus.WAITING_FOR_USER:
            raise ActionRefused(
                f"thread {thread.id!r} is not waiting for the user (it is {thread.status.value})"
            )
        if not answering and thread.status is ThreadStatus.WAITING_FOR_USER:
            raise ActionRefused(f"thread {thread.id!r} waits for the user: answer it to resume it")
        if not Path(thread.program.path).is_file():
            raise ActionRefused(
                f"thread {thread.id!r} ran {thread.program.path}, which is not there any more; run the program "
                f"with `pal run FILE --thread {thread.id}`"
            )
        return thread

    async def _open(self, thread: Thread) -> Session:
        """The thread's session (ProgramChanged, ThreadStateError... raised here, before anything is written)."""
        kind = CallSession if thread_kind(thread) == "calls" else ProgramSession
        return await kind.open(thread.program.path, store=self.store, thread=thread.id, model=self.model)

    def _start(self, thread_id: str, session: Session) -> None:
        self.notices.pop(thread_id, None)
        self._tasks[thread_id] = asyncio.create_task(
            self._run(thread_id, session), name=f"studio run {thread_id}"
        )

    async def _run(self, thread_id: str, session: Session) -> None:
        try:
            async with session:
                if isinstance(session, CallSession):
                    with contextlib.suppress(InputExhausted):  # it waits for the user again: the log says so
                        await session.resume()
                else:
                    result = await session.run()  # type: ignore[attr-defined]
                    if result.status == "error" and result.reason:
                        self.notices[thread_id] = f"the run stopped: {result.reason}"
        except (PalError, ModelError, StoreError, ThreadStateError) as error:
            # A call session's failure (the log records it as the call's result) or a store that failed.
            self.notices[thread_id] = f"the run stopped: {error}"
        except Exception as error:  # a bug: keep the studio serving, and say what happened
            logger.exception("studio: the run of thread %s failed", thread_id)
            self.notices[thread_id] = f"the run failed unexpectedly: {type(error).__name__}: {error}"

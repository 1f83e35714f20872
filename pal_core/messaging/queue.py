"""AsyncMessageQueue: an agent's inbox, event-driven on `asyncio.Condition`, with predicate-based reads.

How waiting works, and why it is fast:

- Each blocked reader registers a waiter holding its predicate, how many matches it needs and its own
  `asyncio.Condition` (all of them share the queue's one lock). A `put` offers the new message to the
  registered waiters only, and notifies a waiter only once enough matching messages have arrived for it, so a
  reader whose predicate cannot match is never woken (no `notify_all` thundering herd) and a put costs
  O(waiters), never O(queued messages).
- A put that has nobody to wake does no locking at all: in a single-threaded event loop the append is
  already atomic, and the lock exists only because `Condition.notify` needs it. A put that does wake
  someone appends and notifies in one stretch under the lock.
- A woken reader rescans the queue under the lock (another reader may have taken the messages first) and
  either takes what it needs or registers again: no lost wake-ups, and no polling.

Reads take messages in arrival order. Closing the queue wakes every waiter: a waiter that finds matching
messages still queued gets them, one that finds none gets `QueueClosed`.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from itertools import compress, count, islice

from pal_core.messaging.errors import QueueClosed
from pal_core.messaging.message import Message

_DELETE_IN_PLACE_LIMIT = 16
"""Up to this many matches are deleted from the deque in place; more are removed by rebuilding it once."""

MessagePredicate = Callable[[Message], bool]
"""A test a reader applies to queued messages; a message is taken only when it returns True."""


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueStatistics:
    """A snapshot of a queue's counters, from `AsyncMessageQueue.statistics()`."""

    name: str
    """The queue's name, as given when it was made."""
    total_put: int
    """Messages accepted by `put` since the queue was made."""
    total_taken: int
    """Messages handed to readers since the queue was made."""
    total_gets: int
    """Calls of `get_batch` (and `get`, which uses it)."""
    total_wakeups: int
    """Times a blocked reader was woken because messages it wanted arrived or the queue closed."""
    pending: int
    """Messages queued now."""
    max_pending: int
    """The most messages that were ever queued at once."""
    waiters: int
    """Readers blocked now."""
    closed: bool
    """Whether the queue has been closed."""
    uptime_seconds: float
    """Seconds since the queue was made."""


class _Waiter:
    """A blocked reader: what it waits for and the condition it sleeps on."""

    __slots__ = ("condition", "matched", "needed", "predicate")

    def __init__(
        self, predicate: MessagePredicate | None, needed: int, matched: int, condition: asyncio.Condition
    ) -> None:
        self.predicate = predicate
        self.needed = needed
        self.matched = matched
        self.condition = condition


class AsyncMessageQueue:
    """An unbounded FIFO of messages that readers take from by predicate, waiting without polling."""

    def __init__(self, name: str = "inbox") -> None:
        """Make an empty queue; `name` appears in errors and statistics (for example "inbox of agent 1001")."""
        self._name = name
        self._messages: deque[Message] = deque()
        self._lock = asyncio.Lock()
        self._waiters: list[_Waiter] = []
        self._closed = False
        self._created = time.monotonic()
        self._total_put = 0
        self._total_taken = 0
        self._total_gets = 0
        self._total_wakeups = 0
        self._max_pending = 0

    @property
    def name(self) -> str:
        """The name given when the queue was made."""
        return self._name

    @property
    def closed(self) -> bool:
        """Whether `close` has been called."""
        return self._closed

    def __len__(self) -> int:
        return len(self._messages)

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<AsyncMessageQueue {self._name!r} {state} pending={len(self._messages)}>"

    # Writing

    async def put(self, message: Message) -> None:
        """Queue `message` and wake the readers it completes. Raises `QueueClosed` once the queue is closed."""
        if self._closed:
            raise self._closed_for(message)
        if not self._waiters:
            # Nobody to wake: the append is atomic in the event loop, so skip the lock entirely.
            self._append(message)
            return
        # Append and notify under the lock in one synchronous stretch, so a put cancelled while it waits
        # for the lock has delivered nothing and a woken reader is always notified.
        async with self._lock:
            if self._closed:
                raise self._closed_for(message)
            self._append(message)
            to_wake = self._match_waiters(message)
            if to_wake:
                for waiter in to_wake:
                    waiter.condition.notify()

    def _closed_for(self, message: Message) -> QueueClosed:
        return QueueClosed(self._name, f"message {message.id} from {message.sender_id} was not delivered")

    def _append(self, message: Message) -> None:
        messages = self._messages
        messages.append(message)
        self._total_put += 1
        if len(messages) > self._max_pending:
            self._max_pending = len(messages)

    def _match_waiters(self, message: Message) -> list[_Waiter] | None:
        """The waiters `message` completes, removed from the waiter list (each is woken once)."""
        to_wake: list[_Waiter] | None = None
        for waiter in self._waiters:
            predicate = waiter.predicate
            if predicate is not None:
                try:
                    matches = predicate(message)
                except Exception:
                    # Wake the reader so its predicate raises again in its own task, not in the sender's.
                    matches = True
                if not matches:
                    continue
            waiter.matched += 1
            if waiter.matched >= waiter.needed:
                if to_wake is None:
                    to_wake = []
                to_wake.append(waiter)
        if to_wake is not None:
            self._waiters = [waiter for waiter in self._waiters if waiter not in to_wake]
            self._total_wakeups += len(to_wake)
        return to_wake

    # Reading

    def peek(self, predicate: MessagePredicate | None = None) -> Message | None:
        """The oldest queued message that matches `predicate` (any message if None), left in the queue."""
        if predicate is None:
            return self._messages[0] if self._messages else None
        return next(filter(predicate, self._messages), None)

    async def get_batch(
        self,
        predicate: MessagePredicate | None = None,
        *,
        timeout: float | None = None,
        min_messages: int = 1,
        max_messages: int | None = None,
    ) -> list[Message]:
        """Wait until at least `min_messages` queued messages match `predicate` (every message if None), then
        remove and return up to `max_messages` of them (all if None), oldest first.

        If `timeout` seconds pass first, return the matching messages there are, possibly fewer than
        `min_messages` or none. `timeout=None` waits as long as it takes; `min_messages=0` never waits.
        On a closed queue, return what matches; raise `QueueClosed` if nothing does.
        """
        _check_counts(min_messages, max_messages)
        if timeout is not None and timeout < 0:
            raise ValueError(f"timeout must be None or >= 0 seconds, got {timeout!r}")
        if max_messages is not None and max_messages < min_messages:
            raise ValueError(f"max_messages ({max_messages}) must not be below min_messages ({min_messages})")
        self._total_gets += 1
        if predicate is None:
            if len(self._messages) < min_messages and not self._closed:
                await self._wait(None, min_messages, timeout)
            taken = self._take_oldest(max_messages)
        else:
            # One scan finds the matches; they are removed only if there are enough (or no point waiting).
            taken, positions = self._scan(predicate, max_messages)
            if len(taken) < min_messages and not self._closed:
                await self._wait(predicate, min_messages, timeout)
                taken, positions = self._scan(predicate, max_messages)
            if taken:
                self._remove(positions)
                self._total_taken += len(taken)
        if not taken and self._closed:
            raise QueueClosed(self._name, "no matching message is left to take")
        return taken

    async def get(
        self, predicate: MessagePredicate | None = None, *, timeout: float | None = None
    ) -> Message:
        """Remove and return the oldest message matching `predicate`, waiting for one.

        Raises `TimeoutError` if none arrives within `timeout` seconds, `QueueClosed` if the queue closes.
        """
        taken = await self.get_batch(predicate, timeout=timeout, min_messages=1, max_messages=1)
        if not taken:
            raise TimeoutError(f"no matching message arrived in {self._name!r} within {timeout:g} s")
        return taken[0]

    async def wait_for_match(
        self, predicate: MessagePredicate | None = None, *, timeout: float | None = None, count: int = 1
    ) -> bool:
        """Wait until at least `count` queued messages match `predicate`, without taking them.

        Returns True when they are there, False if `timeout` seconds passed first. Raises `QueueClosed` if the
        queue is or becomes closed before enough messages match.
        """
        _check_counts(count, None)
        if timeout is not None and timeout < 0:
            raise ValueError(f"timeout must be None or >= 0 seconds, got {timeout!r}")
        if self._count(predicate, count) >= count:
            return True
        if self._closed:
            raise QueueClosed(self._name, "it closed before a matching message arrived")
        await self._wait(predicate, count, timeout)
        if self._count(predicate, count) >= count:
            return True
        if self._closed:
            raise QueueClosed(self._name, "it closed before a matching message arrived")
        return False

    async def _wait(self, predicate: MessagePredicate | None, needed: int, timeout: float | None) -> None:
        """Block until `needed` queued messages match, the queue closes, or `timeout` passes."""
        deadline = asyncio.timeout(timeout)
        try:
            async with deadline, self._lock:
                while not self._closed:
                    matched = self._count(predicate, needed)
                    if matched >= needed:
                        return
                    waiter = _Waiter(predicate, needed, matched, asyncio.Condition(self._lock))
                    self._waiters.append(waiter)
                    try:
                        await waiter.condition.wait()
                    finally:
                        if waiter in self._waiters:
                            self._waiters.remove(waiter)
        except TimeoutError:
            # Only our own deadline ends the wait quietly; a TimeoutError raised by a predicate propagates.
            if not deadline.expired():
                raise

    def _count(self, predicate: MessagePredicate | None, limit: int) -> int:
        """How many queued messages match, counting no further than `limit`."""
        if predicate is None:
            return min(len(self._messages), limit)
        if limit <= 0:
            return 0
        return sum(1 for _ in islice(filter(predicate, self._messages), limit))

    def _take_oldest(self, limit: int | None) -> list[Message]:
        """Remove and return up to `limit` of the oldest messages."""
        messages = self._messages
        if limit is None or limit >= len(messages):
            taken = list(messages)
            messages.clear()
        else:
            taken = [messages.popleft() for _ in range(limit)]
        self._total_taken += len(taken)
        return taken

    def _scan(self, predicate: MessagePredicate, limit: int | None) -> tuple[list[Message], list[int]]:
        """Up to `limit` matching messages, oldest first, and their positions; the queue is not changed, so a
        raising predicate loses nothing."""
        messages = self._messages
        # The loop runs in C (map / compress / islice); only the predicate itself runs per message in Python.
        positions = list(islice(compress(count(), map(predicate, messages)), limit))
        if len(positions) <= _DELETE_IN_PLACE_LIMIT:
            return [messages[position] for position in positions], positions
        # Indexing a deque walks its blocks; for many matches one copy to a list is cheaper.
        snapshot = list(messages)
        return [snapshot[position] for position in positions], positions

    def _remove(self, positions: list[int]) -> None:
        """Remove the messages at `positions` (ascending)."""
        messages = self._messages
        if positions[-1] == len(positions) - 1:
            for _ in positions:
                messages.popleft()
        elif len(positions) <= _DELETE_IN_PLACE_LIMIT:
            # deque deletion is a C-level shift, far cheaper than rebuilding for a few messages.
            for position in reversed(positions):
                del messages[position]
        else:
            dropped = set(positions)
            self._messages = deque(m for position, m in enumerate(messages) if position not in dropped)

    def snapshot(self, predicate: MessagePredicate | None = None, limit: int | None = None) -> list[Message]:
        """The queued messages matching `predicate` (all if None), oldest first, left in the queue."""
        if predicate is None:
            return list(islice(self._messages, limit))
        return list(islice(filter(predicate, self._messages), limit))

    # Lifecycle

    async def close(self) -> None:
        """Refuse further puts and wake every blocked reader (they get what matches, else `QueueClosed`).

        Closing twice is harmless.
        """
        if self._closed:
            return
        self._closed = True
        if self._waiters:
            async with self._lock:
                waiters, self._waiters = self._waiters, []
                self._total_wakeups += len(waiters)
                for waiter in waiters:
                    waiter.condition.notify()

    def statistics(self) -> QueueStatistics:
        """The queue's counters now."""
        return QueueStatistics(
            name=self._name,
            total_put=self._total_put,
            total_taken=self._total_taken,
            total_gets=self._total_gets,
            total_wakeups=self._total_wakeups,
            pending=len(self._messages),
            max_pending=self._max_pending,
            waiters=len(self._waiters),
            closed=self._closed,
            uptime_seconds=time.monotonic() - self._created,
        )


def _check_counts(minimum: int, maximum: int | None) -> None:
    if not isinstance(minimum, int) or isinstance(minimum, bool) or minimum < 0:
        raise ValueError(f"min_messages/count must be an int >= 0, got {minimum!r}")
    if maximum is not None and (not isinstance(maximum, int) or isinstance(maximum, bool) or maximum < 1):
        raise ValueError(f"max_messages must be None or an int >= 1, got {maximum!r}")

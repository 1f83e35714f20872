"""What the stores raise. Every error says which thread (or URL, or value) and why.

`AppendConflict` is the one a session layer handles in normal operation: another writer appended to the
thread first. The others are user errors (a bad URL, a value that is not JSON, a missing thread) or a store
that cannot be read (`FormatError`: written by a newer pal-bridge, or damaged).
"""

from __future__ import annotations

from pal_core.errors import PalError


class StoreError(PalError):
    """Base of every error a store raises on purpose."""


class StoreURLError(StoreError, ValueError):
    """A store URL that names no store, or an option the store does not know."""


class StoreUnavailable(StoreError):
    """The store cannot be used: closed, not opened yet, a missing optional dependency, a lost connection."""


class StoreNotFound(StoreUnavailable):
    """The store a URL names does not exist, and opening it was not allowed to make it (`create=False`): a
    mistyped path is an error, not a new empty store."""


class ThreadNotFound(StoreError, LookupError):
    """No thread with this id."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"no thread {thread_id!r} in the store")
        self.thread_id = thread_id


class ThreadExists(StoreError):
    """A thread with this id is already in the store (creating, forking or importing it again)."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"thread {thread_id!r} already exists in the store")
        self.thread_id = thread_id


class StoreConflict(StoreError):
    """A write that would rewrite or contradict what is stored: the log is append-only."""


class AppendConflict(StoreConflict):
    """The thread's log does not end where the writer expected: another writer appended first.

    The writer's view of the thread is stale. Reload it (`Store.load`) and decide again; never retry the same
    append with the new number, that would interleave two writers' logs.
    """

    def __init__(self, thread_id: str, *, expected_last: int, actual_last: int) -> None:
        super().__init__(
            f"thread {thread_id!r}: expected its last entry to be {expected_last}, but it is {actual_last} "
            "(another writer appended first; reload the thread before writing)"
        )
        self.thread_id = thread_id
        self.expected_last = expected_last
        """The last entry number the writer passed."""
        self.actual_last = actual_last
        """The thread's last entry number in the store."""


class DuplicateKey(StoreConflict):
    """An entry with this idempotency key is already in the thread's log."""

    def __init__(self, thread_id: str, key: str, *, number: int | None) -> None:
        at = f" (entry {number})" if number is not None else ""
        super().__init__(f"thread {thread_id!r}: an entry with key {key!r} is already logged{at}")
        self.thread_id = thread_id
        self.key = key
        self.number = number
        """The number of the entry that holds the key, when known."""


class NotJSON(StoreError, TypeError):
    """A value that JSON cannot hold exactly; refused when written, never converted."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        """The path to the value, such as `payload.changed["x"][2]`."""
        self.reason = reason


class FormatError(StoreError):
    """A stored document this pal-bridge cannot read: an unknown or newer format version, or a damaged one."""

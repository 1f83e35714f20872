"""What a store holds: threads, the append-only log of entries of each thread, and snapshots of its state.

A thread is one durable run. Its log is numbered 1, 2, 3, ... and never rewritten; a snapshot is the JSON
state of the run after entry N, so loading a long thread reads the latest snapshot and the entries after it
instead of the whole log. Values are plain JSON (dicts with string keys, lists, strings, finite numbers,
booleans, None): what is written is exactly what is read back.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

JSONObject = dict[str, Any]
"""A JSON object as Python holds it; every value inside is JSON too (checked when written)."""


class ThreadStatus(StrEnum):
    """Where a thread's run stands."""

    RUNNING = "running"
    """A process is running it (or was, until it crashed: a crash leaves a thread `running`)."""
    WAITING_FOR_USER = "waiting_for_user"
    """The run waits for a message from the user (`YLD user`); any process may answer it."""
    FINISHED = "finished"
    """The run ended normally."""
    FAILED = "failed"
    """The run ended with an error."""
    INTERRUPTED = "interrupted"
    """The run stopped before it ended (stopped from outside, or a fork not started yet); it can resume."""


class EntryKind:
    """The kinds of log entries the runtime writes. A kind is an open string (lowercase letters, digits and
    `_ . : -`, starting with a letter), so a new kind needs no change here; these are the known ones."""

    TURN = "turn"
    """A verified model turn: the answer text and what it changed."""
    CALL = "call"
    """The result of a Python or remote playbook call, with the call's idempotency key as the entry key."""
    MESSAGE = "message"
    """A message delivered to an agent."""
    WAIT = "wait"
    """The run started waiting for the user."""
    INPUT = "input"
    """Input given to the run: the user's message, the arguments of a call."""
    STATUS = "status"
    """The run's status changed (finished, failed, interrupted), with the reason."""

    KNOWN = frozenset({TURN, CALL, MESSAGE, WAIT, INPUT, STATUS})
    """Every kind above."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgramRef:
    """The program a thread runs: where it was and what it contained, so a resume can refuse a changed one."""

    path: str
    """The program's file as an absolute path, or a name for a program that has no file (`<string>`)."""
    sha256: str
    """The SHA-256 of the program's bytes (or of its text encoded as UTF-8), as 64 lowercase hex digits."""

    @classmethod
    def of_file(cls, path: str | Path) -> ProgramRef:
        """The reference of a program file as it is now (its absolute path and the hash of its bytes)."""
        resolved = Path(path).expanduser().resolve()
        return cls(path=str(resolved), sha256=hashlib.sha256(resolved.read_bytes()).hexdigest())

    @classmethod
    def of_source(cls, text: str, *, path: str = "<string>") -> ProgramRef:
        """The reference of a program given as text."""
        return cls(path=path, sha256=hashlib.sha256(text.encode("utf-8")).hexdigest())


@dataclass(frozen=True, slots=True, kw_only=True)
class ForkPoint:
    """Where a forked thread came from."""

    thread_id: str
    """The thread it was forked from (which may since have been deleted)."""
    entry: int
    """The last entry of that thread the fork starts from (0: from its very beginning)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Thread:
    """One durable run as the store records it."""

    id: str
    """The thread id: given by the caller, or generated (a UUID) when not."""
    program: ProgramRef
    """The program the thread runs."""
    status: ThreadStatus
    """Where the run stands."""
    created: datetime
    """When the thread was created (UTC)."""
    updated: datetime
    """When the thread last changed: an append, a status or metadata change, a snapshot (UTC)."""
    metadata: JSONObject = field(default_factory=dict)
    """A small JSON object the caller owns (labels, the user, the model name); at most 16 KiB as JSON."""
    forked_from: ForkPoint | None = None
    """The thread and entry this one was forked from; None for a thread that was not forked."""
    last_entry: int = 0
    """The number of the last entry in the log; 0 while it is empty. `append` expects this number."""
    snapshot_at: int = 0
    """The entry number of the latest snapshot; 0 when there is none."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NewEntry:
    """An entry to append; the store gives it its number and time."""

    kind: str
    """What the entry records: one of `EntryKind` or another lowercase word."""
    payload: JSONObject
    """The entry's content: a JSON object."""
    key: str | None = None
    """A stable idempotency key, unique within the thread (a call's key, see `call_key`); None for none."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Entry:
    """One entry of a thread's log."""

    number: int
    """Its place in the log: 1, 2, 3, ... without gaps."""
    kind: str
    """What it records (`EntryKind`)."""
    payload: JSONObject
    """Its content, exactly as written."""
    created: datetime
    """When it was appended (UTC)."""
    key: str | None = None
    """Its idempotency key, if it has one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """The state of a thread's run after one of its entries."""

    at: int
    """The entry number the state is taken after."""
    state: JSONObject
    """The state, as the runtime wrote it."""
    created: datetime
    """When it was stored (UTC)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Loaded:
    """A thread read for resuming: its latest snapshot and the entries after it."""

    thread: Thread
    """The thread."""
    snapshot: Snapshot | None
    """The latest snapshot at or before the requested entry; None when there is none (replay from entry 1)."""
    entries: tuple[Entry, ...]
    """The entries after the snapshot (after entry 0 without one), in order, up to the requested entry."""

    @property
    def last(self) -> int:
        """The number of the last entry this view covers (what the next `append` expects)."""
        if self.entries:
            return self.entries[-1].number
        return self.snapshot.at if self.snapshot is not None else 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Appended:
    """What an append wrote."""

    entries: tuple[Entry, ...]
    """The new entries with their numbers and times."""
    snapshot_due: bool
    """True when `snapshot_every` or more entries now follow the latest snapshot: the caller should store
    the state after these entries with `put_snapshot(at=last)` once it has applied them."""

    @property
    def last(self) -> int:
        """The number of the last new entry: the `expected_last` of the next append."""
        return self.entries[-1].number


@dataclass(frozen=True, slots=True, kw_only=True)
class Lease:
    """Who holds a thread's lease (the right to run its call) and for how much longer, by the store's clock."""

    owner: str
    """The holder (a process's own id)."""
    expires_in: float
    """Seconds until the lease lapses unless its holder renews it."""
    held: bool
    """Whether the one who asked now holds it."""


def call_key(thread_id: str, number: int) -> str:
    """The idempotency key of a call whose result will be entry `number` of the thread.

    Stable across resumes: a resumed run reaches the same call at the same place in the log, so a call that
    was made but whose result was not committed is made again with the same key, and the callee can use the
    key to do its work once.
    """
    return f"{thread_id}#{number}"

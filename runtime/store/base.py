"""The one store interface. `Store` checks every argument and encodes every value once, here; a backend
(memory, SQLite, Postgres) only keeps rows, through the `_primitives` at the bottom of the class, so every
store behaves the same and one conformance suite (tests/runtime/store) checks them all.

Rows between the two halves are tuples of plain values, in the column order below; JSON travels as text
(already checked and encoded), times as integer microseconds since the Unix epoch (UTC).
"""

from __future__ import annotations

import math
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterable
from datetime import datetime
from types import TracebackType
from typing import Any, Self

from . import format as fmt
from . import strict_json
from .errors import StoreConflict, StoreError, StoreUnavailable, ThreadNotFound
from .records import (
    Appended,
    Entry,
    ForkPoint,
    JSONObject,
    Lease,
    Loaded,
    NewEntry,
    ProgramRef,
    Snapshot,
    Thread,
    ThreadStatus,
)

ThreadRow = tuple[str, str, str, str, int, int, str, str | None, int | None, int, int, int]
"""(id, program_path, program_sha256, status, created, updated, metadata, parent_id, parent_entry,
last_entry, snapshot_at, format)"""
EntryRow = tuple[int, str, str | None, int, str, int]
"""(number, kind, key, created, payload, format)"""
SnapshotRow = tuple[int, int, str, int]
"""(at, created, state, format)"""
NewEntryRow = tuple[str, str | None, str]
"""(kind, key, payload) of an entry to append."""

DEFAULT_SNAPSHOT_EVERY = 50
"""K: a snapshot is due once this many entries follow the latest one."""
DEFAULT_KEEP_SNAPSHOTS = 2
"""How many of a thread's latest snapshots a store keeps; older ones are deleted when a new one is stored,
so storage stays linear in the number of entries even when the state grows with the run."""


class Store(ABC):
    """Threads, their append-only logs and their snapshots, behind one async interface.

    Open it with `async with open_store(url) as store:` (or `await store.open()` and `await store.close()`).
    Use it from one event loop; several processes may share a database store (SQLite file, Postgres), and
    optimistic concurrency (`expected_last`) keeps their writes to one thread from interleaving.
    """

    scheme: str = ""
    """The URL scheme that names this store (`memory`, `sqlite`, `postgresql`)."""

    def __init__(
        self,
        *,
        snapshot_every: int = DEFAULT_SNAPSHOT_EVERY,
        keep_snapshots: int | None = DEFAULT_KEEP_SNAPSHOTS,
        create: bool = True,
    ) -> None:
        self.snapshot_every = fmt.check_number(snapshot_every, what="snapshot_every")
        """K: `Appended.snapshot_due` turns true once K entries follow the latest snapshot (0: never)."""
        self.keep_snapshots = (
            None
            if keep_snapshots is None
            else fmt.check_number(keep_snapshots, what="keep_snapshots", minimum=1)
        )
        """How many of a thread's latest snapshots are kept (None: all of them)."""
        self.create = bool(create)
        """Whether opening may make a new, empty store (a SQLite file and its folder); when False, a store
        that does not exist yet is `StoreNotFound` (the command line's default for a named store)."""
        self._state = "new"

    @property
    def url(self) -> str:
        """The store's URL, without a password."""
        return f"{self.scheme}://"

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.url} ({self._state})>"

    # --- lifetime ----------------------------------------------------------------------------------------

    async def open(self) -> None:
        """Connect, and create or upgrade the schema on first use. Opening an open store does nothing."""
        if self._state == "open":
            return
        if self._state == "closed":
            raise StoreUnavailable(f"{self.url}: the store is closed; open a new one with open_store()")
        try:
            await self._open()
        except BaseException:
            await self._close()  # whatever the failed open left connected
            raise
        self._state = "open"

    async def close(self) -> None:
        """Release the connection and the worker thread. Closing twice does nothing."""
        if self._state == "open":
            self._state = "closed"
            await self._close()
        self._state = "closed"

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()

    def _ready(self) -> None:
        if self._state != "open":
            how = "it is closed" if self._state == "closed" else "it was not opened"
            raise StoreUnavailable(f"{self.url}: {how}; use `async with open_store(url) as store:`")

    # --- threads -----------------------------------------------------------------------------------------

    async def create_thread(
        self,
        program: ProgramRef,
        *,
        thread_id: str | None = None,
        metadata: JSONObject | None = None,
        status: ThreadStatus = ThreadStatus.RUNNING,
    ) -> Thread:
        """A new thread with an empty log; `ThreadExists` if `thread_id` is taken (a UUID when not given)."""
        self._ready()
        fmt.check_program(program)
        new_id = fmt.check_thread_id(thread_id) if thread_id is not None else str(uuid.uuid4())
        row = await self._create(
            new_id, program.path, program.sha256, fmt.check_status(status).value, fmt.dump_metadata(metadata)
        )
        return self._thread(row)

    async def get_thread(self, thread_id: str) -> Thread:
        """The thread; `ThreadNotFound` if there is none."""
        thread = await self.find_thread(thread_id)
        if thread is None:
            raise ThreadNotFound(thread_id)
        return thread

    async def find_thread(self, thread_id: str) -> Thread | None:
        """The thread, or None."""
        self._ready()
        row = await self._get(fmt.check_thread_id(thread_id))
        return None if row is None else self._thread(row)

    async def list_threads(
        self,
        *,
        status: ThreadStatus | str | Iterable[ThreadStatus | str] | None = None,
        limit: int | None = None,
        offset: int = 0,
        updated_before: datetime | None = None,
    ) -> list[Thread]:
        """Threads, most recently updated first; only those with `status` (one or several) when given, and
        only those last updated before `updated_before` (an aware datetime) when given."""
        self._ready()
        statuses = None
        if status is not None:
            given = [status] if isinstance(status, str) else list(status)
            statuses = tuple(sorted({fmt.check_status(one).value for one in given}))
        if limit is not None:
            fmt.check_number(limit, what="limit")
        fmt.check_number(offset, what="offset")
        before = None
        if updated_before is not None:
            if not isinstance(updated_before, datetime) or updated_before.tzinfo is None:
                raise StoreError(f"updated_before must be an aware datetime, not {updated_before!r}")
            before = fmt.micros(updated_before)
        return [self._thread(row) for row in await self._list(statuses, limit, offset, before)]

    async def count_threads(self) -> dict[ThreadStatus, int]:
        """How many threads have each status (statuses with none are left out)."""
        self._ready()
        return {fmt.check_status(status): count for status, count in (await self._count()).items() if count}

    async def ping(self) -> None:
        """Return when the store answers a read (a readiness probe); StoreUnavailable when it does not."""
        self._ready()
        await self._get("pal-readiness-probe")

    # --- leases --------------------------------------------------------------------------------------------

    async def take_lease(self, thread_id: str, owner: str, *, seconds: float) -> Lease:
        """Take the thread's lease for `seconds`, or renew it, when it is free, has lapsed, or is `owner`'s
        already; else leave it. The lease as it is then (`held`: whether `owner` holds it). Times are the
        store's, so processes on hosts with skewed clocks agree on when a lease lapses."""
        self._ready()
        fmt.check_thread_id(thread_id)
        if owner is None:
            raise StoreError("a lease needs an owner (a string), not None")
        fmt.check_key(owner, where="lease owner")
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 < seconds < math.inf:
            raise StoreError(f"a lease lasts a positive number of seconds, not {seconds!r}")
        holder, remaining = await self._take_lease(thread_id, owner, round(seconds * 1_000_000))
        return Lease(owner=holder, expires_in=max(remaining, 0) / 1_000_000, held=holder == owner)

    async def release_lease(self, thread_id: str, owner: str) -> None:
        """Give the lease up if `owner` holds it (nothing otherwise)."""
        self._ready()
        fmt.check_thread_id(thread_id)
        await self._release_lease(thread_id, fmt.check_key(owner, where="lease owner") or "")

    async def update_thread(
        self,
        thread_id: str,
        *,
        status: ThreadStatus | str | None = None,
        metadata: JSONObject | None = None,
        expected_last: int | None = None,
    ) -> Thread:
        """Set the thread's status and/or replace its metadata.

        With `expected_last`, only if the log still ends there (`AppendConflict` otherwise): a process marks
        a thread finished only if no other process has moved it on.
        """
        self._ready()
        fmt.check_thread_id(thread_id)
        new_status = None if status is None else fmt.check_status(status).value
        new_metadata = None if metadata is None else fmt.dump_metadata(metadata)
        if expected_last is not None:
            fmt.check_number(expected_last, what="expected_last")
        return self._thread(await self._update(thread_id, new_status, new_metadata, expected_last))

    async def delete_thread(self, thread_id: str) -> None:
        """Delete the thread, its log and its snapshots (threads forked from it keep their copies)."""
        self._ready()
        await self._delete(fmt.check_thread_id(thread_id))

    async def fork_thread(
        self,
        thread_id: str,
        *,
        at: int,
        new_thread_id: str | None = None,
        metadata: JSONObject | None = None,
        status: ThreadStatus = ThreadStatus.INTERRUPTED,
    ) -> Thread:
        """A new thread whose log is a copy of entries 1..`at` of `thread_id` (and its latest snapshot at or
        before `at`); the original is not touched. The fork keeps the program and, unless given, the
        metadata; `forked_from` records where it came from. `at` may be 0 (a fresh start) up to the
        thread's last entry."""
        self._ready()
        fmt.check_thread_id(thread_id)
        fmt.check_number(at, what="at")
        new_id = fmt.check_thread_id(new_thread_id) if new_thread_id is not None else str(uuid.uuid4())
        new_metadata = None if metadata is None else fmt.dump_metadata(metadata)
        row = await self._fork(thread_id, at, new_id, new_metadata, fmt.check_status(status).value)
        return self._thread(row)

    # --- the log -----------------------------------------------------------------------------------------

    async def append(
        self,
        thread_id: str,
        *entries: NewEntry,
        expected_last: int,
        status: ThreadStatus | str | None = None,
    ) -> Appended:
        """Append entries to the thread's log, atomically, numbered from `expected_last + 1`.

        `expected_last` is the number of the last entry the writer knows of (0 for an empty log). If another
        writer appended first, nothing is written and `AppendConflict` says so. `status`, when given, is set
        in the same transaction (a `wait` entry and `waiting_for_user` together). A key already in the log
        raises `DuplicateKey`. A value that is not JSON raises `NotJSON` before anything is written.
        """
        self._ready()
        fmt.check_thread_id(thread_id)
        fmt.check_number(expected_last, what="expected_last")
        if not entries:
            raise StoreError("append needs at least one entry")
        rows: list[NewEntryRow] = []
        keys: set[str] = set()
        for index, entry in enumerate(entries):
            if not isinstance(entry, NewEntry):
                raise StoreError(
                    f"entry {index + 1} of the append is a {type(entry).__name__}, not a NewEntry"
                )
            key = fmt.check_key(entry.key)
            if key is not None:
                if key in keys:
                    raise StoreError(
                        f"entries of one append share the key {key!r}; keys are unique in a thread"
                    )
                keys.add(key)
            payload = strict_json.dumps_object(
                entry.payload, where=f"entry {expected_last + index + 1} payload"
            )
            rows.append((fmt.check_kind(entry.kind), key, payload))
        new_status = None if status is None else fmt.check_status(status).value
        written, snapshot_at = await self._append(thread_id, rows, expected_last, new_status)
        appended = tuple(self._entry(row) for row in written)
        due = self.snapshot_every > 0 and appended[-1].number - snapshot_at >= self.snapshot_every
        return Appended(entries=appended, snapshot_due=due)

    async def read_entries(self, thread_id: str, *, first: int = 1, last: int | None = None) -> list[Entry]:
        """Entries `first` to `last` (both included; `last` None: to the end) of the thread's log."""
        self._ready()
        fmt.check_thread_id(thread_id)
        fmt.check_number(first, what="first", minimum=1)
        if last is not None:
            fmt.check_number(last, what="last")
        return [self._entry(row) for row in await self._entries(thread_id, first, last)]

    async def find_entry(self, thread_id: str, key: str) -> Entry | None:
        """The entry of the thread with this idempotency key, or None."""
        self._ready()
        fmt.check_thread_id(thread_id)
        if key is None:
            raise StoreError("find_entry needs a key, not None")
        row = await self._find_entry(thread_id, fmt.check_key(key))
        return None if row is None else self._entry(row)

    async def put_snapshot(self, thread_id: str, *, at: int, state: JSONObject) -> Snapshot:
        """Store the run's state after entry `at` (at most the last entry). A snapshot is derived data: the
        log stays the truth, so the store keeps only the latest `keep_snapshots`. `StoreConflict` if there
        is already a snapshot at `at` (nothing is rewritten)."""
        self._ready()
        fmt.check_thread_id(thread_id)
        fmt.check_number(at, what="at", minimum=1)
        text = strict_json.dumps_object(state, where=f"snapshot state at entry {at}")
        return self._snapshot(await self._put_snapshot(thread_id, at, text, self.keep_snapshots))

    async def load(self, thread_id: str, *, upto: int | None = None) -> Loaded:
        """The thread as a resume needs it: the latest snapshot at or before `upto` (default: the last
        entry) and the entries after it up to `upto`, read in one consistent view."""
        self._ready()
        fmt.check_thread_id(thread_id)
        if upto is not None:
            fmt.check_number(upto, what="upto")
        thread_row, snapshot_row, entry_rows = await self._load(thread_id, upto)
        return Loaded(
            thread=self._thread(thread_row),
            snapshot=None if snapshot_row is None else self._snapshot(snapshot_row),
            entries=tuple(self._entry(row) for row in entry_rows),
        )

    # --- whole threads as documents ------------------------------------------------------------------------

    async def export_thread(self, thread_id: str) -> dict[str, Any]:
        """The thread, its whole log and its snapshots as a thread document (`format.thread_document`)."""
        self._ready()
        thread_row, entry_rows, snapshot_rows = await self._export(fmt.check_thread_id(thread_id))
        return fmt.thread_document(
            self._thread(thread_row),
            [self._entry(row) for row in entry_rows],
            [self._snapshot(row) for row in snapshot_rows],
        )

    async def import_thread(self, document: Any) -> Thread:
        """Store a thread document (any supported format version, upgraded), keeping its id, numbers and
        times; `ThreadExists` if the id is taken. Moves a thread between stores with `export_thread`."""
        self._ready()
        read = fmt.read_thread_document(document)
        thread = read.thread
        fork = thread.forked_from
        row: ThreadRow = (
            thread.id,
            thread.program.path,
            thread.program.sha256,
            thread.status.value,
            fmt.micros(thread.created),
            fmt.micros(thread.updated),
            fmt.dump_metadata(thread.metadata),
            None if fork is None else fork.thread_id,
            None if fork is None else fork.entry,
            thread.last_entry,
            thread.snapshot_at,
            fmt.FORMAT_VERSION,
        )
        entries: list[EntryRow] = [
            (
                entry.number,
                entry.kind,
                entry.key,
                fmt.micros(entry.created),
                strict_json.dumps(entry.payload, where="payload"),
                fmt.FORMAT_VERSION,
            )
            for entry in read.entries
        ]
        snapshots: list[SnapshotRow] = [
            (
                snapshot.at,
                fmt.micros(snapshot.created),
                strict_json.dumps(snapshot.state, where="state"),
                fmt.FORMAT_VERSION,
            )
            for snapshot in read.snapshots
        ]
        return self._thread(await self._import(row, entries, snapshots))

    # --- rows to records (upgrading older formats) ------------------------------------------------------

    def _thread(self, row: ThreadRow) -> Thread:
        (
            id_,
            path,
            sha256,
            status,
            created,
            updated,
            metadata,
            parent_id,
            parent_entry,
            last,
            snap,
            version,
        ) = row
        where = f"thread {id_!r}"
        document: dict[str, Any] = {
            "id": id_,
            "program": {"path": path, "sha256": sha256},
            "status": status,
            "created": created,
            "updated": updated,
            "metadata": strict_json.loads(metadata, where=f"{where} metadata"),
            "forked_from": None if parent_id is None else {"thread_id": parent_id, "entry": parent_entry},
        }
        if version != fmt.FORMAT_VERSION:
            document = fmt.upgrade("thread", version, document, where=where)
        forked = document["forked_from"]
        return Thread(
            id=document["id"],
            program=ProgramRef(path=document["program"]["path"], sha256=document["program"]["sha256"]),
            status=fmt.check_status(document["status"], where=f"{where} status"),
            created=fmt.from_micros(document["created"]),
            updated=fmt.from_micros(document["updated"]),
            metadata=document["metadata"],
            forked_from=None
            if forked is None
            else ForkPoint(thread_id=forked["thread_id"], entry=forked["entry"]),
            last_entry=last,
            snapshot_at=snap,
        )

    def _entry(self, row: EntryRow) -> Entry:
        number, kind, key, created, payload, version = row
        value = strict_json.loads(payload, where=f"entry {number}")
        if version != fmt.FORMAT_VERSION:
            document = {"number": number, "kind": kind, "key": key, "created": created, "payload": value}
            document = fmt.upgrade("entry", version, document, where=f"entry {number}")
            number, kind, key = document["number"], document["kind"], document["key"]
            created, value = document["created"], document["payload"]
        return Entry(number=number, kind=kind, key=key, created=fmt.from_micros(created), payload=value)

    def _snapshot(self, row: SnapshotRow) -> Snapshot:
        at, created, state, version = row
        value = strict_json.loads(state, where=f"snapshot at entry {at}")
        if version != fmt.FORMAT_VERSION:
            document = {"at": at, "created": created, "state": value}
            document = fmt.upgrade("snapshot", version, document, where=f"snapshot at entry {at}")
            at, created, value = document["at"], document["created"], document["state"]
        return Snapshot(at=at, created=fmt.from_micros(created), state=value)

    # --- what a backend implements -------------------------------------------------------------------------
    # Arguments are checked and encoded; each primitive is one transaction. Errors: ThreadNotFound,
    # ThreadExists, AppendConflict, DuplicateKey, StoreConflict / StoreError as documented on the public
    # method; `range_error` and `snapshot_error` below word the shared ones.

    @abstractmethod
    async def _open(self) -> None: ...

    @abstractmethod
    async def _close(self) -> None: ...

    @abstractmethod
    async def _create(
        self, thread_id: str, path: str, sha256: str, status: str, metadata: str
    ) -> ThreadRow: ...

    @abstractmethod
    async def _get(self, thread_id: str) -> ThreadRow | None: ...

    @abstractmethod
    async def _list(
        self, statuses: tuple[str, ...] | None, limit: int | None, offset: int, updated_before: int | None
    ) -> list[ThreadRow]:
        """`updated_before`: microseconds; only threads updated earlier."""

    async def _count(self) -> dict[str, int]:
        """Threads per status. Database stores count in one query; this default lists them all."""
        counts: dict[str, int] = {}
        for row in await self._list(None, None, 0, None):
            counts[row[3]] = counts.get(row[3], 0) + 1
        return counts

    @abstractmethod
    async def _take_lease(self, thread_id: str, owner: str, micros: int) -> tuple[str, int]:
        """(the lease's holder, microseconds until it lapses) after taking it when free, lapsed or
        `owner`'s; ThreadNotFound when there is no such thread."""

    @abstractmethod
    async def _release_lease(self, thread_id: str, owner: str) -> None: ...

    @abstractmethod
    async def _update(
        self, thread_id: str, status: str | None, metadata: str | None, expected_last: int | None
    ) -> ThreadRow: ...

    @abstractmethod
    async def _delete(self, thread_id: str) -> None: ...

    @abstractmethod
    async def _fork(
        self, thread_id: str, at: int, new_id: str, metadata: str | None, status: str
    ) -> ThreadRow: ...

    @abstractmethod
    async def _append(
        self, thread_id: str, entries: list[NewEntryRow], expected_last: int, status: str | None
    ) -> tuple[list[EntryRow], int]:
        """The written rows and the thread's `snapshot_at`."""

    @abstractmethod
    async def _entries(self, thread_id: str, first: int, last: int | None) -> list[EntryRow]: ...

    @abstractmethod
    async def _find_entry(self, thread_id: str, key: str) -> EntryRow | None: ...

    @abstractmethod
    async def _put_snapshot(self, thread_id: str, at: int, state: str, keep: int | None) -> SnapshotRow: ...

    @abstractmethod
    async def _load(
        self, thread_id: str, upto: int | None
    ) -> tuple[ThreadRow, SnapshotRow | None, list[EntryRow]]: ...

    @abstractmethod
    async def _export(self, thread_id: str) -> tuple[ThreadRow, list[EntryRow], list[SnapshotRow]]: ...

    @abstractmethod
    async def _import(
        self, thread: ThreadRow, entries: list[EntryRow], snapshots: list[SnapshotRow]
    ) -> ThreadRow: ...


def range_error(thread_id: str, what: str, value: int, last: int) -> StoreError:
    """`value` (an `at` or `upto`) lies past the thread's last entry."""
    return StoreError(f"thread {thread_id!r} has {last} entries; {what}={value} is past its last entry")


def snapshot_error(thread_id: str, at: int, last: int, exists: bool) -> StoreError:
    """Why a snapshot cannot be stored at `at`."""
    if exists:
        return StoreConflict(
            f"thread {thread_id!r} already has a snapshot at entry {at}; snapshots are not rewritten"
        )
    return range_error(thread_id, "at", at, last)

"""The in-memory store: for tests and for runs with persistence off (`memory://`).

It keeps the same encoded JSON text the database stores keep, so it refuses the same values and hands out
fresh copies on every read; each operation runs without awaiting, so operations on one event loop never
interleave. Its threads live as long as the store object.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from .base import EntryRow, NewEntryRow, SnapshotRow, Store, ThreadRow, range_error, snapshot_error
from .errors import AppendConflict, DuplicateKey, ThreadExists, ThreadNotFound
from .format import FORMAT_VERSION


@dataclass(slots=True)
class _Held:
    """One thread: its row's fields, its log, its snapshots (oldest first) and its keys."""

    id: str
    path: str
    sha256: str
    status: str
    created: int
    updated: int
    metadata: str
    parent_id: str | None
    parent_entry: int | None
    version: int = FORMAT_VERSION
    entries: list[EntryRow] = field(default_factory=list)
    snapshots: list[SnapshotRow] = field(default_factory=list)
    keys: dict[str, int] = field(default_factory=dict)

    @property
    def snapshot_at(self) -> int:
        return self.snapshots[-1][0] if self.snapshots else 0

    def row(self) -> ThreadRow:
        return (
            self.id,
            self.path,
            self.sha256,
            self.status,
            self.created,
            self.updated,
            self.metadata,
            self.parent_id,
            self.parent_entry,
            len(self.entries),
            self.snapshot_at,
            self.version,
        )


def _now() -> int:
    return time.time_ns() // 1000


class MemoryStore(Store):
    """Threads held in this process's memory."""

    scheme = "memory"

    def __init__(self, **options: int | None) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self._threads: dict[str, _Held] = {}
        self._leases: dict[str, tuple[str, int]] = {}
        """thread id -> (holder, expiry in microseconds)."""

    async def _open(self) -> None:
        return None

    async def _close(self) -> None:
        self._threads.clear()
        self._leases.clear()

    async def _take_lease(self, thread_id: str, owner: str, micros: int) -> tuple[str, int]:
        self._held(thread_id)
        now = _now()
        holder = self._leases.get(thread_id)
        if holder is None or holder[1] <= now or holder[0] == owner:
            holder = (owner, now + micros)
            self._leases[thread_id] = holder
        return holder[0], holder[1] - now

    async def _release_lease(self, thread_id: str, owner: str) -> None:
        holder = self._leases.get(thread_id)
        if holder is not None and holder[0] == owner:
            del self._leases[thread_id]

    def _held(self, thread_id: str) -> _Held:
        held = self._threads.get(thread_id)
        if held is None:
            raise ThreadNotFound(thread_id)
        return held

    async def _create(self, thread_id: str, path: str, sha256: str, status: str, metadata: str) -> ThreadRow:
        if thread_id in self._threads:
            raise ThreadExists(thread_id)
        now = _now()
        held = _Held(thread_id, path, sha256, status, now, now, metadata, None, None)
        self._threads[thread_id] = held
        return held.row()

    async def _get(self, thread_id: str) -> ThreadRow | None:
        held = self._threads.get(thread_id)
        return None if held is None else held.row()

    async def _list(
        self, statuses: tuple[str, ...] | None, limit: int | None, offset: int, updated_before: int | None
    ) -> list[ThreadRow]:
        chosen = [
            held
            for held in self._threads.values()
            if (statuses is None or held.status in statuses)
            and (updated_before is None or held.updated < updated_before)
        ]
        chosen.sort(key=lambda held: held.id)
        chosen.sort(key=lambda held: held.updated, reverse=True)
        end = None if limit is None else offset + limit
        return [held.row() for held in chosen[offset:end]]

    async def _update(
        self, thread_id: str, status: str | None, metadata: str | None, expected_last: int | None
    ) -> ThreadRow:
        held = self._held(thread_id)
        if expected_last is not None and expected_last != len(held.entries):
            raise AppendConflict(thread_id, expected_last=expected_last, actual_last=len(held.entries))
        if status is not None:
            held.status = status
        if metadata is not None:
            held.metadata = metadata
        held.updated = _now()
        return held.row()

    async def _delete(self, thread_id: str) -> None:
        self._held(thread_id)
        del self._threads[thread_id]
        self._leases.pop(thread_id, None)

    async def _fork(
        self, thread_id: str, at: int, new_id: str, metadata: str | None, status: str
    ) -> ThreadRow:
        source = self._held(thread_id)
        if at > len(source.entries):
            raise range_error(thread_id, "at", at, len(source.entries))
        if new_id in self._threads:
            raise ThreadExists(new_id)
        now = _now()
        fork = _Held(
            new_id,
            source.path,
            source.sha256,
            status,
            now,
            now,
            source.metadata if metadata is None else metadata,
            thread_id,
            at,
        )
        fork.entries = source.entries[:at]
        fork.keys = {row[2]: row[0] for row in fork.entries if row[2] is not None}
        fork.snapshots = [snapshot for snapshot in source.snapshots if snapshot[0] <= at][-1:]
        self._threads[new_id] = fork
        return fork.row()

    async def _append(
        self, thread_id: str, entries: list[NewEntryRow], expected_last: int, status: str | None
    ) -> tuple[list[EntryRow], int]:
        held = self._held(thread_id)
        if expected_last != len(held.entries):
            raise AppendConflict(thread_id, expected_last=expected_last, actual_last=len(held.entries))
        for _kind, key, _payload in entries:
            if key is not None and key in held.keys:
                raise DuplicateKey(thread_id, key, number=held.keys[key])
        now = _now()
        rows = [
            (expected_last + index, kind, key, now, payload, FORMAT_VERSION)
            for index, (kind, key, payload) in enumerate(entries, 1)
        ]
        held.entries.extend(rows)
        held.keys.update((row[2], row[0]) for row in rows if row[2] is not None)
        if status is not None:
            held.status = status
        held.updated = now
        return rows, held.snapshot_at

    async def _entries(self, thread_id: str, first: int, last: int | None) -> list[EntryRow]:
        held = self._held(thread_id)
        return held.entries[first - 1 : last]

    async def _find_entry(self, thread_id: str, key: str) -> EntryRow | None:
        held = self._held(thread_id)
        number = held.keys.get(key)
        return None if number is None else held.entries[number - 1]

    async def _put_snapshot(self, thread_id: str, at: int, state: str, keep: int | None) -> SnapshotRow:
        held = self._held(thread_id)
        exists = any(snapshot[0] == at for snapshot in held.snapshots)
        if exists or at > len(held.entries):
            raise snapshot_error(thread_id, at, len(held.entries), exists)
        now = _now()
        row = (at, now, state, FORMAT_VERSION)
        held.snapshots.append(row)
        held.snapshots.sort(key=lambda snapshot: snapshot[0])
        if keep is not None:
            del held.snapshots[:-keep]
        held.updated = now
        return row

    async def _load(
        self, thread_id: str, upto: int | None
    ) -> tuple[ThreadRow, SnapshotRow | None, list[EntryRow]]:
        held = self._held(thread_id)
        last = len(held.entries) if upto is None else upto
        if last > len(held.entries):
            raise range_error(thread_id, "upto", last, len(held.entries))
        usable = [snapshot for snapshot in held.snapshots if snapshot[0] <= last]
        snapshot = usable[-1] if usable else None
        start = 0 if snapshot is None else snapshot[0]
        return held.row(), snapshot, held.entries[start:last]

    async def _export(self, thread_id: str) -> tuple[ThreadRow, list[EntryRow], list[SnapshotRow]]:
        held = self._held(thread_id)
        return held.row(), list(held.entries), list(held.snapshots)

    async def _import(
        self, thread: ThreadRow, entries: list[EntryRow], snapshots: list[SnapshotRow]
    ) -> ThreadRow:
        thread_id, path, sha256, status, created, updated, metadata, parent_id, parent_entry, *_ = thread
        if thread_id in self._threads:
            raise ThreadExists(thread_id)
        held = _Held(thread_id, path, sha256, status, created, updated, metadata, parent_id, parent_entry)
        held.entries = list(entries)
        held.keys = {row[2]: row[0] for row in entries if row[2] is not None}
        held.snapshots = list(snapshots)
        self._threads[thread_id] = held
        return held.row()

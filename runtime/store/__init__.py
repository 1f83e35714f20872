"""Durable runs' storage: threads, their append-only logs of entries, and snapshots, behind one async
interface with three stores (memory, SQLite, Postgres). docs/durability.md describes the guarantees.

    async with open_store("sqlite:///runs.db") as store:
        thread = await store.create_thread(ProgramRef.of_file("prog.pal"))
        done = await store.append(thread.id, NewEntry(kind="turn", payload={...}), expected_last=0)
        if done.snapshot_due:
            await store.put_snapshot(thread.id, at=done.last, state={...})
        loaded = await store.load(thread.id)     # the latest snapshot and the entries after it
"""

from __future__ import annotations

from .base import DEFAULT_KEEP_SNAPSHOTS, DEFAULT_SNAPSHOT_EVERY, Store
from .errors import (
    AppendConflict,
    DuplicateKey,
    FormatError,
    NotJSON,
    StoreConflict,
    StoreError,
    StoreNotFound,
    StoreUnavailable,
    StoreURLError,
    ThreadExists,
    ThreadNotFound,
)
from .format import FORMAT_VERSION, ThreadDocument, read_thread_document, read_thread_file, thread_document
from .records import (
    Appended,
    Entry,
    EntryKind,
    ForkPoint,
    Lease,
    Loaded,
    NewEntry,
    ProgramRef,
    Snapshot,
    Thread,
    ThreadStatus,
    call_key,
)
from .url import STORES, StoreURL, default_sqlite_path, default_store_url, open_store, parse_store_url

__all__ = [
    "DEFAULT_KEEP_SNAPSHOTS",
    "DEFAULT_SNAPSHOT_EVERY",
    "FORMAT_VERSION",
    "STORES",
    "AppendConflict",
    "Appended",
    "DuplicateKey",
    "Entry",
    "EntryKind",
    "ForkPoint",
    "FormatError",
    "Lease",
    "Loaded",
    "NewEntry",
    "NotJSON",
    "ProgramRef",
    "Snapshot",
    "Store",
    "StoreConflict",
    "StoreError",
    "StoreNotFound",
    "StoreURL",
    "StoreURLError",
    "StoreUnavailable",
    "Thread",
    "ThreadDocument",
    "ThreadExists",
    "ThreadNotFound",
    "ThreadStatus",
    "call_key",
    "default_sqlite_path",
    "default_store_url",
    "open_store",
    "parse_store_url",
    "read_thread_document",
    "read_thread_file",
    "thread_document",
]

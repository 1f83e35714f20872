"""The SQLite store, the embedded default (`sqlite:///runs.db`): the standard library's sqlite3, one file.

Why it holds up with many writers: the file is in WAL mode (readers never block the writer), every write
is one `BEGIN IMMEDIATE` transaction (the write lock is taken up front, so a transaction never has to
upgrade a read lock and fail with "database is locked" halfway), and a busy timeout makes a writer wait for
the lock instead of failing. Each store object owns one connection, used only by its own worker thread, so
the event loop never blocks on disk or on a lock.

Durability: `synchronous=normal` (the default) loses nothing when a process dies (kill -9); a power cut or
an OS crash may undo the last commits. `?synchronous=full` also survives those, at the cost of an fsync per
commit (see benchmarks/bench_durable.py for both figures).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from .base import EntryRow, NewEntryRow, SnapshotRow, Store, ThreadRow, range_error, snapshot_error
from .errors import (
    AppendConflict,
    DuplicateKey,
    FormatError,
    StoreError,
    StoreNotFound,
    StoreUnavailable,
    ThreadExists,
    ThreadNotFound,
)
from .format import FORMAT_VERSION

T = TypeVar("T")

SCHEMA_VERSION = 2
"""The version of the tables below (kept in `pal_store_meta`); the JSON in them has its own FORMAT_VERSION."""

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE pal_threads (
            id TEXT PRIMARY KEY,
            program_path TEXT NOT NULL,
            program_sha256 TEXT NOT NULL,
            status TEXT NOT NULL,
            created INTEGER NOT NULL,        -- microseconds since the Unix epoch, UTC
            updated INTEGER NOT NULL,
            metadata TEXT NOT NULL,          -- JSON object
            parent_id TEXT,                  -- forked from this thread ...
            parent_entry INTEGER,            -- ... at this entry
            last_entry INTEGER NOT NULL DEFAULT 0,
            snapshot_at INTEGER NOT NULL DEFAULT 0,
            format INTEGER NOT NULL          -- the format version of this row's JSON
        )""",
        "CREATE INDEX pal_threads_by_update ON pal_threads (updated DESC, id)",
        "CREATE INDEX pal_threads_by_status ON pal_threads (status, updated DESC, id)",
        """CREATE TABLE pal_entries (
            thread_id TEXT NOT NULL,
            number INTEGER NOT NULL,
            kind TEXT NOT NULL,
            key TEXT,
            created INTEGER NOT NULL,
            payload TEXT NOT NULL,           -- JSON object
            format INTEGER NOT NULL,
            PRIMARY KEY (thread_id, number)
        )""",
        "CREATE UNIQUE INDEX pal_entries_by_key ON pal_entries (thread_id, key) WHERE key IS NOT NULL",
        """CREATE TABLE pal_snapshots (
            thread_id TEXT NOT NULL,
            at INTEGER NOT NULL,
            created INTEGER NOT NULL,
            state TEXT NOT NULL,             -- JSON object
            format INTEGER NOT NULL,
            PRIMARY KEY (thread_id, at)
        )""",
    ),
    2: (
        """CREATE TABLE pal_leases (
            thread_id TEXT PRIMARY KEY,      -- who runs the thread's call now ...
            owner TEXT NOT NULL,
            expires INTEGER NOT NULL         -- ... until when (microseconds since the Unix epoch, UTC)
        )""",
    ),
}
"""Schema version -> the statements that bring version - 1 up to it (applied once, in one transaction)."""

THREAD_COLUMNS = (
    "id, program_path, program_sha256, status, created, updated, metadata, parent_id, parent_entry, "
    "last_entry, snapshot_at, format"
)
ENTRY_COLUMNS = "number, kind, key, created, payload, format"
SNAPSHOT_COLUMNS = "at, created, state, format"

SYNCHRONOUS = ("normal", "full")
DEFAULT_BUSY_TIMEOUT = 60.0


def _now() -> int:
    return time.time_ns() // 1000


def _is_busy(error: sqlite3.Error) -> bool:
    text = str(error)
    return "locked" in text or "busy" in text


class SQLiteStore(Store):
    """Threads in one SQLite file, shared safely by the processes that open it."""

    scheme = "sqlite"

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        synchronous: str = "normal",
        **options: Any,
    ) -> None:
        super().__init__(**options)
        self.path = Path(path).expanduser().absolute()
        """The database file (created 0600, with its folder, on first open when `create`)."""
        if str(path) in (":memory:", ""):
            raise StoreError(
                f"SQLite path {str(path)!r}: name a file (an in-memory database cannot be shared; use memory://)"
            )
        if (
            isinstance(busy_timeout, bool)
            or not isinstance(busy_timeout, int | float)
            or not busy_timeout > 0
        ):
            raise StoreError(f"busy_timeout must be a positive number of seconds, not {busy_timeout!r}")
        if synchronous not in SYNCHRONOUS:
            raise StoreError(f"synchronous must be one of {', '.join(SYNCHRONOUS)}, not {synchronous!r}")
        self.busy_timeout = float(busy_timeout)
        """Seconds a writer waits for another process's write lock before giving up."""
        self.synchronous = synchronous
        """`normal` (survives a killed process) or `full` (also survives a power cut; an fsync per commit)."""
        self._executor: ThreadPoolExecutor | None = None
        self._connection: sqlite3.Connection | None = None

    @property
    def url(self) -> str:
        return f"sqlite:///{self.path}"

    # --- the worker thread ---------------------------------------------------------------------------------

    async def _run(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work(connection, *args)` on the store's own thread (the only one that uses the connection)."""
        if self._executor is None:
            raise StoreUnavailable(f"{self.url}: the store is not open")
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._guarded, work, args)

    def _guarded(self, work: Callable[..., T], args: tuple[Any, ...]) -> T:
        connection = self._connection
        if connection is None:
            raise StoreUnavailable(f"{self.url}: the store is not open")
        try:
            return work(connection, *args)
        except sqlite3.Error as error:
            raise self._unavailable(error) from error

    def _unavailable(self, error: sqlite3.Error) -> StoreError:
        if _is_busy(error):
            return StoreUnavailable(
                f"{self.path}: the database stayed locked for {self.busy_timeout:g} s (busy_timeout); another "
                "process holds a write transaction open"
            )
        return StoreUnavailable(f"{self.path}: SQLite error: {error}")

    @staticmethod
    def _write(connection: sqlite3.Connection, work: Callable[..., T], *args: Any) -> T:
        """One write transaction holding the write lock from its first statement."""
        connection.execute("BEGIN IMMEDIATE")
        try:
            result = work(connection, *args)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:  # a failed COMMIT leaves it open: the next BEGIN must not fail
                connection.execute("ROLLBACK")
            raise
        return result

    @staticmethod
    def _read(connection: sqlite3.Connection, work: Callable[..., T], *args: Any) -> T:
        """Several reads in one consistent view of the file."""
        connection.execute("BEGIN")
        try:
            return work(connection, *args)
        finally:
            if connection.in_transaction:
                connection.execute("ROLLBACK")

    # --- lifetime ------------------------------------------------------------------------------------------

    async def _open(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pal-store-sqlite")
        try:
            await asyncio.get_running_loop().run_in_executor(self._executor, self._connect)
        except BaseException:
            self._executor.shutdown(wait=False)
            self._executor = None
            raise

    def _connect(self) -> None:
        if not self.path.exists():
            if not self.create:
                raise StoreNotFound(
                    f"no store at {self.url}: {self.path} does not exist (a new store is made only when asked)"
                )
            self._make_private_file()
        try:
            connection = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None)
        except sqlite3.Error as error:
            raise StoreUnavailable(f"{self.path}: cannot open the database: {error}") from None
        try:
            connection.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            self._set_up_retrying(connection)
        except sqlite3.DatabaseError as error:
            connection.close()
            if "not a database" in str(error):
                raise StoreUnavailable(f"{self.path}: not a SQLite database") from None
            raise self._unavailable(error) from error
        except BaseException:
            connection.close()
            raise
        self._connection = connection

    def _make_private_file(self) -> None:
        """The new database file, readable by its owner only (0600; SQLite gives its -wal and -shm files
        the same mode), in a folder made private (0700) when this makes it."""
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as error:
            raise StoreUnavailable(f"{self.path}: cannot create its folder: {error}") from None
        try:
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            return  # another process made it first
        except OSError as error:
            raise StoreUnavailable(f"{self.path}: cannot create the database: {error}") from None

    def _set_up_retrying(self, connection: sqlite3.Connection) -> None:
        """WAL mode, durability and the schema, retried while the file is busy for up to `busy_timeout`.

        Why a loop of our own: switching a new file to WAL needs its exclusive lock, and when several
        connections open a new file at once SQLite sees two of them each holding a read lock and wanting
        the exclusive one. It reports "database is locked" to one of them at once, without calling the busy
        handler (waiting could deadlock). That one's statement has ended and released its read lock, so
        trying again after a short pause succeeds once the other has finished."""
        deadline = time.monotonic() + self.busy_timeout
        pause = 0.001
        while True:
            try:
                self._set_up(connection)
                return
            except sqlite3.OperationalError as error:
                if not _is_busy(error) or time.monotonic() + pause > deadline:
                    raise
            time.sleep(pause)  # on the store's own thread: the event loop goes on
            pause = min(pause * 2, 0.05)

    def _set_up(self, connection: sqlite3.Connection) -> None:
        mode = connection.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        if str(mode).lower() != "wal":
            raise StoreUnavailable(
                f"{self.path}: SQLite cannot use WAL mode here (journal mode {mode!r}); a network file "
                "system cannot hold a shared store: use a local file or Postgres"
            )
        connection.execute(f"PRAGMA synchronous = {self.synchronous.upper()}")
        self._migrate(connection)

    def _migrate(self, connection: sqlite3.Connection) -> None:
        if self._schema_version(connection) == SCHEMA_VERSION:
            return

        def migrate(connection: sqlite3.Connection) -> None:
            connection.execute(
                "CREATE TABLE IF NOT EXISTS pal_store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
            )
            found = self._schema_version(
                connection
            )  # again, under the write lock: another process may have won
            if found > SCHEMA_VERSION:
                raise FormatError(
                    f"{self.path}: the store's schema is version {found}, written by a newer pal-bridge; this "
                    f"one knows versions up to {SCHEMA_VERSION} (upgrade pal-bridge)"
                )
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    connection.execute(statement)
            connection.execute(
                "INSERT INTO pal_store_meta (key, value) VALUES ('schema_version', ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (str(SCHEMA_VERSION),),
            )

        self._write(connection, migrate)

    @staticmethod
    def _schema_version(connection: sqlite3.Connection) -> int:
        exists = connection.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'pal_store_meta'"
        ).fetchone()
        if exists is None:
            return 0
        row = connection.execute("SELECT value FROM pal_store_meta WHERE key = 'schema_version'").fetchone()
        return 0 if row is None else int(row[0])

    async def _close(self) -> None:
        executor = self._executor
        if executor is None:
            return
        try:
            await asyncio.get_running_loop().run_in_executor(executor, self._disconnect)
        finally:
            executor.shutdown(wait=True)
            self._executor = None

    def _disconnect(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    # --- the primitives ------------------------------------------------------------------------------------

    @staticmethod
    def _thread_row(connection: sqlite3.Connection, thread_id: str) -> ThreadRow:
        row = connection.execute(
            f"SELECT {THREAD_COLUMNS} FROM pal_threads WHERE id = ?", (thread_id,)
        ).fetchone()
        if row is None:
            raise ThreadNotFound(thread_id)
        return row

    @staticmethod
    def _last(connection: sqlite3.Connection, thread_id: str) -> tuple[int, int]:
        row = connection.execute(
            "SELECT last_entry, snapshot_at FROM pal_threads WHERE id = ?", (thread_id,)
        ).fetchone()
        if row is None:
            raise ThreadNotFound(thread_id)
        return row

    async def _create(self, thread_id: str, path: str, sha256: str, status: str, metadata: str) -> ThreadRow:
        def create(connection: sqlite3.Connection) -> ThreadRow:
            now = _now()
            row = (thread_id, path, sha256, status, now, now, metadata, None, None, 0, 0, FORMAT_VERSION)
            try:
                connection.execute(f"INSERT INTO pal_threads ({THREAD_COLUMNS}) VALUES ({_marks(12)})", row)
            except sqlite3.IntegrityError:
                raise ThreadExists(thread_id) from None
            return row

        return await self._run(self._write, create)

    async def _get(self, thread_id: str) -> ThreadRow | None:
        def get(connection: sqlite3.Connection) -> ThreadRow | None:
            return connection.execute(
                f"SELECT {THREAD_COLUMNS} FROM pal_threads WHERE id = ?", (thread_id,)
            ).fetchone()

        return await self._run(get)

    async def _list(
        self, statuses: tuple[str, ...] | None, limit: int | None, offset: int, updated_before: int | None
    ) -> list[ThreadRow]:
        conditions = [] if statuses is None else [f"status IN ({_marks(len(statuses))})"]
        if updated_before is not None:
            conditions.append("updated < ?")
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        query = f"SELECT {THREAD_COLUMNS} FROM pal_threads {where} ORDER BY updated DESC, id LIMIT ? OFFSET ?"
        before = () if updated_before is None else (updated_before,)
        parameters = (*(statuses or ()), *before, -1 if limit is None else limit, offset)

        def listing(connection: sqlite3.Connection) -> list[ThreadRow]:
            return connection.execute(query, parameters).fetchall()

        return await self._run(listing)

    async def _count(self) -> dict[str, int]:
        def count(connection: sqlite3.Connection) -> dict[str, int]:
            return dict(connection.execute("SELECT status, count(*) FROM pal_threads GROUP BY status"))

        return await self._run(count)

    async def _take_lease(self, thread_id: str, owner: str, micros: int) -> tuple[str, int]:
        def take(connection: sqlite3.Connection) -> tuple[str, int]:
            self._last(connection, thread_id)
            now = _now()
            held = connection.execute(
                "SELECT owner, expires FROM pal_leases WHERE thread_id = ?", (thread_id,)
            ).fetchone()
            if held is None or held[1] <= now or held[0] == owner:
                held = (owner, now + micros)
                connection.execute(
                    "INSERT INTO pal_leases (thread_id, owner, expires) VALUES (?, ?, ?) "
                    "ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, expires = excluded.expires",
                    (thread_id, *held),
                )
            return held[0], held[1] - now

        return await self._run(self._write, take)

    async def _release_lease(self, thread_id: str, owner: str) -> None:
        def release(connection: sqlite3.Connection) -> None:
            connection.execute("DELETE FROM pal_leases WHERE thread_id = ? AND owner = ?", (thread_id, owner))

        await self._run(self._write, release)

    async def _update(
        self, thread_id: str, status: str | None, metadata: str | None, expected_last: int | None
    ) -> ThreadRow:
        def update(connection: sqlite3.Connection) -> ThreadRow:
            last, _ = self._last(connection, thread_id)
            if expected_last is not None and last != expected_last:
                raise AppendConflict(thread_id, expected_last=expected_last, actual_last=last)
            connection.execute(
                "UPDATE pal_threads SET status = coalesce(?, status), metadata = coalesce(?, metadata), "
                "updated = ? WHERE id = ?",
                (status, metadata, _now(), thread_id),
            )
            return self._thread_row(connection, thread_id)

        return await self._run(self._write, update)

    async def _delete(self, thread_id: str) -> None:
        def delete(connection: sqlite3.Connection) -> None:
            self._last(connection, thread_id)
            for table in ("pal_entries", "pal_snapshots", "pal_leases"):
                connection.execute(f"DELETE FROM {table} WHERE thread_id = ?", (thread_id,))
            connection.execute("DELETE FROM pal_threads WHERE id = ?", (thread_id,))

        await self._run(self._write, delete)

    async def _fork(
        self, thread_id: str, at: int, new_id: str, metadata: str | None, status: str
    ) -> ThreadRow:
        def fork(connection: sqlite3.Connection) -> ThreadRow:
            source = self._thread_row(connection, thread_id)
            if at > source[9]:
                raise range_error(thread_id, "at", at, source[9])
            snapshot = connection.execute(
                "SELECT max(at) FROM pal_snapshots WHERE thread_id = ? AND at <= ?", (thread_id, at)
            ).fetchone()[0]
            now = _now()
            row = (
                new_id,
                source[1],
                source[2],
                status,
                now,
                now,
                source[6] if metadata is None else metadata,
                thread_id,
                at,
                at,
                snapshot or 0,
                FORMAT_VERSION,
            )
            try:
                connection.execute(f"INSERT INTO pal_threads ({THREAD_COLUMNS}) VALUES ({_marks(12)})", row)
            except sqlite3.IntegrityError:
                raise ThreadExists(new_id) from None
            connection.execute(
                f"INSERT INTO pal_entries (thread_id, {ENTRY_COLUMNS}) SELECT ?, {ENTRY_COLUMNS} FROM pal_entries "
                "WHERE thread_id = ? AND number <= ?",
                (new_id, thread_id, at),
            )
            if snapshot:
                connection.execute(
                    f"INSERT INTO pal_snapshots (thread_id, {SNAPSHOT_COLUMNS}) SELECT ?, {SNAPSHOT_COLUMNS} "
                    "FROM pal_snapshots WHERE thread_id = ? AND at = ?",
                    (new_id, thread_id, snapshot),
                )
            return row

        return await self._run(self._write, fork)

    async def _append(
        self, thread_id: str, entries: list[NewEntryRow], expected_last: int, status: str | None
    ) -> tuple[list[EntryRow], int]:
        def append(connection: sqlite3.Connection) -> tuple[list[EntryRow], int]:
            last, snapshot_at = self._last(connection, thread_id)
            if last != expected_last:
                raise AppendConflict(thread_id, expected_last=expected_last, actual_last=last)
            keys = [key for _kind, key, _payload in entries if key is not None]
            if keys:
                taken = connection.execute(
                    f"SELECT key, number FROM pal_entries WHERE thread_id = ? AND key IN ({_marks(len(keys))}) "
                    "ORDER BY number LIMIT 1",
                    (thread_id, *keys),
                ).fetchone()
                if taken is not None:
                    raise DuplicateKey(thread_id, taken[0], number=taken[1])
            now = _now()
            rows = [
                (expected_last + index, kind, key, now, payload, FORMAT_VERSION)
                for index, (kind, key, payload) in enumerate(entries, 1)
            ]
            connection.executemany(
                f"INSERT INTO pal_entries (thread_id, {ENTRY_COLUMNS}) VALUES (?, {_marks(6)})",
                [(thread_id, *row) for row in rows],
            )
            connection.execute(
                "UPDATE pal_threads SET last_entry = ?, updated = ?, status = coalesce(?, status) WHERE id = ?",
                (rows[-1][0], now, status, thread_id),
            )
            return rows, snapshot_at

        return await self._run(self._write, append)

    async def _entries(self, thread_id: str, first: int, last: int | None) -> list[EntryRow]:
        def entries(connection: sqlite3.Connection) -> list[EntryRow]:
            known, _ = self._last(connection, thread_id)
            return connection.execute(
                f"SELECT {ENTRY_COLUMNS} FROM pal_entries WHERE thread_id = ? AND number BETWEEN ? AND ? "
                "ORDER BY number",
                (thread_id, first, known if last is None else last),
            ).fetchall()

        return await self._run(self._read, entries)

    async def _find_entry(self, thread_id: str, key: str) -> EntryRow | None:
        def find(connection: sqlite3.Connection) -> EntryRow | None:
            self._last(connection, thread_id)
            return connection.execute(
                f"SELECT {ENTRY_COLUMNS} FROM pal_entries WHERE thread_id = ? AND key = ?", (thread_id, key)
            ).fetchone()

        return await self._run(self._read, find)

    async def _put_snapshot(self, thread_id: str, at: int, state: str, keep: int | None) -> SnapshotRow:
        def put(connection: sqlite3.Connection) -> SnapshotRow:
            last, _ = self._last(connection, thread_id)
            exists = (
                connection.execute(
                    "SELECT 1 FROM pal_snapshots WHERE thread_id = ? AND at = ?", (thread_id, at)
                ).fetchone()
                is not None
            )
            if exists or at > last:
                raise snapshot_error(thread_id, at, last, exists)
            now = _now()
            row = (at, now, state, FORMAT_VERSION)
            connection.execute(
                f"INSERT INTO pal_snapshots (thread_id, {SNAPSHOT_COLUMNS}) VALUES (?, ?, ?, ?, ?)",
                (thread_id, *row),
            )
            if keep is not None:
                connection.execute(
                    "DELETE FROM pal_snapshots WHERE thread_id = ? AND at NOT IN "
                    "(SELECT at FROM pal_snapshots WHERE thread_id = ? ORDER BY at DESC LIMIT ?)",
                    (thread_id, thread_id, keep),
                )
            connection.execute(
                "UPDATE pal_threads SET snapshot_at = max(snapshot_at, ?), updated = ? WHERE id = ?",
                (at, now, thread_id),
            )
            return row

        return await self._run(self._write, put)

    async def _load(
        self, thread_id: str, upto: int | None
    ) -> tuple[ThreadRow, SnapshotRow | None, list[EntryRow]]:
        def load(connection: sqlite3.Connection) -> tuple[ThreadRow, SnapshotRow | None, list[EntryRow]]:
            thread = self._thread_row(connection, thread_id)
            last = thread[9] if upto is None else upto
            if last > thread[9]:
                raise range_error(thread_id, "upto", last, thread[9])
            snapshot = connection.execute(
                f"SELECT {SNAPSHOT_COLUMNS} FROM pal_snapshots WHERE thread_id = ? AND at <= ? "
                "ORDER BY at DESC LIMIT 1",
                (thread_id, last),
            ).fetchone()
            entries = connection.execute(
                f"SELECT {ENTRY_COLUMNS} FROM pal_entries WHERE thread_id = ? AND number > ? AND number <= ? "
                "ORDER BY number",
                (thread_id, 0 if snapshot is None else snapshot[0], last),
            ).fetchall()
            return thread, snapshot, entries

        return await self._run(self._read, load)

    async def _export(self, thread_id: str) -> tuple[ThreadRow, list[EntryRow], list[SnapshotRow]]:
        def export(connection: sqlite3.Connection) -> tuple[ThreadRow, list[EntryRow], list[SnapshotRow]]:
            thread = self._thread_row(connection, thread_id)
            entries = connection.execute(
                f"SELECT {ENTRY_COLUMNS} FROM pal_entries WHERE thread_id = ? ORDER BY number", (thread_id,)
            ).fetchall()
            snapshots = connection.execute(
                f"SELECT {SNAPSHOT_COLUMNS} FROM pal_snapshots WHERE thread_id = ? ORDER BY at", (thread_id,)
            ).fetchall()
            return thread, entries, snapshots

        return await self._run(self._read, export)

    async def _import(
        self, thread: ThreadRow, entries: list[EntryRow], snapshots: list[SnapshotRow]
    ) -> ThreadRow:
        thread_id = thread[0]

        def import_(connection: sqlite3.Connection) -> ThreadRow:
            try:
                connection.execute(
                    f"INSERT INTO pal_threads ({THREAD_COLUMNS}) VALUES ({_marks(12)})", thread
                )
            except sqlite3.IntegrityError:
                raise ThreadExists(thread_id) from None
            connection.executemany(
                f"INSERT INTO pal_entries (thread_id, {ENTRY_COLUMNS}) VALUES (?, {_marks(6)})",
                [(thread_id, *row) for row in entries],
            )
            connection.executemany(
                f"INSERT INTO pal_snapshots (thread_id, {SNAPSHOT_COLUMNS}) VALUES (?, {_marks(4)})",
                [(thread_id, *row) for row in snapshots],
            )
            return thread

        return await self._run(self._write, import_)


def _marks(count: int) -> str:
    return ", ".join("?" * count)

"""The Postgres store (`postgresql://user@host/db`): for several processes or hosts sharing runs.

psycopg 3 (async), imported when the store opens: `pip install 'pal-bridge[postgres]'`. The tables are
created on first use by idempotent migrations under an advisory lock, so processes starting together agree.
An append is one transaction that first moves the thread's `last_entry` from the expected number to the new
one (`UPDATE ... WHERE last_entry = expected`): that row lock makes concurrent appenders to one thread
queue, and every one but the first sees a different `last_entry` and gets `AppendConflict`, so exactly one
writer wins each number. Reads of several rows run in one REPEATABLE READ transaction (one view).

Times are the server's (`now()`), so hosts with skewed clocks still agree on the order of events.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from .base import EntryRow, NewEntryRow, SnapshotRow, Store, ThreadRow, range_error, snapshot_error
from .errors import (
    AppendConflict,
    DuplicateKey,
    FormatError,
    StoreConflict,
    StoreUnavailable,
    ThreadExists,
    ThreadNotFound,
)
from .format import FORMAT_VERSION, from_micros, micros

if TYPE_CHECKING:
    import psycopg

T = TypeVar("T")

INSTALL_HINT = "pip install 'pal-bridge[postgres]'"

SCHEMA_VERSION = 2
"""The version of the tables below (kept in `pal_store_meta`); the JSON in them has its own FORMAT_VERSION."""

MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: (
        """CREATE TABLE pal_threads (
            id text PRIMARY KEY,
            program_path text NOT NULL,
            program_sha256 text NOT NULL,
            status text NOT NULL,
            created timestamptz NOT NULL,
            updated timestamptz NOT NULL,
            metadata json NOT NULL,
            parent_id text,
            parent_entry integer,
            last_entry integer NOT NULL DEFAULT 0,
            snapshot_at integer NOT NULL DEFAULT 0,
            format integer NOT NULL
        )""",
        "CREATE INDEX pal_threads_by_update ON pal_threads (updated DESC, id)",
        "CREATE INDEX pal_threads_by_status ON pal_threads (status, updated DESC, id)",
        """CREATE TABLE pal_entries (
            thread_id text NOT NULL,
            number integer NOT NULL,
            kind text NOT NULL,
            key text,
            created timestamptz NOT NULL,
            payload json NOT NULL,
            format integer NOT NULL,
            PRIMARY KEY (thread_id, number)
        )""",
        "CREATE UNIQUE INDEX pal_entries_by_key ON pal_entries (thread_id, key) WHERE key IS NOT NULL",
        """CREATE TABLE pal_snapshots (
            thread_id text NOT NULL,
            at integer NOT NULL,
            created timestamptz NOT NULL,
            state json NOT NULL,
            format integer NOT NULL,
            PRIMARY KEY (thread_id, at)
        )""",
    ),
    2: (
        """CREATE TABLE pal_leases (
            thread_id text PRIMARY KEY,
            owner text NOT NULL,
            expires timestamptz NOT NULL
        )""",
    ),
}
"""Schema version -> the statements that bring version - 1 up to it (applied once, in one transaction)."""

MIGRATION_LOCK = 0x70616C5F73746F72  # "pal_stor": the advisory lock that serializes first-use migrations

THREAD_COLUMNS = (
    "id, program_path, program_sha256, status, created, updated, metadata::text, parent_id, parent_entry, "
    "last_entry, snapshot_at, format"
)
ENTRY_COLUMNS = "number, kind, key, created, payload::text, format"
SNAPSHOT_COLUMNS = "at, created, state::text, format"

Cursor = Any  # psycopg.AsyncCursor, imported lazily


def _thread_row(row: tuple[Any, ...]) -> ThreadRow:
    return (*row[:4], micros(row[4]), micros(row[5]), *row[6:])  # type: ignore[return-value]


def _entry_row(row: tuple[Any, ...]) -> EntryRow:
    return (row[0], row[1], row[2], micros(row[3]), row[4], row[5])


def _snapshot_row(row: tuple[Any, ...]) -> SnapshotRow:
    return (row[0], micros(row[1]), row[2], row[3])


def redact(url: str) -> str:
    """The URL with its password replaced by `***`."""
    return re.sub(r"^(\w+://[^:/@]*):[^@]*@", r"\1:***@", url)


class PostgresStore(Store):
    """Threads in a Postgres database, shared by every process and host that connects to it."""

    scheme = "postgresql"

    def __init__(self, dsn: str, **options: Any) -> None:
        super().__init__(**options)
        self.dsn = dsn
        """The libpq connection string or URL (with the password, if any)."""
        self._connection: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()

    @property
    def url(self) -> str:
        return redact(self.dsn)

    # --- the connection ------------------------------------------------------------------------------------

    async def _open(self) -> None:
        await self._connect()
        await self._migrate()

    async def _connect(self) -> psycopg.AsyncConnection[Any]:
        try:
            import psycopg
        except ImportError:
            raise StoreUnavailable(f"the Postgres store needs psycopg 3: {INSTALL_HINT}") from None
        try:
            self._connection = await psycopg.AsyncConnection.connect(self.dsn, autocommit=True)
        except psycopg.Error as error:
            raise StoreUnavailable(f"{self.url}: cannot connect: {str(error).strip()}") from None
        return self._connection

    async def _close(self) -> None:
        async with self._lock:  # after the transaction in flight, if any
            if self._connection is not None:
                await self._connection.close()
                self._connection = None

    async def _transaction(self, work: Callable[[Cursor], Awaitable[T]], *, snapshot: bool = False) -> T:
        """Run `work(cursor)` in one transaction; with `snapshot`, in one view of the database (REPEATABLE
        READ). A connection lost since the last call is opened again first (nothing was in flight)."""
        import psycopg

        async with self._lock:
            connection = self._connection
            if connection is None or connection.closed or connection.broken:
                connection = await self._connect()
            try:
                async with connection.transaction(), connection.cursor() as cursor:
                    if snapshot:
                        await cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    return await work(cursor)
            except psycopg.errors.UniqueViolation as error:
                raise StoreConflict(
                    f"{self.url}: a concurrent write got there first ({error.diag.message_primary})"
                ) from None
            except psycopg.Error as error:
                if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
                    self._discard(connection)  # the connection's own state is in doubt: a new one next time
                raise StoreUnavailable(f"{self.url}: Postgres error: {str(error).strip()}") from None
            except asyncio.CancelledError:
                self._discard(connection)  # cancelled mid-query, the connection may still be busy with it
                raise

    def _discard(self, connection: psycopg.AsyncConnection[Any]) -> None:
        """Stop using `connection` (the next transaction connects again) and close it in the background."""
        if self._connection is connection:
            self._connection = None
        asyncio.get_running_loop().create_task(_close_quietly(connection), name="close a Postgres connection")

    async def _migrate(self) -> None:
        async def migrate(cursor: Cursor) -> None:
            await cursor.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await cursor.execute(
                "CREATE TABLE IF NOT EXISTS pal_store_meta (key text PRIMARY KEY, value text NOT NULL)"
            )
            await cursor.execute("SELECT value FROM pal_store_meta WHERE key = 'schema_version'")
            row = await cursor.fetchone()
            found = 0 if row is None else int(row[0])
            if found > SCHEMA_VERSION:
                raise FormatError(
                    f"{self.url}: the store's schema is version {found}, written by a newer pal-bridge; this one "
                    f"knows versions up to {SCHEMA_VERSION} (upgrade pal-bridge)"
                )
            for version in range(found + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[version]:
                    await cursor.execute(statement)
            if found != SCHEMA_VERSION:
                await cursor.execute(
                    "INSERT INTO pal_store_meta (key, value) VALUES ('schema_version', %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    (str(SCHEMA_VERSION),),
                )

        await self._transaction(migrate)

    # --- the primitives ------------------------------------------------------------------------------------

    @staticmethod
    async def _locked_thread(cursor: Cursor, thread_id: str, lock: str = "FOR UPDATE") -> ThreadRow:
        await cursor.execute(f"SELECT {THREAD_COLUMNS} FROM pal_threads WHERE id = %s {lock}", (thread_id,))
        row = await cursor.fetchone()
        if row is None:
            raise ThreadNotFound(thread_id)
        return _thread_row(row)

    async def _create(self, thread_id: str, path: str, sha256: str, status: str, metadata: str) -> ThreadRow:
        async def create(cursor: Cursor) -> ThreadRow:
            await cursor.execute(
                f"INSERT INTO pal_threads (id, program_path, program_sha256, status, created, updated, metadata, format) "
                f"VALUES (%s, %s, %s, %s, now(), now(), %s::json, %s) ON CONFLICT (id) DO NOTHING "
                f"RETURNING {THREAD_COLUMNS}",
                (thread_id, path, sha256, status, metadata, FORMAT_VERSION),
            )
            row = await cursor.fetchone()
            if row is None:
                raise ThreadExists(thread_id)
            return _thread_row(row)

        return await self._transaction(create)

    async def _get(self, thread_id: str) -> ThreadRow | None:
        async def get(cursor: Cursor) -> ThreadRow | None:
            await cursor.execute(f"SELECT {THREAD_COLUMNS} FROM pal_threads WHERE id = %s", (thread_id,))
            row = await cursor.fetchone()
            return None if row is None else _thread_row(row)

        return await self._transaction(get)

    async def _list(
        self, statuses: tuple[str, ...] | None, limit: int | None, offset: int, updated_before: int | None
    ) -> list[ThreadRow]:
        conditions: list[str] = []
        parameters: tuple[Any, ...] = ()
        if statuses is not None:
            conditions.append("status = ANY(%s)")
            parameters += (list(statuses),)
        if updated_before is not None:
            conditions.append("updated < %s")
            parameters += (from_micros(updated_before),)
        where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
        parameters += (limit, offset)

        async def listing(cursor: Cursor) -> list[ThreadRow]:
            await cursor.execute(
                f"SELECT {THREAD_COLUMNS} FROM pal_threads {where} ORDER BY updated DESC, id LIMIT %s OFFSET %s",
                parameters,
            )
            return [_thread_row(row) for row in await cursor.fetchall()]

        return await self._transaction(listing)

    async def _count(self) -> dict[str, int]:
        async def count(cursor: Cursor) -> dict[str, int]:
            await cursor.execute("SELECT status, count(*) FROM pal_threads GROUP BY status")
            return {status: int(number) for status, number in await cursor.fetchall()}

        return await self._transaction(count)

    async def _take_lease(self, thread_id: str, owner: str, micros: int) -> tuple[str, int]:
        async def take(cursor: Cursor) -> tuple[str, int]:
            await cursor.execute("SELECT 1 FROM pal_threads WHERE id = %s", (thread_id,))
            if await cursor.fetchone() is None:
                raise ThreadNotFound(thread_id)
            # clock_timestamp(): the time now, not the transaction's start.
            await cursor.execute(
                "INSERT INTO pal_leases AS held (thread_id, owner, expires) "
                "VALUES (%s, %s, clock_timestamp() + make_interval(secs => %s)) "
                "ON CONFLICT (thread_id) DO UPDATE SET owner = excluded.owner, expires = excluded.expires "
                "WHERE held.expires <= clock_timestamp() OR held.owner = excluded.owner "
                "RETURNING owner, expires - clock_timestamp()",
                (thread_id, owner, micros / 1_000_000),
            )
            row = await cursor.fetchone()
            if row is None:  # held by another, and not lapsed: that holder's lease, row-locked
                await cursor.execute(
                    "SELECT owner, expires - clock_timestamp() FROM pal_leases WHERE thread_id = %s FOR UPDATE",
                    (thread_id,),
                )
                row = await cursor.fetchone()
            if row is None:  # released in between: free now, but asked again rather than guessed
                return "", 0
            return str(row[0]), round(row[1].total_seconds() * 1_000_000)

        return await self._transaction(take)

    async def _release_lease(self, thread_id: str, owner: str) -> None:
        async def release(cursor: Cursor) -> None:
            await cursor.execute(
                "DELETE FROM pal_leases WHERE thread_id = %s AND owner = %s", (thread_id, owner)
            )

        await self._transaction(release)

    async def _update(
        self, thread_id: str, status: str | None, metadata: str | None, expected_last: int | None
    ) -> ThreadRow:
        async def update(cursor: Cursor) -> ThreadRow:
            current = await self._locked_thread(cursor, thread_id)
            if expected_last is not None and current[9] != expected_last:
                raise AppendConflict(thread_id, expected_last=expected_last, actual_last=current[9])
            await cursor.execute(
                "UPDATE pal_threads SET status = coalesce(%s, status), metadata = coalesce(%s::json, metadata), "
                f"updated = now() WHERE id = %s RETURNING {THREAD_COLUMNS}",
                (status, metadata, thread_id),
            )
            return _thread_row(await cursor.fetchone())

        return await self._transaction(update)

    async def _delete(self, thread_id: str) -> None:
        async def delete(cursor: Cursor) -> None:
            # The thread row first: its lock waits for an append in flight, whose entries are then deleted too.
            await cursor.execute("DELETE FROM pal_threads WHERE id = %s RETURNING id", (thread_id,))
            if await cursor.fetchone() is None:
                raise ThreadNotFound(thread_id)
            await cursor.execute("DELETE FROM pal_entries WHERE thread_id = %s", (thread_id,))
            await cursor.execute("DELETE FROM pal_snapshots WHERE thread_id = %s", (thread_id,))
            await cursor.execute("DELETE FROM pal_leases WHERE thread_id = %s", (thread_id,))

        await self._transaction(delete)

    async def _fork(
        self, thread_id: str, at: int, new_id: str, metadata: str | None, status: str
    ) -> ThreadRow:
        async def fork(cursor: Cursor) -> ThreadRow:
            source = await self._locked_thread(cursor, thread_id, "FOR SHARE")
            if at > source[9]:
                raise range_error(thread_id, "at", at, source[9])
            await cursor.execute(
                "SELECT max(at) FROM pal_snapshots WHERE thread_id = %s AND at <= %s", (thread_id, at)
            )
            snapshot = (await cursor.fetchone())[0]
            await cursor.execute(
                "INSERT INTO pal_threads (id, program_path, program_sha256, status, created, updated, metadata, "
                "parent_id, parent_entry, last_entry, snapshot_at, format) "
                "SELECT %s, program_path, program_sha256, %s, now(), now(), coalesce(%s::json, metadata), id, %s, "
                "%s, %s, %s FROM pal_threads WHERE id = %s ON CONFLICT (id) DO NOTHING "
                f"RETURNING {THREAD_COLUMNS}",
                (new_id, status, metadata, at, at, snapshot or 0, FORMAT_VERSION, thread_id),
            )
            row = await cursor.fetchone()
            if row is None:
                raise ThreadExists(new_id)
            await cursor.execute(
                "INSERT INTO pal_entries (thread_id, number, kind, key, created, payload, format) "
                "SELECT %s, number, kind, key, created, payload, format FROM pal_entries "
                "WHERE thread_id = %s AND number <= %s",
                (new_id, thread_id, at),
            )
            if snapshot:
                await cursor.execute(
                    "INSERT INTO pal_snapshots (thread_id, at, created, state, format) "
                    "SELECT %s, at, created, state, format FROM pal_snapshots WHERE thread_id = %s AND at = %s",
                    (new_id, thread_id, snapshot),
                )
            return _thread_row(row)

        return await self._transaction(fork)

    async def _append(
        self, thread_id: str, entries: list[NewEntryRow], expected_last: int, status: str | None
    ) -> tuple[list[EntryRow], int]:
        new_last = expected_last + len(entries)

        async def append(cursor: Cursor) -> tuple[list[EntryRow], int]:
            await cursor.execute(
                "UPDATE pal_threads SET last_entry = %s, updated = now(), status = coalesce(%s, status) "
                "WHERE id = %s AND last_entry = %s RETURNING snapshot_at, updated",
                (new_last, status, thread_id, expected_last),
            )
            moved = await cursor.fetchone()
            if moved is None:
                await cursor.execute("SELECT last_entry FROM pal_threads WHERE id = %s", (thread_id,))
                row = await cursor.fetchone()
                if row is None:
                    raise ThreadNotFound(thread_id)
                raise AppendConflict(thread_id, expected_last=expected_last, actual_last=row[0])
            snapshot_at, now = moved
            keys = [key for _kind, key, _payload in entries if key is not None]
            if keys:
                await cursor.execute(
                    "SELECT key, number FROM pal_entries WHERE thread_id = %s AND key = ANY(%s) ORDER BY number LIMIT 1",
                    (thread_id, keys),
                )
                taken = await cursor.fetchone()
                if taken is not None:
                    raise DuplicateKey(thread_id, taken[0], number=taken[1])
            rows = [
                (expected_last + index, kind, key, now, payload, FORMAT_VERSION)
                for index, (kind, key, payload) in enumerate(entries, 1)
            ]
            await cursor.executemany(
                "INSERT INTO pal_entries (thread_id, number, kind, key, created, payload, format) "
                "VALUES (%s, %s, %s, %s, %s, %s::json, %s)",
                [(thread_id, *row) for row in rows],
            )
            return [_entry_row(row) for row in rows], snapshot_at

        return await self._transaction(append)

    async def _entries(self, thread_id: str, first: int, last: int | None) -> list[EntryRow]:
        async def entries(cursor: Cursor) -> list[EntryRow]:
            thread = await self._locked_thread(cursor, thread_id, "")
            await cursor.execute(
                f"SELECT {ENTRY_COLUMNS} FROM pal_entries WHERE thread_id = %s AND number BETWEEN %s AND %s "
                "ORDER BY number",
                (thread_id, first, thread[9] if last is None else last),
            )
            return [_entry_row(row) for row in await cursor.fetchall()]

        return await self._transaction(entries, snapshot=True)

    async def _find_entry(self, thread_id: str, key: str) -> EntryRow | None:
        async def find(cursor: Cursor) -> EntryRow | None:
            await self._locked_thread(cursor, thread_id, "")
            await cursor.execute(
                f"SELECT {ENTRY_COLUMNS} FROM pal_entries WHERE thread_id = %s AND key = %s", (thread_id, key)
            )
            row = await cursor.fetchone()
            return None if row is None else _entry_row(row)

        return await self._transaction(find, snapshot=True)

    async def _put_snapshot(self, thread_id: str, at: int, state: str, keep: int | None) -> SnapshotRow:
        async def put(cursor: Cursor) -> SnapshotRow:
            thread = await self._locked_thread(cursor, thread_id)
            await cursor.execute(
                "SELECT 1 FROM pal_snapshots WHERE thread_id = %s AND at = %s", (thread_id, at)
            )
            exists = await cursor.fetchone() is not None
            if exists or at > thread[9]:
                raise snapshot_error(thread_id, at, thread[9], exists)
            await cursor.execute(
                "INSERT INTO pal_snapshots (thread_id, at, created, state, format) "
                f"VALUES (%s, %s, now(), %s::json, %s) RETURNING {SNAPSHOT_COLUMNS}",
                (thread_id, at, state, FORMAT_VERSION),
            )
            row = _snapshot_row(await cursor.fetchone())
            if keep is not None:
                await cursor.execute(
                    "DELETE FROM pal_snapshots WHERE thread_id = %s AND at NOT IN "
                    "(SELECT at FROM pal_snapshots WHERE thread_id = %s ORDER BY at DESC LIMIT %s)",
                    (thread_id, thread_id, keep),
                )
            await cursor.execute(
                "UPDATE pal_threads SET snapshot_at = greatest(snapshot_at, %s), updated = now() WHERE id = %s",
                (at, thread_id),
            )
            return row

        return await self._transaction(put)

    async def _load(
        self, thread_id: str, upto: int | None
    ) -> tuple[ThreadRow, SnapshotRow | None, list[EntryRow]]:
        async def load(cursor: Cursor) -> tuple[ThreadRow, SnapshotRow | None, list[EntryRow]]:
            thread = await self._locked_thread(cursor, thread_id, "")
            last = thread[9] if upto is None else upto
            if last > thread[9]:
                raise range_error(thread_id, "upto", last, thread[9])
            await cursor.execute(
                f"SELECT {SNAPSHOT_COLUMNS} FROM pal_snapshots WHERE thread_id = %s AND at <= %s "
                "ORDER BY at DESC LIMIT 1",
                (thread_id, last),
            )
            found = await cursor.fetchone()
            snapshot = None if found is None else _snapshot_row(found)
            await cursor.execute(
                f"SELECT {ENTRY_COLUMNS} FROM pal_entries WHERE thread_id = %s AND number > %s AND number <= %s "
                "ORDER BY number",
                (thread_id, 0 if snapshot is None else snapshot[0], last),
            )
            return thread, snapshot, [_entry_row(row) for row in await cursor.fetchall()]

        return await self._transaction(load, snapshot=True)

    async def _export(self, thread_id: str) -> tuple[ThreadRow, list[EntryRow], list[SnapshotRow]]:
        async def export(cursor: Cursor) -> tuple[ThreadRow, list[EntryRow], list[SnapshotRow]]:
            thread = await self._locked_thread(cursor, thread_id, "")
            await cursor.execute(
                f"SELECT {ENTRY_COLUMNS} FROM pal_entries WHERE thread_id = %s ORDER BY number", (thread_id,)
            )
            entries = [_entry_row(row) for row in await cursor.fetchall()]
            await cursor.execute(
                f"SELECT {SNAPSHOT_COLUMNS} FROM pal_snapshots WHERE thread_id = %s ORDER BY at", (thread_id,)
            )
            return thread, entries, [_snapshot_row(row) for row in await cursor.fetchall()]

        return await self._transaction(export, snapshot=True)

    async def _import(
        self, thread: ThreadRow, entries: list[EntryRow], snapshots: list[SnapshotRow]
    ) -> ThreadRow:
        thread_id = thread[0]

        async def import_(cursor: Cursor) -> ThreadRow:
            await cursor.execute(
                "INSERT INTO pal_threads (id, program_path, program_sha256, status, created, updated, metadata, "
                "parent_id, parent_entry, last_entry, snapshot_at, format) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s::json, %s, %s, %s, %s, %s) ON CONFLICT (id) DO NOTHING "
                "RETURNING id",
                (*thread[:4], _time(thread[4]), _time(thread[5]), *thread[6:]),
            )
            if await cursor.fetchone() is None:
                raise ThreadExists(thread_id)
            if entries:
                await cursor.executemany(
                    "INSERT INTO pal_entries (thread_id, number, kind, key, created, payload, format) "
                    "VALUES (%s, %s, %s, %s, %s, %s::json, %s)",
                    [(thread_id, row[0], row[1], row[2], _time(row[3]), row[4], row[5]) for row in entries],
                )
            if snapshots:
                await cursor.executemany(
                    "INSERT INTO pal_snapshots (thread_id, at, created, state, format) VALUES (%s, %s, %s, %s::json, %s)",
                    [(thread_id, row[0], _time(row[1]), row[2], row[3]) for row in snapshots],
                )
            return thread

        return await self._transaction(import_)


async def _close_quietly(connection: Any) -> None:
    with contextlib.suppress(Exception):
        await connection.close()


def _time(value: int) -> datetime:
    return from_micros(value)

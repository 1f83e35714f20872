"""What only the SQLite store promises: WAL mode, writers that wait for the lock off the event loop instead of
failing, a clear error when the lock never comes, and clear errors for files that cannot hold a store."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import anyio
import pytest

from runtime.store import NewEntry, StoreNotFound, StoreUnavailable, open_store
from runtime.store.sqlite import SQLiteStore
from tests.runtime.store.conftest import PROGRAM

pytestmark = pytest.mark.anyio


async def test_the_file_is_in_wal_mode_with_the_chosen_durability(tmp_path: Path) -> None:
    database = tmp_path / "runs.db"
    async with open_store(f"sqlite:///{database}?synchronous=full") as store:
        await store.create_thread(PROGRAM, thread_id="t")
        with sqlite3.connect(database) as probe:
            assert probe.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            tables = {row[0] for row in probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        probe.close()
        assert tables == {"pal_store_meta", "pal_threads", "pal_entries", "pal_snapshots", "pal_leases"}

        def synchronous(connection: sqlite3.Connection) -> int:
            return connection.execute("PRAGMA synchronous").fetchone()[0]

        assert await store._run(synchronous) == 2  # FULL; the store's own connection, on its own thread


async def test_a_writer_waits_for_another_process_lock_without_blocking_the_loop(tmp_path: Path) -> None:
    database = tmp_path / "runs.db"
    async with open_store(f"sqlite:///{database}") as store:
        await store.create_thread(PROGRAM, thread_id="t")
        other = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the lock
        appended = []

        async def append() -> None:
            appended.append(await store.append("t", NewEntry(kind="turn", payload={"a": 1}), expected_last=0))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(append)
                await anyio.wait_all_tasks_blocked()  # the loop is free while the append waits for the lock
                assert appended == []
                other.execute("COMMIT")
        other.close()
        assert appended[0].last == 1


async def test_opening_a_new_file_another_connection_is_writing_waits_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Switching a file to WAL needs its exclusive lock, and SQLite refuses it at once, without its busy
    handler, while another connection holds the write lock of a file still in rollback mode (what fifty
    stores opening one new file at once run into). The store must wait for the lock, not fail."""
    database = tmp_path / "runs.db"
    other = sqlite3.connect(database, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE unrelated (a)")  # a write transaction on a file in rollback mode
    refused = threading.Event()
    set_up = SQLiteStore._set_up

    def watched(self: SQLiteStore, connection: sqlite3.Connection) -> None:
        try:
            set_up(self, connection)
        except sqlite3.OperationalError:
            refused.set()
            raise

    monkeypatch.setattr(SQLiteStore, "_set_up", watched)
    store = open_store(f"sqlite:///{database}")
    try:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(store.open)
                assert await anyio.to_thread.run_sync(refused.wait, 60)  # SQLite said "locked" at least once
                other.execute("COMMIT")
        await store.create_thread(PROGRAM, thread_id="t")
        assert (await store.get_thread("t")).id == "t"
    finally:
        other.close()
        await store.close()


async def test_a_lock_held_past_the_busy_timeout_is_a_clear_error(tmp_path: Path) -> None:
    database = tmp_path / "runs.db"
    async with open_store(f"sqlite:///{database}?busy_timeout=0.2") as store:
        await store.create_thread(PROGRAM, thread_id="t")
        other = sqlite3.connect(database, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        try:
            with pytest.raises(StoreUnavailable, match=r"stayed locked for 0.2 s \(busy_timeout\)"):
                await store.append("t", NewEntry(kind="turn", payload={}), expected_last=0)
        finally:
            other.execute("ROLLBACK")
            other.close()
        await store.append(
            "t", NewEntry(kind="turn", payload={}), expected_last=0
        )  # nothing was half-written


async def test_files_that_cannot_hold_a_store(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("not a database, just notes\n" * 100, encoding="utf-8")
    with pytest.raises(StoreUnavailable, match=r"notes.txt: not a SQLite database"):
        async with open_store(f"sqlite:///{junk}"):
            pass
    blocked = tmp_path / "a-file"
    blocked.write_text("", encoding="utf-8")
    with pytest.raises(StoreUnavailable, match="cannot create its folder"):
        async with open_store(f"sqlite:///{blocked}/sub/runs.db"):
            pass


async def test_a_new_store_is_private_to_its_owner(tmp_path: Path) -> None:
    database = tmp_path / "new" / "folder" / "runs.db"
    async with open_store(f"sqlite:///{database}") as store:
        await store.create_thread(PROGRAM, thread_id="t")
        await store.append("t", NewEntry(kind="turn", payload={}), expected_last=0)
        made = [database, database.with_name("runs.db-wal"), database.with_name("runs.db-shm")]
        assert {path.name: oct(path.stat().st_mode & 0o777) for path in made if path.exists()} == {
            path.name: "0o600" for path in made if path.exists()
        }
        assert database.with_name("runs.db-wal").exists()
    assert oct(database.parent.stat().st_mode & 0o777) == "0o700"


async def test_a_store_that_does_not_exist_is_an_error_unless_creating_it_is_allowed(tmp_path: Path) -> None:
    typo = tmp_path / "missing" / "runz.db"
    with pytest.raises(StoreNotFound, match=r"no store at sqlite:///.*runz\.db: .* does not exist"):
        async with open_store(f"sqlite:///{typo}", create=False):
            pass
    assert not typo.parent.exists()  # neither the file nor its folder was made
    async with open_store(f"sqlite:///{typo}"):
        pass
    async with open_store(f"sqlite:///{typo}", create=False) as store:  # it exists now
        assert await store.list_threads() == []

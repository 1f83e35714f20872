"""Conformance, part 1: threads (create, read, list, update, delete, fork) and the store's lifetime.
Every test runs against the memory, SQLite and Postgres stores (see conftest.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from runtime.store import (
    AppendConflict,
    ForkPoint,
    NewEntry,
    NotJSON,
    ProgramRef,
    Store,
    StoreError,
    StoreUnavailable,
    ThreadExists,
    ThreadNotFound,
    ThreadStatus,
    open_store,
)
from tests.runtime.store.conftest import PROGRAM

pytestmark = pytest.mark.anyio


def turn(text: str, **changed: object) -> NewEntry:
    return NewEntry(kind="turn", payload={"answer": text, "changed": changed})


async def fill(store: Store, thread_id: str, count: int, *, start: int = 0) -> None:
    for number in range(start + 1, start + count + 1):
        await store.append(thread_id, turn(f"answer {number}", n=number), expected_last=number - 1)


# --- create / get ----------------------------------------------------------------------------------------


async def test_create_thread_records_what_it_was_given(store: Store) -> None:
    thread = await store.create_thread(PROGRAM, thread_id="order-42", metadata={"user": "ana", "tags": ["a"]})
    assert thread.id == "order-42"
    assert thread.program == PROGRAM
    assert thread.status is ThreadStatus.RUNNING
    assert thread.metadata == {"user": "ana", "tags": ["a"]}
    assert (thread.last_entry, thread.snapshot_at, thread.forked_from) == (0, 0, None)
    assert thread.created.tzinfo is UTC and thread.created == thread.updated
    assert await store.get_thread("order-42") == thread


async def test_a_thread_without_an_id_gets_a_uuid(store: Store) -> None:
    first = await store.create_thread(PROGRAM)
    second = await store.create_thread(PROGRAM, status=ThreadStatus.WAITING_FOR_USER)
    assert uuid.UUID(first.id) != uuid.UUID(second.id)
    assert second.status is ThreadStatus.WAITING_FOR_USER
    assert first.metadata == {}


async def test_creating_a_taken_id_fails_and_keeps_the_first(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t", metadata={"first": True})
    with pytest.raises(ThreadExists, match="'t' already exists"):
        await store.create_thread(ProgramRef.of_source("other"), thread_id="t")
    assert (await store.get_thread("t")).metadata == {"first": True}


@pytest.mark.parametrize(
    ("thread_id", "message"),
    [
        ("", "1 to 200 characters"),
        ("has space", "without spaces"),
        ("x" * 201, "1 to 200"),
        (7, "must be a string"),
    ],
)
async def test_bad_thread_ids_are_refused(store: Store, thread_id: object, message: str) -> None:
    with pytest.raises(StoreError, match=message):
        await store.create_thread(PROGRAM, thread_id=thread_id)  # type: ignore[arg-type]
    assert await store.list_threads() == []


async def test_bad_programs_statuses_and_metadata_are_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="must be a ProgramRef"):
        await store.create_thread("prog.pal")  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="64 lowercase hex"):
        await store.create_thread(ProgramRef(path="p.pal", sha256="abc"))
    with pytest.raises(StoreError, match=r"'paused' is not a thread status .*running, waiting_for_user"):
        await store.create_thread(PROGRAM, status="paused")  # type: ignore[arg-type]
    with pytest.raises(NotJSON, match=r"metadata\['when'\]: a datetime is not JSON"):
        await store.create_thread(PROGRAM, metadata={"when": datetime.now(UTC)})
    with pytest.raises(NotJSON, match="metadata: must be a JSON object"):
        await store.create_thread(PROGRAM, metadata=["a"])  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="at most 16384"):
        await store.create_thread(PROGRAM, metadata={"blob": "x" * 20_000})
    assert await store.list_threads() == []


async def test_program_refs_hash_the_file(tmp_path) -> None:
    program = tmp_path / "prog.pal"
    program.write_text("# A\n", encoding="utf-8")
    ref = ProgramRef.of_file(program)
    assert ref.path == str(program.resolve())
    assert ref == ProgramRef.of_source("# A\n", path=str(program.resolve()))
    program.write_text("# B\n", encoding="utf-8")
    assert ProgramRef.of_file(program).sha256 != ref.sha256


async def test_missing_threads(store: Store) -> None:
    assert await store.find_thread("nope") is None
    with pytest.raises(ThreadNotFound, match="no thread 'nope'"):
        await store.get_thread("nope")
    for operation in (
        store.update_thread("nope", status=ThreadStatus.FAILED),
        store.delete_thread("nope"),
        store.fork_thread("nope", at=0),
        store.append("nope", turn("a"), expected_last=0),
        store.read_entries("nope"),
        store.find_entry("nope", "k"),
        store.put_snapshot("nope", at=1, state={}),
        store.load("nope"),
        store.export_thread("nope"),
    ):
        with pytest.raises(ThreadNotFound):
            await operation


# --- list ------------------------------------------------------------------------------------------------


async def test_list_threads_newest_update_first_with_filters(store: Store) -> None:
    for name in ("a", "b", "c", "d"):
        await store.create_thread(PROGRAM, thread_id=name)
    await store.update_thread("b", status=ThreadStatus.WAITING_FOR_USER)
    await store.update_thread("c", status=ThreadStatus.FINISHED)
    await store.append("a", turn("x"), expected_last=0)  # a is now the most recently updated

    assert [t.id for t in await store.list_threads()] == ["a", "c", "b", "d"]
    assert [t.id for t in await store.list_threads(status=ThreadStatus.RUNNING)] == ["a", "d"]
    assert [t.id for t in await store.list_threads(status="waiting_for_user")] == ["b"]
    waiting_or_done = await store.list_threads(status=[ThreadStatus.FINISHED, "waiting_for_user"])
    assert [t.id for t in waiting_or_done] == ["c", "b"]
    assert await store.list_threads(status=ThreadStatus.FAILED) == []
    assert [t.id for t in await store.list_threads(limit=2)] == ["a", "c"]
    assert [t.id for t in await store.list_threads(limit=2, offset=2)] == ["b", "d"]
    assert [t.id for t in await store.list_threads(offset=3)] == ["d"]
    assert (await store.list_threads())[0].last_entry == 1
    with pytest.raises(StoreError, match="not a thread status"):
        await store.list_threads(status="done")
    with pytest.raises(StoreError, match="limit must be an integer of at least 0"):
        await store.list_threads(limit=-1)


# --- update ----------------------------------------------------------------------------------------------


async def test_update_thread_sets_status_and_replaces_metadata(store: Store) -> None:
    created = await store.create_thread(PROGRAM, thread_id="t", metadata={"a": 1, "b": 2})
    waiting = await store.update_thread("t", status=ThreadStatus.WAITING_FOR_USER)
    assert waiting.status is ThreadStatus.WAITING_FOR_USER and waiting.metadata == {"a": 1, "b": 2}
    assert waiting.updated >= created.updated
    relabeled = await store.update_thread("t", metadata={"c": 3})
    assert relabeled.status is ThreadStatus.WAITING_FOR_USER and relabeled.metadata == {"c": 3}
    assert await store.get_thread("t") == relabeled


async def test_update_thread_with_expected_last_refuses_a_moved_thread(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t")
    await fill(store, "t", 2)
    with pytest.raises(AppendConflict, match="expected its last entry to be 1, but it is 2") as caught:
        await store.update_thread("t", status=ThreadStatus.FINISHED, expected_last=1)
    assert (caught.value.expected_last, caught.value.actual_last) == (1, 2)
    assert (await store.get_thread("t")).status is ThreadStatus.RUNNING
    done = await store.update_thread("t", status=ThreadStatus.FINISHED, expected_last=2)
    assert done.status is ThreadStatus.FINISHED


# --- delete ----------------------------------------------------------------------------------------------


async def test_delete_thread_removes_its_log_and_snapshots(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t")
    await store.create_thread(PROGRAM, thread_id="kept")
    await fill(store, "t", 3)
    await store.put_snapshot("t", at=3, state={"n": 3})
    await store.delete_thread("t")
    assert await store.find_thread("t") is None
    assert [t.id for t in await store.list_threads()] == ["kept"]
    with pytest.raises(ThreadNotFound):
        await store.delete_thread("t")
    again = await store.create_thread(PROGRAM, thread_id="t")  # the id is free again, with an empty log
    assert again.last_entry == 0
    assert await store.read_entries("t") == []
    loaded = await store.load("t")
    assert (loaded.snapshot, loaded.entries) == (None, ())


# --- fork ------------------------------------------------------------------------------------------------


async def test_fork_copies_the_log_up_to_the_entry_and_leaves_the_original_alone(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="main", metadata={"user": "ana"})
    await fill(store, "main", 5)
    before = await store.export_thread("main")

    fork = await store.fork_thread("main", at=3, new_thread_id="alt")
    assert fork.id == "alt" and fork.program == PROGRAM and fork.metadata == {"user": "ana"}
    assert fork.forked_from == ForkPoint(thread_id="main", entry=3)
    assert fork.status is ThreadStatus.INTERRUPTED and fork.last_entry == 3
    original = await store.read_entries("main", last=3)
    assert await store.read_entries("alt") == original  # same numbers, kinds, payloads and times

    await store.append("alt", turn("a different 4th turn"), expected_last=3)
    await store.append("main", turn("answer 6"), expected_last=5)
    assert [e.payload["answer"] for e in await store.read_entries("alt", first=4)] == ["a different 4th turn"]
    after = await store.export_thread("main")
    assert after["entries"][:5] == before["entries"] and len(after["entries"]) == 6


async def test_fork_options_and_errors(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="main")
    await fill(store, "main", 2)
    empty = await store.fork_thread("main", at=0, metadata={"why": "retry"}, status=ThreadStatus.RUNNING)
    assert (
        empty.last_entry == 0 and empty.metadata == {"why": "retry"} and empty.status is ThreadStatus.RUNNING
    )
    assert uuid.UUID(empty.id)
    with pytest.raises(StoreError, match="'main' has 2 entries; at=3 is past its last entry"):
        await store.fork_thread("main", at=3)
    with pytest.raises(ThreadExists, match="'main' already exists"):
        await store.fork_thread("main", at=1, new_thread_id="main")
    with pytest.raises(StoreError, match="at must be an integer of at least 0"):
        await store.fork_thread("main", at=-1)
    assert len(await store.list_threads()) == 2


async def test_a_fork_of_a_fork_and_of_a_deleted_thread(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="a")
    await fill(store, "a", 4)
    await store.fork_thread("a", at=4, new_thread_id="b")
    await store.append("b", turn("b5"), expected_last=4)
    await store.fork_thread("b", at=5, new_thread_id="c")
    await store.delete_thread("a")
    await store.delete_thread("b")
    entries = await store.read_entries("c")
    assert [e.payload["answer"] for e in entries] == ["answer 1", "answer 2", "answer 3", "answer 4", "b5"]
    assert (await store.get_thread("c")).forked_from == ForkPoint(thread_id="b", entry=5)


# --- lifetime --------------------------------------------------------------------------------------------


async def test_a_store_is_used_between_open_and_close(store_url: str) -> None:
    store = open_store(store_url)
    with pytest.raises(StoreUnavailable, match="it was not opened; use `async with open_store"):
        await store.list_threads()
    async with store:
        await store.open()  # opening an open store does nothing
        await store.create_thread(PROGRAM, thread_id="t")
    with pytest.raises(StoreUnavailable, match="it is closed"):
        await store.get_thread("t")
    await store.close()  # closing twice does nothing
    with pytest.raises(StoreUnavailable, match="the store is closed"):
        await store.open()


async def test_database_stores_keep_threads_across_connections(durable_store_url: str) -> None:
    async with open_store(durable_store_url) as store:
        await store.create_thread(PROGRAM, thread_id="t", metadata={"m": 1})
        await fill(store, "t", 2)
        await store.put_snapshot("t", at=2, state={"s": 2})
        written = await store.export_thread("t")
    async with open_store(durable_store_url) as store:
        assert await store.export_thread("t") == written
        await store.append("t", turn("3"), expected_last=2)

"""Conformance, part 3: snapshots every K entries, loading (snapshot + tail), and whole threads as
documents (export, import). Every test runs against the memory, SQLite and Postgres stores (K = 3)."""

from __future__ import annotations

import copy

import pytest

from runtime.store import (
    FormatError,
    NewEntry,
    Store,
    StoreConflict,
    StoreError,
    ThreadExists,
    open_store,
)
from tests.runtime.store.conftest import PROGRAM, SNAPSHOT_EVERY

pytestmark = pytest.mark.anyio


def turn(number: int) -> NewEntry:
    return NewEntry(kind="turn", payload={"answer": f"answer {number}", "changed": {"n": number}})


def state_after(number: int) -> dict[str, object]:
    """What a runtime would snapshot: here simply the sum of the changes so far."""
    return {"n": number, "total": number * (number + 1) // 2}


async def run_turns(store: Store, thread_id: str, count: int, *, start: int = 0) -> list[int]:
    """Append `count` turns one by one, storing a snapshot whenever the store says one is due, as the
    session layer does; returns the entry numbers where snapshots were taken."""
    taken = []
    for number in range(start + 1, start + count + 1):
        done = await store.append(thread_id, turn(number), expected_last=number - 1)
        if done.snapshot_due:
            await store.put_snapshot(thread_id, at=done.last, state=state_after(done.last))
            taken.append(done.last)
    return taken


# --- snapshots -------------------------------------------------------------------------------------------


async def test_a_snapshot_is_due_every_k_entries(store: Store) -> None:
    assert store.snapshot_every == SNAPSHOT_EVERY == 3
    await store.create_thread(PROGRAM, thread_id="t")
    assert await run_turns(store, "t", 10) == [3, 6, 9]
    thread = await store.get_thread("t")
    assert (thread.last_entry, thread.snapshot_at) == (10, 9)


async def test_a_snapshot_stays_due_until_one_is_stored(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t")
    dues = []
    for number in range(1, 6):
        dues.append((await store.append("t", turn(number), expected_last=number - 1)).snapshot_due)
    assert dues == [False, False, True, True, True]
    await store.put_snapshot("t", at=4, state=state_after(4))
    batch = await store.append("t", turn(6), turn(7), expected_last=5)  # 7 - 4 = 3 entries since the snapshot
    assert batch.snapshot_due and batch.last == 7


async def test_snapshot_every_zero_never_asks_for_one(store_url: str) -> None:
    async with open_store(store_url, snapshot_every=0) as store:
        await store.create_thread(PROGRAM, thread_id="t")
        assert await run_turns(store, "t", 7) == []


async def test_put_snapshot_errors(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t")
    await run_turns(store, "t", 2)
    snapshot = await store.put_snapshot("t", at=1, state={"x": 1})
    assert (snapshot.at, snapshot.state) == (1, {"x": 1})
    with pytest.raises(StoreConflict, match="already has a snapshot at entry 1; snapshots are not rewritten"):
        await store.put_snapshot("t", at=1, state={"x": 2})
    with pytest.raises(StoreError, match="'t' has 2 entries; at=3 is past its last entry"):
        await store.put_snapshot("t", at=3, state={})
    with pytest.raises(StoreError, match="at must be an integer of at least 1"):
        await store.put_snapshot("t", at=0, state={})
    with pytest.raises(StoreError, match="must be a JSON object"):
        await store.put_snapshot("t", at=2, state=[1, 2])  # type: ignore[arg-type]
    assert (await store.load("t")).snapshot.state == {"x": 1}  # type: ignore[union-attr]


async def test_only_the_latest_snapshots_are_kept(store_url: str) -> None:
    async with open_store(store_url, snapshot_every=2, keep_snapshots=2) as store:
        await store.create_thread(PROGRAM, thread_id="t")
        assert await run_turns(store, "t", 9) == [2, 4, 6, 8]
        kept = (await store.export_thread("t"))["snapshots"]
        assert [snapshot["at"] for snapshot in kept] == [6, 8]
    async with open_store(store_url, snapshot_every=2, keep_snapshots=None) as store:
        await store.create_thread(PROGRAM, thread_id="all")
        await run_turns(store, "all", 9)
        assert [s["at"] for s in (await store.export_thread("all"))["snapshots"]] == [2, 4, 6, 8]


async def test_store_options_are_checked(store_url: str) -> None:
    with pytest.raises(StoreError, match="keep_snapshots must be an integer of at least 1"):
        open_store(store_url, keep_snapshots=0)
    with pytest.raises(StoreError, match="snapshot_every must be an integer of at least 0"):
        open_store(store_url, snapshot_every=-5)


# --- load ------------------------------------------------------------------------------------------------


async def test_load_reads_the_latest_snapshot_and_the_entries_after_it(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t")
    await run_turns(store, "t", 8)
    loaded = await store.load("t")
    assert loaded.snapshot is not None and (loaded.snapshot.at, loaded.snapshot.state) == (6, state_after(6))
    assert [e.number for e in loaded.entries] == [7, 8]
    assert loaded.last == 8 and loaded.thread.last_entry == 8


async def test_load_upto_an_earlier_entry(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t")
    await run_turns(store, "t", 8)  # snapshots at 3 and 6 (both kept)
    at_five = await store.load("t", upto=5)
    assert at_five.snapshot.at == 3 and [e.number for e in at_five.entries] == [4, 5]  # type: ignore[union-attr]
    at_six = await store.load("t", upto=6)
    assert at_six.snapshot.at == 6 and at_six.entries == () and at_six.last == 6  # type: ignore[union-attr]
    at_two = await store.load("t", upto=2)
    assert at_two.snapshot is None and [e.number for e in at_two.entries] == [1, 2]
    nothing = await store.load("t", upto=0)
    assert (nothing.snapshot, nothing.entries, nothing.last) == (None, (), 0)
    with pytest.raises(StoreError, match="'t' has 8 entries; upto=9 is past its last entry"):
        await store.load("t", upto=9)


async def test_load_without_snapshots_replays_the_whole_log(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t")
    empty = await store.load("t")
    assert (empty.snapshot, empty.entries, empty.last) == (None, (), 0)
    for number in range(1, 3):
        await store.append("t", turn(number), expected_last=number - 1)
    loaded = await store.load("t")
    assert loaded.snapshot is None and [e.number for e in loaded.entries] == [1, 2]


async def test_a_fork_takes_the_latest_snapshot_at_or_before_its_entry(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t")
    await run_turns(store, "t", 8)
    fork = await store.fork_thread("t", at=7, new_thread_id="f")
    assert fork.snapshot_at == 6
    loaded = await store.load("f")
    assert loaded.snapshot.state == state_after(6) and [e.number for e in loaded.entries] == [7]  # type: ignore[union-attr]
    early = await store.fork_thread("t", at=2, new_thread_id="early")
    assert early.snapshot_at == 0 and (await store.load("early")).snapshot is None
    assert await run_turns(store, "f", 3, start=7) == [9]  # due again 3 entries after the copied snapshot


# --- documents -------------------------------------------------------------------------------------------


async def test_export_and_import_move_a_thread_between_stores(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t", metadata={"user": "ana"})
    await run_turns(store, "t", 4)
    await store.append(
        "t", NewEntry(kind="call", payload={"r": 1}, key="t#5"), expected_last=4, status="finished"
    )
    document = await store.export_thread("t")
    assert (document["format"], document["version"]) == ("pal-bridge/thread", 1)
    assert document["thread"]["id"] == "t" and len(document["entries"]) == 5

    async with open_store("memory://") as other:
        imported = await other.import_thread(document)
        assert imported == await store.get_thread("t")
        assert await other.export_thread("t") == document
        assert (await other.find_entry("t", "t#5")).number == 5  # type: ignore[union-attr]
        await other.append("t", turn(6), expected_last=5)

    await store.delete_thread("t")
    assert (await store.import_thread(document)).last_entry == 5
    assert await store.export_thread("t") == document  # same numbers, times and payloads
    with pytest.raises(ThreadExists):
        await store.import_thread(document)


async def test_import_refuses_a_bad_document_and_writes_nothing(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t")
    await run_turns(store, "t", 3)
    document = await store.export_thread("t")
    await store.delete_thread("t")

    def broken(change) -> dict:  # type: ignore[no-untyped-def]
        changed = copy.deepcopy(document)
        change(changed)
        return changed

    cases = [
        (broken(lambda d: d.update(version=99)), r"written in format 99 by a newer pal-bridge"),
        (broken(lambda d: d.update(format="other")), r"'other' is not 'pal-bridge/thread'"),
        (broken(lambda d: d["entries"].pop(0)), r'document\["entries"\]\[0\]\["number"\]: expected 1'),
        (broken(lambda d: d["entries"][1].update(kind="BAD")), r'\["entries"\]\[1\]\["kind"\]: entry kind'),
        (broken(lambda d: d["entries"][0].pop("created")), r'\["entries"\]\[0\]: missing created'),
        (broken(lambda d: d["thread"].update(extra=1)), r'document\["thread"\]: unknown extra'),
        (
            broken(lambda d: d["thread"].update(status="gone")),
            r'\["thread"\]\["status"\]: .*not a thread status',
        ),
        (broken(lambda d: d["snapshots"][0].update(at=7)), r'\["snapshots"\]\[0\]\["at"\]: 7 must be'),
        (
            broken(lambda d: d["entries"][0].update(created="yesterday")),
            r"'yesterday' is not an ISO 8601 time",
        ),
    ]
    for bad, message in cases:
        with pytest.raises(FormatError, match=message):
            await store.import_thread(bad)
    with pytest.raises(StoreError, match=r"document\['entries'\]\[2\]\['payload'\]\['x'\]: nan is not"):
        await store.import_thread(broken(lambda d: d["entries"][2]["payload"].update(x=float("nan"))))
    assert await store.list_threads() == []

"""Conformance, part 2: the append-only log (append with optimistic concurrency, idempotency keys, exact
JSON, reading ranges). Every test runs against the memory, SQLite and Postgres stores."""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime
from enum import StrEnum

import pytest

from runtime.store import (
    AppendConflict,
    DuplicateKey,
    EntryKind,
    NewEntry,
    NotJSON,
    Store,
    StoreError,
    ThreadStatus,
    call_key,
)
from tests.runtime.store.conftest import PROGRAM

pytestmark = pytest.mark.anyio


class Color(StrEnum):
    RED = "red"


def turn(text: str) -> NewEntry:
    return NewEntry(kind=EntryKind.TURN, payload={"answer": text})


async def new_thread(store: Store, thread_id: str = "t") -> str:
    return (await store.create_thread(PROGRAM, thread_id=thread_id)).id


# --- append ----------------------------------------------------------------------------------------------


async def test_entries_are_numbered_from_one_without_gaps(store: Store) -> None:
    thread_id = await new_thread(store)
    first = await store.append(thread_id, turn("a"), expected_last=0)
    assert [e.number for e in first.entries] == [1] and first.last == 1
    batch = await store.append(
        thread_id,
        NewEntry(kind=EntryKind.CALL, payload={"result": 7}, key=call_key(thread_id, 2)),
        NewEntry(kind=EntryKind.MESSAGE, payload={"to": "1001", "text": "hi"}),
        expected_last=1,
    )
    assert [(e.number, e.kind, e.key) for e in batch.entries] == [(2, "call", "t#2"), (3, "message", None)]
    entries = await store.read_entries(thread_id)
    assert [(e.number, e.kind, e.payload) for e in entries] == [
        (1, "turn", {"answer": "a"}),
        (2, "call", {"result": 7}),
        (3, "message", {"to": "1001", "text": "hi"}),
    ]
    assert entries[1:] == list(batch.entries)
    assert all(e.created.tzinfo is UTC for e in entries)
    assert entries[0].created <= entries[1].created == entries[2].created  # one append, one time
    thread = await store.get_thread(thread_id)
    assert thread.last_entry == 3 and thread.updated >= entries[2].created


async def test_an_append_can_set_the_status_in_the_same_transaction(store: Store) -> None:
    thread_id = await new_thread(store)
    await store.append(
        thread_id,
        NewEntry(kind=EntryKind.WAIT, payload={"for": "user"}),
        expected_last=0,
        status="waiting_for_user",
    )
    assert (await store.get_thread(thread_id)).status is ThreadStatus.WAITING_FOR_USER
    await store.append(thread_id, NewEntry(kind=EntryKind.INPUT, payload={"text": "1234"}), expected_last=1)
    assert (
        await store.get_thread(thread_id)
    ).status is ThreadStatus.WAITING_FOR_USER  # unchanged when not given
    with pytest.raises(StoreError, match="not a thread status"):
        await store.append(thread_id, turn("x"), expected_last=2, status="sleeping")
    assert (await store.get_thread(thread_id)).last_entry == 2


@pytest.mark.parametrize("expected_last", [0, 1, 3, 4])
async def test_a_stale_or_future_expected_last_conflicts_and_writes_nothing(
    store: Store, expected_last: int
) -> None:
    thread_id = await new_thread(store)
    for number in range(2):
        await store.append(thread_id, turn(str(number)), expected_last=number)
    with pytest.raises(
        AppendConflict, match=f"expected its last entry to be {expected_last}, but it is 2"
    ) as caught:
        await store.append(thread_id, turn("late"), turn("later"), expected_last=expected_last)
    assert (caught.value.thread_id, caught.value.actual_last) == (thread_id, 2)
    assert [e.payload["answer"] for e in await store.read_entries(thread_id)] == ["0", "1"]


async def test_two_writers_with_the_same_expected_last_exactly_one_wins(
    store: Store, same_store_again: Store
) -> None:
    thread_id = await new_thread(store)
    await store.append(thread_id, turn("first"), expected_last=0)
    results = await asyncio.gather(
        store.append(thread_id, turn("from A"), expected_last=1),
        same_store_again.append(thread_id, turn("from B"), expected_last=1),
        return_exceptions=True,
    )
    won = [result for result in results if not isinstance(result, BaseException)]
    lost = [result for result in results if isinstance(result, BaseException)]
    assert len(won) == 1 and len(lost) == 1
    assert isinstance(lost[0], AppendConflict) and lost[0].actual_last == 2
    entries = await store.read_entries(thread_id)
    assert [e.number for e in entries] == [1, 2]
    assert entries[1] == won[0].entries[0]


async def test_malformed_appends_are_refused_before_anything_is_written(store: Store) -> None:
    thread_id = await new_thread(store)
    with pytest.raises(StoreError, match="at least one entry"):
        await store.append(thread_id, expected_last=0)
    with pytest.raises(StoreError, match="entry 1 of the append is a dict, not a NewEntry"):
        await store.append(thread_id, {"kind": "turn"}, expected_last=0)  # type: ignore[arg-type]
    with pytest.raises(StoreError, match="entry kind 'Turn' must be a lowercase word"):
        await store.append(thread_id, NewEntry(kind="Turn", payload={}), expected_last=0)
    with pytest.raises(StoreError, match="entry kind '' must be"):
        await store.append(thread_id, NewEntry(kind="", payload={}), expected_last=0)
    with pytest.raises(StoreError, match="entry key '' must be None or a string of 1 to 500"):
        await store.append(thread_id, NewEntry(kind="call", payload={}, key=""), expected_last=0)
    with pytest.raises(StoreError, match="expected_last must be an integer of at least 0"):
        await store.append(thread_id, turn("a"), expected_last=-1)
    with pytest.raises(StoreError, match="expected_last must be an integer"):
        await store.append(thread_id, turn("a"), expected_last=True)
    assert (await store.get_thread(thread_id)).last_entry == 0


async def test_new_kinds_need_no_registration(store: Store) -> None:
    thread_id = await new_thread(store)
    done = await store.append(thread_id, NewEntry(kind="trace.step:v2", payload={"x": 1}), expected_last=0)
    assert done.entries[0].kind == "trace.step:v2"
    assert "trace.step:v2" not in EntryKind.KNOWN and {"turn", "call", "message", "wait"} <= EntryKind.KNOWN


# --- exact JSON --------------------------------------------------------------------------------------------


async def test_json_values_come_back_exactly(store: Store) -> None:
    thread_id = await new_thread(store)
    payload = {
        "z": "last key first",
        "answer": 'Ünïcödé ✓ 日本語 \U0001f600 \x00 nul and \\ backslash "quoted"\n',
        "big": 2**80,
        "negative": -7,
        "float": 0.1,
        "tiny": 5e-324,
        "huge": 1.7976931348623157e308,
        "flags": [True, False, None],
        "nested": {"a": [[], {}, [{"b": [1, [2, [3]]]}]]},
        "": "empty key",
    }
    await store.append(thread_id, NewEntry(kind="turn", payload=payload), expected_last=0)
    (entry,) = await store.read_entries(thread_id)
    assert entry.payload == payload
    assert list(entry.payload) == list(payload)  # key order is kept
    assert type(entry.payload["big"]) is int and type(entry.payload["float"]) is float


@pytest.mark.parametrize(
    ("value", "where", "reason"),
    [
        (math.nan, r"\['v'\]", "nan is not a JSON number"),
        (-math.inf, r"\['v'\]", "-inf is not a JSON number"),
        ((1, 2), r"\['v'\]", "a tuple is not JSON; pass a list"),
        ({1, 2}, r"\['v'\]", "a set is not JSON"),
        (b"bytes", r"\['v'\]", "a bytes is not JSON"),
        (datetime(2026, 1, 1), r"\['v'\]", "a datetime is not JSON"),
        ({1: "int key"}, r"\['v'\]", "has the key 1, a int; JSON object keys are strings"),
        ({"ok": [0, {"deep": object()}]}, r"\['v'\]\['ok'\]\[1\]\['deep'\]", "a object is not JSON"),
        (Color.RED, r"\['v'\]", "a Color \\(a subclass of str\\) would be read back as a plain str"),
        ("bad \ud800 surrogate", r"\['v'\]", "the string holds an unpaired surrogate"),
        ({"\udc80": 1}, r"\['v'\]", "has the key .*, which is not valid Unicode"),
    ],
)
async def test_values_that_are_not_json_are_refused_with_their_path(
    store: Store, value: object, where: str, reason: str
) -> None:
    thread_id = await new_thread(store)
    with pytest.raises(NotJSON, match=rf"^entry 1 payload{where}: {reason}"):
        await store.append(thread_id, NewEntry(kind="turn", payload={"v": value}), expected_last=0)
    with pytest.raises(NotJSON, match=rf"^snapshot state at entry 1{where}: {reason}"):
        await store.put_snapshot(thread_id, at=1, state={"v": value})
    assert (await store.get_thread(thread_id)).last_entry == 0


async def test_payloads_must_be_objects_and_nest_finitely(store: Store) -> None:
    thread_id = await new_thread(store)
    with pytest.raises(NotJSON, match=r"entry 1 payload: must be a JSON object .* not a list"):
        await store.append(thread_id, NewEntry(kind="turn", payload=[1]), expected_last=0)  # type: ignore[arg-type]
    loop: dict[str, object] = {}
    loop["self"] = loop
    with pytest.raises(NotJSON, match="more than 400 levels deep \\(or contains itself\\)"):
        await store.append(thread_id, NewEntry(kind="turn", payload=loop), expected_last=0)
    deep: object = "leaf"
    for _ in range(399):
        deep = [deep]
    await store.append(thread_id, NewEntry(kind="turn", payload={"deep": deep}), expected_last=0)
    assert (await store.read_entries(thread_id))[0].payload == {"deep": deep}


# --- idempotency keys -------------------------------------------------------------------------------------


async def test_keys_are_unique_in_a_thread_and_findable(store: Store) -> None:
    thread_id = await new_thread(store)
    other_id = await new_thread(store, "other")
    key = call_key(thread_id, 1)
    await store.append(thread_id, NewEntry(kind="call", payload={"result": 1}, key=key), expected_last=0)
    await store.append(other_id, NewEntry(kind="call", payload={"result": 9}, key=key), expected_last=0)
    found = await store.find_entry(thread_id, key)
    assert found is not None and (found.number, found.payload) == (1, {"result": 1})
    assert await store.find_entry(thread_id, "never") is None

    with pytest.raises(
        DuplicateKey, match=r"an entry with key 't#1' is already logged \(entry 1\)"
    ) as caught:
        await store.append(
            thread_id, turn("fine"), NewEntry(kind="call", payload={"result": 2}, key=key), expected_last=1
        )
    assert caught.value.number == 1
    with pytest.raises(StoreError, match="share the key 'k'"):
        await store.append(
            thread_id,
            NewEntry(kind="call", payload={}, key="k"),
            NewEntry(kind="call", payload={}, key="k"),
            expected_last=1,
        )
    with pytest.raises(StoreError, match="needs a key"):
        await store.find_entry(thread_id, None)  # type: ignore[arg-type]
    assert (await store.get_thread(thread_id)).last_entry == 1


async def test_a_fork_keeps_the_keys_of_the_entries_it_copies(store: Store) -> None:
    thread_id = await new_thread(store)
    await store.append(thread_id, NewEntry(kind="call", payload={"r": 1}, key="k1"), expected_last=0)
    await store.append(thread_id, NewEntry(kind="call", payload={"r": 2}, key="k2"), expected_last=1)
    fork = await store.fork_thread(thread_id, at=1)
    assert (await store.find_entry(fork.id, "k1")).payload == {"r": 1}  # type: ignore[union-attr]
    assert await store.find_entry(fork.id, "k2") is None
    await store.append(fork.id, NewEntry(kind="call", payload={"r": 3}, key="k2"), expected_last=1)
    with pytest.raises(DuplicateKey):
        await store.append(fork.id, NewEntry(kind="call", payload={}, key="k1"), expected_last=2)


# --- reading ----------------------------------------------------------------------------------------------


async def test_read_entries_by_range(store: Store) -> None:
    thread_id = await new_thread(store)
    for number in range(5):
        await store.append(thread_id, turn(str(number + 1)), expected_last=number)

    async def answers(**bounds: int) -> list[str]:
        return [e.payload["answer"] for e in await store.read_entries(thread_id, **bounds)]

    assert await answers() == ["1", "2", "3", "4", "5"]
    assert await answers(first=2, last=4) == ["2", "3", "4"]
    assert await answers(first=4) == ["4", "5"]
    assert await answers(last=1) == ["1"]
    assert await answers(first=5, last=9) == ["5"]
    assert await answers(first=6) == []
    assert await answers(first=3, last=2) == []
    assert await answers(last=0) == []
    with pytest.raises(StoreError, match="first must be an integer of at least 1"):
        await store.read_entries(thread_id, first=0)

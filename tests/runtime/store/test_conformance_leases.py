"""Conformance, part 4: thread leases (who runs a thread's call, by the store's clock), counting threads by
status, listing by age (what `pal threads prune` reads), and the readiness probe. Every test runs against
every store of conftest.py."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from runtime.store import Lease, Store, StoreError, ThreadNotFound, ThreadStatus
from tests.runtime.store.conftest import PROGRAM

pytestmark = pytest.mark.anyio


async def test_a_lease_is_held_by_one_owner_until_released(store: Store, same_store_again: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t")
    first = await store.take_lease("t", "server-a", seconds=60)
    assert (first.owner, first.held) == ("server-a", True) and 59 < first.expires_in <= 60
    refused = await same_store_again.take_lease("t", "server-b", seconds=60)
    assert (refused.owner, refused.held) == ("server-a", False) and 0 < refused.expires_in <= 60
    renewed = await store.take_lease("t", "server-a", seconds=30)
    assert renewed.held and renewed.expires_in <= 30  # renewing sets the new term
    await same_store_again.release_lease("t", "server-b")  # not b's: nothing happens
    assert not (await same_store_again.take_lease("t", "server-b", seconds=60)).held
    await store.release_lease("t", "server-a")
    assert (await same_store_again.take_lease("t", "server-b", seconds=60)).held


async def test_a_lapsed_lease_is_taken_over(store: Store, same_store_again: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="t")
    assert (await store.take_lease("t", "dead-server", seconds=0.000001)).held  # lapses at once
    taken = await same_store_again.take_lease("t", "survivor", seconds=60)
    assert taken == Lease(owner="survivor", expires_in=taken.expires_in, held=True)


async def test_leases_belong_to_threads(store: Store) -> None:
    with pytest.raises(ThreadNotFound):
        await store.take_lease("nowhere", "a", seconds=1)
    await store.create_thread(PROGRAM, thread_id="t")
    for seconds in (0, -1, float("inf"), float("nan"), True):
        with pytest.raises(StoreError, match="positive number of seconds"):
            await store.take_lease("t", "a", seconds=seconds)
    await store.take_lease("t", "a", seconds=60)
    await store.delete_thread("t")  # its lease goes with it
    await store.create_thread(PROGRAM, thread_id="t")
    assert (await store.take_lease("t", "b", seconds=60)).held


async def test_threads_are_counted_by_status(store: Store) -> None:
    assert await store.count_threads() == {}
    for name in ("a", "b", "c"):
        await store.create_thread(PROGRAM, thread_id=name)
    await store.update_thread("c", status=ThreadStatus.FINISHED)
    assert await store.count_threads() == {ThreadStatus.RUNNING: 2, ThreadStatus.FINISHED: 1}


async def test_threads_are_listed_by_age(store: Store) -> None:
    await store.create_thread(PROGRAM, thread_id="old")
    cutoff = datetime.now(UTC) + timedelta(seconds=1)  # after "old" was written, by any clock near ours
    assert [t.id for t in await store.list_threads(updated_before=cutoff)] == ["old"]
    assert await store.list_threads(updated_before=cutoff - timedelta(days=1)) == []
    assert await store.list_threads(updated_before=cutoff, status="finished") == []
    with pytest.raises(StoreError, match="aware datetime"):
        await store.list_threads(updated_before=datetime(2026, 1, 1))


async def test_a_store_that_answers_passes_the_readiness_probe(store: Store) -> None:
    await store.ping()

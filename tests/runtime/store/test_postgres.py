"""What only the Postgres store promises: the schema is created once however many processes start together,
a newer schema is refused, and a connection the server dropped is opened again on the next call."""

from __future__ import annotations

import anyio
import pytest

from runtime.store import FormatError, NewEntry, StoreUnavailable, open_store
from runtime.store.postgres import SCHEMA_VERSION
from tests.runtime.store.conftest import PROGRAM

pytestmark = pytest.mark.anyio


async def test_stores_opening_together_create_the_schema_once(postgres_url: str) -> None:
    stores = [open_store(postgres_url) for _ in range(8)]
    try:
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                for store in stores:
                    group.start_soon(store.open)
        await stores[0].create_thread(PROGRAM, thread_id="t")
        assert (await stores[7].get_thread("t")).program == PROGRAM
    finally:
        for store in stores:
            await store.close()
    import psycopg

    async with await psycopg.AsyncConnection.connect(postgres_url) as connection:
        rows = await (await connection.execute("SELECT key, value FROM pal_store_meta")).fetchall()
    assert rows == [("schema_version", str(SCHEMA_VERSION))]


async def test_a_newer_schema_is_refused(postgres_url: str) -> None:
    async with open_store(postgres_url):
        pass
    import psycopg

    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as connection:
        await connection.execute("UPDATE pal_store_meta SET value = '7' WHERE key = 'schema_version'")
    with pytest.raises(FormatError, match="schema is version 7, written by a newer pal-bridge"):
        async with open_store(postgres_url):
            pass


async def test_a_dropped_connection_is_reopened_on_the_next_call(postgres_url: str) -> None:
    import psycopg

    async with open_store(postgres_url) as store:
        await store.create_thread(PROGRAM, thread_id="t")
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as admin:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            )
        with pytest.raises(StoreUnavailable, match="Postgres error"):  # the call in flight fails, clearly
            await store.append("t", NewEntry(kind="turn", payload={}), expected_last=0)
        done = await store.append(
            "t", NewEntry(kind="turn", payload={}), expected_last=0
        )  # nothing was written
        assert done.last == 1


async def test_an_unreachable_server_is_a_clear_error() -> None:
    pytest.importorskip("psycopg", reason="psycopg 3 is not installed")
    with pytest.raises(
        StoreUnavailable,
        match=r"postgresql://pal@127.0.0.1:1/x\?connect_timeout=5: cannot connect: .*refused",
    ):
        async with open_store("postgresql://pal@127.0.0.1:1/x?connect_timeout=5"):
            pass

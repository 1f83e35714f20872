"""The stores' own format: golden files of format 1 stay loadable, older versions are upgraded step by step,
newer ones are refused with a clear error. docs/durability.md describes the format."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from runtime.store import (
    FORMAT_VERSION,
    ForkPoint,
    FormatError,
    NewEntry,
    ProgramRef,
    Store,
    ThreadStatus,
    open_store,
    read_thread_file,
    thread_document,
)
from runtime.store import format as fmt
from runtime.store.sqlite import SCHEMA_VERSION
from tests.conftest import FIXTURES

GOLDEN = FIXTURES / "store"
THREAD_V1 = GOLDEN / "thread-v1.json"
SQLITE_V1 = GOLDEN / "sqlite-v1.sql"
GREETING = (
    "# Greeting\n## Greeting() -> None\n### Triggers\nT1:BGN At the beginning\n### Steps\n"
    "01:QUE Greet the user and ask for their order\n02:YLD user\n03:RET\n"
)

pytestmark = pytest.mark.anyio


def fmt_entry() -> NewEntry:
    return NewEntry(kind="input", payload={"text": "1234"})


def test_there_is_a_golden_file_for_the_current_format() -> None:
    assert (GOLDEN / f"thread-v{FORMAT_VERSION}.json").is_file()
    assert (GOLDEN / f"sqlite-v{SCHEMA_VERSION}.sql").is_file()


def test_the_v1_thread_document_reads_as_written() -> None:
    read = read_thread_file(THREAD_V1)
    thread = read.thread
    assert thread.id == "golden-v1"
    assert thread.program == ProgramRef.of_source(GREETING, path="/home/ana/programs/greeting.pal")
    assert thread.status is ThreadStatus.WAITING_FOR_USER
    assert thread.created == datetime(2026, 1, 15, 9, 30, tzinfo=UTC)
    assert thread.updated == datetime(2026, 1, 15, 9, 30, 4, 250001, tzinfo=UTC)
    assert thread.metadata["labels"] == ["support", "ünïcode ✓"]
    assert (thread.last_entry, thread.snapshot_at, thread.forked_from) == (5, 3, None)
    assert [(e.number, e.kind, e.key) for e in read.entries] == [
        (1, "input", None),
        (2, "turn", None),
        (3, "call", "golden-v1#3"),
        (4, "message", None),
        (5, "wait", None),
    ]
    assert read.entries[1].payload["answer"].startswith("recap – the run just started\n")
    assert read.entries[2].payload["result"]["big"] == 12345678901234567890
    assert [s.at for s in read.snapshots] == [3]
    assert read.snapshots[0].state["agents"]["1000"]["vars"] == {"order": "1234"}


def test_the_current_writer_still_writes_the_v1_document_byte_for_byte() -> None:
    """Catches an accidental change of the format: a deliberate one bumps FORMAT_VERSION and adds a golden."""
    read = read_thread_file(THREAD_V1)
    written = json.dumps(
        thread_document(read.thread, read.entries, read.snapshots), indent=2, ensure_ascii=False
    )
    assert written + "\n" == THREAD_V1.read_text(encoding="utf-8")


async def test_every_store_imports_the_v1_document_and_exports_it_unchanged(store: Store) -> None:
    golden = json.loads(THREAD_V1.read_text(encoding="utf-8"))
    await store.import_thread(golden)
    assert await store.export_thread("golden-v1") == golden
    loaded = await store.load("golden-v1")
    assert loaded.snapshot.at == 3 and [e.number for e in loaded.entries] == [4, 5]  # type: ignore[union-attr]
    await store.append("golden-v1", fmt_entry(), expected_last=5)  # the imported thread carries on
    assert (await store.get_thread("golden-v1")).last_entry == 6


@pytest.mark.parametrize("dump", [SQLITE_V1, GOLDEN / "sqlite-v2.sql"], ids=["schema-1", "schema-2"])
async def test_a_sqlite_store_of_every_schema_version_opens_and_reads(tmp_path: Path, dump: Path) -> None:
    database = tmp_path / "runs.db"
    with sqlite3.connect(database) as connection:
        connection.executescript(dump.read_text(encoding="utf-8"))
    connection.close()
    golden = json.loads(THREAD_V1.read_text(encoding="utf-8"))
    async with open_store(f"sqlite:///{database}") as store:
        assert await store.export_thread("golden-v1") == golden
        fork = await store.get_thread("golden-v1-fork")
        assert fork.forked_from == ForkPoint(thread_id="golden-v1", entry=4)
        assert (fork.status, fork.metadata, fork.last_entry) == (
            ThreadStatus.INTERRUPTED,
            {"why": "try another answer"},
            4,
        )
        assert await store.read_entries("golden-v1-fork") == await store.read_entries("golden-v1", last=4)
        assert (await store.find_entry("golden-v1-fork", "golden-v1#3")).number == 3  # type: ignore[union-attr]
        assert [t.id for t in await store.list_threads(status="waiting_for_user")] == ["golden-v1"]


# --- versions --------------------------------------------------------------------------------------------


def test_upgrades_run_step_by_step_up_to_the_current_version() -> None:
    """The loader's chain, with the steps a format 2 and 3 would add (format 1 has none yet)."""
    steps = {
        "entry": {
            1: lambda doc: {**doc, "payload": {"text": doc["payload"]["answer"]}},
            2: lambda doc: {**doc, "payload": {**doc["payload"], "v3": True}},
        }
    }
    v1 = {"number": 1, "kind": "turn", "key": None, "created": 0, "payload": {"answer": "hi"}}
    upgraded = fmt.upgrade("entry", 1, v1, where="entry 1", current=3, steps=steps)
    assert upgraded["payload"] == {"text": "hi", "v3": True}
    assert fmt.upgrade("entry", 3, upgraded, where="entry 1", current=3, steps=steps) == upgraded
    with pytest.raises(FormatError, match="entry 1: no upgrade of a snapshot from format 1 to 2"):
        fmt.upgrade("snapshot", 1, {}, where="entry 1", current=3, steps=steps)


@pytest.mark.parametrize("version", [0, -1, "1", None, 1.0])
def test_a_version_that_is_not_one_is_refused(version: object) -> None:
    with pytest.raises(FormatError, match="is not a version"):
        fmt.upgrade("entry", version, {}, where="entry 1")


async def test_rows_of_a_newer_format_are_refused_not_guessed(tmp_path: Path) -> None:
    database = tmp_path / "runs.db"
    async with open_store(f"sqlite:///{database}") as store:
        await store.create_thread(ProgramRef.of_source(GREETING), thread_id="t")
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE pal_threads SET format = 2")
    connection.close()
    async with open_store(f"sqlite:///{database}") as store:
        with pytest.raises(
            FormatError, match="thread 't': written in format 2 by a newer pal-bridge; this one reads"
        ):
            await store.get_thread("t")


async def test_a_newer_schema_is_refused_when_the_store_opens(tmp_path: Path) -> None:
    database = tmp_path / "runs.db"
    async with open_store(f"sqlite:///{database}"):
        pass
    with sqlite3.connect(database) as connection:
        connection.execute("UPDATE pal_store_meta SET value = '99' WHERE key = 'schema_version'")
    connection.close()
    with pytest.raises(FormatError, match="schema is version 99, written by a newer pal-bridge"):
        async with open_store(f"sqlite:///{database}"):
            pass


def test_a_damaged_thread_file_names_the_line_and_column(tmp_path: Path) -> None:
    broken = tmp_path / "thread.json"
    broken.write_text('{\n  "format": "pal-bridge/thread",\n  "version": 1,,\n}\n', encoding="utf-8")
    with pytest.raises(FormatError, match=rf"^{broken}:3:16: not JSON: Expecting property name"):
        read_thread_file(broken)
    broken.write_text('{"format": "pal-bridge/thread", "version": 2}', encoding="utf-8")
    with pytest.raises(FormatError, match=rf"^{broken}: document: missing entries, snapshots, thread"):
        read_thread_file(broken)

"""Real concurrency on the database stores: 50 writers on one SQLite file (as threads of one process and as
50 processes), and two processes on one Postgres database, appending to threads of their own and to one
shared thread with the optimistic check. Nothing may fail with a lock error, and every entry number of the
shared thread must be won by exactly one writer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from runtime.store import Store, open_store
from tests.runtime.store.append_worker import prepare, write

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[3]
WRITERS = 50
OWN = 20
SHARED = 4
TIMEOUT = 600  # seconds for a whole test: generous, CI is a shared 2-core machine


async def check_threads(
    store: Store, results: list[dict[str, Any]], *, writers: int, own: int, shared: int
) -> None:
    """What every concurrency test proves once the writers are done."""
    for writer in range(writers):
        entries = await store.read_entries(f"own-{writer}")
        assert [(e.number, e.payload["index"]) for e in entries] == [(i + 1, i) for i in range(own)]
    total = writers * shared
    entries = await store.read_entries("shared")
    assert [e.number for e in entries] == list(range(1, total + 1))  # no gap, no number twice
    written = sorted((e.payload["writer"], e.payload["index"]) for e in entries)
    assert written == [(w, i) for w in range(writers) for i in range(shared)]  # each append exactly once
    for writer in range(writers):  # each writer's entries in its own order
        indexes = [e.payload["index"] for e in entries if e.payload["writer"] == writer]
        assert indexes == list(range(shared))
    won = sorted(number for result in results for number in result["won"])
    assert won == list(range(1, total + 1))  # the numbers the writers were told they won: a partition
    assert (await store.get_thread("shared")).last_entry == total


async def test_fifty_sqlite_connections_in_one_process(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    stores = [open_store(url) for _ in range(WRITERS)]
    try:
        with anyio.fail_after(TIMEOUT):
            async with anyio.create_task_group() as group:  # 50 first opens of one new file at once
                for store in stores:
                    group.start_soon(store.open)
            for writer, store in enumerate(stores):
                await prepare(store, writer)
            results: list[dict[str, Any]] = [{}] * WRITERS

            async def run(writer: int) -> None:
                results[writer] = await write(stores[writer], writer, OWN, SHARED)

            async with anyio.create_task_group() as group:
                for writer in range(WRITERS):
                    group.start_soon(run, writer)
            await check_threads(stores[0], results, writers=WRITERS, own=OWN, shared=SHARED)
    finally:
        for store in stores:
            await store.close()


@pytest.mark.slow
async def test_fifty_processes_on_one_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"  # the file does not exist yet: the workers race to create it
    results = await run_workers(url, tmp_path, writers=WRITERS, own=OWN, shared=SHARED)
    async with open_store(url) as store:
        await check_threads(store, results, writers=WRITERS, own=OWN, shared=SHARED)


@pytest.mark.slow
async def test_two_processes_on_one_postgres_database(postgres_url: str, tmp_path: Path) -> None:
    results = await run_workers(postgres_url, tmp_path, writers=2, own=50, shared=150)
    async with open_store(postgres_url) as store:
        await check_threads(store, results, writers=2, own=50, shared=150)


async def run_workers(url: str, logs: Path, *, writers: int, own: int, shared: int) -> list[dict[str, Any]]:
    """Start the writer processes, let them all go at once, and collect what each one reports."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    env = {**os.environ, "PYTHONPATH": path}
    command = [sys.executable, "-m", "tests.runtime.store.append_worker", url]
    workers: list[tuple[Process, BufferedByteReceiveStream, Path]] = []
    try:
        with anyio.fail_after(TIMEOUT):
            for writer in range(writers):
                log = logs / f"writer-{writer}.log"
                with log.open("wb") as errors:
                    process = await anyio.open_process(
                        [*command, str(writer), str(own), str(shared)],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=errors,
                        cwd=ROOT,
                        env=env,
                    )
                assert process.stdout is not None
                workers.append((process, BufferedByteReceiveStream(process.stdout), log))
            for _process, output, log in workers:
                assert await read_line(output, log) == "ready"
            for process, _output, _log in workers:
                assert process.stdin is not None
                await process.stdin.send(b"go\n")
            results = [json.loads(await read_line(output, log)) for _process, output, log in workers]
            for process, _output, log in workers:
                assert await process.wait() == 0, log.read_text()
            return results
    finally:
        for process, _output, _log in workers:
            if process.returncode is None:
                process.kill()
                with anyio.move_on_after(30, shield=True):
                    await process.wait()
            await process.aclose()


async def read_line(output: BufferedByteReceiveStream, log: Path) -> str:
    try:
        return (await output.receive_until(b"\n", 1 << 20)).decode()
    except (anyio.IncompleteRead, anyio.EndOfStream):
        raise AssertionError(f"a writer ended early:\n{log.read_text()}") from None

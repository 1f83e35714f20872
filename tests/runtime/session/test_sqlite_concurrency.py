"""Many runs on one SQLite file (issue 17): 50 concurrent runs, each with a connection of its own, and
ten `pal run` processes at once, write their threads with no "database is locked" and lose nothing."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from runtime.api import run_program
from runtime.store import ThreadStatus, open_store
from tests.runtime.session.processes import DRIVER, SHOP, SHOP_ANSWERS, SHOP_MESSAGES, TIMEOUT, environment
from tests.runtime.session.programs import SHOP_PROGRAM, shop_model

RUNS = 50
PROCESSES = 10


@pytest.mark.anyio
async def test_fifty_concurrent_runs_on_one_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"

    async def one(number: int) -> object:
        # Its own store object (connection and worker thread), as a run in another process would have.
        return await run_program(
            SHOP_PROGRAM, model=shop_model(), store=url, thread=f"run-{number}", messages=list(SHOP_MESSAGES)
        )

    with anyio.fail_after(120):
        results = await asyncio.gather(*(one(number) for number in range(RUNS)))
    assert [result.status for result in results] == ["exit"] * RUNS, [
        r.reason for r in results if r.status != "exit"
    ]
    async with open_store(url) as store:
        threads = await store.list_threads()
        logs = {
            thread.id: [(e.kind, e.payload) for e in await store.read_entries(thread.id)]
            for thread in threads
        }
    assert len(threads) == RUNS and all(thread.status is ThreadStatus.FINISHED for thread in threads)
    assert len({str(log) for log in logs.values()}) == 1  # every run wrote the same eleven entries
    assert len(next(iter(logs.values()))) == 11


@pytest.mark.slow
def test_ten_pal_run_processes_on_one_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    env = environment(tmp_path, PAL_TEST_MODEL_LOG=str(tmp_path / "model.jsonl"))
    processes = [
        subprocess.Popen(
            [sys.executable, "-P", str(DRIVER), "run", str(SHOP), "--model", f"logged:{SHOP_ANSWERS}"]
            + ["--thread", f"p{number}", "--store", url, "--create-store", "--no-input", "--quiet"]
            + [argument for message in SHOP_MESSAGES for argument in ("--message", message)],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for number in range(PROCESSES)
    ]
    outcomes = [(process.communicate(timeout=TIMEOUT), process.returncode) for process in processes]
    for (_out, err), code in outcomes:
        assert code == 0, err
        assert "locked" not in err
    finished = asyncio.run(_finished(url))
    assert finished == {f"p{number}" for number in range(PROCESSES)}


async def _finished(url: str) -> set[str]:
    async with open_store(url) as store:
        return {thread.id for thread in await store.list_threads(status="finished")}

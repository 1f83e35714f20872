"""Tasks outlive a server (issue 26, "Done when"): two `pal a2a serve` processes on one Postgres store. A
task started on one finishes on the other after the first is killed with SIGKILL, its committed model
turn not asked again; 200 concurrent tasks over the two servers, none lost or duplicated; a task waiting
for input is answered through the other server."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from a2a.types import a2a_pb2 as pb
from anyio.abc import Process
from anyio.streams.text import TextReceiveStream

from runtime.store import open_store
from tests.exporters.a2a.helpers import A2A_FIXTURES, DESK, artifact_value, collect, over_http, skill, text
from tests.runtime.store.postgres_cluster import PostgresCluster, running_cluster

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[3]
PAL = [sys.executable, "-m", "runtime.cli"]
DOUBLER = A2A_FIXTURES / "doubler.pal"
ANSWERS = A2A_FIXTURES / "doubler-answers.jsonl"
LEASE = 4.0


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresCluster]:
    with running_cluster() as cluster:
        yield cluster


class Served:
    """A `pal a2a serve` process the test started (and stops, by its pid)."""

    def __init__(self, process: Process, url: str, stderr: list[str]) -> None:
        self.process = process
        self.url = url
        self.stderr = stderr

    async def read_until(self, marker: str) -> None:
        assert self.process.stderr is not None
        async for chunk in TextReceiveStream(self.process.stderr):
            self.stderr.append(chunk)
            if marker in "".join(self.stderr):
                return
        raise AssertionError(f"the server ended before writing {marker!r}:\n{''.join(self.stderr)}")


@asynccontextmanager
async def serving(program: Path, store: str, env: dict[str, str], *extra: str) -> AsyncIterator[Served]:
    command = [
        *PAL,
        "a2a",
        "serve",
        str(program),
        "--port",
        "0",
        "--store",
        store,
        "--lease",
        str(LEASE),
        *extra,
    ]
    process = await anyio.open_process(command, cwd=REPO, env=env)
    try:
        assert process.stderr is not None
        seen: list[str] = []
        url = None
        async for chunk in TextReceiveStream(process.stderr):
            seen.append(chunk)
            for line in "".join(seen).splitlines():
                if line.startswith("pal a2a: serving") and " at " in line:
                    url = line.split(" at ", 1)[1].split(";", 1)[0]
            if url is not None:
                break
        if url is None:
            raise AssertionError(f"the server ended without listening; it wrote:\n{''.join(seen)}")
        yield Served(process, url, seen)
    finally:
        if process.returncode is None:
            process.terminate()
            with anyio.move_on_after(30):
                await process.wait()
            if process.returncode is None:
                process.kill()
                await process.wait()


def database(cluster: PostgresCluster, name: str) -> str:
    """The URL of a new database `name` on the cluster (each test's tasks apart from the others')."""
    import psycopg

    with psycopg.connect(cluster.url(), autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    return cluster.url(name)


def _env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "PAL_TEST_HOLD_MARKER": str(tmp_path / "held")}


async def test_a_task_finishes_on_the_survivor_after_its_server_is_killed(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    store = database(postgres, "killed")
    env = _env(tmp_path)
    model = ["--model", f"scripted:{ANSWERS}"]
    with anyio.fail_after(300):
        async with (
            serving(DOUBLER, store, env, *model) as doomed,
            serving(DOUBLER, store, env, *model) as survivor,
        ):
            async with over_http(doomed.url, streaming=False) as client:
                [started] = await collect(client, skill("Double", n=21), return_immediately=True)
            task_id = started.task.id
            await doomed.read_until("HOLDING")  # the model turn is committed, the Python call is running
            os.kill(doomed.process.pid, signal.SIGKILL)
            await doomed.process.wait()
            killed = time.monotonic()
            async with over_http(survivor.url) as client:
                events = [event async for event in client.subscribe(pb.SubscribeToTaskRequest(id=task_id))]
                finished = await client.get_task(pb.GetTaskRequest(id=task_id))
            waited = time.monotonic() - killed
    assert pb.TaskState.Name(finished.status.state) == "TASK_STATE_COMPLETED", finished.status
    assert artifact_value(finished) == 42
    assert events[-1].HasField("status_update")
    assert pb.TaskState.Name(events[-1].status_update.status.state) == "TASK_STATE_COMPLETED"
    # The survivor's scripted model has no answer left: had it asked the committed turn again, the task
    # would have failed. One turn, one result in the log; what the agent said is in the history once.
    async with open_store(store) as opened:
        entries = await opened.read_entries(task_id)
    assert [entry.kind for entry in entries].count("turn") == 1
    assert [entry.kind for entry in entries].count("result") == 1
    assert [message.parts[0].text for message in finished.history[1:]] == ["Doubling 21 for you."]
    assert waited < LEASE + 60, waited  # the lease, then one call; far below a call's 300 s wait


async def test_two_hundred_concurrent_tasks_over_two_servers_none_lost_or_duplicated(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    store = database(postgres, "concurrent")
    env = _env(tmp_path)
    (tmp_path / "held").write_text("no holding here")
    answers: dict[int, pb.Task] = {}
    with anyio.fail_after(600):
        async with (
            serving(DOUBLER, store, env) as first,
            serving(DOUBLER, store, env) as second,
            over_http(first.url, streaming=False) as one,
            over_http(second.url, streaming=False) as two,
        ):
            limiter = anyio.CapacityLimiter(200)

            async def send(number: int) -> None:
                async with limiter:
                    client = one if number % 2 else two
                    [event] = await collect(client, skill("Add", a=number, b=1000))
                    answers[number] = event.task

            async with anyio.create_task_group() as group:
                for number in range(200):
                    group.start_soon(send, number)
            listed_one = await one.list_tasks(pb.ListTasksRequest(page_size=100))
            listed_two = await two.list_tasks(pb.ListTasksRequest(status=pb.TaskState.TASK_STATE_COMPLETED))
    assert sorted(answers) == list(range(200))
    assert {pb.TaskState.Name(task.status.state) for task in answers.values()} == {"TASK_STATE_COMPLETED"}
    assert all(artifact_value(task) == number + 1000 for number, task in answers.items())
    ids = {task.id for task in answers.values()}
    assert len(ids) == 200
    assert listed_one.total_size == 200 and listed_two.total_size == 200
    async with open_store(store) as opened:
        for task_id in ids:
            kinds = [entry.kind for entry in await opened.read_entries(task_id)]
            assert kinds.count("result") == 1 and kinds.count("input") == 1, (task_id, kinds)


async def test_a_task_waiting_for_input_is_answered_through_the_other_server(
    tmp_path: Path, postgres: PostgresCluster
) -> None:
    store = database(postgres, "answered")
    env = _env(tmp_path)
    with anyio.fail_after(300):
        async with serving(DESK, store, env) as first, serving(DESK, store, env) as second:
            async with over_http(first.url, streaming=False) as one:
                [asked] = await collect(one, skill("AskName"))
            async with over_http(second.url, streaming=False) as two:
                [answered] = await collect(two, text("Ada", task_id=asked.task.id))
            async with over_http(first.url, streaming=False) as one:
                seen_by_first = await one.get_task(pb.GetTaskRequest(id=asked.task.id))
    assert pb.TaskState.Name(asked.task.status.state) == "TASK_STATE_INPUT_REQUIRED"
    assert pb.TaskState.Name(answered.task.status.state) == "TASK_STATE_COMPLETED"
    assert artifact_value(answered.task) == "Hi Ada"
    assert artifact_value(seen_by_first) == "Hi Ada"

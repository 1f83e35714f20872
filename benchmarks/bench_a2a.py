"""A2A serving: the round trip of one `SendMessage` to a no-model playbook through `pal a2a serve`, against a
bare `a2a-sdk` server (the SDK's DefaultRequestHandler, InMemoryTaskStore and JSON-RPC routes) whose
executor returns the same result, both over loopback HTTP in a process of their own, one SDK client each,
measured in the same run. Goal (issue 26): bridge median <= 1.3 x bare median.

The bridge does more per task by design: every task is a thread of the store (made, its call begun and
ended, its state snapshotted), and the call runs with fresh agent state in a run of its own, its arguments
checked at the door. The round trip is measured with the memory store (the bare server keeps its tasks in
memory too), and again with SQLite; then tasks/s with 20 clients at once, with SQLite and, when PostgreSQL
is installed, Postgres (a throwaway local cluster). Requests to the servers alternate in rounds, so a busy
machine slows them alike.

Run: python benchmarks/bench_a2a.py [--calls N] [--rounds N] [--tasks N] [--clients N]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

GOAL = 1.3

PROGRAM = '''# Calculator
Adds numbers.

```python
@playbook(public=True)
async def Add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b
```
'''


# --- the bare SDK server (run with --bare-server PORT_FILE) ---------------------------------------------------


def bare_server() -> None:
    """An a2a-sdk server whose executor adds the two numbers of the message's data part: the baseline."""
    import uvicorn
    from a2a.helpers.proto_helpers import new_task_from_user_message
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.events import EventQueue
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import a2a_pb2 as pb
    from google.protobuf import struct_pb2
    from google.protobuf.json_format import MessageToDict, ParseDict
    from starlette.applications import Starlette

    from runtime.serving.http import listening_socket, socket_url

    class Adder(AgentExecutor):
        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            data = MessageToDict(context.message.parts[0].data)  # type: ignore[union-attr]
            arguments = data["arguments"]
            task = new_task_from_user_message(context.message)  # type: ignore[arg-type]
            task.id, task.context_id = context.task_id or task.id, context.context_id or task.context_id
            await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.start_work()
            result = ParseDict(int(arguments["a"]) + int(arguments["b"]), struct_pb2.Value())
            await updater.add_artifact(
                [pb.Part(data=result)], artifact_id="result", name="result", last_chunk=True
            )
            await updater.complete()

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            return None

    sock = listening_socket("127.0.0.1", 0)
    url = socket_url(sock, "/")
    card = pb.AgentCard(
        name="Calculator",
        description="Adds numbers.",
        version="1",
        supported_interfaces=[pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")],
        capabilities=pb.AgentCapabilities(streaming=True),
        default_input_modes=["application/json"],
        default_output_modes=["application/json"],
        skills=[pb.AgentSkill(id="Add", name="Add", description="Adds two integers.", tags=["math"])],
    )
    handler = DefaultRequestHandler(agent_executor=Adder(), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    print(f"bare a2a-sdk server: serving at {url}", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


# --- servers in processes of their own -------------------------------------------------------------------------


@asynccontextmanager
async def process_serving(command: list[str]) -> AsyncIterator[str]:
    """Start a server process, yield its URL (read from its stderr), stop it by its pid."""
    process = await asyncio.create_subprocess_exec(
        *command, cwd=REPO, stderr=asyncio.subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(REPO)}
    )
    assert process.stderr is not None
    url = None
    seen = []
    try:
        async with asyncio.timeout(120):
            while url is None:
                line = (await process.stderr.readline()).decode()
                if not line:
                    raise RuntimeError(f"the server ended without listening:\n{''.join(seen)}")
                seen.append(line)
                if " at http" in line:
                    url = "http" + line.split(" at http", 1)[1].split(";", 1)[0].strip()
        drain = asyncio.create_task(_drain(process.stderr))
        yield url
        drain.cancel()
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()


async def _drain(stream: asyncio.StreamReader) -> None:
    while await stream.readline():
        pass


def ours(program: Path, store: str) -> list[str]:
    return [sys.executable, "-m", "runtime.cli", "a2a", "serve", str(program), "--port", "0", "--store", store,
            "--create-store"]  # fmt: skip


def bare() -> list[str]:
    return [sys.executable, str(Path(__file__).resolve()), "--bare-server"]


# --- measuring --------------------------------------------------------------------------------------------------


def message(number: int) -> object:
    from a2a.types import a2a_pb2 as pb
    from google.protobuf import struct_pb2
    from google.protobuf.json_format import ParseDict

    body = ParseDict({"skill": "Add", "arguments": {"a": number, "b": 1}}, struct_pb2.Value())
    return pb.SendMessageRequest(
        message=pb.Message(message_id=f"m{number}", role=pb.Role.ROLE_USER, parts=[pb.Part(data=body)])
    )


@asynccontextmanager
async def client_of(url: str) -> AsyncIterator[object]:
    import httpx
    from a2a.client import ClientConfig, ClientFactory

    async with httpx.AsyncClient(timeout=httpx.Timeout(120.0)) as http:
        client = await ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create_from_url(url)
        try:
            yield client
        finally:
            await client.close()


async def send(client: object, number: int) -> None:
    from a2a.types import a2a_pb2 as pb

    async for event in client.send_message(message(number)):  # type: ignore[attr-defined]
        task = event.task
        if task.status.state != pb.TaskState.TASK_STATE_COMPLETED:
            raise RuntimeError(f"task {task.id} ended {pb.TaskState.Name(task.status.state)}: {task.status}")


async def round_trips(clients: dict[str, object], calls: int, rounds: int) -> dict[str, list[float]]:
    """Seconds of each SendMessage, per server, alternating the servers round by round."""
    times: dict[str, list[float]] = {name: [] for name in clients}
    for client in clients.values():  # warm up: imports, first runs, connections
        for number in range(5):
            await send(client, number)
    for _ in range(rounds):
        for name, client in clients.items():
            for number in range(calls):
                started = time.perf_counter()
                await send(client, number)
                times[name].append(time.perf_counter() - started)
    return times


async def throughput(url: str, tasks: int, parallel: int) -> float:
    """Tasks completed per second by `parallel` clients sending `tasks` SendMessage requests in all."""
    async with client_of(url) as client:
        await send(client, 0)
        queue: asyncio.Queue[int] = asyncio.Queue()
        for number in range(tasks):
            queue.put_nowait(number)

        async def worker() -> None:
            while not queue.empty():
                await send(client, queue.get_nowait())

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(parallel)))
        return tasks / (time.perf_counter() - started)


async def main(calls: int, rounds: int, tasks: int, parallel: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-a2a-") as folder:
        program = Path(folder) / "calculator.pal"
        program.write_text(PROGRAM, encoding="utf-8")
        sqlite = f"sqlite:///{Path(folder) / 'runs.db'}"
        async with (
            process_serving(bare()) as bare_url,
            process_serving(ours(program, "memory://")) as memory_url,
            process_serving(ours(program, sqlite)) as sqlite_url,
            client_of(bare_url) as bare_client,
            client_of(memory_url) as memory_client,
            client_of(sqlite_url) as sqlite_client,
        ):
            times = await round_trips(
                {"bare a2a-sdk (memory)": bare_client, "pal a2a serve (memory://)": memory_client,
                 "pal a2a serve (SQLite)": sqlite_client},
                calls, rounds,
            )  # fmt: skip
            rates = {
                "bare a2a-sdk (memory)": await throughput(bare_url, tasks, parallel),
                "pal a2a serve (SQLite)": await throughput(sqlite_url, tasks, parallel),
            }
        postgres = await _postgres_rate(program, tasks, parallel)
        if postgres is not None:
            rates["pal a2a serve (Postgres, local)"] = postgres
    base = statistics.median(times["bare a2a-sdk (memory)"])
    print(f"SendMessage round trip, loopback HTTP, {rounds} rounds x {calls} calls per server (median, p90):")
    for name, seconds in times.items():
        median = statistics.median(seconds)
        p90 = statistics.quantiles(seconds, n=10)[-1]
        ratio = median / base
        print(f"  {name:<28} {median * 1000:7.2f} ms  p90 {p90 * 1000:7.2f} ms  {ratio:5.2f} x bare")
    ratio = statistics.median(times["pal a2a serve (memory://)"]) / base
    verdict = "meets" if ratio <= GOAL else "misses"
    print(f"bridge (memory store) / bare: {ratio:.2f} x ({verdict} the goal of {GOAL} x)")
    print(f"tasks/s, {tasks} tasks from {parallel} clients at once:")
    for name, rate in rates.items():
        print(f"  {name:<32} {rate:8.1f} tasks/s")
    if postgres is None:
        print("  (Postgres left out: no PostgreSQL binaries or psycopg here)")


async def _postgres_rate(program: Path, tasks: int, parallel: int) -> float | None:
    try:
        import psycopg  # noqa: F401

        from tests.runtime.store.postgres_cluster import PostgresCluster, find_binaries
    except ImportError:
        return None
    binaries = find_binaries()
    if binaries is None:
        return None
    cluster = PostgresCluster(binaries, settings=())
    cluster.start()
    try:
        async with process_serving(ours(program, cluster.url())) as url:
            return await throughput(url, tasks, parallel)
    finally:
        cluster.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=50, help="calls per server per round (default 50)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds (default 5)")
    parser.add_argument("--tasks", type=int, default=200, help="tasks for the tasks/s figures (default 200)")
    parser.add_argument("--clients", type=int, default=20, help="clients at once for tasks/s (default 20)")
    parser.add_argument("--bare-server", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.bare_server:
        bare_server()
    else:
        asyncio.run(main(options.calls, options.rounds, options.tasks, options.clients))

"""A served PAL agent over loopback HTTP, with the SDK's own client (issue 26, "Done when"): streaming that
really streams, subscribing to a running task and canceling it from another client, the bearer token, the
Host/Origin checks the MCP server makes too, the operator endpoints, and `pal a2a serve` as a process whose
tasks `pal threads` shows."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from anyio.streams.text import TextReceiveStream

from exporters.a2a.server import A2AServer, serving_a2a
from mcp_bridge.server import PlaybookServer
from mcp_bridge.transports import serving_http
from tests.exporters.a2a.helpers import (
    DESK,
    artifact_value,
    collect,
    desk,
    over_http,
    said,
    skill,
    states,
    text,
)

pytestmark = pytest.mark.anyio

WAIT = 60
REPO = Path(__file__).resolve().parents[3]
PAL = [sys.executable, "-m", "runtime.cli"]


async def test_send_stream_get_and_list_over_http() -> None:
    async with A2AServer(desk()) as served, serving_a2a(served, port=0) as endpoint:
        with anyio.fail_after(WAIT):
            async with over_http(endpoint.url) as client:
                streamed = await collect(client, text("Ann"))
                got = await client.get_task(pb.GetTaskRequest(id=streamed[0].task.id))
            async with over_http(endpoint.url, streaming=False) as client:
                [added] = await collect(client, skill("Add", a=2, b=40))
                listed = await client.list_tasks(pb.ListTasksRequest())
    assert states(streamed)[0] == "TASK_STATE_SUBMITTED" and states(streamed)[-1] == "TASK_STATE_COMPLETED"
    assert said(streamed) == ["Hello Ann"]
    assert artifact_value(got) == "greeted Ann"
    assert [message.parts[0].text for message in got.history] == ["Ann", "Hello Ann"]
    assert artifact_value(added.task) == 42
    assert listed.total_size == 2


async def test_a_subscriber_follows_a_task_another_client_cancels() -> None:
    async with A2AServer(desk()) as served, serving_a2a(served, port=0) as endpoint:
        with anyio.fail_after(WAIT):
            async with over_http(endpoint.url) as first, over_http(endpoint.url) as second:
                events = first.send_message(pb.SendMessageRequest(message=skill("Hold", label="h")))
                seen: list[pb.StreamResponse] = []
                async for event in events:
                    seen.append(event)
                    if said(seen) == ["holding h"]:
                        break
                task_id = seen[0].task.id
                followed: list[pb.StreamResponse] = []
                async with anyio.create_task_group() as group:

                    async def follow() -> None:
                        async for event in second.subscribe(pb.SubscribeToTaskRequest(id=task_id)):
                            followed.append(event)
                            if len(followed) == 1:
                                await first.cancel_task(pb.CancelTaskRequest(id=task_id))

                    group.start_soon(follow)
                await events.aclose()
                got = await first.get_task(pb.GetTaskRequest(id=task_id))
    assert followed[0].HasField("task")
    assert states(followed)[-1] == "TASK_STATE_CANCELED"
    assert pb.TaskState.Name(got.status.state) == "TASK_STATE_CANCELED"


async def test_the_token_guards_everything_but_the_card_and_the_probes() -> None:
    async with A2AServer(desk(), token="t0ken") as served, serving_a2a(served, port=0) as endpoint:
        with anyio.fail_after(WAIT):
            async with httpx.AsyncClient(base_url=endpoint.url) as http:
                card = await http.get(".well-known/agent-card.json")
                health = await http.get("healthz")
                refused = await http.post(
                    "", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
                )
                metrics = await http.get("metrics")
            async with over_http(
                endpoint.url, streaming=False, headers={"Authorization": "Bearer t0ken"}
            ) as client:
                [added] = await collect(client, skill("Add", a=1, b=1))
    assert card.status_code == 200 and "bearer" in card.json()["securitySchemes"]
    assert health.status_code == 200
    assert refused.status_code == 401 and metrics.status_code == 401
    assert artifact_value(added.task) == 2


@pytest.mark.parametrize("protocol", ["a2a", "mcp"])
async def test_both_servers_refuse_foreign_host_and_origin_headers(protocol: str) -> None:
    """DNS rebinding: a page in a local browser reaching a loopback server by another name is refused, by
    the one check both servers share (runtime.serving.http.HostOriginCheck)."""
    program = desk()
    if protocol == "a2a":
        server: A2AServer | PlaybookServer = A2AServer(program)
        path, serving = "", lambda: serving_a2a(server, port=0)  # type: ignore[arg-type]
    else:
        server = PlaybookServer(program)
        path, serving = "", lambda: serving_http(server, port=0)  # type: ignore[arg-type]
    async with server, serving() as endpoint:
        with anyio.fail_after(WAIT):
            async with httpx.AsyncClient() as http:
                host = await http.post(endpoint.url + path, json={}, headers={"Host": "evil.example:80"})
                origin = await http.post(
                    endpoint.url + path, json={}, headers={"Origin": "http://evil.example"}
                )
                health = await http.get(endpoint.url.rsplit("/", 1)[0].rstrip("/") + "/healthz")
    assert host.status_code == 421 and host.text == "Invalid Host header"
    assert origin.status_code == 403 and origin.text == "Invalid Origin header"
    assert health.status_code == 200


async def test_probes_and_metrics() -> None:
    async with A2AServer(desk()) as served, serving_a2a(served, port=0) as endpoint:
        with anyio.fail_after(WAIT):
            async with over_http(endpoint.url, streaming=False) as client:
                await collect(client, skill("Add", a=1, b=2))
                await collect(client, skill("Explode", reason="x"))
            async with httpx.AsyncClient(base_url=endpoint.url) as http:
                ready = await http.get("readyz")
                metrics = (await http.get("metrics")).text
    assert ready.json() == {"status": "ready"}
    assert 'pal_a2a_calls_total{outcome="ok",skill="Add"} 1.0' in metrics
    assert 'pal_a2a_call_failures_total{kind="PlaybookFailed",skill="Explode"} 1.0' in metrics
    assert 'pal_threads{status="finished"} 1.0' in metrics


async def _serve(command: list[str], env: dict[str, str]) -> tuple[anyio.abc.Process, str]:
    process = await anyio.open_process(command, cwd=REPO, env=env)
    assert process.stderr is not None
    buffered = ""
    async for chunk in TextReceiveStream(process.stderr):
        buffered += chunk
        for line in buffered.splitlines():
            if line.startswith("pal a2a: serving") and " at " in line:
                return process, line.split(" at ", 1)[1].split(";", 1)[0]
    raise AssertionError(f"the server ended without listening; it wrote:\n{buffered}")


async def test_pal_a2a_serve_keeps_tasks_as_threads_pal_threads_shows(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [*PAL, "a2a", "serve", str(DESK), "--port", "0", "--store", store, "--create-store"]
    with anyio.fail_after(WAIT * 2):
        process, url = await _serve(command, env)
        try:
            async with over_http(url, streaming=False) as client:
                [asked] = await collect(client, skill("AskName"))
        finally:
            process.send_signal(signal.SIGTERM)
            await process.wait()
    listed = subprocess.run(
        [*PAL, "threads", "--store", store, "--json"],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
        env=env,
    )
    [thread] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert thread["id"] == asked.task.id
    assert thread["kind"] == "a2a task" and thread["status"] == "waiting_for_user"
    assert process.returncode == 0


async def test_a_0_3_client_of_the_sdk_sends_streams_gets_and_cancels() -> None:
    """The SDK's 0.3 client (chosen from a card that offers only the 0.3 interface) on the same endpoint:
    `message/send`, `message/stream`, `tasks/get`, `tasks/cancel` through the compatibility switch."""
    import httpx
    from a2a.client import ClientConfig, ClientFactory
    from a2a.compat.v0_3.jsonrpc_transport import CompatJsonRpcTransport

    async with A2AServer(desk()) as served, serving_a2a(served, port=0) as endpoint:
        card = served.card(endpoint.url)
        del card.supported_interfaces[0]  # 1.0: gone; 0.3 is left
        with anyio.fail_after(WAIT):
            async with httpx.AsyncClient(timeout=httpx.Timeout(60.0)) as http:
                blocking = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
                streaming = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
                assert isinstance(blocking._transport, CompatJsonRpcTransport)  # type: ignore[attr-defined]
                [added] = await collect(blocking, skill("Add", a=20, b=22))
                streamed = await collect(streaming, text("Old"))
                got = await blocking.get_task(pb.GetTaskRequest(id=streamed[0].task.id))
                [held] = await collect(blocking, skill("Hold", label="old"), return_immediately=True)
                canceled = await blocking.cancel_task(pb.CancelTaskRequest(id=held.task.id))
    assert artifact_value(added.task) == 42
    assert states(streamed)[-1] == "TASK_STATE_COMPLETED" and said(streamed) == ["Hello Old"]
    assert artifact_value(got) == "greeted Old"
    assert pb.TaskState.Name(canceled.status.state) == "TASK_STATE_CANCELED"


async def test_pal_a2a_serve_refuses_exposure_without_a_token_and_a_store_that_does_not_exist(
    tmp_path: Path,
) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PAL_A2A_TOKEN", None)
    exposed = subprocess.run(
        [*PAL, "a2a", "serve", str(DESK), "--host", "0.0.0.0", "--store", "memory://"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=WAIT,
    )  # fmt: skip
    missing = subprocess.run(
        [*PAL, "a2a", "serve", str(DESK), "--port", "0", "--store", f"sqlite:///{tmp_path / 'typo.db'}"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=WAIT,
    )  # fmt: skip
    assert exposed.returncode == 2
    assert "without a token would let anyone who can reach that address call every playbook" in exposed.stderr
    assert "give --token (or $PAL_A2A_TOKEN)" in exposed.stderr
    assert missing.returncode == 2 and "typo.db" in missing.stderr and "--create-store" in missing.stderr
    assert not (tmp_path / "typo.db").exists()

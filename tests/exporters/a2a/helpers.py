"""Shared helpers of the A2A tests: the fixture program, messages, and the SDK's own client on a served
agent, in process (httpx's ASGI transport on the server's app) or over loopback HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2
from google.protobuf.json_format import MessageToDict, ParseDict

from exporters.a2a.server import A2AServer, a2a_app
from pal_core.ir import Program
from pal_core.parser import parse_file
from tests.conftest import FIXTURES

A2A_FIXTURES = FIXTURES / "a2a"
DESK = A2A_FIXTURES / "desk.pal"
IN_PROCESS_URL = "http://127.0.0.1:9999/"
"""The address the in-process app believes it is at (loopback, so the Host check lets it through)."""


def desk() -> Program:
    return parse_file(DESK)


def text(value: str, *, task_id: str = "", context_id: str = "", message_id: str = "m") -> pb.Message:
    return pb.Message(
        message_id=message_id, role=pb.Role.ROLE_USER, parts=[pb.Part(text=value)], task_id=task_id,
        context_id=context_id,
    )  # fmt: skip


def data(value: Any, *, task_id: str = "", message_id: str = "m") -> pb.Message:
    part = pb.Part(data=ParseDict(value, struct_pb2.Value()))
    return pb.Message(message_id=message_id, role=pb.Role.ROLE_USER, parts=[part], task_id=task_id)


def skill(name: str, **arguments: Any) -> pb.Message:
    return data({"skill": name, "arguments": arguments})


def payloads(events: list[pb.StreamResponse]) -> list[str]:
    return [event.WhichOneof("payload") for event in events]


def states(events: list[pb.StreamResponse]) -> list[str]:
    found = []
    for event in events:
        if event.HasField("task"):
            found.append(pb.TaskState.Name(event.task.status.state))
        elif event.HasField("status_update"):
            found.append(pb.TaskState.Name(event.status_update.status.state))
    return found


def said(events: list[pb.StreamResponse]) -> list[str]:
    """The agent's messages of WORKING status updates."""
    return [
        event.status_update.status.message.parts[0].text
        for event in events
        if event.HasField("status_update")
        and event.status_update.status.state == pb.TaskState.TASK_STATE_WORKING
        and event.status_update.status.HasField("message")
    ]


def artifact_value(task: pb.Task) -> Any:
    part = task.artifacts[0].parts[0]
    return part.text if part.HasField("text") else MessageToDict(part.data)


async def collect(client: Client, message: pb.Message, **configuration: Any) -> list[pb.StreamResponse]:
    request = pb.SendMessageRequest(
        message=message, configuration=pb.SendMessageConfiguration(**configuration)
    )
    return [event async for event in client.send_message(request)]


@asynccontextmanager
async def in_process(
    server: A2AServer, *, streaming: bool = True, token: str | None = None
) -> AsyncIterator[Client]:
    """The SDK's client on the server's ASGI app, in this process (no socket)."""
    app = a2a_app(server, url=IN_PROCESS_URL, token=token)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url=IN_PROCESS_URL, headers=headers
    ) as http:
        card = server.card(IN_PROCESS_URL)
        client = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create(card)
        try:
            yield client
        finally:
            await client.close()


@asynccontextmanager
async def over_http(
    url: str, *, streaming: bool = True, headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """The SDK's client on a served agent at `url`, its card read from there."""
    async with httpx.AsyncClient(headers=headers or {}, timeout=httpx.Timeout(60.0)) as http:
        client = await ClientFactory(ClientConfig(streaming=streaming, httpx_client=http)).create_from_url(
            url
        )
        try:
            yield client
        finally:
            await client.close()

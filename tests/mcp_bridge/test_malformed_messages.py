"""Every malformed protocol message gets its JSON-RPC error, on every transport (issue 21): over stdio a
line that is not UTF-8 or not JSON, nests past the SDK's 200 levels, holds a lone surrogate, or is longer
than 64 MiB is answered (with the request's id when it can be read) and the server goes on serving; over
HTTP the SDK answers the same messages itself."""

from __future__ import annotations

import json
import subprocess
import threading
import time

import anyio
import httpx2
import pytest

from mcp_bridge.server import PlaybookServer
from mcp_bridge.stdio import MAX_LINE, TooLong, unreadable
from mcp_bridge.transports import serving_http
from pal_core.parser import parse_file
from tests.mcp_bridge.helpers import MCP_FIXTURES, PAL, REPO

CALCULATOR_FILE = MCP_FIXTURES / "calculator.pal"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CALL = {
    "jsonrpc": "2.0",
    "id": 99,
    "method": "tools/call",
    "params": {"name": "Add", "arguments": {"a": 1, "b": 2}},
}


def _deep(levels: int) -> bytes:
    return (
        b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "Add", "arguments": {"a": '
        + b"[" * levels
        + b"]" * levels
        + b', "b": 1}}}'
    )


MALFORMED: list[tuple[str, bytes, object, int]] = [
    ("not JSON", b"this is not json", None, -32700),
    ("not UTF-8", b'{"jsonrpc": "2.0", "id": 1, "method": "ping\xff"}', None, -32700),
    (
        "a lone surrogate",
        b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "\\ud800"}}',
        2,
        -32600,
    ),
    ("nesting past 200 levels", _deep(250), 5, -32600),
    ("not a JSON-RPC message", b'{"id": 3, "hello": "world"}', 3, -32600),
    ("a JSON array of nothing", b"[]", None, -32600),
]


def _exchange(
    process: subprocess.Popen[bytes], data: bytes, *, last_id: int
) -> tuple[list[dict[str, object]], int, str]:
    """Write `data` to the server (from a thread: it is large) and read its answers until the one to
    `last_id`; then close its stdin. (the answers, its exit code, its log)."""
    assert process.stdin is not None and process.stdout is not None and process.stderr is not None
    writer = threading.Thread(target=process.stdin.write, args=(data,), daemon=True)
    writer.start()
    answers: list[dict[str, object]] = []
    deadline = time.monotonic() + 240
    try:
        while not any(answer.get("id") == last_id for answer in answers):
            assert time.monotonic() < deadline, answers
            line = process.stdout.readline()
            assert line, f"the server ended early: {process.stderr.read().decode(errors='replace')}"
            answers.append(json.loads(line))
    finally:
        writer.join(timeout=60)
        process.stdin.close()
        code = process.wait(timeout=60)
    return answers, code, process.stderr.read().decode(errors="replace")


@pytest.mark.slow
def test_every_malformed_line_over_stdio_is_answered_and_the_server_goes_on() -> None:
    lines = [json.dumps(INITIALIZE).encode()]
    lines += [line for _, line, _, _ in MALFORMED]
    # 65 MiB: longer than the 64 MiB a stdio server reads; its id leads the object, so the answer names it.
    lines.append(
        b'{"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"x": "'
        + b"a" * (65 * 1024 * 1024)
        + b'"}}'
    )
    lines.append(json.dumps(INITIALIZED).encode())
    lines.append(json.dumps(CALL).encode())
    with subprocess.Popen(
        [*PAL, "mcp", "serve", str(CALCULATOR_FILE)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    ) as process:
        answers, code, log = _exchange(process, b"\n".join(lines) + b"\n", last_id=99)
    assert code == 0, log
    # The errors are written as each line is read; the SDK's answers when it has handled a message.
    by_id = {answer["id"]: answer for answer in answers if "result" in answer}
    assert set(by_id) == {0, 99}, answers
    errors = [answer for answer in answers if "error" in answer]
    expected = [(request_id, code) for _, _, request_id, code in MALFORMED] + [(4, -32700)]
    assert [(answer["id"], answer["error"]["code"]) for answer in errors] == expected, errors
    assert "longer than 64 MiB" in errors[-1]["error"]["message"]
    assert "not UTF-8 (byte" in errors[1]["error"]["message"]
    # The server read on: the call after all of them is answered.
    assert by_id[99]["result"]["structuredContent"] == {"result": 3}
    assert log.count("answered a message it could not read") == len(expected)


def test_the_id_of_a_line_too_long_to_read_is_found_only_where_clients_put_it() -> None:
    assert (
        json.loads(unreadable(TooLong(b'{"jsonrpc":"2.0","id":"r-1","method":"x"'), None)[0])["id"] == "r-1"
    )
    assert json.loads(unreadable(TooLong(b'{"id": 12, "jsonrpc": "2.0"'), None)[0])["id"] == 12
    # An "id" deeper in the object is not the request's: the answer has a null id.
    assert json.loads(unreadable(TooLong(b'{"params": {"id": 12}'), None)[0])["id"] is None
    assert MAX_LINE == 64 * 1024 * 1024


@pytest.mark.anyio
async def test_http_answers_the_same_malformed_messages() -> None:
    program = parse_file(CALCULATOR_FILE)
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with (
        PlaybookServer(program) as served,
        serving_http(served, port=0) as endpoint,
        httpx2.AsyncClient(headers=headers) as http,
    ):
        with anyio.fail_after(30):
            for _, line, _, _ in MALFORMED[:4]:
                answer = await http.post(endpoint.url, content=line)
                assert answer.status_code == 400, (line[:40], answer.text)
                assert answer.json()["error"]["code"] in (-32700, -32600, -32602)

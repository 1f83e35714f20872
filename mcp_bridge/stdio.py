"""The stdio wire of `pal mcp serve`: newline-delimited JSON-RPC on the process's own stdin and stdout.

`claim_stdio()` takes the wire at the file-descriptor level before anything else runs (fd 1 then points
at stderr, fd 0 at the null device), so nothing a program prints or reads, at import time or in a call,
can touch it. `stdio_streams(wire)` turns the wire into the MCP SDK's message streams and answers every
line that is not a JSON-RPC message itself, as streamable HTTP does: a line that is not UTF-8 or not JSON,
nests too deeply for the SDK, holds a lone surrogate, or is longer than MAX_LINE gets a JSON-RPC error
response (with the request's id when it can be read), and a warning goes to the log. A client is never left
waiting for an answer to a message the server could not read.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import os
import re
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)

MAX_LINE = 64 * 1024 * 1024
"""The longest JSON-RPC message a stdio server reads (bytes); a longer one is answered with a parse error."""
CHUNK = 64 * 1024
"""Bytes read from stdin at a time."""
PARSE_ERROR = -32700
"""JSON-RPC: the message is not JSON the server can read."""
INVALID_REQUEST = -32600
"""JSON-RPC: the message is JSON, but not a valid JSON-RPC message."""

# The id of a message too long to read whole, when it is the first or second key of the object (as every
# client writes it: {"jsonrpc": "2.0", "id": 7, ...}); anything else gets the answer with a null id.
_LEADING_ID = re.compile(
    rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")'
)


@dataclass(frozen=True, slots=True)
class StdioWire:
    """The protocol's own copies of the process's stdin and stdout (see `claim_stdio`)."""

    stdin: io.FileIO
    """Reads what the client sends (the original fd 0)."""
    stdout: io.TextIOWrapper
    """Writes to the client (the original fd 1)."""


def claim_stdio() -> StdioWire:
    """Take stdin and stdout for the protocol, at the file-descriptor level: the wire keeps private
    duplicates, fd 1 is pointed at stderr and fd 0 at the null device. From then on `print`, `os.write(1,
    ...)` and child processes write to stderr, and `input()` reads nothing, whatever code runs (python
    blocks executed at import time included). Call it before loading the program."""
    sys.stdout.flush()
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    os.dup2(2, 1)
    return StdioWire(
        stdin=io.FileIO(wire_in, "rb", closefd=True),
        stdout=io.TextIOWrapper(os.fdopen(wire_out, "wb", closefd=True), encoding="utf-8", newline="\n"),
    )


@dataclass(frozen=True, slots=True)
class TooLong:
    """A line longer than MAX_LINE, dropped as it was read; `head` is its start (to find its id)."""

    head: bytes


class _Chunks:
    """Bytes from the client: read on the event loop when stdin is a pipe, socket or terminal (so serving
    can be cancelled at any time), else (a file) by a worker thread."""

    def __init__(self, stdin: io.FileIO) -> None:
        self._stdin = stdin
        mode = os.fstat(stdin.fileno()).st_mode
        self._on_loop = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)
        self._reader: asyncio.StreamReader | None = None

    async def read(self) -> bytes:
        """The next bytes; b"" at the end."""
        if not self._on_loop:
            return await asyncio.to_thread(self._stdin.read, CHUNK) or b""
        if self._reader is None:
            reader = asyncio.StreamReader(limit=CHUNK)
            await asyncio.get_running_loop().connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), self._stdin
            )
            self._reader = reader
        return await self._reader.read(CHUNK)


async def wire_lines(stdin: io.FileIO) -> AsyncIterator[bytes | TooLong]:
    """The client's lines (without the newline; a last line without one included), each at most MAX_LINE
    bytes; a longer line is dropped as it arrives (never held whole) and comes out as TooLong."""
    chunks = _Chunks(stdin)
    buffer = bytearray()
    dropping: bytes | None = None  # the head of a line being dropped
    while True:
        chunk = await chunks.read()
        if not chunk:
            break
        buffer += chunk
        while True:
            end = buffer.find(b"\n")
            if end < 0:
                break
            line = bytes(buffer[:end])
            del buffer[: end + 1]
            if dropping is not None:
                yield TooLong(dropping)
                dropping = None
            else:
                yield line
        if len(buffer) > MAX_LINE and dropping is None:
            dropping = bytes(buffer[:4096])
        if dropping is not None:
            buffer.clear()
    if dropping is not None:
        yield TooLong(dropping)
    elif buffer:
        yield bytes(buffer)


def error_response(code: int, message: str, request_id: Any = None) -> str:
    """A JSON-RPC error response, as one line."""
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}},
        ensure_ascii=True,  # a lone surrogate quoted back must stay writable
    )


def unreadable(line: bytes | TooLong, error: Exception | None) -> tuple[str, str]:
    """(the JSON-RPC error response for a line the SDK could not read, what the log says about it)."""
    if isinstance(line, TooLong):
        found = _LEADING_ID.match(line.head)
        request_id = json.loads(found.group(1)) if found else None
        why = f"the message is longer than {MAX_LINE // (1024 * 1024)} MiB"
        return error_response(PARSE_ERROR, f"Parse error: {why}", request_id), why
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as bad:
        why = f"the message is not UTF-8 (byte {bad.start}: 0x{line[bad.start]:02x})"
        return error_response(PARSE_ERROR, f"Parse error: {why}"), why
    try:
        raw = json.loads(text)
    except RecursionError:
        why = "the message nests too deeply to read"
        return error_response(PARSE_ERROR, f"Parse error: {why}"), why
    except ValueError as bad:
        why = f"the message is not JSON ({bad})"
        return error_response(PARSE_ERROR, f"Parse error: {why}"), why
    request_id = raw.get("id") if isinstance(raw, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, int | str):
        request_id = None
    why = _first_line(str(error)) if error is not None else "not a JSON-RPC message"
    return error_response(INVALID_REQUEST, f"Invalid request: {why}", request_id), why


def _first_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return "; ".join(lines[:3])[:500] or "not a JSON-RPC message"


@asynccontextmanager
async def stdio_streams(wire: StdioWire) -> AsyncIterator[tuple[Any, Any]]:
    """(read stream, write stream) of MCP messages over the wire, for `Server.run`; lines that are not
    messages are answered here (see the module's docstring) and never reach the SDK."""
    import anyio
    import mcp_types as types
    from mcp.shared.message import SessionMessage

    out = anyio.wrap_file(wire.stdout)
    writing = anyio.Lock()
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)

    async def send(text: str) -> None:
        async with writing:
            await out.write(text + "\n")
            await out.flush()

    async def read_lines() -> None:
        async with read_writer:
            async for line in wire_lines(wire.stdin):
                if isinstance(line, bytes) and not line.strip():
                    continue  # a blank line is no message
                message = None
                error: Exception | None = None
                if isinstance(line, bytes):
                    try:
                        message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    except ValueError as refused:  # pydantic's ValidationError is a ValueError
                        error = refused
                if message is None:
                    response, why = unreadable(line, error)
                    logger.warning("stdio: answered a message it could not read: %s", why)
                    await send(response)
                    continue
                await read_writer.send(SessionMessage(message))

    async def write_messages() -> None:
        async with write_reader:
            async for session_message in write_reader:
                await send(session_message.message.model_dump_json(by_alias=True, exclude_unset=True))

    reading = anyio.CancelScope()

    async def read_until_done() -> None:
        with reading:
            await read_lines()

    async with anyio.create_task_group() as group:
        group.start_soon(read_until_done)
        group.start_soon(write_messages)
        try:
            yield read_stream, write_stream
        finally:
            reading.cancel()  # the client's next line has no one to answer it
            write_stream.close()  # the answers already given still go out, then the writer ends

"""Consuming MCP servers: a remote agent (`remote: {type: mcp, ...}`) whose tools are its public playbooks.

The runtime finds `connect` through the entry point `pal_bridge.remote: mcp`. Metadata keys:

- `transport`: `stdio` (with `command`, `args`, `env`, `cwd`), `http` (streamable HTTP, with `url`,
  `headers`) or `memory` (`url: memory://NAME`, a server this process registered with
  `register_memory_server`). Without `transport`, a `command` means stdio and a
  `url` means http (or memory for `memory://`).
- `timeout`: seconds one tool call may take (default: no limit); `connect_timeout`: seconds to start the
  server and finish the handshake (default 60).
- `${NAME}` in `url`, `command`, `args`, `env` and `headers` is replaced by the environment variable, so
  tokens stay out of program files.

Each connection is owned by one task that enters and leaves the MCP client (the SDK's task groups must be
left by the task that entered them); calls may come from any task. A stdio server's stderr is kept in a
temporary file so that when it dies, the error shows its last lines.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import shlex
import tempfile
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import IO, Any

from pal_core.ir import RemoteSpec
from runtime.errors import ProgramError
from runtime.python_api import idempotency_key
from runtime.remote import RemoteCallError, RemoteTool, expand_variables

logger = logging.getLogger(__name__)

DEFAULT_CONNECT_TIMEOUT = 60.0
"""Seconds to start a server and finish the MCP handshake when the metadata does not say."""
CLOSE_TIMEOUT = 10.0
"""Seconds closing a connection may take before its task is cancelled."""
STDERR_TAIL_LINES = 20
"""How many of a dead server's last stderr lines an error shows."""
STDERR_TAIL_BYTES = 16_384
"""How much of the end of a server's stderr is read to find those lines."""

TRANSPORTS = ("stdio", "http", "memory")
"""The transports a remote agent may name."""
IDEMPOTENCY_META = "pal/idempotency_key"
"""The `_meta` key of a tool call made by a durable run: the call's idempotency key (runtime.python_api)."""

_MEMORY_SERVERS: dict[str, Any] = {}


def register_memory_server(name: str, server: Any) -> None:
    """Make `remote: {type: mcp, url: memory://NAME}` reach `server` (an mcp `Server` or `MCPServer`) in
    this process, with no transport in between (for tests and embedding)."""
    _MEMORY_SERVERS[name] = server


def unregister_memory_server(name: str) -> None:
    """Forget a memory server (KeyError if it is not registered)."""
    del _MEMORY_SERVERS[name]


@dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """Where a remote agent's server is, with `${NAME}` expanded and the transport decided."""

    agent: str
    """The remote agent's name, for messages."""
    transport: str
    """One of TRANSPORTS."""
    command: str | None
    """The stdio executable."""
    args: tuple[str, ...]
    """The stdio arguments."""
    env: Mapping[str, str]
    """Extra environment of the stdio server."""
    cwd: str | None
    """Working directory of the stdio server (`remote.cwd`), or None for the current one."""
    url: str | None
    """The http URL, or `memory://NAME`."""
    headers: Mapping[str, str]
    """HTTP headers sent with every request."""
    call_timeout: float | None
    """Seconds one tool call may take; None for no limit."""
    connect_timeout: float
    """Seconds to start the server and finish the handshake."""

    def describe(self) -> str:
        """The server in words, for errors: stdio server `uvx mcp-server-time`, http server <url>."""
        if self.transport == "stdio":
            return f"stdio server `{shlex.join([self.command or '', *self.args])}`"
        return f"{self.transport} server {self.url}"


def endpoint_for(spec: RemoteSpec, agent_name: str) -> Endpoint:
    """The endpoint a remote spec names; ProgramError saying which key is wrong and why."""

    def fail(message: str) -> ProgramError:
        return ProgramError(f"remote agent {agent_name}: {message}")

    url = _expand(spec.url, agent_name, "url")
    command = _expand(spec.command, agent_name, "command")
    transport = spec.transport
    if transport is None:
        if command:
            transport = "stdio"
        elif url and url.startswith("memory://"):
            transport = "memory"
        elif url:
            transport = "http"
        else:
            raise fail("remote needs a `command` (stdio) or a `url` (http)")
    transport = transport.strip().lower()
    if transport in ("streamable-http", "streamable_http", "https"):
        transport = "http"
    if transport not in TRANSPORTS:
        raise fail(f"unknown transport {spec.transport!r}; use one of {', '.join(TRANSPORTS)}")
    if transport == "stdio" and not command:
        raise fail("transport stdio needs `command` (the server executable) and optionally `args`")
    if transport == "http" and not (url and url.startswith(("http://", "https://"))):
        raise fail(f"transport {transport} needs `url: http(s)://...`, got {spec.url!r}")
    if transport == "memory" and not (url and url.startswith("memory://")):
        raise fail(f"transport memory needs `url: memory://NAME`, got {spec.url!r}")
    if spec.headers and transport != "http":
        raise fail(f"`headers` apply to the http transport, not {transport}")
    timeout = spec.timeout
    if timeout is not None and (not math.isfinite(timeout) or timeout <= 0):
        raise fail(f"`timeout` must be a positive number of seconds, got {timeout!r}")
    connect_timeout = spec.extra.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT)
    if (
        isinstance(connect_timeout, bool)
        or not isinstance(connect_timeout, (int, float))
        or not math.isfinite(connect_timeout)
        or connect_timeout <= 0
    ):
        raise fail(f"`connect_timeout` must be a positive number of seconds, got {connect_timeout!r}")
    cwd = spec.extra.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise fail(f"`cwd` must be a directory path, got {cwd!r}")
    return Endpoint(
        agent=agent_name,
        transport=transport,
        command=command,
        args=tuple(_expand(arg, agent_name, "args") or "" for arg in spec.args),
        env={key: _expand(value, agent_name, f"env.{key}") or "" for key, value in spec.env.items()},
        cwd=cwd,
        url=url,
        headers={
            key: _expand(value, agent_name, f"headers.{key}") or "" for key, value in spec.headers.items()
        },
        call_timeout=timeout,
        connect_timeout=float(connect_timeout),
    )


def _expand(text: str | None, agent_name: str, key: str) -> str | None:
    return expand_variables(text, agent_name, key)


async def connect(spec: RemoteSpec, agent_name: str) -> McpConnection:
    """Open a connection to the MCP server of a remote agent (entry point `pal_bridge.remote: mcp`)."""
    connection = McpConnection(endpoint_for(spec, agent_name))
    await connection.open()
    return connection


class McpConnection:
    """A live connection to one MCP server; implements runtime.remote.RemoteConnection."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._client: Any = None
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._failure: BaseException | None = None
        self._lost: str | None = None
        self._stderr: IO[bytes] | None = None
        self._output_schemas: dict[str, Mapping[str, Any] | None] = {}

    @property
    def alive(self) -> bool:
        """Whether the connection is open and the server has not gone away."""
        return self._client is not None and self._lost is None and not self._closing.is_set()

    async def open(self) -> None:
        """Start the server (stdio) or reach it (http), and finish the MCP handshake."""
        if self._task is not None:
            raise RuntimeError("an McpConnection is opened once")
        self._task = asyncio.create_task(self._own(), name=f"MCP connection of {self.endpoint.agent}")
        try:
            async with asyncio.timeout(self.endpoint.connect_timeout):
                await self._ready.wait()
        except TimeoutError:
            message = (
                f"remote agent {self.endpoint.agent}: the {self.endpoint.describe()} did not finish the MCP "
                f"handshake within {self.endpoint.connect_timeout:g} s (remote.connect_timeout)"
            )
            await self._stop()  # the process first, so its stderr is complete
            tail = self._stderr_tail()
            await self.close()
            raise RemoteCallError(message + tail) from None
        if self._client is None:
            failure = self._failure
            message = (
                f"remote agent {self.endpoint.agent}: cannot connect to the {self.endpoint.describe()}: "
                f"{_describe_failure(failure)}"
            )
            await self._stop()
            tail = self._stderr_tail()
            await self.close()
            raise RemoteCallError(message + tail) from failure

    async def _own(self) -> None:
        from mcp import Client

        try:
            async with AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = Client(transport, cache=None)
                await stack.enter_async_context(client)
                self._client = client
                self._ready.set()
                await self._closing.wait()
        except Exception as error:  # reported by open() or by the next call
            self._failure = error
            logger.debug("MCP connection of %s ended: %r", self.endpoint.agent, error)
        finally:
            self._client = None
            self._ready.set()

    async def _transport(self, stack: AsyncExitStack) -> Any:
        endpoint = self.endpoint
        if endpoint.transport == "memory":
            name = (endpoint.url or "").removeprefix("memory://")
            server = _MEMORY_SERVERS.get(name)
            if server is None:
                known = ", ".join(sorted(_MEMORY_SERVERS)) or "none"
                raise LookupError(f"no memory server {name!r} is registered (registered: {known})")
            return server
        if endpoint.transport == "stdio":
            from mcp import StdioServerParameters
            from mcp.client.stdio import stdio_client

            # Kept after the process ends (until close()) so errors can quote its last words.
            self._stderr = tempfile.TemporaryFile("w+b")  # noqa: SIM115
            parameters = StdioServerParameters(
                command=endpoint.command or "",
                args=list(endpoint.args),
                env=dict(endpoint.env),
                cwd=endpoint.cwd,
            )
            return stdio_client(parameters, errlog=self._stderr)
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        http = await stack.enter_async_context(
            httpx2.AsyncClient(headers=dict(endpoint.headers), timeout=httpx2.Timeout(30.0, read=300.0))
        )
        return streamable_http_client(endpoint.url or "", http_client=http)

    async def list_tools(self) -> list[RemoteTool]:
        """The server's tools (every page)."""
        client = self._live_client("list its tools")
        tools: list[RemoteTool] = []
        cursor: str | None = None
        try:
            async with asyncio.timeout(self.endpoint.connect_timeout):
                while True:
                    page = await client.list_tools(cursor=cursor)
                    for tool in page.tools:
                        self._output_schemas[tool.name] = tool.output_schema
                        tools.append(
                            RemoteTool(
                                name=tool.name,
                                description=tool.description or tool.title or "",
                                input_schema=tool.input_schema,
                            )
                        )
                    cursor = page.next_cursor
                    if not cursor:
                        return tools
        except TimeoutError:
            raise RemoteCallError(
                f"remote agent {self.endpoint.agent}: the {self.endpoint.describe()} did not list its tools "
                f"within {self.endpoint.connect_timeout:g} s"
            ) from None
        except Exception as error:
            raise self._call_failure(error) from error

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Call a tool; its structured result when it has one, else its text. RemoteCallError on failure."""
        client = self._live_client(f"call {name}")
        timeout = self.endpoint.call_timeout
        # In a durable run the call has an idempotency key, the same when a resumed run makes it again:
        # sent in the request's _meta, for a server that does its work once per key.
        key = idempotency_key()
        meta = {IDEMPOTENCY_META: key} if key is not None else None
        try:
            async with asyncio.timeout(timeout):
                result = await client.call_tool(name, arguments, read_timeout_seconds=timeout, meta=meta)
        except TimeoutError:
            raise RemoteCallError(
                f"no answer from the {self.endpoint.describe()} within {timeout:g} s (remote.timeout)"
            ) from None
        except Exception as error:
            raise self._call_failure(error) from error
        if result.is_error:
            raise RemoteCallError(f"the tool reported an error: {_text_of(result.content) or 'no message'}")
        return _value_of(result, self._output_schemas.get(name))

    async def close(self) -> None:
        """Leave the MCP session and stop a stdio server; idempotent."""
        await self._stop()
        stderr, self._stderr = self._stderr, None
        if stderr is not None:
            stderr.close()

    async def _stop(self) -> None:
        self._closing.set()
        task = self._task
        if task is None or task.done():
            return
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _live_client(self, action: str) -> Any:
        client = self._client
        if client is None or self._lost is not None:
            reason = self._lost or _describe_failure(self._failure) or "the connection is closed"
            raise RemoteCallError(
                f"remote agent {self.endpoint.agent} cannot {action}: the {self.endpoint.describe()} is not "
                f"connected ({reason})" + self._stderr_tail()
            )
        return client

    def _call_failure(self, error: BaseException) -> RemoteCallError:
        """A failed request in words; the caller (the runtime) says which agent and tool."""
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        server = self.endpoint.describe()
        if isinstance(error, MCPError) and error.code == CONNECTION_CLOSED:
            self._lost = "the server closed the connection"
            return RemoteCallError(f"the {server} closed the connection (did it exit?)" + self._stderr_tail())
        if isinstance(error, MCPError) and error.code == REQUEST_TIMEOUT:
            return RemoteCallError(
                f"no answer from the {server} within {self.endpoint.call_timeout:g} s (remote.timeout)"
            )
        if isinstance(error, MCPError):
            return RemoteCallError(f"the {server} answered with error {error.code}: {error.message}")
        return RemoteCallError(f"the {server} failed: {_describe_failure(error)}")

    def _stderr_tail(self) -> str:
        stream = self._stderr
        if stream is None or stream.closed:
            return ""
        try:
            # pread leaves the file offset alone: the server process writes through the same open file.
            size = os.fstat(stream.fileno()).st_size
            start = max(0, size - STDERR_TAIL_BYTES)
            data = os.pread(stream.fileno(), size - start, start)
        except (OSError, ValueError):
            return ""
        lines = data.decode("utf-8", errors="replace").splitlines()[-STDERR_TAIL_LINES:]
        if not lines:
            return ""
        return "\n  the server's last output on stderr:\n" + "\n".join(f"    | {line}" for line in lines)


def _describe_failure(error: BaseException | None) -> str:
    """An exception in words, looking inside exception groups (the SDK's task groups raise them)."""
    if error is None:
        return ""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe_failure(inner) for inner in error.exceptions)
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED

    if isinstance(error, MCPError) and error.code == CONNECTION_CLOSED:
        return "the server closed the connection (did it exit?)"
    if isinstance(error, MCPError):
        return f"the server answered: {error.message}"
    text = str(error) or type(error).__name__
    if isinstance(error, FileNotFoundError):
        return f"command not found: {error.filename or text}"
    if isinstance(error, (OSError, LookupError, ValueError)):
        return text
    return f"{type(error).__name__}: {text}"


def _text_of(content: list[Any]) -> str:
    parts: list[str] = []
    for block in content:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(f"[{kind} {block.mime_type}]")
        elif kind == "resource":
            resource = block.resource
            parts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {block.uri}]")
    return "\n".join(parts)


def _value_of(result: Any, output_schema: Mapping[str, Any] | None) -> Any:
    """A tool result as a Python value: the structured content (unwrapped from `{"result": ...}` when the
    output schema is that wrapper), else the text."""
    structured = result.structured_content
    if structured is not None:
        if (
            isinstance(structured, dict)
            and set(structured) == {"result"}
            and output_schema is not None
            and set(output_schema.get("properties") or {}) == {"result"}
        ):
            return structured["result"]
        return structured
    return _text_of(result.content)

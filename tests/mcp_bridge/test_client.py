"""Consuming MCP servers: remote agents whose tools are public playbooks, in memory against a real
MCPServer object, and over stdio and HTTP against `pal mcp serve` of the toolbox program."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from mcp_bridge.client import connect, endpoint_for, register_memory_server, unregister_memory_server
from mcp_bridge.server import PlaybookServer
from mcp_bridge.transports import serving_http
from pal_core.ir import PlaybookKind, RemoteSpec
from pal_core.parser import parse_file
from runtime.api import run_playbook
from runtime.errors import PlaybookFailed, ProgramError
from runtime.models import ScriptedModel
from runtime.program_run import ProgramRun
from runtime.remote import RemoteCallError
from tests.mcp_bridge.helpers import MCP_FIXTURES, text_of

pytestmark = pytest.mark.anyio

WEATHER = parse_file(MCP_FIXTURES / "weather_in_memory.pal")


def _weather_server() -> MCPServer:
    server = MCPServer("weather")

    @server.tool()
    async def forecast(city: str, days: int = 1) -> dict[str, Any]:
        """The forecast for a city."""
        return {"city": city, "days": days, "summary": f"{days} sunny days in {city}"}

    @server.tool()
    def shout(text: str) -> str:
        """The text in capitals."""
        return text.upper()

    @server.tool()
    async def wait_forever() -> str:
        """Never answers."""
        await anyio.Event().wait()
        return "never"

    @server.tool()
    def fail(city: str) -> str:
        """Always fails."""
        raise ToolError(f"no weather station in {city}")

    return server


@pytest.fixture
def weather() -> Iterator[None]:
    register_memory_server("weather", _weather_server())
    yield
    unregister_memory_server("weather")


# --- the metadata ------------------------------------------------------------------------------------


def _spec(**fields: Any) -> RemoteSpec:
    return RemoteSpec(type="mcp", **fields)


BAD_SPECS = [
    (_spec(), "remote agent Clock: remote needs a `command` (stdio) or a `url` (http)"),
    (_spec(transport="stdio"), "transport stdio needs `command`"),
    (_spec(transport="http", command="x"), "transport http needs `url: http(s)://...`, got None"),
    (
        _spec(transport="carrier-pigeon", url="http://x"),
        "unknown transport 'carrier-pigeon'; use one of stdio, http, memory",
    ),
    (_spec(command="x", headers={"A": "b"}), "`headers` apply to the http transport, not stdio"),
    (_spec(command="x", timeout=0.0), "`timeout` must be a positive number of seconds, got 0.0"),
    (_spec(command="x", extra={"connect_timeout": "soon"}), "`connect_timeout` must be a positive number"),
    (_spec(url="memory:/x", transport="memory"), "transport memory needs `url: memory://NAME`"),
    (
        _spec(url="http://h/mcp", headers={"Authorization": "Bearer ${PAL_TEST_NOT_SET}"}),
        "`headers.Authorization` uses ${PAL_TEST_NOT_SET}, and the environment variable PAL_TEST_NOT_SET is not set",
    ),
]


@pytest.mark.parametrize(("spec", "message"), BAD_SPECS)
def test_bad_remote_metadata_is_a_program_error_naming_the_key(spec: RemoteSpec, message: str) -> None:
    os.environ.pop("PAL_TEST_NOT_SET", None)
    with pytest.raises(ProgramError) as caught:
        endpoint_for(spec, "Clock")
    assert message in str(caught.value)


def test_the_transport_follows_from_command_or_url_and_variables_are_expanded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PAL_TEST_SECRET", "s3cret")
    assert endpoint_for(_spec(command="uvx", args=("mcp-server-time",)), "A").transport == "stdio"
    assert endpoint_for(_spec(url="memory://w"), "A").transport == "memory"
    http = endpoint_for(
        _spec(url="https://h/mcp", headers={"Authorization": "Bearer ${PAL_TEST_SECRET}"}, timeout=5.0), "A"
    )
    assert (http.transport, http.headers, http.call_timeout) == (
        "http",
        {"Authorization": "Bearer s3cret"},
        5.0,
    )
    assert endpoint_for(_spec(url="http://h", transport="streamable-http"), "A").transport == "http"


# --- in memory ---------------------------------------------------------------------------------------


async def test_remote_tools_are_public_typed_playbooks_called_on_the_fast_path(weather: None) -> None:
    model = ScriptedModel([])
    with anyio.fail_after(10):
        report = await run_playbook(WEATHER, "Reporter.Report", "Oslo", model=model)
        loud = await run_playbook(WEATHER, "Reporter.Loud", "hello", model=model)
    assert report == "2 sunny days in Oslo"  # structured content, a dict
    assert loud == "HELLO"  # `{"result": ...}` unwrapped
    assert model.calls == 0
    run = ProgramRun(WEATHER)
    try:
        await run.start()
        playbooks = run.instance_by_class("Weather").playbooks
    finally:
        await run.shutdown()
    forecast = playbooks["forecast"]
    assert forecast.kind is PlaybookKind.REMOTE and forecast.public
    assert forecast.description == "The forecast for a city."
    assert [(p.name, p.type, p.default) for p in forecast.parameters] == [
        ("city", "str", None),
        ("days", "int", "1"),
    ]


async def test_the_call_timeout_is_applied(weather: None) -> None:
    with anyio.fail_after(10), pytest.raises(PlaybookFailed) as caught:
        await run_playbook(WEATHER, "Reporter.Stuck")
    assert str(caught.value) == (
        "Weather:wait_forever: no answer from the memory server memory://weather within 0.5 s (remote.timeout)"
    )


async def test_a_tool_error_becomes_a_playbook_failure_with_the_servers_message(weather: None) -> None:
    with anyio.fail_after(10), pytest.raises(PlaybookFailed) as caught:
        await run_playbook(WEATHER, "Reporter.Broken")
    assert str(caught.value) == (
        "Weather:fail: the tool reported an error: Error executing tool fail: no weather station in Atlantis"
    )


async def test_a_server_that_is_not_there_is_a_clear_program_error() -> None:
    with anyio.fail_after(10), pytest.raises(ProgramError) as caught:
        await run_playbook(WEATHER, "Reporter.Loud", "hi")
    assert str(caught.value) == (
        "remote agent Weather: cannot connect to the memory server memory://weather: "
        "no memory server 'weather' is registered (registered: none)"
    )


# --- over stdio and HTTP, against pal mcp serve --------------------------------------------------------


async def test_a_stdio_server_that_fails_to_start_is_reported_with_its_stderr() -> None:
    failing = RemoteSpec(
        type="mcp",
        command=sys.executable,
        args=("-c", "import sys; print('no config file at /etc/weather.toml', file=sys.stderr); sys.exit(4)"),
    )
    with anyio.fail_after(30), pytest.raises(RemoteCallError) as caught:
        await connect(failing, "Weather")
    message = str(caught.value)
    assert message.startswith(
        f"remote agent Weather: cannot connect to the stdio server `{sys.executable} -c "
    )
    assert "the server closed the connection (did it exit?)" in message
    assert message.endswith("the server's last output on stderr:\n    | no config file at /etc/weather.toml")


async def test_a_stdio_command_that_does_not_exist_is_named() -> None:
    with anyio.fail_after(30), pytest.raises(RemoteCallError) as caught:
        await connect(RemoteSpec(type="mcp", command="/nonexistent/mcp-server"), "Weather")
    assert str(caught.value) == (
        "remote agent Weather: cannot connect to the stdio server `/nonexistent/mcp-server`: "
        "command not found: /nonexistent/mcp-server"
    )


@pytest.fixture
def toolbox_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAL_TEST_PYTHON", sys.executable)
    monkeypatch.setenv("PAL_TEST_TOOLBOX", str(MCP_FIXTURES / "toolbox.pal"))


@pytest.mark.slow
async def test_a_stdio_server_starts_and_stops_with_the_program(toolbox_env: None) -> None:
    program = parse_file(MCP_FIXTURES / "toolbox_over_stdio.pal")
    with anyio.fail_after(60):
        assert await run_playbook(program, "Caller.EchoIt", "hello") == "hello"
        pid = await run_playbook(program, "Caller.ServerProcess")
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # stopped (and reaped) when the run ended


@pytest.mark.slow
async def test_a_timeout_over_stdio_cancels_the_call_on_the_server(toolbox_env: None, tmp_path: Path) -> None:
    program = parse_file(MCP_FIXTURES / "toolbox_over_stdio.pal")
    marker = tmp_path / "marker"
    with anyio.fail_after(60), pytest.raises(PlaybookFailed) as caught:
        await run_playbook(program, "Caller.HangIt", str(marker))
    assert str(caught.value).startswith("Toolbox:Hang: no answer from the stdio server")
    assert str(caught.value).endswith("within 3 s (remote.timeout)")
    # The client sent notifications/cancelled; the server cancelled Hang before it saw the end of stdin.
    assert marker.read_text() == "cancelled"


@pytest.mark.slow
async def test_a_server_that_dies_gives_an_error_with_its_last_words(toolbox_env: None) -> None:
    program = parse_file(MCP_FIXTURES / "toolbox_over_stdio.pal")
    with anyio.fail_after(60), pytest.raises(PlaybookFailed) as caught:
        await run_playbook(program, "Caller.CrashIt")
    message = str(caught.value)
    assert message.startswith("Toolbox:Crash: the stdio server ")
    assert "closed the connection (did it exit?)" in message
    assert "    | toolbox: crashing on purpose" in message


@pytest.mark.slow
async def test_a_served_program_reconnects_a_remote_server_that_died(toolbox_env: None) -> None:
    program = parse_file(MCP_FIXTURES / "toolbox_over_stdio.pal")
    async with PlaybookServer(program) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(60):
            first = await client.call_tool("ServerProcess", {})
            crashed = await client.call_tool("CrashIt", {})
            echoed = await client.call_tool("EchoIt", {"text": "back"})
            second = await client.call_tool("ServerProcess", {})
    assert crashed.is_error
    assert "closed the connection (did it exit?)" in text_of(crashed)
    assert echoed.structured_content == {"result": "back"}
    assert first.structured_content != second.structured_content  # a new server process


@pytest.mark.slow
async def test_http_headers_are_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    consumer = parse_file(MCP_FIXTURES / "toolbox_over_http.pal")
    async with (
        PlaybookServer(parse_file(MCP_FIXTURES / "toolbox.pal")) as served,
        serving_http(served, port=0, token="open-sesame") as endpoint,
    ):
        monkeypatch.setenv("PAL_TEST_URL", endpoint.url)
        monkeypatch.setenv("PAL_TEST_TOKEN", "open-sesame")
        with anyio.fail_after(30):
            assert await run_playbook(consumer, "Caller.EchoIt", "through HTTP") == "through HTTP"
        monkeypatch.setenv("PAL_TEST_TOKEN", "wrong")
        with anyio.fail_after(30), pytest.raises(ProgramError) as caught:
            await run_playbook(consumer, "Caller.EchoIt", "refused")
    assert str(caught.value) == (
        f"remote agent Toolbox: cannot connect to the http server {endpoint.url}: the server answered: "
        "Unauthorized: this server needs `Authorization: Bearer <token>`; the bearer token is wrong"
    )

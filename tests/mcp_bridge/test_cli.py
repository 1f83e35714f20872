"""`pal mcp config` (the Claude Desktop entry) and the command's own errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from mcp_bridge.config import claude_desktop_entry, pal_command, parse_env
from runtime.cli import main
from tests.mcp_bridge.helpers import MCP_FIXTURES

CALCULATOR = MCP_FIXTURES / "calculator.pal"


def test_pal_mcp_config_prints_an_entry_with_absolute_paths(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(MCP_FIXTURES)
    monkeypatch.setenv("PAL_TEST_API_KEY", "sk-test")
    status = main(
        ["mcp", "config", "calculator.pal", "--model", "openai/gpt-4o-mini", "--env", "PAL_TEST_API_KEY"]
    )
    assert status == 0
    entry = json.loads(capsys.readouterr().out)
    server = entry["mcpServers"]["calculator"]
    command = [server["command"], *server["args"]]
    assert Path(server["command"]).is_absolute()
    assert command[-5:] == ["mcp", "serve", str(CALCULATOR.resolve()), "--model", "openai/gpt-4o-mini"]
    assert server["env"] == {"PAL_TEST_API_KEY": "sk-test"}


def test_the_entry_runs_the_pal_script_beside_the_interpreter_or_the_cli_module(tmp_path: Path) -> None:
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    python.write_text("")
    assert pal_command(python) == [str(python), "-m", "runtime.cli"]
    script = python.with_name("pal")
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    assert pal_command(python) == [str(script)]
    entry = claude_desktop_entry(CALCULATOR, name="sums", python=python)
    assert entry == {
        "mcpServers": {
            "sums": {
                "command": str(script),
                "args": ["mcp", "serve", str(CALCULATOR.resolve()), "--name", "sums"],
            }
        }
    }


@pytest.mark.anyio
@pytest.mark.slow
async def test_the_printed_entry_starts_a_server_that_answers(tmp_path: Path) -> None:
    # Run exactly what Claude Desktop would run, from another working directory.
    server = claude_desktop_entry(CALCULATOR)["mcpServers"]["calculator"]
    parameters = StdioServerParameters(command=server["command"], args=server["args"], cwd=tmp_path)
    with anyio.fail_after(60):
        async with Client(parameters) as client:
            result = await client.call_tool("Add", {"a": 1, "b": 1})
    assert result.structured_content == {"result": 2}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["mcp", "config", "missing.pal"], "error: missing.pal: no such program file"),
        (["mcp", "config", str(CALCULATOR), "--env", "1BAD=x"], "'1BAD' is not an environment variable name"),
        (
            ["mcp", "config", str(CALCULATOR), "--env", "PAL_TEST_UNSET"],
            "--env PAL_TEST_UNSET: the variable is not set",
        ),
    ],
)
def test_pal_mcp_config_explains_bad_input(
    arguments: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PAL_TEST_UNSET", raising=False)
    assert main(arguments) == 2
    assert message in capsys.readouterr().err


def test_parse_env_takes_assignments_and_copies_bare_names() -> None:
    assert parse_env(["A=1", "B", "C=x=y"], {"B": "from here"}) == {"A": "1", "B": "from here", "C": "x=y"}


def test_without_the_mcp_sdk_serve_says_how_to_install_it(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name == "mcp" else real_find_spec(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert main(["mcp", "serve", str(CALCULATOR)]) == 2
    assert "pip install 'pal-bridge[mcp]'" in capsys.readouterr().err

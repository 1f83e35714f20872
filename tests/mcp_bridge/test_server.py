"""The MCP server, in process: `mcp.Client` against the real PlaybookServer (no transport in between, and
the JSON-RPC path through memory streams where it matters)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import anyio
import pytest
from mcp import Client

from mcp_bridge.server import PlaybookServer, tool_result
from pal_core.parser import parse, parse_file
from runtime.errors import ProgramError
from runtime.models import ScriptedModel
from runtime.session import CallOutcome
from tests.mcp_bridge.helpers import MCP_FIXTURES, agent_tasks, text_of

pytestmark = pytest.mark.anyio

CALCULATOR = parse_file(MCP_FIXTURES / "calculator.pal")
TOOLBOX = parse_file(MCP_FIXTURES / "toolbox.pal")
SHARED = parse_file(MCP_FIXTURES / "shared_counter.pal")


async def test_every_public_playbook_is_listed_with_its_schemas_and_nothing_else() -> None:
    async with PlaybookServer(CALCULATOR) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert sorted(listed) == ["Add", "Announce", "Divide", "Double", "Greet", "Tally"]
    add = listed["Add"]
    assert add.title == "Calculator.Add"
    assert add.description == "Adds two integers."
    assert add.input_schema == {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "additionalProperties": False,
        "required": ["a", "b"],
    }
    assert add.output_schema == {
        "type": "object",
        "properties": {"result": {"type": "integer"}},
        "required": ["result"],
    }
    assert listed["Divide"].input_schema["properties"]["b"] == {"type": "number", "default": 1.0}
    assert listed["Double"].description == "Doubles a number without asking a model."
    assert listed["Announce"].output_schema is None


async def test_a_python_playbook_answers_with_text_and_structured_content() -> None:
    async with PlaybookServer(CALCULATOR) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            added = await client.call_tool("Add", {"a": 2, "b": 40})
            tally = await client.call_tool("Tally", {"words": ["to", "be", "or", "not", "to", "be"]})
            divided = await client.call_tool("Divide", {"a": 7})
    assert not added.is_error
    assert text_of(added) == "42"
    assert added.structured_content == {"result": 42}
    assert tally.structured_content == {"result": {"to": 2, "be": 2, "or": 1, "not": 1}}
    assert text_of(tally) == '{"to": 2, "be": 2, "or": 1, "not": 1}'
    assert divided.structured_content == {"result": 7.0}  # the default b=1.0


async def test_a_fast_path_playbook_reports_a_progress_notification_per_step_and_calls_no_model() -> None:
    model = ScriptedModel([])  # any model call would fail
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async with PlaybookServer(CALCULATOR, model=model) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("Double", {"n": 70}, progress_callback=on_progress)
    assert result.structured_content == {"result": 140}
    # What the playbook said to the user follows the result.
    assert [block.text for block in result.content] == ["140", "that is a big number"]
    assert progress == [
        (1, "Calculator.Double:01:EXE fast path"),
        (2, "Calculator.Double:02:CND condition holds"),
        (3, "Calculator.Double:02.01:QUE fast path"),
        (4, "Calculator.Double:03:RET return 140"),
    ]
    assert model.calls == 0


async def test_a_markdown_playbook_runs_its_model_steps_through_the_runtime() -> None:
    model = ScriptedModel(['`Step["Greet:01:EXE"]` `Var[$greeting, "Hello, Ann!"]`\nyld call'])
    async with PlaybookServer(CALCULATOR, model=model) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("Greet", {"name": "Ann"})
    assert not result.is_error, text_of(result)
    assert result.structured_content == {"result": "Hello, Ann!"}
    assert model.calls == 1
    assert "Continue executing Greet at line 01" in model.requests[0].messages[-1].content


async def test_what_a_playbook_says_is_the_result_of_a_playbook_that_returns_nothing() -> None:
    async with PlaybookServer(CALCULATOR) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("Announce", {"text": "Dinner is ready"})
    assert not result.is_error
    assert result.structured_content is None
    assert text_of(result) == "Dinner is ready"


async def test_an_untyped_parameter_takes_any_json_value() -> None:
    async with PlaybookServer(TOOLBOX) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("Shout", {"text": ["a", 1]})
    assert result.structured_content == {"result": "['A', 1]"}


MALFORMED = [
    ({"a": "two", "b": 2}, 'Add: invalid arguments: a must be an integer, got string "two"'),
    ({"a": 1}, "Add: invalid arguments: b is required"),
    ({"a": 1, "b": 2, "c": 3}, "Add: invalid arguments: c is not a parameter (parameters: a, b)"),
    ({"a": None, "b": [1]}, "a must be an integer, got null; b must be an integer, got array [1]"),
]


@pytest.mark.parametrize(("arguments", "message"), MALFORMED)
async def test_malformed_arguments_are_a_tool_error_and_the_server_still_answers(
    arguments: dict, message: str
) -> None:
    async with PlaybookServer(CALCULATOR) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            refused = await client.call_tool("Add", arguments)
            after = await client.call_tool("Add", {"a": 1, "b": 2})
    assert refused.is_error
    assert message in text_of(refused)
    assert after.structured_content == {"result": 3}


@pytest.mark.parametrize("name", ["Private", "Secret", "Internal", "Calculator.Private", "Nope"])
async def test_a_playbook_that_is_not_public_cannot_be_called_by_name(name: str) -> None:
    async with PlaybookServer(CALCULATOR) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            result = await client.call_tool(name, {"n": 1})
    assert result.is_error
    assert text_of(result) == (
        f"Unknown tool: {name} (this server offers: Add, Announce, Divide, Double, Greet, Tally)"
    )


async def test_runtime_failures_are_tool_errors_with_a_message_and_no_traceback() -> None:
    async with PlaybookServer(CALCULATOR) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            raised = await client.call_tool("Divide", {"a": 1, "b": 0})
            no_model = await client.call_tool("Greet", {"name": "Ann"})
            after = await client.call_tool("Add", {"a": 1, "b": 2})
    assert raised.is_error
    assert text_of(raised) == (
        "Divide failed: Calculator:Divide: Python playbook Divide raised ZeroDivisionError: float division by zero"
    )
    assert no_model.is_error
    assert "this step needs a model and none is configured; pass --model" in text_of(no_model)
    assert "Traceback" not in text_of(raised) + text_of(no_model)
    assert after.structured_content == {"result": 3}


async def test_a_playbook_waiting_for_a_user_is_a_tool_error_saying_so() -> None:
    async with PlaybookServer(TOOLBOX) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("AskName", {})
    assert result.is_error
    assert text_of(result).startswith("AskName stopped: Toolbox.AskName waits for user input")


async def test_a_playbook_calls_another_agents_public_playbook() -> None:
    async with PlaybookServer(TOOLBOX) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            result = await client.call_tool("WordLength", {"word": "banana"})
    assert result.structured_content == {"result": 6}


async def test_each_call_gets_fresh_agent_state_by_default() -> None:
    async with PlaybookServer(TOOLBOX) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            counts = [(await client.call_tool("Count", {})).structured_content for _ in range(3)]
    assert counts == [{"result": 1}] * 3


async def test_a_program_can_ask_for_agent_state_shared_across_calls() -> None:
    async with PlaybookServer(SHARED) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            totals = [
                (await client.call_tool("Add", {"n": n})).structured_content["result"] for n in (1, 2, 3)
            ]
            await client.call_tool("SetNote", {"note": "buy milk"})
            note = await client.call_tool("GetNote", {})
    assert totals == [1, 3, 6]
    assert note.structured_content == {"result": "buy milk"}


async def test_shared_state_calls_take_turns() -> None:
    # Bump reads $count, pauses (other tasks run), then writes: interleaved calls would lose updates.
    async with PlaybookServer(SHARED) as served, Client(served.mcp_server) as client:
        results: list[int] = []

        async def bump() -> None:
            result = await client.call_tool("Bump", {})
            assert not result.is_error, text_of(result)
            results.append(result.structured_content["result"])

        with anyio.fail_after(20):
            await client.call_tool("Reset", {})
            async with anyio.create_task_group() as group:
                for _ in range(20):
                    group.start_soon(bump)
    assert sorted(results) == list(range(1, 21))


async def test_without_the_setting_the_same_program_forgets_between_calls() -> None:
    fresh = dataclasses.replace(SHARED, frontmatter={})
    async with PlaybookServer(fresh) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            totals = [(await client.call_tool("Add", {"n": n})).structured_content["result"] for n in (1, 2)]
            await client.call_tool("SetNote", {"note": "buy milk"})
            note = await client.call_tool("GetNote", {})
    assert totals == [1, 2]
    assert note.is_error  # $saved is gone, and with no model nothing can stand in for it


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_cancelled_call_stops_the_playbook_and_the_server_keeps_serving(
    mode: str, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    async with PlaybookServer(TOOLBOX) as served, Client(served.mcp_server, mode=mode) as client:
        with anyio.fail_after(10):
            with anyio.CancelScope() as scope:

                async def cancel_once_running(value: float, total: float | None, message: str | None) -> None:
                    if message and message.startswith("Toolbox.SlowJob:02"):
                        scope.cancel()

                await client.call_tool(
                    "SlowJob", {"marker": str(marker)}, progress_callback=cancel_once_running
                )
            assert scope.cancelled_caught
            # The next request is read after the cancellation, and the cancelled playbook notes it at once.
            echoed = await client.call_tool("Echo", {"text": "still here"})
    assert echoed.structured_content == {"result": "still here"}
    assert marker.read_text() == "cancelled"
    assert agent_tasks("Toolbox") == []  # the cancelled call's run was shut down


async def test_a_run_that_cannot_start_is_a_tool_error_and_later_calls_are_served(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with PlaybookServer(TOOLBOX) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            assert not (await client.call_tool("Echo", {"text": "before"})).is_error
            monkeypatch.setenv("PAL_TEST_TOOLBOX_BROKEN", "1")
            # A run started ahead of time (before the variable was set) may still serve one call.
            results = [await client.call_tool("Echo", {"text": "while broken"}) for _ in range(3)]
            monkeypatch.delenv("PAL_TEST_TOOLBOX_BROKEN")
            after = await client.call_tool("Echo", {"text": "after"})
    failures = [text_of(result) for result in results if result.is_error]
    assert failures, "no call ran under the broken load"
    assert "the toolbox cannot load: PAL_TEST_TOOLBOX_BROKEN is set" in failures[-1]
    assert results[-1].is_error
    assert after.structured_content == {"result": "after"}


async def test_no_agent_task_outlives_the_server() -> None:
    async with PlaybookServer(TOOLBOX) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(10):
            for word in ("a", "bb", "ccc"):
                await client.call_tool("WordLength", {"word": word})
    assert agent_tasks("Toolbox") == [] and agent_tasks("Helper") == []


async def test_many_concurrent_calls_in_process_each_get_their_own_result() -> None:
    async with PlaybookServer(CALCULATOR) as served, Client(served.mcp_server) as client:
        results: dict[int, object] = {}

        async def add(i: int) -> None:
            results[i] = (await client.call_tool("Add", {"a": i, "b": i})).structured_content

        with anyio.fail_after(30):
            async with anyio.create_task_group() as group:
                for i in range(100):
                    group.start_soon(add, i)
    assert results == {i: {"result": 2 * i} for i in range(100)}


async def test_a_program_that_cannot_serve_fails_when_the_server_opens() -> None:
    broken = parse(
        "# Broken\nBroken code.\n\n```python\n@playbook(public=True)\nasync def F() -> int:\n    return 1\n\nraise RuntimeError('no database')\n```\n"
    )
    with pytest.raises(ProgramError, match=r"the python block failed to load: RuntimeError: no database"):
        async with PlaybookServer(broken):
            pass
    settings = dataclasses.replace(CALCULATOR, frontmatter={"mcp": {"state": "forever"}})
    with pytest.raises(
        ProgramError, match=r"front matter `mcp\.state` must be one of fresh, shared, got 'forever'"
    ):
        PlaybookServer(settings)


async def test_a_typed_return_that_does_not_fit_its_type_is_a_tool_error() -> None:
    async with PlaybookServer(CALCULATOR) as served:
        tool = served.tools["Tally"]
        wrong = tool_result(tool, CallOutcome(value=["not", "a", "dict"]))
        right = tool_result(tool, CallOutcome(value={"a": 1}, said_to_user=("counted",)))
    assert wrong.is_error
    assert text_of(wrong) == (
        "Tally returned a value that does not match its declared return type dict[str, int]: "
        'result must be an object, got array ["not", "a", "dict"]'
    )
    assert right.structured_content == {"result": {"a": 1}}
    assert [block.text for block in right.content] == ['{"a": 1}', "counted"]

"""Budgets of served calls, in process against the real PlaybookServer (issue 13): each call has budgets
of its own (steps, seconds, model calls, value sizes), a call past one ends with a tool error naming it,
a cancelled call stops, and `request_stop` ends the calls in progress with a tool error."""

from __future__ import annotations

import anyio
import anyio.lowlevel
import pytest
from mcp import Client

from mcp_bridge.server import PlaybookServer
from pal_core.parser import parse, parse_file
from runtime.models import ScriptedModel
from runtime.program_run import RunLimits
from tests.mcp_bridge.helpers import MCP_FIXTURES, text_of

pytestmark = pytest.mark.anyio

SPINNER = parse_file(MCP_FIXTURES / "spinner.pal")
CALC = parse(
    """# Calc
Computes for MCP clients.

```python
@playbook(public=True)
async def Echo(x: list) -> list:
    \"\"\"Returns its argument.\"\"\"
    return x
```

## Power($base:int, $exp:int) -> int
metadata:
  public: true
---
Raises a number to a power.
### Steps
01:EXE $r:int = $base ** $exp
02:RET $r

## Describe($n:int) -> str
metadata:
  public: true
---
Describes a number in words.
### Steps
01:EXE $words:str = the number $n in words
02:RET $words
""",
    file="calc.pal",
)


async def test_a_huge_power_is_a_tool_error_naming_the_budget_and_the_server_keeps_serving() -> None:
    async with PlaybookServer(CALC) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(30):
            huge = await client.call_tool("Power", {"base": 10**4000, "exp": 10000})
            small = await client.call_tool("Power", {"base": 3, "exp": 4})
    assert huge.is_error
    assert text_of(huge) == (
        "Power failed: Calc:Power:01: the result of `$base ** $exp` would have about 40,000,000 digits, more "
        "than the 4300 allowed (budget max_int_digits=4300; raise it with --max-int-digits)"
    )
    assert small.structured_content == {"result": 81}


async def test_an_argument_nested_without_end_is_a_tool_error() -> None:
    deep: list[object] = []
    inner = deep
    for _ in range(5000):
        inner.append([])
        inner = inner[0]  # type: ignore[assignment]
    async with PlaybookServer(CALC) as served:
        with anyio.fail_after(30):
            refused = await served.call("Echo", {"x": deep})
            fine = await served.call("Echo", {"x": [[1], [2]]})
    assert refused.is_error
    assert text_of(refused) == (
        "Echo failed: argument x of Echo nests lists and dicts more than 100 levels deep (a fixed limit of 100)"
    )
    assert fine.structured_content == {"result": [[1], [2]]}


async def test_the_model_call_budget_is_per_call_not_per_server() -> None:
    answer = '`Step["Describe:01:EXE"]` in words\n`Var[$words, "four"]`\nyld call'
    model = ScriptedModel([answer] * 3)
    limits = RunLimits(max_model_calls=1)
    async with PlaybookServer(CALC, model=model, limits=limits) as served:
        with anyio.fail_after(30):
            results = [await served.call("Describe", {"n": 4}) for _ in range(3)]
    assert [result.structured_content for result in results] == [{"result": "four"}] * 3
    assert model.calls == 3


async def test_a_spinning_call_ends_at_its_step_budget_and_frees_its_agent() -> None:
    async with PlaybookServer(SPINNER, limits=RunLimits(max_steps=300)) as served:
        with anyio.fail_after(60):
            spun = await served.call("Spin", {})
            peeked = await served.call("Peek", {})
    assert spun.is_error
    assert text_of(spun).startswith("Spin failed: Spinner:Spin:")
    assert "(budget max_steps=300; raise it with --max-steps)" in text_of(spun)
    assert peeked.structured_content == {"result": 100}


async def test_a_cancelled_call_stops_and_other_calls_are_served_meanwhile() -> None:
    unlimited = RunLimits(max_steps=None, max_seconds=None)
    async with PlaybookServer(SPINNER, limits=unlimited) as served, Client(served.mcp_server) as client:
        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "Spin", {})
                counts = [0]
                while counts[-1] < 50:  # answered while Spin runs
                    counts.append((await client.call_tool("Peek", {})).structured_content["result"])  # type: ignore[index]
                group.cancel_scope.cancel()
            readings = [-1, -2]
            while readings[-1] != readings[-2]:
                readings.append((await client.call_tool("Peek", {})).structured_content["result"])  # type: ignore[index]
            again = (await client.call_tool("Peek", {})).structured_content["result"]  # type: ignore[index]
    assert counts[-1] >= 50
    assert again == readings[-1]


async def test_request_stop_ends_the_calls_in_progress_with_a_tool_error() -> None:
    unlimited = RunLimits(max_steps=None, max_seconds=None)
    async with PlaybookServer(SPINNER, limits=unlimited) as served:
        with anyio.fail_after(60):
            results = []
            async with anyio.create_task_group() as group:

                async def spin() -> None:
                    results.append(await served.call("Spin", {}))

                group.start_soon(spin)
                while (await served.call("Peek", {})).structured_content["result"] == 0:  # type: ignore[index]
                    # An in-process call may finish without suspending; give the spinning call its start.
                    await anyio.lowlevel.checkpoint()
                served.request_stop("the server is shutting down (test)")
            later = await served.call("Peek", {})
            await served.stopped()
    (spun,) = results
    assert spun.is_error
    assert text_of(spun).startswith("Spin failed: Spinner:Spin:")
    assert text_of(spun).endswith("the server is shutting down (test)")
    assert later.is_error and text_of(later) == "Peek failed: the server is shutting down (test)"

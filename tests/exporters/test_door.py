"""Every exporter's arguments are checked at one door (runtime.session.PlaybookCalls, issue 26 item 4): the
ADK and AutoGen exporters once checked on their own and let NaN in; now a number that is not finite is
refused, naming the argument, before the playbook runs, whichever framework called."""

from __future__ import annotations

import math

import anyio
import pytest

from exporters import ExportError
from pal_core.ir import Program
from pal_core.parser import parse
from runtime.embedding import EmbeddedPlaybook
from runtime.inputs import InputError

pytestmark = pytest.mark.anyio

RUN_SECONDS = 60

SCALER = """# Scaler
Scales numbers.

```python
@playbook(public=True)
async def Scale(x: float, factor: float = 2.0) -> float:
    \"\"\"x times factor.\"\"\"
    return x * factor
```
"""


@pytest.fixture
def scaler() -> Program:
    return parse(SCALER)


async def test_the_embedded_playbook_refuses_nan_and_infinity(scaler: Program) -> None:
    async with EmbeddedPlaybook(scaler, "Scale") as scale:
        with anyio.fail_after(RUN_SECONDS):
            assert (await scale.call({"x": 1.5})).value == 3.0
            for bad in (math.nan, math.inf, -math.inf):
                with pytest.raises(InputError, match=r"Scale: invalid arguments: x must be a finite number"):
                    await scale.call({"x": bad})
            with pytest.raises(InputError, match=r"factor must be a finite number, got nan"):
                await scale.call({"x": 1.0, "factor": math.nan})


async def test_the_adk_tool_and_agent_refuse_nan(scaler: Program) -> None:
    from exporters.adk import as_adk_agent, as_adk_tool
    from tests.importers.adk_runs import adk_outcome

    tool = as_adk_tool(scaler, playbook="Scale")
    with anyio.fail_after(RUN_SECONDS):
        assert await tool.run_async(args={"x": 2.0}, tool_context=None) == 4.0
        refused = await tool.run_async(args={"x": math.nan}, tool_context=None)
    assert refused == {"error": "tool 'Scale': x must be a finite number, got nan"}

    agent = as_adk_agent(scaler, playbook="Scale", output_key="scaled")
    with anyio.fail_after(RUN_SECONDS):
        assert (await adk_outcome(agent, "scale it", {"x": 1.5}))["state"]["scaled"] == 3.0
    with (
        anyio.fail_after(RUN_SECONDS),
        pytest.raises(ExportError, match=r"x must be a finite number, got inf"),
    ):
        await adk_outcome(agent, "scale it", {"x": math.inf})
    await tool.embedded.aclose()
    await agent.embedded.aclose()


async def test_the_autogen_tool_refuses_nan(scaler: Program) -> None:
    from autogen_core import CancellationToken

    from exporters.autogen import as_autogen_tool

    tool = as_autogen_tool(scaler, playbook="Scale")
    with anyio.fail_after(RUN_SECONDS):
        assert await tool.run_json({"x": 2.0}, CancellationToken()) == 4.0
        # pydantic lets NaN through a float field; the door does not.
        with pytest.raises(ExportError, match=r"tool 'Scale': x must be a finite number, got nan"):
            await tool.run_json({"x": math.nan}, CancellationToken())
    await tool.embedded.aclose()


async def test_the_langchain_tool_and_langgraph_node_refuse_nan(scaler: Program) -> None:
    from langchain_core.tools import ToolException

    from exporters.langgraph import as_langchain_tool, as_langgraph_node

    tool = as_langchain_tool(scaler, playbook="Scale")
    node = as_langgraph_node(scaler, playbook="Scale", output_key="scaled")
    with anyio.fail_after(RUN_SECONDS):
        assert await tool.ainvoke({"x": 2.0}) == 4.0
        with pytest.raises(ToolException, match=r"tool 'Scale': x must be a finite number, got nan"):
            await tool.ainvoke({"x": math.nan})
        assert await node.ainvoke({"x": 1.0}) == {"scaled": 2.0}
        with pytest.raises(
            ExportError, match=r"node 'Scale' cannot run Scaler.Scale on this state: x must be"
        ):
            await node.ainvoke({"x": -math.inf})
    await tool.embedded.aclose()
    await node.embedded.aclose()

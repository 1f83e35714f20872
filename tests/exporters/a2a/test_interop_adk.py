"""A2A interop with Google ADK, whose A2A code nobody here wrote (issue 26, "Done when"): ADK's
`RemoteA2aAgent` (under an LlmAgent run by ADK's fake, scripted model) delegates to a served PAL agent and
gets its answer; a PAL program consumes an ADK agent served by ADK's `to_a2a`."""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import anyio
import httpx
import pytest
from a2a.types import a2a_pb2 as pb

from exporters.a2a.server import A2AServer, serving_a2a
from pal_core.parser import parse, parse_file
from runtime.api import run_program
from runtime.serving.http import serving_app
from tests.exporters.a2a.helpers import A2A_FIXTURES
from tests.fixtures.adk.llm import ScriptedLlm, call, text
from tests.importers.adk_runs import adk_outcome

pytestmark = pytest.mark.anyio

WAIT = 120


@pytest.fixture(autouse=True)
def _adk_says_its_a2a_is_experimental() -> Iterator[None]:
    # ADK marks its A2A code experimental with a UserWarning at every use; the suite turns warnings into errors.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]", category=UserWarning)
        yield


async def test_adks_remote_a2a_agent_delegates_to_a_served_pal_agent() -> None:
    from a2a.client import ClientConfig, ClientFactory
    from google.adk.agents import LlmAgent
    from google.adk.agents.remote_a2a_agent import RemoteA2aAgent

    async with (
        A2AServer(parse_file(A2A_FIXTURES / "orders.pal")) as served,
        serving_a2a(served, port=0) as endpoint,
        httpx.AsyncClient(timeout=httpx.Timeout(60.0)) as http,  # closed here (ADK leaves its own open)
    ):
        orders = RemoteA2aAgent(
            name="orders",
            agent_card=f"{endpoint.url}.well-known/agent-card.json",
            description="order status",
            a2a_client_factory=ClientFactory(ClientConfig(httpx_client=http)),
        )
        model = ScriptedLlm(responses=[call("transfer_to_agent", agent_name="orders")])
        front = LlmAgent(
            name="front", model=model, instruction="Send order questions to orders.", sub_agents=[orders]
        )
        with anyio.fail_after(WAIT):
            outcome = await adk_outcome(front, "Where is my order 2718?", {})
            listed = await served.handler.on_list_tasks(pb.ListTasksRequest(), None)  # type: ignore[arg-type]
    assert outcome["reply"] == "Order 2718 is shipped on 3 March."
    [task] = listed.tasks
    assert pb.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
    assert task.history[0].parts[0].text.startswith("Where is my order 2718?")


PROGRAM = """# Weather
metadata:
  remote:
    type: a2a
    url: ${PAL_TEST_WEATHER_URL}
    timeout: 60
---
A weather agent built with Google ADK.

# Front
Asks about the weather.

## Main() -> str
### Triggers
- T1:BGN
### Steps
01:EXE $answer = Weather.weather(message="What is the weather in Paris?")
02:RET $answer
"""


async def test_a_pal_program_consumes_an_adk_agent_served_by_to_a2a(monkeypatch: pytest.MonkeyPatch) -> None:
    from google.adk.a2a.utils.agent_to_a2a import to_a2a
    from google.adk.agents import LlmAgent

    model = ScriptedLlm(responses=[text("It is sunny in Paris.")])
    weather = LlmAgent(
        name="weather",
        model=model,
        description="Answers questions about the weather.",
        instruction="Be brief.",
    )

    def adk_app(url: str) -> object:
        return to_a2a(weather, host="127.0.0.1", port=int(url.rstrip("/").rsplit(":", 1)[1]))

    async with serving_app(
        adk_app, host="127.0.0.1", port=0, path="/", name="ADK agent", for_url=True
    ) as endpoint:  # type: ignore[arg-type]
        monkeypatch.setenv("PAL_TEST_WEATHER_URL", endpoint.url)
        with anyio.fail_after(WAIT):
            result = await run_program(parse(PROGRAM))
    assert result.status in ("exit", "idle"), result.reason
    assert result.variables["Front:1001"] == {"answer": "It is sunny in Paris."}
    # ADK's model got the question the PAL step sent, as the user's message.
    assert model.requests[0].contents[-1].parts[0].text == "What is the weather in Paris?"

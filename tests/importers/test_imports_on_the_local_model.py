"""Imported programs on the bundled model: an ADK LlmAgent with two tools and an AutoGen SelectorGroupChat of
three AssistantAgents each run to a clean end within a model-call budget.

What the 135M model says is not judged; that the run ends as the framework's would (a session state and a
reply; a transcript and a stop reason) without breaking the contract past the retries, within the budget, is.
"""

from __future__ import annotations

import anyio
import pytest

pytest.importorskip(
    "llama_cpp", reason="the local model needs llama-cpp-python: pip install 'pal-bridge[local]'"
)

from importers.adk import import_target as import_adk
from importers.autogen import import_target as import_autogen
from runtime.api import run_playbook
from runtime.local.model import DEFAULT_MODEL
from runtime.models import resolve_model
from runtime.program_run import RunLimits
from runtime.trace import Tracer

pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.anyio]

SEED = 7
MINUTES = 30 * 60  # a busy 2-core machine needs minutes per model turn; the budget is in calls, not time


async def test_an_imported_adk_agent_with_two_tools_ends_cleanly_on_the_bundled_model() -> None:
    program = import_adk("tests.fixtures.adk.llm:weather", strict=True).program
    tracer = Tracer()
    limits = RunLimits(seed=SEED, max_model_calls=8, max_retries=1)
    with anyio.fail_after(MINUTES):
        result = await run_playbook(
            program,
            "Invoke",
            model=resolve_model(DEFAULT_MODEL),
            limits=limits,
            tracer=tracer,
            message="What is the weather in Paris?",
            state={"user:name": "Ada"},
        )
    assert set(result) == {"state", "reply"}
    assert result["state"]["user:name"] == "Ada"
    assert sum(event.event == "model_call" for event in tracer.events) <= 8


async def test_an_imported_selector_team_of_three_assistants_ends_cleanly_on_the_bundled_model() -> None:
    program = import_autogen("tests.fixtures.autogen.tool_teams:selector_trio", strict=True).program
    tracer = Tracer()
    limits = RunLimits(seed=SEED, max_model_calls=16, max_retries=1)
    with anyio.fail_after(MINUTES):
        result = await run_playbook(
            program,
            "Run",
            task="Write a slogan for a bakery.",
            model=resolve_model(DEFAULT_MODEL),
            limits=limits,
            tracer=tracer,
        )
    sources = [entry["source"] for entry in result["messages"]]
    assert sources[0] == "user" and set(sources[1:]) <= {"planner", "writer", "critic"}
    assert result["stop_reason"] in (
        "Text 'APPROVE' mentioned",
        f"Maximum number of messages 6 reached, current message count: {len(sources)}",
    )
    assert sum(event.event == "model_call" for event in tracer.events) <= 16

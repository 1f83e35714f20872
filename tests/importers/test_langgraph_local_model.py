"""Each imported program of the LangGraph shapes runs on the bundled model to a clean end within a budget.

A clean end is a final state (the answers were accepted) or a clear budget stop (the model-call budget,
named). Nothing but the run's model answers: every model call of the trace is the bundled model's, and the
graphs' own chat models are never called (each is armed with one answer that must still be there after).
What the 135M model says is not judged.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

pytest.importorskip(
    "llama_cpp", reason="the local model needs llama-cpp-python: pip install 'pal-bridge[local]'"
)

from langchain_core.messages import AIMessage

from runtime.local.model import DEFAULT_MODEL
from runtime.models import resolve_model
from runtime.models.limits import ModelCallLimitExceeded
from runtime.program_run import RunLimits
from runtime.trace import Tracer
from tests.fixtures.langgraph import model_nodes, react_shapes, run_context, supervisor_team
from tests.importers.langgraph_runs import imported

pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.anyio]

LIMITS = RunLimits(seed=7, max_model_calls=4, max_retries=4, max_answer_tokens=160)
"""Four model calls, each answer at most 160 tokens: a few minutes at most on a busy 2-core machine."""
NOT_YOURS = "the graph's own model answered"
QUESTION = {"messages": [{"role": "user", "content": "What is the weather in Porto?"}]}
SHAPES: dict[str, tuple[str, dict[str, Any], dict[str, Any]]] = {
    "hand-written ReAct loop": ("react_shapes:hand_written", QUESTION, {}),
    "hand-written loop, dynamic prompt": ("react_shapes:hand_written_dynamic", QUESTION, {}),
    "create_react_agent": ("react_shapes:prebuilt_react", QUESTION, {}),
    "create_agent": ("react_shapes:prebuilt_agent", QUESTION, {}),
    "create_agent, response format": ("react_shapes:structured_agent", QUESTION, {}),
    "model calls in Python": ("model_nodes:graph", {"text": "Rain on Saturday, sun on Sunday."}, {}),
    "supervisor and two workers": ("supervisor_team:graph", QUESTION, {}),
    "config, runtime, store, writer": (
        "run_context:graph",
        dict(run_context.INPUT),
        {"context": run_context.CONTEXT},
    ),
}
FAKES = [
    react_shapes.model,
    react_shapes.custom_model,
    react_shapes.react_model,
    react_shapes.agent_model,
    react_shapes.report_model,
    model_nodes.llm,
    supervisor_team.supervisor_model,
    supervisor_team.research_model,
    supervisor_team.math_model,
]


def _budget_stop(error: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ModelCallLimitExceeded):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_the_imported_program_ends_cleanly_on_the_bundled_model(shape: str) -> None:
    from runtime.api import run_playbook

    target, state, arguments = SHAPES[shape]
    for fake in FAKES:
        fake.answer([AIMessage(NOT_YOURS)])
    run_context.store.delete(("visits",), run_context.INPUT["name"])
    tracer = Tracer()
    outcome: Any = None
    with anyio.fail_after(1800):  # a busy 2-core CI box needs minutes; a quiet one seconds
        try:
            outcome = await run_playbook(
                imported(f"tests.fixtures.langgraph.{target}"),
                "Invoke",
                model=resolve_model(DEFAULT_MODEL),
                limits=LIMITS,
                tracer=tracer,
                input=state,
                **arguments,
            )
        except Exception as error:  # only a budget stop is a clean end short of a final state
            assert _budget_stop(error), f"{shape}: {type(error).__name__}: {error}"
    if outcome is not None:
        assert isinstance(outcome, dict) and outcome, outcome
    calls = [event for event in tracer.events if event.event == "model_call"]
    assert len(calls) <= LIMITS.max_model_calls
    assert all(event.detail.startswith(DEFAULT_MODEL) for event in calls), [event.detail for event in calls]
    for fake in FAKES:
        assert next(fake.messages).content == NOT_YOURS  # the graph's own model was never called

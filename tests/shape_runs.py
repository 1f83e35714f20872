"""The imported programs of tests/fixtures/shapes, run on the bundled model (issue 28): an ADK LlmAgent with
two tools, an ADK tree of five agents with long instructions, an AutoGen Selector team of three agents and a
LangGraph ReAct loop. Shared by tests/runtime/local/test_imported_shapes.py and benchmarks/local_shapes.py."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHAPES = ROOT / "tests" / "fixtures" / "shapes"
RUNS = 5
TEMPERATURE = 0.7
MODEL_CALLS = 12
"""The model-call budget of one run."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Shape:
    """One program and how it is called."""

    file: str
    playbook: str
    arguments: dict[str, Any]


SHAPE_RUNS = (
    Shape(
        file="adk_librarian.pal",
        playbook="Invoke",
        arguments={"message": "Is Dune on the shelf? Please reserve it for member 42."},
    ),
    Shape(
        file="adk_tree.pal",
        playbook="Invoke",
        arguments={"message": "My fridge, order 2718, has not arrived yet."},
    ),
    Shape(file="autogen_selector.pal", playbook="Run", arguments={"task": "Plan a picnic for Saturday."}),
    Shape(
        file="langgraph_react.pal",
        playbook="Invoke",
        arguments={"input": {"messages": [{"role": "user", "content": "What time is it in Lisbon?"}]}},
    ),
)


@dataclass(slots=True)
class RunFigures:
    """What one run of a shape did."""

    ended: str
    """`value` (it returned), or the clear stop: the budget or the contract, in words."""
    turns: int = 0
    """Model turns asked (a retry is not a new turn)."""
    first_time: int = 0
    """Turns whose first answer was accepted."""
    prompt_tokens: list[int] = field(default_factory=list)
    """Prompt tokens of every model call."""
    seconds: float = 0.0
    """Wall time of the run."""
    requests: list[Any] = field(default_factory=list)
    """The react requests it made (for the react section)."""


async def run_shape(shape: Shape, seed: int, *, temperature: float = TEMPERATURE) -> RunFigures:
    """Run one shape once on the bundled model; never raises for a run that stops."""
    from pal_core.errors import PalError
    from runtime.api import run_playbook
    from runtime.loader import load
    from runtime.models import resolve_model
    from runtime.models.base import ObservedModel, RequestKind
    from runtime.program_run import RunLimits
    from runtime.trace import Tracer

    model = resolve_model("local/smollm2")
    requests: list[Any] = []

    def keep_react(request: Any) -> None:
        if request.kind is RequestKind.REACT:
            requests.append(request)

    tracer = Tracer()
    limits = RunLimits(seed=seed, temperature=temperature, max_model_calls=MODEL_CALLS, max_retries=1)
    started = time.perf_counter()
    try:
        await run_playbook(
            load(SHAPES / shape.file),
            shape.playbook,
            model=ObservedModel(model, keep_react),
            limits=limits,
            tracer=tracer,
            **shape.arguments,
        )
        ended = "value"
    except PalError as error:
        ended = f"{type(error).__name__}: {str(error).splitlines()[0][:160]}"
    figures = RunFigures(ended=ended, seconds=time.perf_counter() - started, requests=requests)
    calls = [event for event in tracer.events if event.event == "model_call"]
    rejected = {event.model_call for event in tracer.events if event.event == "violation"}
    previous_rejected = False
    for event in calls:
        figures.prompt_tokens.append((event.tokens or {}).get("prompt", 0))
        if not previous_rejected:
            figures.turns += 1
            figures.first_time += event.model_call not in rejected
        previous_rejected = event.model_call in rejected
    return figures

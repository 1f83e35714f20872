"""Imported programs in the shapes issue 28 names run on the bundled model and end cleanly: an ADK LlmAgent
with two tools, an ADK tree of five agents with long instructions, an AutoGen Selector team of three agents,
a LangGraph ReAct loop (tests/fixtures/shapes). Greedy decoding: every answer is inside its turn's grammar,
so the verifier accepts it the first time; a run returns its value or stops at its model-call budget.
Nothing here depends on the machine's speed (the waits are bounded against hangs only)."""

from __future__ import annotations

import anyio
import pytest

from tests.shape_runs import SHAPE_RUNS, Shape, run_shape

pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.anyio]


@pytest.mark.parametrize("shape", SHAPE_RUNS, ids=lambda shape: shape.file)
async def test_an_imported_program_ends_cleanly_on_the_bundled_model(shape: Shape) -> None:
    with anyio.fail_after(3600):  # a busy 2-core machine needs minutes
        figures = await run_shape(shape, seed=1, temperature=0.0)
    assert figures.ended == "value" or "ModelCallLimitExceeded" in figures.ended, figures.ended
    assert figures.turns and figures.first_time == figures.turns, figures
    assert max(figures.prompt_tokens) < 8192

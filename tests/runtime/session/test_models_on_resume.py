"""A model that records (`record:cassette=scripted:answers`) keeps its place when a thread resumes in a new
process (issue 21): the resumed run's first live request gets the answer after those the log holds."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from runtime.api import run_program
from runtime.models.registry import resolve_model
from runtime.store import open_store
from tests.runtime.session.processes import SHOP_ANSWERS
from tests.runtime.session.programs import SHOP_PROGRAM

pytestmark = pytest.mark.anyio


async def test_a_recording_model_keeps_its_place_on_resume(tmp_path: Path) -> None:
    spec = f"record:{tmp_path / 'cassette.jsonl'}=scripted:{SHOP_ANSWERS}"
    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        with anyio.fail_after(30):
            first = await run_program(SHOP_PROGRAM, model=resolve_model(spec), store=store, thread="t")
            assert first.status == "needs_input"
            # A new process: a new model from the same spec, resumed on the thread.
            second = await run_program(
                SHOP_PROGRAM,
                model=resolve_model(spec),
                store=store,
                thread="t",
                messages=["tea please", "yes"],
            )
    assert second.status == "exit", second.reason
    # Answers 2 to 5, as a run that never stopped would have had them (the third is rejected by design);
    # starting over at answer 1 would be re-asked and rejected, costing more calls.
    assert second.model_calls == 4
    assert second.messages_to_user == ["What would you like?", "Tea is 3. Confirm?", "Thank you!"]

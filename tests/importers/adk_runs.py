"""Running one input both ways: under ADK's own Runner, and as the imported PAL program.

Shared by the ADK importer and exporter tests. `adk_outcome` is what `pal run --input` prints for the
same input: the session state `get_session` returns after the run, and the text of the last event an
agent wrote.
"""

from __future__ import annotations

import copy
from typing import Any

from google.adk.runners import InMemoryRunner
from google.genai import types

from pal_core.ir import Program
from runtime.api import run_playbook
from runtime.models.base import Model
from runtime.program_run import RunLimits


async def adk_outcome(agent: Any, message: str, state: dict[str, Any]) -> dict[str, Any]:
    """`{"state": ..., "reply": ...}` after ADK's InMemoryRunner ran `agent` on `message` and `state`."""
    runner = InMemoryRunner(agent=agent, app_name="equivalence")
    session = await runner.session_service.create_session(
        app_name="equivalence", user_id="tester", state=copy.deepcopy(state)
    )
    reply = None
    content = types.Content(role="user", parts=[types.Part(text=message)])
    async for event in runner.run_async(user_id="tester", session_id=session.id, new_message=content):
        parts = event.content.parts if event.content and event.content.parts else []
        texts = [part.text for part in parts if part.text and not part.thought]
        if texts and event.author != "user":
            reply = "\n".join(texts)
    await runner.close()
    final = await runner.session_service.get_session(
        app_name="equivalence", user_id="tester", session_id=session.id
    )
    assert final is not None
    return {"state": final.state, "reply": reply}


async def pal_outcome(
    program: Program, message: str, state: dict[str, Any], *, model: Model | None = None, calls: int = 0
) -> Any:
    """What the imported program's `Invoke` returns for `message` and `state` (at most `calls` model
    calls; none by default, so any step the runtime cannot run alone fails the run)."""
    return await run_playbook(
        program,
        "Invoke",
        model=model,
        limits=RunLimits(max_model_calls=calls),
        message=message,
        state=copy.deepcopy(state),
    )


def same(expected: dict[str, Any], actual: Any) -> bool:
    """Equal outcomes, with the state's keys in the same order."""
    return (
        isinstance(actual, dict) and expected == actual and list(expected["state"]) == list(actual["state"])
    )

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

CONFIRMATION_REQUEST = "adk_request_confirmation"
"""The function call ADK makes when a tool asks for the user's confirmation (the run pauses until answered)."""


async def adk_outcome(
    agent: Any, message: str, state: dict[str, Any], *, confirmations: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """`{"state": ..., "reply": ...}` after ADK's InMemoryRunner ran `agent` on `message` and `state`. Each
    time a tool asks for confirmation, the paused run is resumed with the next of `confirmations` (a
    ToolConfirmation's fields), as an ADK client answers; a request with none left fails."""
    runner = InMemoryRunner(agent=agent, app_name="equivalence")
    session = await runner.session_service.create_session(
        app_name="equivalence", user_id="tester", state=copy.deepcopy(state)
    )
    reply = None
    answers = list(confirmations or ())
    content = types.Content(role="user", parts=[types.Part(text=message)])
    while content is not None:
        requests = []
        async for event in runner.run_async(user_id="tester", session_id=session.id, new_message=content):
            requests.extend(call for call in event.get_function_calls() if call.name == CONFIRMATION_REQUEST)
            parts = event.content.parts if event.content and event.content.parts else []
            texts = [part.text for part in parts if part.text and not part.thought]
            if texts and event.author != "user":
                reply = "\n".join(texts)
        content = None
        if requests:
            assert len(answers) >= len(requests), (
                f"ADK asked to confirm {len(requests)} call(s), {len(answers)} answer(s) left"
            )
            content = types.Content(
                role="user",
                parts=[
                    types.Part(
                        function_response=types.FunctionResponse(
                            id=request.id, name=CONFIRMATION_REQUEST, response=answers.pop(0)
                        )
                    )
                    for request in requests
                ],
            )
    assert not answers, f"{len(answers)} confirmation(s) never asked for"
    await runner.close()
    final = await runner.session_service.get_session(
        app_name="equivalence", user_id="tester", session_id=session.id
    )
    assert final is not None
    return {"state": final.state, "reply": reply}


async def pal_outcome(
    program: Program,
    message: str,
    state: dict[str, Any],
    *,
    model: Model | None = None,
    calls: int = 0,
    said: list[str] | None = None,
) -> Any:
    """What the imported program's `Invoke` returns for `message` and `state` (at most `calls` model
    calls; none by default, so any step the runtime cannot run alone fails the run); `said` is what the
    user answers when asked."""
    return await run_playbook(
        program,
        "Invoke",
        model=model,
        messages=said,
        limits=RunLimits(max_model_calls=calls),
        message=message,
        state=copy.deepcopy(state),
    )


def same(expected: dict[str, Any], actual: Any) -> bool:
    """Equal outcomes, with the state's keys in the same order."""
    return (
        isinstance(actual, dict) and expected == actual and list(expected["state"]) == list(actual["state"])
    )

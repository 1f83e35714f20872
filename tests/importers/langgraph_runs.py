"""Running a graph both ways for the LangGraph importer's tests: under LangGraph with LangChain's fake chat
model, and as the imported program with a ScriptedModel giving the same decisions in PAL's answer format.

Message ids differ between the two runs (LangGraph and the fakes make random ones; so does the program for
the tool calls its model makes), so states are compared with every id replaced by its order of first
appearance: the same messages, in the same order, with tool calls and tool messages matched the same way.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import anyio

from importers.langgraph import import_target
from pal_core.parser import parse
from pal_core.writer import write
from runtime.api import run_playbook
from runtime.models.scripted import ScriptedModel
from runtime.program_run import RunLimits

RUN_SECONDS = 60


def comparable(state: Mapping[str, Any]) -> dict[str, Any]:
    """`state` with its messages as plain dicts and their ids numbered by first appearance."""
    ids: dict[str, str] = {}

    def number(value: Any) -> str:
        return ids.setdefault(str(value), f"#{len(ids) + 1}")

    shown: dict[str, Any] = {}
    for key, value in state.items():
        if isinstance(value, list) and value and all(hasattr(item, "type") for item in value):
            shown[key] = [_message(item, number) for item in value]
        else:
            shown[key] = value
    return shown


def _message(message: Any, number: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": message.type, "content": message.content}
    if message.type == "ai":
        entry["name"] = message.name
        entry["tool_calls"] = [
            (call["name"], call["args"], number(call["id"])) for call in message.tool_calls
        ]
    elif message.type == "tool":
        entry.update(name=message.name, tool_call_id=number(message.tool_call_id), status=message.status)
    return entry


def imported(target: str) -> Any:
    """The program `pal import langgraph <target>` writes, as PAL text read back."""
    return parse(write(import_target(target).program))


async def run_imported(
    target: str,
    state: Mapping[str, Any],
    answers: Sequence[str],
    *,
    max_model_calls: int = 20,
    **arguments: Any,
) -> tuple[Any, ScriptedModel]:
    """The imported program's final state on `state`, its model answering `answers` in order."""
    model = ScriptedModel(list(answers))
    with anyio.fail_after(RUN_SECONDS):
        result = await run_playbook(
            imported(target),
            "Invoke",
            model=model,
            limits=RunLimits(max_model_calls=max_model_calls),
            input=copy.deepcopy(dict(state)),
            **arguments,
        )
    return result, model

"""The same model decisions for AutoGen and for the imported program.

A decision is what one model answer of an agent says: tool calls (`tool_teams.calls(...)`, an AutoGen
`CreateResult`) or a text. `pal_model` answers the imported program's model turns with the same decisions
in the line contract: the calls as inline calls of the agent's tool playbooks, a text as `$message`; each
agent's decisions are taken in order, so a turn the program asks for and AutoGen did not (or the other way
round) runs the script out of step and the transcripts differ.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from importers.common.naming import camel_case
from importers.common.steps import literal
from pal_core.ir import Program
from runtime.models import ScriptedModel
from runtime.models.base import ModelRequest


def pal_model(program: Program, decisions: Mapping[str, list[Any]]) -> ScriptedModel:
    """A ScriptedModel answering each agent's `Respond` turns with its decisions (agents by framework name)."""
    by_agent: dict[str, Iterator[Any]] = {}
    for agent in program.agents:
        name = (agent.metadata.extra.get("autogen") or {}).get("agent")
        if name in decisions:
            by_agent[agent.name] = iter(decisions[name])

    def answer(request: ModelRequest) -> str:
        agent = request.metadata["agent"]
        playbook = request.metadata["playbook"]
        line = request.metadata["line"]
        step = program.agent(agent).playbook(playbook).step(line)
        decision = next(by_agent[agent])
        head = f'`Step["{playbook}:{line}:{step.opcode}"]`'
        content = getattr(decision, "content", decision)
        if isinstance(content, str):
            return f"{head} `Var[$message, {json.dumps(content)}]`\nyld call"
        lines = [head]
        for index, call in enumerate(content, start=1):
            arguments = ", ".join(
                f"{key}={literal(value)}" for key, value in json.loads(call.arguments).items()
            )
            lines.append(f"`$result{index} = {camel_case(call.name)}({arguments})`")
        return "\n".join([*lines, "yld call"])

    return ScriptedModel(answer)


def transcript(result: Any) -> dict[str, Any]:
    """An AutoGen TaskResult as the imported program returns it: the chat messages (not agent events), a
    hand-off's target and a tool-call summary's type, and the stop reason."""
    from autogen_agentchat.messages import BaseChatMessage, HandoffMessage, ToolCallSummaryMessage

    messages = []
    for message in result.messages:
        if not isinstance(message, BaseChatMessage):
            continue
        entry: dict[str, Any] = {
            "source": message.source,
            "content": message.content if isinstance(message.content, str) else message.to_text(),
        }
        if isinstance(message, HandoffMessage):
            entry["handoff"] = message.target
        if isinstance(message, ToolCallSummaryMessage):
            entry["type"] = "ToolCallSummaryMessage"
        messages.append(entry)
    return {"messages": messages, "stop_reason": result.stop_reason}


__all__ = ["pal_model", "transcript"]

"""The turn of a participant that answers through the run's model or the run's user, as PAL playbooks.

An AutoGen `AssistantAgent` takes its turn as AutoGen's `_process_model_result` does, one model answer per
inference, the rest in steps the runtime runs alone:

    01:EXE $round:int = 0
    02:EXE $tool_results = $tool_results + $round_calls       (what the model is shown of earlier rounds)
    03:EXE $round_calls = []
    04:EXE $handoff_called = None
    05:EXE $message = None
    06:QUE Reply to $conversation as note N2 says: call your tools, or set $message to your message; YLD for call
    07:CND If $handoff_called != None                          -> a HandoffMessage (the first hand-off called)
    08:CND If $round_calls == []                               -> a TextMessage with $message
    09:EXE $round = $round + 1; another round while $round < max_tool_iterations
    10:...                                                      -> reflection (a model step) or the summary

Its tools are playbooks that run the tool through the live agent's workbench (`RunTool`: AutoGen's own
argument checks, error results and result text) and record the call in `$round_calls`; its hand-offs are
playbooks that record the first hand-off. The summary (`ToolCallSummaryMessage`) is made by AutoGen's own
`_summarize_tool_use` with the agent's format or formatter (`ToolSummary`).

An ag2 agent with an LLM suggests tool calls instead of running them (`SuggestedCall`): its reply is a
message with `tool_calls`, which the agent that registered the functions for execution runs on its turn.
An AutoGen `UserProxyAgent` reading the console asks the run's user (`Say("user", ...)`, then
`WaitForMessage("human")`): `pal run --message`, standard input or an MCP client's wait answer it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from importers.autogen._model import ChatTool, Member, Team
from importers.common.naming import Namer, camel_case, safe_description
from importers.common.steps import StepList, literal
from pal_core.ir import Metadata, Parameter, Playbook

RESPOND_PLAYBOOK = "Respond"
"""An LLM participant's playbook: the model writes its next message (or calls tools)."""
REPLY_PLAYBOOK = "Reply"
"""A participant's public turn playbook."""
USER_PROMPT = "Enter your response: "
"""What AutoGen's UserProxyAgent asks (after a hand-off: `Handoff received from <source>. ` first)."""


def _conversation_note(member: Member) -> str:
    return (
        "$conversation is the chat so far: each entry's source is who spoke and content what they said; the "
        f"entries from {member.name} are yours."
    )


def assistant_playbooks(
    team: Team, member: Member, namer: Namer, helper: Callable[[str], str]
) -> list[Playbook]:
    """`Respond` and the tool and hand-off playbooks of an AutoGen AssistantAgent."""
    source = literal(member.name)
    steps = StepList()
    notes = [_conversation_note(member)]
    if not member.tools and not member.handoffs:
        notes.append("Write your next message in the chat, in the role your instructions give you.")
        steps.add("EXE", "$message:str = your next message in the chat, written as note N2 says")
        steps.add("RET", f'{{"source": {source}, "content": $message}}')
        return [_respond(member, steps, notes)]
    what = "call the tools that help (your other playbooks; AutoGen runs them all"
    if member.max_tool_iterations > 1:
        what += (
            f", shows you what they returned in $tool_results and asks you again, up to {member.max_tool_iterations} "
            "rounds"
        )
    what += (
        ", then you write your message from what they returned)"
        if member.reflect_on_tool_use
        else ", then ends your turn with what they returned)"
    )
    if member.handoffs:
        what += ", hand the conversation to another agent (its TransferTo playbook)"
    notes.append(
        f"In one answer, either {what}, or set $message to your next message in the chat: "
        '`Var[$message, "..."]`. $tool_results holds your earlier tool calls and what they returned.'
    )
    steps.add("EXE", "$round:int = 0")
    steps.label("round")
    steps.add("EXE", "$tool_results = $tool_results + $round_calls")
    steps.add("EXE", "$round_calls = []")
    steps.add("EXE", "$handoff_called = None")
    steps.add("EXE", "$message = None")
    steps.add(
        "QUE",
        "Reply to $conversation as note N2 says: call your tools, or set $message to your message; YLD for call",
    )
    if member.handoffs:
        body = StepList()
        body.add(
            "RET",
            f'{{"source": {source}, "content": $handoff_called["message"], "handoff": $handoff_called["target"]}}',
        )
        steps.branch("If $handoff_called != None", body)
    body = StepList()
    body.add("EXE", '$message = ""')
    steps.branch("If $round_calls == [] and $message == None", body)
    body = StepList()
    body.add("RET", f'{{"source": {source}, "content": $message}}')
    steps.branch("If $round_calls == []", body)
    if member.max_tool_iterations > 1:
        steps.add("EXE", "$round = $round + 1")
        body = StepList()
        body.jump("round")
        steps.branch(f"If $round < {member.max_tool_iterations}", body)
    if member.reflect_on_tool_use:
        notes.append(
            "After your tool calls, write your message in the chat from what they returned (the last entries of $tool_results): text "
            "only, no more calls."
        )
        steps.add("EXE", "$tool_results = $tool_results + $round_calls")
        steps.add("EXE", "$round_calls = []")
        steps.add(
            "EXE", "$message:str = your message in the chat, written from your tool calls as note N3 says"
        )
        steps.add("RET", f'{{"source": {source}, "content": $message}}')
    else:
        arguments = f"team={literal(team.source)}, agent={source}, calls=$round_calls"
        steps.add("EXE", f"$summary:str = {helper('tool_summary')}({arguments})")
        steps.add("RET", f'{{"source": {source}, "content": $summary, "type": "ToolCallSummaryMessage"}}')
    playbooks = [_respond(member, steps, notes)]
    for tool in member.tools:
        body = StepList()
        body.add("EXE", f"$tool_arguments:dict = {_arguments(tool)}")
        call = (
            f"{helper('run_tool')}(team={literal(team.source)}, agent={source}, tool={literal(tool.name)}, "
            "arguments=$tool_arguments)"
        )
        body.add("EXE", f"$tool_call:dict = {call}")
        body.add("EXE", "$round_calls = $round_calls + [$tool_call]")
        body.add("RET", '$tool_call["content"]')
        playbooks.append(_tool_playbook(tool, namer, body, "AutoGen runs it through the agent's workbench."))
    for handoff in member.handoffs:
        body = StepList()
        record = StepList()
        record.add(
            "EXE", f"$handoff_called = {literal({'target': handoff.target, 'message': handoff.message})}"
        )
        body.branch("If $handoff_called == None", record)
        body.add("RET", literal(handoff.message))
        playbooks.append(
            Playbook(
                name=namer.take(camel_case(handoff.name), "Handoff"),
                returns="str",
                description=safe_description(
                    handoff.description or f"Hand the conversation to {handoff.target}."
                ),
                steps=body.build(),
            )
        )
    return playbooks


def ag2_playbooks(member: Member, namer: Namer, helper: Callable[[str], str]) -> list[Playbook]:
    """`Respond` and the tool playbooks of an ag2 agent with an LLM: its model turn, when its reply
    functions (human input, tool and code execution, its own) left the answer to the model."""
    source = literal(member.name)
    steps = StepList()
    notes = [_conversation_note(member)]
    if not member.tools:
        notes.append("Write your next message in the chat, in the role your instructions give you.")
        steps.add("EXE", "$message:str = your next message in the chat, written as note N2 says")
        steps.add("RET", f'{{"source": {source}, "content": $message}}')
        return [_respond(member, steps, notes)]
    notes.append(
        "In one answer, either suggest the tool calls that help (your other playbooks: ag2 posts them in the "
        "chat and the agent that executes them answers with their results), or set $message to your next "
        'message in the chat: `Var[$message, "..."]`.'
    )
    steps.add("EXE", "$round_calls:list = []")
    steps.add("EXE", "$message = None")
    steps.add(
        "QUE",
        "Reply to $conversation as note N2 says: suggest tool calls, or set $message to your message; YLD for call",
    )
    body = StepList()
    # ag2's GroupChat.append records a tool-call message's missing content as the text "None".
    body.add("RET", f'{{"source": {source}, "content": "None", "tool_calls": $round_calls}}')
    steps.branch("If $round_calls != []", body)
    body = StepList()
    body.add("EXE", '$message = ""')
    steps.branch("If $message == None", body)
    steps.add("RET", f'{{"source": {source}, "content": $message}}')
    playbooks = [_respond(member, steps, notes)]
    for tool in member.tools:
        body = StepList()
        body.add("EXE", f"$tool_arguments:dict = {_arguments(tool)}")
        body.add(
            "EXE",
            f"$tool_call:dict = {helper('suggested_call')}(name={literal(tool.name)}, arguments=$tool_arguments)",
        )
        body.add("EXE", "$round_calls = $round_calls + [$tool_call]")
        body.add("RET", literal(f"suggested {tool.name}; the agent that executes it answers with the result"))
        playbooks.append(
            _tool_playbook(
                tool,
                namer,
                body,
                "ag2 suggests the call in the chat; the agent registered to execute it runs it.",
            )
        )
    return playbooks


def user_reply_playbook(member: Member, helper: Callable[[str], str]) -> Playbook:
    """`Reply($new_messages)` of an AutoGen UserProxyAgent: the run's user answers, as the console would."""
    source = literal(member.name)
    handed = (
        f'$new_messages != [] and "handoff" in $new_messages[-1] and $new_messages[-1]["handoff"] == {source}'
    )
    steps = StepList()
    steps.add("EXE", f"$prompt:str = {literal(USER_PROMPT)}")
    body = StepList()
    body.add(
        "EXE",
        f'$prompt = "Handoff received from " + $new_messages[-1]["source"] + ". " + {literal(USER_PROMPT)}',
    )
    steps.branch(f"If {handed}", body)
    steps.add("QUE", 'Say("user", $prompt)')
    steps.add("EXE", '$answer:list = WaitForMessage("human")')
    steps.add("EXE", f"$text:str = {helper('message_text')}(message=$answer)")
    steps.add("EXE", f'$reply:dict = {{"source": {source}, "content": $text}}')
    body = StepList()
    body.add(
        "EXE", f'$reply = {{"source": {source}, "content": $text, "handoff": $new_messages[-1]["source"]}}'
    )
    steps.branch(f"If {handed}", body)
    steps.add("RET", "$reply")
    return Playbook(
        name=REPLY_PLAYBOOK,
        parameters=(Parameter(name="new_messages", type="list"),),
        returns="dict",
        description=safe_description(
            f"{member.name}'s turn: the run's user answers (as AutoGen's UserProxyAgent asks at the console), "
            "handing the conversation back when it was handed to them."
        ),
        metadata=Metadata(public=True),
        steps=steps.build(),
    )


def _respond(member: Member, steps: StepList, notes: list[str]) -> Playbook:
    from importers.common.emit import numbered_notes

    return Playbook(
        name=RESPOND_PLAYBOOK,
        parameters=(Parameter(name="conversation", type="list"),),
        returns="dict",
        description=safe_description(member.system_message or "You are a helpful AI assistant."),
        steps=steps.build(),
        notes=numbered_notes(notes),
    )


def _arguments(tool: ChatTool) -> str:
    return "{" + ", ".join(f"{literal(argument.name)}: ${argument.name}" for argument in tool.arguments) + "}"


def _tool_playbook(tool: ChatTool, namer: Namer, steps: StepList, how: str) -> Playbook:
    """A tool's playbook. An optional argument defaults to None, which leaves it out of the call (as a model
    that does not give it), so the function's own default applies; the description says what that is."""
    parameters = []
    defaults = []
    for argument in tool.arguments:
        parameters.append(
            Parameter(name=argument.name, type=argument.type, default=None if argument.required else "None")
        )
        if not argument.required and argument.default is not None:
            defaults.append(f"${argument.name} defaults to {json.dumps(argument.default)}")
    description = safe_description(tool.description) or f"The tool `{tool.name}`."
    if defaults:
        description += f" ({'; '.join(defaults)}.)"
    return Playbook(
        name=namer.take(camel_case(tool.name), "Tool"),
        parameters=tuple(parameters),
        returns="Any",
        description=safe_description(f"{description}\n\n{how}"),
        steps=steps.build(),
    )


__all__ = ["RESPOND_PLAYBOOK", "USER_PROMPT", "ag2_playbooks", "assistant_playbooks", "user_reply_playbook"]

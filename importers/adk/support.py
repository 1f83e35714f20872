"""Run-time helpers of programs imported from Google ADK (`pal import adk`).

An imported ADK program carries one `$session` dict from agent to agent, the PAL form of ADK's `Session`:

    {"message": "<the user's message>",
     "state": {...},                      # session state, ADK's prefix rules below
     "events": [{"author": "user", "text": "..."},
                {"author": "counter", "text": "...", "state_delta": {...}, "escalate": True}, ...]}

Every change of state is an event with its `state_delta`, applied to `state` as it is appended, as ADK's
session service applies it; the events are also what a LoopAgent reads for `escalate`, what a
ParallelAgent interleaves, and the conversation an LLM agent sees. State keys follow ADK's prefixes:
`temp:` keys given as input are dropped (ADK's `create_session` drops them), `temp:` keys written during
the run are visible to later agents and dropped at the end; `app:` and `user:` keys are kept and come
last in the final state, as `session_service.get_session` returns them.

The helpers here need nothing but the standard library; the ones that run ADK's own code (a custom
agent, a tool with a `ToolContext`, a callback, an instruction provider, a workflow node) live in
`importers.adk.session` and are re-exported here, so every helper playbook is bound to
`pal.adk:<function>` (runtime.support_modules).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from importers.adk.session import (
    APP_PREFIX,
    TEMP_PREFIX,
    USER,
    USER_PREFIX,
    AdkRunError,
    AgentStepError,
    SessionError,
    agent_callback,
    append_events,
    call_tool,
    instruction,
    record_event,
    run_agent,
    run_node,
    session_events,
)

_events = session_events


def start_session(message: str = "", state: dict | None = None) -> dict:
    """The session a Runner starts from: the initial state without its `temp:` keys (ADK drops them when
    the session is created) and the user's message as the first event."""
    if state is not None and not isinstance(state, Mapping):
        raise SessionError(f"the initial state must be a dict of state keys, got {type(state).__name__}")
    if not isinstance(message, str):
        raise SessionError(f"the user's message must be text, got {type(message).__name__}")
    kept = {key: value for key, value in (state or {}).items() if not str(key).startswith(TEMP_PREFIX)}
    return {"message": message, "state": kept, "events": [record_event(USER, text=message)]}


def final_state(state: Mapping[str, Any]) -> dict[str, Any]:
    """The state as `session_service.get_session` returns it after the run: no `temp:` keys, session
    keys first, then `app:` keys, then `user:` keys (each in the order they were first written)."""
    plain = {k: v for k, v in state.items() if not k.startswith((TEMP_PREFIX, APP_PREFIX, USER_PREFIX))}
    app = {k: v for k, v in state.items() if k.startswith(APP_PREFIX)}
    user = {k: v for k, v in state.items() if k.startswith(USER_PREFIX)}
    return {**plain, **app, **user}


def finish_session(session: dict) -> dict:
    """What `pal run --input` prints: `{"state": <final session state>, "reply": <final reply text>}`,
    the reply being the text of the last event an agent wrote (None when no agent wrote text)."""
    events = _events(session)
    reply = None
    for event in reversed(events):
        if event.get("author") != USER and event.get("text"):
            reply = event["text"]
            break
    return {"state": final_state(session["state"]), "reply": reply}


def event_count(session: dict) -> int:
    """How many events the session has: a mark to look back to (escalations, a turn's own events)."""
    return len(_events(session))


def escalated(session: dict, since: int) -> bool:
    """Whether an event appended after the first `since` events escalates, as a LoopAgent checks every
    event its sub-agent yields (an escalation deep inside a nested agent counts too)."""
    return any(event.get("escalate") for event in _events(session)[since:])


def merge_branches(session: dict, branches: list, agents: list) -> dict:
    """The session after a ParallelAgent: each branch ran on `session` and appended its own events;
    ADK's merge takes the branches' events in turn (the first event of every branch, then the second
    ...), so their state deltas apply in that order, and stops at an escalation by one of `agents` (the
    parallel agent's direct sub-agents)."""
    base = _events(session)
    streams: list[list[dict[str, Any]]] = []
    for index, branch in enumerate(branches):
        events = _events(branch)
        if events[: len(base)] != base:
            name = agents[index] if index < len(agents) else index
            raise AgentStepError(
                f"branch {name!r} of the parallel agent did not continue the session it was given"
            )
        streams.append(events[len(base) :])
    merged: list[dict[str, Any]] = []
    direct = set(agents)
    for position in range(max((len(stream) for stream in streams), default=0)):
        for stream in streams:
            if position < len(stream):
                merged.append(stream[position])
                if stream[position].get("escalate") and stream[position].get("author") in direct:
                    return append_events(session, merged)
    return append_events(session, merged)


# --- LLM agents ----------------------------------------------------------------------------------


def conversation(session: dict, include_contents: str = "default") -> list:
    """The conversation an LLM agent sees, oldest first, as `author: text` lines: every event with text
    (`include_contents='default'`), or only the user's message (`'none'`)."""
    if include_contents == "none":
        return [f"{USER}: {session.get('message', '')}"]
    return [f"{event['author']}: {event['text']}" for event in _events(session) if event.get("text")]


def agent_reply(session: dict, agent: str, reply: Any, output_key: str | None = None, since: int = 0) -> dict:
    """The session after LLM agent `agent` answered `reply`: its reply event, and `output_key` set to the
    reply (ADK's `output_key`). Nothing is added when one of the agent's tools in this turn (the events
    after `since`) asked to skip the summary (`exit_loop`, an AgentTool with `skip_summarization`):
    ADK ends the turn with that tool's response."""
    for event in _events(session)[since:]:
        if event.get("author") == agent and event.get("skip_summarization"):
            return dict(session)
    text = reply if isinstance(reply, str) else ("" if reply is None else json.dumps(reply, default=str))
    delta = {output_key: text if reply is None else reply} if output_key else None
    return append_events(session, [record_event(agent, text=text, state_delta=delta)])


def transfer_target(agent_name: str, targets: list) -> str:
    """`agent_name` when the agent may transfer to it (ADK's rules: its sub-agents, its parent and its
    peers unless disallowed); AgentStepError naming the agents it may transfer to otherwise."""
    if agent_name in targets:
        return agent_name
    known = ", ".join(targets) or "none"
    raise AgentStepError(
        f"cannot transfer to agent {agent_name!r}: the agents this agent may reach are {known}"
    )


def tool_session(session: dict, request: Any) -> dict:
    """The session an AgentTool runs its agent in: a new session with a copy of the caller's state
    (without `temp:` keys, as ADK creates it) and `request` as the user's message."""
    text = request if isinstance(request, str) else json.dumps(request, ensure_ascii=False, sort_keys=True)
    return start_session(text, dict(session["state"]))


def tool_result(session: dict, child: dict, agent: str, skip_summarization: bool = False) -> dict:
    """`{"session": ..., "result": ...}` after an AgentTool's agent ran in `child`: the state it changed
    is forwarded to the caller's session (one event of `agent`, the calling LLM agent), and the result
    is the text of the child's last event with text. With `skip_summarization` (the AgentTool's flag)
    the calling agent's turn ends with this result."""
    start = tool_session(session, "")  # what the child started from, to find what it changed
    delta: dict[str, Any] = {}
    for event in _events(child)[len(start["events"]) :]:
        delta.update(event.get("state_delta") or {})
    result = ""
    for event in reversed(_events(child)):
        if event.get("author") != USER and event.get("text") is not None:
            result = event["text"]
            break
    event = record_event(agent, state_delta=delta, skip_summarization=skip_summarization)
    updated = append_events(session, [event]) if len(event) > 1 else dict(session)
    return {"session": updated, "result": result}


# --- workflows -----------------------------------------------------------------------------------

DEFAULT_ROUTE = "__DEFAULT__"
"""ADK's `DEFAULT_ROUTE`: the edge followed when no other route matches."""


def destination(route: Any, node: str, routes: list) -> str:
    """The one node a workflow goes to after `node` emitted `route`. `routes` lists `[route values, node]`
    pairs of the node's routed edges in order; a pair whose values include `__DEFAULT__` is followed
    when no other matches. Returns "" when nothing matches (ADK ends the branch there)."""
    emitted = set(route) if isinstance(route, list) else {route}
    matched: list[str] = []
    fallback: list[str] = []
    for values, target in routes:
        values = values if isinstance(values, list) else [values]
        if DEFAULT_ROUTE in values:
            fallback.append(target)
        if emitted & {value for value in values if value != DEFAULT_ROUTE}:
            matched.append(target)
    found = list(dict.fromkeys(matched or fallback))
    if len(found) > 1:
        raise AgentStepError(
            f"node {node!r} emitted route {route!r}, which leads to {found} at once; the imported program "
            "follows one routed edge per step"
        )
    return found[0] if found else ""


def agent_input(session: dict, node_input: Any) -> dict:
    """The session an LLM agent node of a workflow runs in: the node's input as one more user turn."""
    if node_input is None:
        return dict(session)
    text = node_input if isinstance(node_input, str) else json.dumps(node_input, default=str)
    return {**session, "events": [*_events(session), record_event(USER, text=text)]}


def agent_output(session: dict, result: dict, agent: str) -> dict:
    """`{"session": ..., "output": ...}` after an LLM agent node ran in `agent_input`'s session: the
    agent's events without the input turn, and its last reply as the node's output."""
    base = _events(session)
    added = _events(result)[len(base) :]
    if added and added[0].get("author") == USER:
        added = added[1:]  # the node's input: ADK removes it when the node finishes
    output = None
    for event in reversed(added):
        if event.get("author") == agent and event.get("text") is not None:
            output = event["text"]
            break
    return {"session": append_events(session, added), "output": output}


def with_output(session: dict, output: Any = None) -> dict:
    """`session` carrying a workflow's output (its terminal node's), for the node that ran it."""
    return {**session, "output": output}


# --- waits and failures --------------------------------------------------------------------------


def message_text(message: Any) -> str:
    """The text of what the user answered: a reply read with `WaitForMessage` (a list of messages)
    counts as its last message's content."""
    if isinstance(message, list) and message:
        message = message[-1]
    content = getattr(message, "content", message)
    return content if isinstance(content, str) else json.dumps(content, default=str)


def unsupported(subject: str, reason: str) -> None:
    """Stand-in for a part of an ADK program the import could not express (reported when imported)."""
    raise AgentStepError(f"{subject}: {reason}; the import reported this, so the program cannot run here")


HELPERS: Mapping[str, Callable[..., Any]] = {
    "start_session": start_session,
    "finish_session": finish_session,
    "event_count": event_count,
    "escalated": escalated,
    "merge_branches": merge_branches,
    "conversation": conversation,
    "agent_reply": agent_reply,
    "transfer_target": transfer_target,
    "tool_session": tool_session,
    "tool_result": tool_result,
    "destination": destination,
    "agent_input": agent_input,
    "agent_output": agent_output,
    "with_output": with_output,
    "message_text": message_text,
    "unsupported": unsupported,
    "run_agent": run_agent,
    "agent_callback": agent_callback,
    "instruction": instruction,
    "call_tool": call_tool,
    "run_node": run_node,
}
"""Every helper the importer may bind a playbook to, by function name."""

__all__ = [
    "APP_PREFIX",
    "DEFAULT_ROUTE",
    "HELPERS",
    "TEMP_PREFIX",
    "USER_PREFIX",
    "AdkRunError",
    "AgentStepError",
    "SessionError",
    "append_events",
    "final_state",
    "record_event",
    *HELPERS,
]

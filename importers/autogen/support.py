"""Python playbooks the programs of `pal import autogen` call: turn-taking in the meeting, the live agents.

An imported team is a PAL meeting: the chair (the team's manager) gives each turn with
`Say("meeting @Alice", "@Alice")` and waits in the meeting; the attendee given the turn answers the chair
with `Say("meeting @Chair", text)` (`meeting @Chair @Bob` when it hands off to Bob). These helpers turn
the meeting's messages into the transcript entries the framework would have made, and call the
framework's own objects where the program binds Python: a custom agent's `on_messages`, an ag2 agent's
`generate_reply`, a `selector_func`, an edge condition. Live objects are found by the import path of
the team (`module:attribute`) and the participant's name, so the program runs in a fresh process.

Transcript entries are `{"source": name, "content": text}`, plus `"handoff": target` for a hand-off.
The framework packages are imported only by the helpers that call them.
"""

from __future__ import annotations

import inspect
import random
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from runtime.module_path import resolve

_BARE_MENTIONS = re.compile(r"\s*(?:@\w+\s*)+")
_MANAGERS: dict[int, Any] = {}


class ChatStepError(RuntimeError):
    """The team did something the imported program was not built for (a run failure, naming where)."""


# --- live objects ----------------------------------------------------------------------------------


def live_object(path: str) -> Any:
    """The object at `module:attribute.path`, its module looked up as every bound module is
    (runtime.module_path: the running program's bindings have put its folder and the current directory
    on the path before any helper runs); imported on first use, then from the module cache."""
    try:
        return resolve(path)
    except ValueError as error:
        raise ChatStepError(str(error)) from None


def _members(team: Any) -> list[Any]:
    participants = getattr(team, "_participants", None)
    if participants is not None:
        return list(participants)
    groupchat = getattr(team, "groupchat", None) or team
    agents = getattr(groupchat, "agents", None)
    if agents is None:
        raise ChatStepError(f"{type(team).__name__} is not a team this importer reads")
    return list(agents)


def participant(team: str, name: str) -> Any:
    """The live participant `name` of the team at import path `team`."""
    for member in _members(live_object(team)):
        if getattr(member, "name", None) == name:
            return member
    raise ChatStepError(f"team {team} has no participant {name!r}")


# --- meeting messages -> transcript entries --------------------------------------------------------


def _current() -> Any:
    from runtime.python_api import current_agent

    return current_agent()


def _klass_of(run: Any, participant_id: str) -> str:
    if participant_id == "human":
        return "human"
    instance = run.instances.get(participant_id)
    return instance.klass if instance is not None else participant_id


def _is_bare_turn(content: str) -> bool:
    return bool(_BARE_MENTIONS.fullmatch(content))


def _entry(message: Any, run: Any, chair: str, agents: Mapping[str, str]) -> dict[str, Any] | None:
    """The transcript entry of one meeting message, or None for turn-taking (a bare `@Name`)."""
    from pal_core.messaging import MessageType

    if message.message_type is not MessageType.MEETING_BROADCAST:
        return None
    content = message.content
    sender = message.sender_klass
    targets = [_klass_of(run, target) for target in message.target_agent_ids]
    if sender == chair:
        if not targets:
            return {
                "source": agents.get("@task", "user"),
                "content": content,
            }  # the task, as the team was run
        if _is_bare_turn(content):
            return None
        return {"source": agents.get(chair, chair), "content": content}
    entry: dict[str, Any] = {"source": agents.get(sender, sender), "content": content}
    handoff = [target for target in targets if target != chair]
    if handoff:
        entry["handoff"] = agents.get(handoff[0], handoff[0])
    return entry


def take_turn(heard: list, chair: str, agents: dict, fresh_start: bool = False) -> dict:
    """Whether the chair has given this agent the turn among `heard` (meeting messages, oldest first).

    Returns `{"mine": bool, "messages": [...], "rest": [...], "fresh": bool}`: the transcript entries said up
    to and with the turn (what the agent answers), and the messages after it, kept for the agent's next turn.
    With `fresh_start` (MagenticOne, whose orchestrator resets the agents before it says the task ledger),
    a message the chair addresses to itself starts afresh: only what was said from it on counts, and
    `fresh` says so.
    """
    agent = _current()
    for index, message in enumerate(heard):
        if message.sender_klass == chair and agent.id in message.target_agent_ids:
            before = list(heard[: index + 1])
            fresh = False
            if fresh_start:
                for position in range(len(before) - 1, -1, -1):
                    item = before[position]
                    if item.sender_klass == chair and tuple(item.target_agent_ids) == (item.sender_id,):
                        before, fresh = before[position:], True
                        break
            entries = [_entry(item, agent.run, chair, agents) for item in before]
            return {
                "mine": True,
                "messages": [entry for entry in entries if entry is not None],
                "rest": list(heard[index + 1 :]),
                "fresh": fresh,
            }
    return {"mine": False, "messages": [], "rest": list(heard), "fresh": False}


def chat_reply(heard: list, speaker: str, chair: str, agents: dict) -> dict:
    """The chair's side: `speaker`'s answer among `heard`, if it has come.

    Returns `{"reply": entry or None, "rest": [...]}`; an answer that is a bare `@Chair` (the speaker had
    nothing to say) is the entry with content None. Meeting notices (joined, left) are dropped.
    """
    from pal_core.messaging import MessageType

    run = _current().run
    heard = [message for message in heard if message.message_type is MessageType.MEETING_BROADCAST]
    for index, message in enumerate(heard):
        if message.sender_klass != speaker:
            continue
        rest = list(heard[:index]) + list(heard[index + 1 :])
        if _is_bare_turn(message.content):
            return {"reply": {"source": agents.get(speaker, speaker), "content": None}, "rest": rest}
        return {"reply": _entry(message, run, chair, agents), "rest": rest}
    return {"reply": None, "rest": list(heard)}


# --- autogen-agentchat -----------------------------------------------------------------------------


def _chat_message(entry: Mapping[str, Any]) -> Any:
    from autogen_agentchat.messages import HandoffMessage, TextMessage

    content = entry.get("content")
    text = "" if content is None else str(content)
    if entry.get("handoff"):
        return HandoffMessage(source=str(entry["source"]), target=str(entry["handoff"]), content=text)
    return TextMessage(source=str(entry["source"]), content=text)


def _reply_entry(message: Any) -> dict[str, Any]:
    from autogen_agentchat.messages import HandoffMessage

    content = getattr(message, "content", None)
    entry: dict[str, Any] = {
        "source": message.source,
        "content": content if isinstance(content, str) else message.to_text(),
    }
    if isinstance(message, HandoffMessage):
        entry["handoff"] = message.target
    return entry


async def start_chat(team: str) -> None:
    """Reset the team's live participants, as a new run of the team starts from a fresh state."""
    from_team = live_object(team)
    if hasattr(from_team, "_participants"):
        from autogen_core import CancellationToken

        for member in from_team._participants:
            if hasattr(member, "on_reset"):
                await member.on_reset(CancellationToken())
            else:  # a team as a participant
                await member.reset()
        return
    for member in _members(from_team):
        reset = getattr(member, "reset", None)
        if callable(reset):
            reset()


async def agent_reply(messages: list, team: str, agent: str) -> dict:
    """Run the live AutoGen agent `agent` of `team` on `messages` (transcript entries, what it heard since
    its last turn) with `on_messages_stream`, as the team's container does; its chat message as an entry."""
    from autogen_agentchat.base import Response
    from autogen_core import CancellationToken

    member = participant(team, agent)
    response = None
    async for item in member.on_messages_stream(
        [_chat_message(entry) for entry in messages], CancellationToken()
    ):
        if isinstance(item, Response):
            response = item
    if response is None:
        raise ChatStepError(f"agent {agent!r} produced no final response")
    return _reply_entry(response.chat_message)


def _thread(messages: Sequence[Mapping[str, Any]]) -> list[Any]:
    return [_chat_message(entry) for entry in messages]


async def _call(function: Callable[..., Any], *args: Any) -> Any:
    result = function(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


async def selector_choice(func: str, messages: list) -> str | None:
    """A SelectorGroupChat's `selector_func` (by import path) on the chat so far: a name, or None to let
    the model choose."""
    chosen = await _call(live_object(func), _thread(messages))
    return None if chosen is None else str(chosen)


async def candidates(func: str, messages: list) -> list:
    """A SelectorGroupChat's `candidate_func` (by import path) on the chat so far: the names to choose from."""
    names = await _call(live_object(func), _thread(messages))
    if not names:
        raise ChatStepError(f"candidate_func {func} returned no participant")
    return [str(name) for name in names]


async def edge_condition(func: str, message: dict) -> bool:
    """A GraphFlow edge's condition (a callable, by import path) on the message of the edge's source."""
    return bool(await _call(live_object(func), _chat_message(message)))


async def termination_function(func: str, messages: list) -> bool:
    """A FunctionalTermination's function (by import path) on the messages of one step."""
    return (await _call(live_object(func), _thread(messages))) is True


# --- ag2 -----------------------------------------------------------------------------------------------


def _manager(team: str) -> Any:
    from autogen import GroupChatManager

    value = live_object(team)
    if isinstance(value, GroupChatManager):
        return value
    manager = _MANAGERS.get(id(value))
    if manager is None:
        manager = _MANAGERS[id(value)] = GroupChatManager(groupchat=value, llm_config=False)
    return manager


def _oai_messages(messages: Sequence[Mapping[str, Any]], agent: str) -> list[dict[str, Any]]:
    return [
        {
            "content": entry.get("content"),
            "role": "assistant" if entry.get("source") == agent else "user",
            "name": entry.get("source"),
        }
        for entry in messages
    ]


def _reply_text(reply: Any) -> str | None:
    if reply is None:
        return None
    if isinstance(reply, dict):
        content = reply.get("content")
        return None if content is None else str(content)
    return str(reply)


async def ag2_reply(messages: list, team: str, agent: str) -> dict:
    """Run the live ag2 agent `agent` of `team` on the whole conversation (`messages`, transcript entries)
    with `a_generate_reply`, as the manager asks its speaker; `content` is None when it gives no reply."""
    member = participant(team, agent)
    reply = await member.a_generate_reply(messages=_oai_messages(messages, agent), sender=_manager(team))
    return {"source": agent, "content": _reply_text(reply)}


async def speaker_selection(func: str, team: str, last: str, messages: list) -> dict:
    """An ag2 `speaker_selection_method` callable (by import path) given the last speaker and the group
    chat (its messages set to the conversation so far): `{"speaker": name}`, `{"method": name}` or
    `{"speaker": None}` (it returned None: the chat ends)."""
    groupchat = live_object(team)
    groupchat = getattr(groupchat, "groupchat", groupchat)
    groupchat.messages = _oai_messages(messages, "")
    last_agent = groupchat.agent_by_name(last)
    chosen = await _call(live_object(func), last_agent, groupchat)
    if chosen is None:
        return {"speaker": None}
    if isinstance(chosen, str):
        return {"method": chosen.lower()}
    name = getattr(chosen, "name", None)
    if name not in groupchat.agent_names:
        raise ChatStepError(f"speaker selection {func} returned {chosen!r}, not an agent of the group chat")
    return {"speaker": name}


async def termination_message(func: str, message: dict) -> bool:
    """An ag2 `is_termination_msg` function (by import path) on one message."""
    return bool(await _call(live_object(func), _oai_messages([message], "")[0]))


def next_in_order(order: list, last: str, eligible: list) -> str:
    """ag2's round robin: the first eligible agent after `last` in the group's order (wrapping)."""
    start = order.index(last) + 1 if last in order else 0
    for offset in range(len(order)):
        name = order[(start + offset) % len(order)]
        if name in eligible:
            return name
    raise ChatStepError(f"no eligible speaker after {last!r} among {eligible}")


def random_choice(eligible: list) -> str:
    """ag2's random speaker selection."""
    return random.choice(list(eligible))


def unsupported(reason: str) -> None:
    """A participant the program cannot run was given the turn: fail with the importer's reason."""
    raise ChatStepError(f"this participant cannot take a turn: {reason}")


HELPERS: dict[str, Callable[..., Any]] = {
    function.__name__: function
    for function in (
        take_turn,
        chat_reply,
        start_chat,
        agent_reply,
        selector_choice,
        candidates,
        edge_condition,
        termination_function,
        ag2_reply,
        speaker_selection,
        termination_message,
        next_in_order,
        random_choice,
        unsupported,
    )
}
"""Every helper a program may bind, by function name."""

"""Reading live ag2 group chats (`autogen.GroupChat`, `autogen.GroupChatManager`, ag2 0.14).

The chat starts with the task said by someone outside the group (as `user.initiate_chat(manager,
message=task)` with a `user` agent that is not a member); the chair then picks speakers as
`GroupChat.select_speaker` does: the allowed transitions from the last speaker (in the group's order,
without a repeat where `allow_repeat_speaker` forbids it), one candidate at once, else round robin,
random, the model ("auto") or the selection function, until the manager's `is_termination_msg` holds, a
speaker gives no reply, or `max_round` messages were said.
"""

from __future__ import annotations

from typing import Any

from importers.autogen._diagnostics import AGENT_FEATURE, GROUP_CHAT_FEATURE
from importers.autogen._model import ChatTool, Member, MemberKind, Policy, Team
from importers.autogen._read import function_path, pal_names, schema_arguments
from importers.common.diagnostics import Findings
from importers.common.paths import class_path

_AUTO_DEFAULTS: dict[str, Any] = {
    "max_retries_for_selecting_speaker": 2,
    "select_speaker_auto_verbose": False,
    "role_for_select_speaker_messages": "system",
    "select_speaker_auto_llm_config": None,
    "select_speaker_auto_model_client_cls": None,
    "select_speaker_transform_messages": None,
}
"""ag2's settings of its nested select-speaker chat, with their defaults."""
_LLM_HOOKS = (
    "process_last_received_message",
    "process_all_messages_before_reply",
    "update_agent_state",
    "safeguard_llm_inputs",
    "safeguard_llm_outputs",
)
"""Hooks that change what an agent's LLM is shown or answers (the program's model answers instead)."""

OUTSIDE = "user"
"""Who says the task when no initiator is named: someone outside the group."""


def _is_default_termination(function: Any) -> bool:
    return getattr(function, "__qualname__", "").startswith("ConversableAgent.__init__.<locals>")


def read_group_chat(
    target: Any, *, pal: str, source: str, findings: Findings, initiator: str | None = None
) -> Team:
    """The model of an ag2 GroupChat or GroupChatManager; `initiator` names the agent that says the task
    (`initiator.initiate_chat(manager, message=task)`), by default a `user` outside the group."""
    from autogen import GroupChatManager

    manager = target if isinstance(target, GroupChatManager) else None
    groupchat = manager.groupchat if manager is not None else target
    title = manager.name if manager is not None else "chat_manager"
    subject = f"group chat {title!r}"
    agents = list(groupchat.agents)
    names = [str(agent.name) for agent in agents]
    pals = pal_names(names, {pal})
    members = tuple(_member(agent, pals[str(agent.name)], subject, findings) for agent in agents)
    if initiator is not None and initiator not in names:
        raise ValueError(
            f"the initiator {initiator!r} is not an agent of the group chat ({', '.join(names)})"
        )
    options: dict[str, Any] = {"initiator": initiator or OUTSIDE}
    method = groupchat.speaker_selection_method
    if callable(method):
        path = function_path(method, subject, "speaker_selection_method", findings)
        options["method"] = "callable" if path is not None else "auto"
        options["func"] = path
    else:
        options["method"] = str(method).lower()
    if options["method"] == "manual":
        findings.add(
            GROUP_CHAT_FEATURE,
            subject,
            "speaker_selection_method='manual' asks a person at the console; the program picks in round-robin "
            "order instead, as ag2 does when the person gives no valid answer",
        )
        options["method"] = "round_robin"
    if options["method"] == "auto":
        options["select_prompt"] = (
            groupchat.select_speaker_msg(agents) + "\n" + (groupchat.select_speaker_prompt(agents) or "")
        )
    options["transitions"], options["fallback"] = _transitions(groupchat, agents)
    options["fallback"].setdefault(options["initiator"], [str(agent.name) for agent in agents])
    options["termination"] = _termination(manager, subject, findings)
    for flag, text in (
        ("send_introductions", "send_introductions: the introduction message is not sent"),
        ("enable_clear_history", "enable_clear_history: a 'clear history' request is not honoured"),
    ):
        if getattr(groupchat, flag, False):
            findings.add(GROUP_CHAT_FEATURE, subject, text)
    if options["method"] == "auto":
        tuned = [
            name for name, default in _AUTO_DEFAULTS.items() if getattr(groupchat, name, default) != default
        ]
        if tuned:
            findings.add(
                GROUP_CHAT_FEATURE,
                subject,
                f"the auto speaker selection's {', '.join(tuned)} are not applied: the program asks the run's model "
                "once (no nested select-speaker chat) and falls back to the next in order",
            )
    if getattr(groupchat, "eligibility_policies", None):
        findings.add(GROUP_CHAT_FEATURE, subject, "eligibility_policies are not applied to the candidates")
    if groupchat.func_call_filter:
        # After a message suggesting calls, ag2 picks among the agents that can execute them.
        options["executes"] = {
            str(agent.name): sorted(agent.function_map)
            for agent in agents
            if getattr(agent, "function_map", None)
        }
    return Team(
        name=pal,
        title=str(title),
        framework="ag2",
        class_name=class_path(target),
        source=source,
        description="",
        members=members,
        policy=Policy(kind="ag2", options=options),
        max_turns=int(groupchat.max_round),
    )


def _transitions(groupchat: Any, agents: list[Any]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(allowed next speakers by last speaker, the candidates when none is allowed), in the group's order."""
    repeat = groupchat.allow_repeat_speaker

    def may_repeat(agent: Any) -> bool:
        if isinstance(repeat, list):
            return agent in repeat
        return repeat is not False

    allowed = groupchat.allowed_speaker_transitions_dict
    transitions: dict[str, list[str]] = {}
    fallback: dict[str, list[str]] = {OUTSIDE: [str(agent.name) for agent in agents]}
    for last in agents:
        pool = [agent for agent in agents if agent is not last or may_repeat(last)]
        fallback[str(last.name)] = [str(agent.name) for agent in pool]
        if last in allowed:
            transitions[str(last.name)] = [str(agent.name) for agent in pool if agent in allowed[last]]
    return transitions, fallback


def _termination(manager: Any, subject: str, findings: Findings) -> str | None:
    """`default` (content == "TERMINATE"), an import path, or None (not checked)."""
    function = getattr(manager, "_is_termination_msg", None) if manager is not None else None
    if function is None or _is_default_termination(function):
        return "default"
    path = function_path(function, subject, "is_termination_msg", findings)
    return path


def _member(agent: Any, pal: str, subject: str, findings: Findings) -> Member:
    where = f"{subject}, agent {agent.name!r}"
    common = {
        "name": str(agent.name),
        "pal": pal,
        "description": str(getattr(agent, "description", "") or ""),
        "class_name": class_path(agent),
    }
    from autogen import ConversableAgent

    if not isinstance(agent, ConversableAgent):
        reason = f"it is a {type(agent).__name__}, not a ConversableAgent"
        findings.add(AGENT_FEATURE, where, reason)
        return Member(kind=MemberKind.UNSUPPORTED, reason=reason, **common)
    hooks = getattr(agent, "hook_lists", {}) or {}
    if hooks.get("process_message_before_send"):
        findings.add(
            AGENT_FEATURE,
            where,
            "its process_message_before_send hooks are not run: the program takes the reply as the agent gives it",
        )
    llm_config = getattr(agent, "llm_config", False)
    if not llm_config:
        return Member(kind=MemberKind.AG2_PYTHON, **common)
    changed = [name for name in _LLM_HOOKS if hooks.get(name)]
    if changed:
        findings.add(
            AGENT_FEATURE,
            where,
            f"its {', '.join(changed)} hooks change what its LLM is shown or answers; the program's model is shown "
            "the conversation and the system message as imported",
        )
    if _llm_setting(llm_config, "response_format"):
        findings.add(
            AGENT_FEATURE, where, "its structured output (response_format) is not checked: the reply is text"
        )
    tools = tuple(
        ChatTool(
            name=str(spec["function"]["name"]),
            description=str(spec["function"].get("description") or ""),
            arguments=schema_arguments(spec["function"].get("parameters")),
        )
        for spec in _llm_setting(llm_config, "tools")
        if isinstance(spec, dict) and isinstance(spec.get("function"), dict) and spec["function"].get("name")
    )
    if _llm_setting(llm_config, "functions"):
        findings.add(
            AGENT_FEATURE,
            where,
            "its llm_config 'functions' (the deprecated function_call form) are not offered to the model; "
            "register them as tools (register_function, register_for_llm)",
        )
    return Member(
        kind=MemberKind.LLM,
        system_message=str(agent.system_message or "") or None,
        tools=tools,
        **common,
    )


def _llm_setting(llm_config: Any, key: str) -> list[Any]:
    """`llm_config[key]` as a list (an LLMConfig object or a dict)."""
    getter = getattr(llm_config, "get", None)
    value = getter(key) if callable(getter) else getattr(llm_config, key, None)
    if value is None or isinstance(value, (list, tuple)):
        return list(value or [])
    return [value]

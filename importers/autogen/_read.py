"""Reading live autogen-agentchat teams: participants, speaking policy, termination, from the objects.

`team.dump_component()` is not used: it raises NotImplementedError for a custom `BaseChatAgent` and drops
callable edge conditions of a GraphFlow. The attributes read here (`_participants`,
`_termination_condition`, `_max_turns`, the selector's `_selector_func`, the graph's `_graph`, the
conditions' fields) tie this module to autogen-agentchat 0.7; what is not recognised is named in a
diagnostic, never guessed.
"""

from __future__ import annotations

import ast
import inspect
from typing import Any

from importers.autogen._diagnostics import (
    AGENT_EVENTS,
    AGENT_FEATURE,
    FUNCTION_WITHOUT_IMPORT_PATH,
    GROUP_CHAT_FEATURE,
    MESSAGE_TYPES,
    TERMINATION_NOT_EXPRESSED,
    UNSUPPORTED_PARTICIPANT,
)
from importers.autogen._model import (
    ChatTool,
    Handoff,
    Member,
    MemberKind,
    Policy,
    Team,
    Termination,
    ToolArgument,
)
from importers.common.diagnostics import Findings
from importers.common.naming import RESERVED_AGENT_NAMES, Namer, camel_case
from importers.common.pal_types import json_schema_type
from importers.common.paths import class_path, import_path

_TEXT_TYPES = frozenset({"TextMessage", "HandoffMessage", "ToolCallSummaryMessage"})
_BUILT_IN_MESSAGES = frozenset(
    {
        "TextMessage",
        "HandoffMessage",
        "ToolCallSummaryMessage",
        "StopMessage",
        "MultiModalMessage",
        "StructuredMessage",
        "MemoryQueryEvent",
        "ModelClientStreamingChunkEvent",
        "ThoughtEvent",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "UserInputRequestedEvent",
        "SelectSpeakerEvent",
        "SelectorEvent",
        "CodeGenerationEvent",
        "CodeExecutionEvent",
    }
)


def function_path(function: Any, subject: str, what: str, findings: Findings) -> str | None:
    """`module:qualname` of a function the program calls, or None with an AG102 diagnostic."""
    path, why = import_path(function)
    if path is None:
        findings.add(FUNCTION_WITHOUT_IMPORT_PATH, subject, f"its {what} cannot be imported by path: {why}")
    return path


_TEXT_ACCESSORS = frozenset({"to_model_text", "to_text"})


def text_condition(function: Any) -> dict[str, Any] | None:
    """`{"text": s, "negate": bool}` for a lambda that only tests whether a string is in the message's text:
    `lambda msg: "APPROVE" in msg.to_model_text()` (or `not in`, `.to_text()`, `.content`), the form of
    AutoGen's GraphFlow examples; None for anything else. The lambda is found in its source line and
    recognised only when its compiled code is the function's own."""
    code = getattr(function, "__code__", None)
    if getattr(function, "__name__", "") != "<lambda>" or code is None or code.co_argcount != 1:
        return None
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return None
    start = source.find("lambda")
    while start != -1:
        found = _match_lambda(source[start:], code)
        if found is not None:
            return found
        start = source.find("lambda", start + 1)
    return None


def _match_lambda(text: str, code: Any) -> dict[str, Any] | None:
    for end in range(len(text), 0, -1):
        candidate = text[:end]
        try:
            tree = ast.parse(candidate, mode="eval")
        except SyntaxError:
            continue
        node = tree.body
        if not isinstance(node, ast.Lambda):
            return None
        try:
            compiled = compile(tree, "<lambda>", "eval")
        except (SyntaxError, ValueError):
            return None
        inner = next((const for const in compiled.co_consts if inspect.iscode(const)), None)
        if inner is None or inner.co_code != code.co_code or inner.co_consts != code.co_consts:
            return None
        return _text_test(node)
    return None


def _text_test(node: ast.Lambda) -> dict[str, Any] | None:
    argument = node.args.args[0].arg
    body = node.body
    if not (
        isinstance(body, ast.Compare) and len(body.ops) == 1 and isinstance(body.ops[0], ast.In | ast.NotIn)
    ):
        return None
    if not (isinstance(body.left, ast.Constant) and isinstance(body.left.value, str)):
        return None
    right = body.comparators[0]
    if isinstance(right, ast.Call) and not right.args and not right.keywords:
        right = right.func
        if not (isinstance(right, ast.Attribute) and right.attr in _TEXT_ACCESSORS):
            return None
    elif not (isinstance(right, ast.Attribute) and right.attr == "content"):
        return None
    if not (isinstance(right.value, ast.Name) and right.value.id == argument):
        return None
    return {"text": body.left.value, "negate": isinstance(body.ops[0], ast.NotIn)}


def pal_names(names: list[str], reserved: set[str]) -> dict[str, str]:
    """A unique CamelCase PAL agent name for each framework name (`writer`, `writer2`, ...); a name the
    runtime reads as the user's (`user`) gets `Agent` after it."""
    namer = Namer(reserved | RESERVED_AGENT_NAMES)
    return {
        name: namer.take(camel_case(name), "Agent" if camel_case(name) in RESERVED_AGENT_NAMES else "")
        for name in names
    }


# --- participants ------------------------------------------------------------------------------------


def read_member(agent: Any, pal: str, subject: str, findings: Findings) -> Member:
    from autogen_agentchat.agents import AssistantAgent, BaseChatAgent, SocietyOfMindAgent
    from autogen_agentchat.base import Team as AgentTeam

    name = str(agent.name)
    where = f"{subject}, participant {name!r}"
    common = {
        "name": name,
        "pal": pal,
        "description": str(agent.description or ""),
        "class_name": class_path(agent),
    }
    if isinstance(agent, AgentTeam):
        reason = "it is a team; a team inside a team is not imported (import the inner team on its own)"
        findings.add(UNSUPPORTED_PARTICIPANT, where, reason)
        return Member(kind=MemberKind.UNSUPPORTED, reason=reason, **common)
    if type(agent) is AssistantAgent:
        return _assistant(agent, where, findings, common)
    if _reads_the_console(agent):
        return Member(kind=MemberKind.USER, **common)
    if not isinstance(agent, BaseChatAgent):
        reason = f"it is a {type(agent).__name__}, not a BaseChatAgent"
        findings.add(UNSUPPORTED_PARTICIPANT, where, reason)
        return Member(kind=MemberKind.UNSUPPORTED, reason=reason, **common)
    wrapped = getattr(agent, "_wrapped_agent", None)  # MessageFilterAgent
    if (
        isinstance(agent, SocietyOfMindAgent)
        or getattr(agent, "_model_client", None) is not None
        or getattr(wrapped, "_model_client", None) is not None
    ):
        findings.add(
            AGENT_FEATURE,
            where,
            f"{type(agent).__name__} calls its own model client; the program runs the live agent for its turn, "
            "so those model calls are made outside PAL's model and are not verified",
        )
    try:
        produced = [kind.__name__ for kind in agent.produced_message_types]
    except Exception:  # a custom property that fails: the agent still runs, its messages are read as text
        produced = []
    other = sorted(set(produced) - _TEXT_TYPES)
    if other:
        findings.add(
            MESSAGE_TYPES,
            where,
            f"it produces {', '.join(other)}; the meeting carries each message's text, so the other agents and "
            "the chair see it as a TextMessage",
        )
    return Member(kind=MemberKind.PYTHON, **common)


def _assistant(agent: Any, where: str, findings: Findings, common: dict[str, Any]) -> Member:
    from autogen_core.model_context import UnboundedChatCompletionContext

    system = "\n\n".join(str(message.content) for message in getattr(agent, "_system_messages", []))
    handoffs = tuple(
        Handoff(
            name=str(handoff.name),
            target=str(handoff.target),
            description=str(handoff.description),
            message=str(handoff.message),
        )
        for handoff in (getattr(agent, "_handoffs", None) or {}).values()
    )
    features = []
    if getattr(agent, "_memory", None):
        features.append("memory (what it adds to the model's context)")
    if getattr(agent, "_output_content_type", None) is not None:
        features.append("structured output (output_content_type): the reply is text, not a StructuredMessage")
    context = getattr(agent, "_model_context", None)
    if context is not None and type(context) is not UnboundedChatCompletionContext:
        features.append(
            f"its model context {type(context).__name__} (the model is shown the whole conversation, not what "
            "this context keeps of it)"
        )
    workbenches = getattr(agent, "_workbench", [])
    if any(type(bench).__name__ != "StaticStreamWorkbench" for bench in workbenches):
        features.append("a workbench (MCP tools): bind an MCP server as a remote agent instead")
    for feature in features:
        findings.add(AGENT_FEATURE, where, f"not expressed: {feature}")
    tools = tuple(
        ChatTool(
            name=str(tool.name),
            description=str(getattr(tool, "description", "") or ""),
            arguments=schema_arguments(tool.schema.get("parameters")),
        )
        for tool in getattr(agent, "_tools", [])
    )
    return Member(
        kind=MemberKind.LLM,
        system_message=system or None,
        tools=tools,
        handoffs=handoffs,
        reflect_on_tool_use=bool(getattr(agent, "_reflect_on_tool_use", False)),
        max_tool_iterations=int(getattr(agent, "_max_tool_iterations", 1)),
        **common,
    )


def schema_arguments(parameters: Any) -> tuple[ToolArgument, ...]:
    """The arguments a tool's JSON schema (`{"type": "object", "properties": ..., "required": [...]}`) declares
    to the model, required ones first (as a PAL header lists them)."""
    if not isinstance(parameters, dict):
        return ()
    properties = parameters.get("properties") or {}
    required = set(parameters.get("required") or ())
    arguments = [
        ToolArgument(
            name=str(name),
            type=json_schema_type(spec),
            required=name in required,
            default=spec.get("default") if isinstance(spec, dict) and name not in required else None,
        )
        for name, spec in properties.items()
    ]
    return tuple(sorted(arguments, key=lambda argument: not argument.required))


def _reads_the_console(agent: Any) -> bool:
    """Whether an AutoGen UserProxyAgent asks its user at the console (its default input function)."""
    from autogen_agentchat.agents import UserProxyAgent
    from autogen_agentchat.agents._user_proxy_agent import cancellable_input

    return type(agent) is UserProxyAgent and getattr(agent, "input_func", None) in (cancellable_input, input)


# --- termination -------------------------------------------------------------------------------------


def read_termination(condition: Any, subject: str, findings: Findings) -> Termination | None:
    """The termination tree of an autogen-agentchat condition (None for none)."""
    if condition is None:
        return None
    from autogen_agentchat.base import AndTerminationCondition, OrTerminationCondition
    from autogen_agentchat.conditions import (
        FunctionalTermination,
        HandoffTermination,
        MaxMessageTermination,
        SourceMatchTermination,
        TextMentionTermination,
        TextMessageTermination,
    )

    kind = type(condition)
    if kind is OrTerminationCondition or kind is AndTerminationCondition:
        children = tuple(
            child
            for child in (read_termination(item, subject, findings) for item in condition._conditions)
            if child is not None
        )
        return Termination(kind="or" if kind is OrTerminationCondition else "and", children=children)
    if kind is MaxMessageTermination:
        if condition._include_agent_event:
            findings.add(
                TERMINATION_NOT_EXPRESSED,
                subject,
                "MaxMessageTermination(include_agent_event=True) also counts agent events (tool calls); the "
                "program counts chat messages only",
            )
        return Termination(kind="max_messages", options={"max_messages": int(condition._max_messages)})
    if kind is TextMentionTermination:
        sources = condition._sources
        return Termination(
            kind="text_mention",
            options={
                "text": str(condition._termination_text),
                "sources": None if sources is None else [str(source) for source in sources],
            },
        )
    if kind is HandoffTermination:
        return Termination(kind="handoff", options={"target": str(condition._target)})
    if kind is SourceMatchTermination:
        return Termination(
            kind="source_match", options={"sources": [str(source) for source in condition._sources]}
        )
    if kind is TextMessageTermination:
        return Termination(kind="text_message", options={"source": condition._source})
    if kind is FunctionalTermination:
        path = function_path(condition._func, subject, "FunctionalTermination function", findings)
        if path is None:
            return Termination(kind="never", options={"what": "FunctionalTermination"})
        return Termination(kind="function", options={"func": path})
    findings.add(
        TERMINATION_NOT_EXPRESSED,
        subject,
        f"{kind.__name__} is not checked by the program (it depends on tokens, time, outside signals or "
        "message types the meeting does not carry); the chat ends by the other conditions",
    )
    return Termination(kind="never", options={"what": kind.__name__})


# --- teams -------------------------------------------------------------------------------------------


def read_team(team: Any, *, pal: str, source: str, findings: Findings) -> Team:
    """The model of an autogen-agentchat team (RoundRobin, Selector, Swarm, GraphFlow, MagenticOne)."""
    from autogen_agentchat.teams import (
        GraphFlow,
        MagenticOneGroupChat,
        RoundRobinGroupChat,
        SelectorGroupChat,
        Swarm,
    )

    subject = f"team {team.name!r}"
    participants = list(team._participants)
    names = pal_names([str(agent.name) for agent in participants], {pal})
    members = tuple(read_member(agent, names[str(agent.name)], subject, findings) for agent in participants)
    if isinstance(team, RoundRobinGroupChat):
        policy = Policy(kind="round_robin")
    elif isinstance(team, SelectorGroupChat):
        policy = _selector(team, subject, findings)
    elif isinstance(team, Swarm):
        policy = Policy(kind="swarm")
    elif isinstance(team, GraphFlow):
        policy = _graph(team, subject, findings)
    elif isinstance(team, MagenticOneGroupChat):
        policy = _magentic(team, members)
    else:
        raise TypeError(f"{type(team).__name__} is not a team kind this importer reads")
    custom = [
        kind.__name__
        for kind in getattr(getattr(team, "_message_factory", None), "_message_types", {}).values()
        if kind.__name__ not in _BUILT_IN_MESSAGES
    ]
    if custom:
        findings.add(
            MESSAGE_TYPES,
            subject,
            f"its custom_message_types ({', '.join(sorted(custom))}) travel in the meeting as their text",
        )
    termination = read_termination(team._termination_condition, subject, findings)
    _events_matter(members, policy, termination, subject, findings)
    return Team(
        name=pal,
        title=str(team.name),
        framework="autogen",
        class_name=class_path(team),
        source=source,
        description=str(getattr(team, "description", "") or ""),
        members=members,
        policy=policy,
        termination=termination,
        max_turns=team._max_turns,
    )


def _events_matter(
    members: tuple[Member, ...],
    policy: Policy,
    termination: Termination | None,
    subject: str,
    findings: Findings,
) -> None:
    """AG106 when a function sees the thread and an agent's tool calls would be in AutoGen's thread."""
    with_tools = [member.name for member in members if member.kind is MemberKind.LLM and member.tools]
    if not with_tools:
        return
    functions = [name for name in ("selector_func", "candidate_func") if policy.options.get(name)]

    def has_function(node: Termination | None) -> bool:
        return node is not None and (node.kind == "function" or any(has_function(c) for c in node.children))

    if has_function(termination):
        functions.append("FunctionalTermination")
    for name in functions:
        findings.add(
            AGENT_EVENTS,
            subject,
            f"its {name} sees the chat messages only; in AutoGen it also sees the tool-call events of "
            f"{', '.join(with_tools)}",
        )


def _selector(team: Any, subject: str, findings: Findings) -> Policy:
    from autogen_core.model_context import UnboundedChatCompletionContext

    context = getattr(team, "_model_context", None)
    if context is not None and type(context) is not UnboundedChatCompletionContext:
        findings.add(
            GROUP_CHAT_FEATURE,
            subject,
            f"the selector's model context {type(context).__name__} is not applied: the model choosing the next "
            "speaker is shown the whole conversation",
        )
    options: dict[str, Any] = {
        "prompt": str(team._selector_prompt),
        "allow_repeated_speaker": bool(team._allow_repeated_speaker),
        "max_attempts": int(team._max_selector_attempts),
        "selector_func": None,
        "candidate_func": None,
    }
    for key, attribute, what in (
        ("selector_func", "_selector_func", "selector_func"),
        ("candidate_func", "_candidate_func", "candidate_func"),
    ):
        function = getattr(team, attribute, None)
        if function is not None:
            options[key] = function_path(function, subject, what, findings)
    return Policy(kind="selector", options=options)


def _graph(team: Any, subject: str, findings: Findings) -> Policy:
    graph = team._graph
    nodes: dict[str, list[dict[str, Any]]] = {}
    for name, node in graph.nodes.items():
        edges = []
        for edge in node.edges:
            condition: dict[str, Any] | None = None
            if edge.condition_function is not None and text_condition(edge.condition_function) is not None:
                condition = text_condition(edge.condition_function)
            elif edge.condition_function is not None:
                path = function_path(
                    edge.condition_function, f"{subject}, edge {name} -> {edge.target}", "condition", findings
                )
                condition = {"func": path} if path is not None else {"never": True}
            elif isinstance(edge.condition, str):
                condition = {"text": edge.condition}
            edges.append(
                {
                    "target": edge.target,
                    "condition": condition,
                    "group": edge.activation_group,
                    "activation": edge.activation_condition,
                }
            )
        nodes[name] = edges
    return Policy(kind="graph", options={"nodes": nodes, "start": sorted(graph.get_start_nodes())})


def _magentic(team: Any, members: tuple[Member, ...]) -> Policy:
    from autogen_agentchat.teams._group_chat._magentic_one import _prompts as prompts

    final = team._final_answer_prompt
    return Policy(
        kind="magentic_one",
        options={
            "speaker_name": "MagenticOneOrchestrator",
            "max_stalls": int(team._max_stalls),
            "team": "\n".join(" ".join(f"{m.name}: {m.description}".split()) for m in members),
            "prompts": {
                "facts": prompts.ORCHESTRATOR_TASK_LEDGER_FACTS_PROMPT,
                "plan": prompts.ORCHESTRATOR_TASK_LEDGER_PLAN_PROMPT,
                "full": prompts.ORCHESTRATOR_TASK_LEDGER_FULL_PROMPT,
                "progress": prompts.ORCHESTRATOR_PROGRESS_LEDGER_PROMPT,
                "facts_update": prompts.ORCHESTRATOR_TASK_LEDGER_FACTS_UPDATE_PROMPT,
                "plan_update": prompts.ORCHESTRATOR_TASK_LEDGER_PLAN_UPDATE_PROMPT,
                "final": final,
                "final_is_default": final == prompts.ORCHESTRATOR_FINAL_ANSWER_PROMPT,
            },
        },
    )

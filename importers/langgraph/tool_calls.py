"""Tool calls of imported LLM agents and ToolNodes, run by LangGraph's own ToolNode, one PAL call each.

An imported LLM agent is a PAL agent whose model (a react playbook, `Respond`) calls the agent's tools as
playbooks. Each tool playbook runs its call with `call_tool`: LangGraph's ToolNode (the graph's own, found
again by the path the program records, else one made from the tools' import paths) runs exactly that call,
so injected arguments (`InjectedState`, `ToolRuntime`, the tool call id), argument validation, error
handling and `Command` results are LangGraph's. The result (the tool message's content, status and id,
and the react round it belongs to) is kept in the agent's `$tool_results`; `agent_update` turns the
results and the model's reply into the update LangGraph's agent would return: one AI message per round
of tool calls, the tool messages, the reply (or, after a hand-off tool, its `Command`).

A ToolNode that is a node of its own (`run_tool_calls`) runs the tool calls of the last AI message as
calls of the same tool playbooks, in order, and returns their tool messages, as a ToolNode does.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import json
import uuid
from collections.abc import Mapping
from typing import Any

from importers.langgraph import pal_run
from importers.langgraph.graph_run import GraphRun, UserStream, default_graph_run, failed, node_config
from pal_core.errors import PalError
from runtime.module_path import resolve

_PARENT = "__parent__"

_CALL_ID: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "pal_langgraph_tool_call_id", default=None
)
"""The id of the tool call `run_tool_calls` is making now (a ToolNode node runs the AI message's calls
with their own ids; an agent's model makes new ones)."""


class ToolCallError(PalError):
    """A tool of an imported program cannot be found again, or returned what a ToolNode does not."""


def find_tool_node(where: Mapping[str, Any]) -> Any:
    """The ToolNode `where` names: `{"graph": "module:attr", "nodes": [...]}` (the compiled graph, then
    node by node into subgraphs and agents), else `{"tools": ["module:tool", ...]}` (a ToolNode of them)."""
    key = json.dumps(where, sort_keys=True)
    return _tool_node(key)


@functools.lru_cache(maxsize=128)
def _tool_node(key: str) -> Any:
    from langgraph.prebuilt import ToolNode

    where = json.loads(key)
    if "graph" in where:
        value = _resolve(where["graph"])
        for name in where.get("nodes") or ():
            value = _node_runnable(value, name, where)
        if not isinstance(value, ToolNode):
            raise ToolCallError(f"{where}: names a {type(value).__name__}, not a ToolNode")
        return value
    return ToolNode([_resolve(path) for path in where.get("tools") or ()])


def _node_runnable(value: Any, name: str, where: Any) -> Any:
    """The runnable of node `name` in `value` (a compiled graph, or a langgraph-supervisor worker's
    wrapper around one)."""
    from importers.langgraph._agents import recognize_supervisor_worker, runnable_function

    worker = recognize_supervisor_worker(runnable_function(value)) if not hasattr(value, "builder") else None
    if worker is not None:
        value = worker[0]
    builder = getattr(value, "builder", None)
    nodes = getattr(builder, "nodes", None)
    if not isinstance(nodes, Mapping) or name not in nodes:
        raise ToolCallError(f"{where}: no node {name!r} on the way to the ToolNode")
    return nodes[name].runnable


def _resolve(path: Any) -> Any:
    if not isinstance(path, str) or ":" not in path:
        raise ToolCallError(f"{path!r} is not an import path such as 'myapp.tools:search'")
    try:
        return resolve(path)
    except (ImportError, AttributeError) as error:
        raise ToolCallError(f"cannot import {path!r}: {error}") from error


async def call_tool(
    tools: dict,
    name: str,
    arguments: dict,
    state: Any = None,
    results: list | None = None,
    graph_run: Any = None,
    optional: list | None = None,
    agent: str | None = None,
) -> dict:
    """Run one call of tool `name` with `arguments` through the ToolNode `tools` names, as LangGraph's
    agent would, on the agent's `state` as it stands after the earlier `results` (the AI message calling
    the tool last: what `InjectedState` sees); its result for `$tool_results`. An `optional` argument
    the model left out (None) is left out of the call, so the tool's default applies."""
    from importers.langgraph.served_model import serving

    tool_node = find_tool_node(tools)
    running = pal_run.execution_or_none()
    run = graph_run if isinstance(graph_run, GraphRun) else default_graph_run()
    given_id = _CALL_ID.get()
    left_out = set(optional or ())
    call = {
        "name": name,
        "args": {key: value for key, value in arguments.items() if not (key in left_out and value is None)},
        "id": given_id or f"call_{uuid.uuid4().hex[:24]}",
        "type": "tool_call",
    }
    round_ = pal_run.model_calls(running) if running is not None else 0
    key = getattr(tool_node, "_messages_key", "messages")
    if given_id is None:  # a model's call: the state the ToolNode sees ends with the AI message making it
        state = _state_at_call(state, list(results or ()), call, round_, key, agent)
    writer = UserStream(running, asyncio.get_running_loop())
    config = node_config(run, getattr(tool_node, "name", "tools"), writer=writer)
    payload = {
        "__type": "tool_call_with_context",
        "tool_call": call,
        "state": state if state is not None else {},
    }
    try:
        with serving(running, f"tool {name!r}"):
            output = await tool_node.ainvoke(payload, config)
    except Exception as error:
        raise failed(f"tool {name!r}", error) from error
    finally:
        await writer.flush()
    return _result(output, call, round_, key)


def _state_at_call(
    state: Any, results: list[dict], call: dict, round_: int, key: str, agent: str | None
) -> Any:
    """The agent's state as LangGraph's ToolNode sees it for `call`: the messages so far, ending with the
    AI message of this round (its earlier calls and this one); the round's tool messages come after."""
    from langchain_core.messages import AIMessage

    split = len(results)
    while split > 0 and results[split - 1].get("round") == round_:
        split -= 1
    messages = _messages(state, key) + messages_of(results[:split], agent)
    earlier = [_tool_call_of(item) for item in results[split:]]
    messages.append(AIMessage(content="", tool_calls=[*earlier, call], name=agent))
    if isinstance(state, Mapping):
        return {**state, key: messages}
    return {key: messages}


def _messages(state: Any, key: str) -> list[Any]:
    if isinstance(state, Mapping):
        return list(state.get(key) or ())
    return list(getattr(state, key, None) or ())


def _tool_call_of(result: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": result["name"], "args": result["args"], "id": result["id"], "type": "tool_call"}


def _result(output: Any, call: dict, round_: int, key: str) -> dict:
    """A `$tool_results` entry from what the ToolNode returned for one call."""
    from langgraph.types import Command

    result: dict[str, Any] = {"name": call["name"], "args": call["args"], "id": call["id"], "round": round_}
    items = output if isinstance(output, list) else [output]
    message = None
    for item in items:
        if isinstance(item, Command):
            result["command"] = item
            update = item.update if isinstance(item.update, Mapping) else {}
            message = message or _tool_message(update.get(key), call["id"])
        elif isinstance(item, Mapping):
            message = message or _tool_message(item.get(key), call["id"])
    if message is not None:
        result["content"] = message.content
        result["status"] = getattr(message, "status", "success")
    elif "command" not in result:
        raise ToolCallError(f"the ToolNode gave no tool message for the call of {call['name']!r}: {output!r}")
    else:
        result["content"], result["status"] = "", "success"
    return result


def _tool_message(messages: Any, call_id: str) -> Any:
    for message in messages or ():
        if getattr(message, "type", "") == "tool" and getattr(message, "tool_call_id", None) == call_id:
            return message
    return None


def messages_of(results: list[Mapping[str, Any]], agent: str | None = None) -> list[Any]:
    """The messages of a run of tool calls: per react round, one AI message calling that round's tools,
    then their tool messages in order."""
    from langchain_core.messages import AIMessage, ToolMessage

    messages: list[Any] = []
    index = 0
    while index < len(results):
        round_ = results[index].get("round")
        group = [results[index]]
        index += 1
        while index < len(results) and results[index].get("round") == round_:
            group.append(results[index])
            index += 1
        messages.append(AIMessage(content="", tool_calls=[_tool_call_of(item) for item in group], name=agent))
        for item in group:
            messages.append(
                ToolMessage(
                    content=item.get("content", ""),
                    name=item["name"],
                    tool_call_id=item["id"],
                    status=item.get("status", "success"),
                )
            )
    return messages


# --- the agent's turn ------------------------------------------------------------------------------


def agent_conversation(state: Any, messages_key: str = "messages") -> list:
    """The conversation in the agent's state as its model reads it: `{"role", "content"}` per message
    (the user's, the AI's replies and tool calls, tool results)."""
    conversation: list[dict[str, str]] = []
    for message in _messages(state, messages_key):
        kind = getattr(message, "type", None) or (
            message.get("role") if isinstance(message, Mapping) else None
        )
        content = getattr(message, "content", None)
        if content is None and isinstance(message, Mapping):
            content = message.get("content", "")
        text = _text(content)
        if kind in ("human", "user"):
            conversation.append({"role": "user", "content": text})
        elif kind in ("ai", "assistant"):
            calls = getattr(message, "tool_calls", None) or []
            said = "; ".join(f"called {call['name']}({json.dumps(call.get('args') or {})})" for call in calls)
            conversation.append(
                {"role": "assistant", "content": " ".join(part for part in (text, said) if part)}
            )
        elif kind == "tool":
            name = getattr(message, "name", None) or "a tool"
            conversation.append({"role": "tool", "content": f"{name} returned {text}"})
        elif kind == "system":
            conversation.append({"role": "system", "content": text})
    return conversation


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", "")) if isinstance(block, Mapping) else str(block)
            for block in content
            if not isinstance(block, Mapping) or block.get("type", "text") == "text"
        )
    return "" if content is None else str(content)


def agent_update(
    state: Any,
    results: list,
    reply: Any,
    agent: str | None = None,
    messages_key: str = "messages",
    response_format: dict | None = None,
) -> Any:
    """The update LangGraph's agent returns for its turn: the AI messages and tool messages of its tool
    calls, then its reply as an AI message (named `agent`, as a named prebuilt agent names them). A tool that
    handed off (a `Command` to the parent graph) ends the turn there: its Command is the update, the way the
    parent graph takes it. With `response_format` (create_agent's, as the import records it) the reply is
    the schema's fields: the structured response, returned as create_agent's tool strategy returns it."""
    from langchain_core.messages import AIMessage
    from langgraph.types import Command

    done: list[Mapping[str, Any]] = []
    extra: dict[str, Any] = {}
    for result in results:
        done.append(result)
        command = result.get("command")
        if isinstance(command, Command) and command.graph == _PARENT:
            return Command(goto=command.goto, update=command.update)
        if isinstance(command, Command) and isinstance(command.update, Mapping):
            extra.update({key: value for key, value in command.update.items() if key != messages_key})
    messages = messages_of(done, agent)
    if response_format is not None:
        return {**extra, **_structured(messages, reply, agent, messages_key, response_format)}
    text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False, default=str)
    messages.append(AIMessage(content=text, name=agent))
    return {**extra, messages_key: messages}


def _structured(
    messages: list[Any], reply: Any, agent: str | None, key: str, response_format: Mapping
) -> dict:
    """The structured response of a reply, and the messages create_agent's tool strategy gives it: an AI
    message calling the schema's tool with the fields, the tool message saying it is returned."""
    from langchain_core.messages import AIMessage, ToolMessage
    from pydantic import TypeAdapter, ValidationError

    name = str(response_format.get("name") or "response")
    schema = _resolve(response_format.get("schema"))
    fields = reply
    if isinstance(reply, str):
        try:
            fields = json.loads(reply)
        except json.JSONDecodeError:
            fields = reply
    try:
        structured = TypeAdapter(schema).validate_python(fields)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, item['loc'])) or name}: {item['msg']}" for item in error.errors()
        )
        raise ToolCallError(
            f"the agent's answer does not fit its response format {name}: {problems}"
        ) from None
    call = {"name": name, "args": fields, "id": f"call_{uuid.uuid4().hex[:24]}", "type": "tool_call"}
    content = response_format.get("tool_message") or f"Returning structured response: {structured}"
    messages.append(AIMessage(content="", tool_calls=[call], name=agent))
    messages.append(ToolMessage(content=content, tool_call_id=call["id"], name=name))
    return {key: messages, "structured_response": structured}


# --- a ToolNode of its own -------------------------------------------------------------------------


async def run_tool_calls(state: Any, tools: dict, messages_key: str = "messages") -> Any:
    """A ToolNode node: each tool call of the last AI message in `state` made as a call of the tool's
    playbook (`tools` maps tool names to playbook names), in order; the tool messages they give, as a
    ToolNode returns them (and the Commands of tools that return one)."""
    from langchain_core.messages import ToolMessage
    from langgraph.types import Command

    running = pal_run.execution()
    calls = _last_tool_calls(state, messages_key)
    before = len(pal_run.variable(running, "tool_results", []) or [])
    messages: list[Any] = []
    for call in calls:
        playbook = tools.get(call["name"])
        if playbook is None:
            known = ", ".join(sorted(tools)) or "none"
            messages.append(
                ToolMessage(
                    content=f"Error: {call['name']} is not a valid tool, try one of [{known}].",
                    name=call["name"],
                    tool_call_id=call["id"],
                    status="error",
                )
            )
            continue
        token = _CALL_ID.set(call["id"])
        try:
            await pal_run.call_playbook(running, playbook, call.get("args") or {})
        finally:
            _CALL_ID.reset(token)
    made = list(pal_run.variable(running, "tool_results", []) or [])[before:]
    commands = [result["command"] for result in made if isinstance(result.get("command"), Command)]
    messages = [
        *messages,
        *(message for message in messages_of(made) if getattr(message, "type", "") == "tool"),
    ]
    messages.sort(key=lambda message: [call["id"] for call in calls].index(message.tool_call_id))
    if commands:
        return [
            *commands,
            {messages_key: [m for m in messages if not _in_commands(m, commands, messages_key)]},
        ]
    return {messages_key: messages}


def _in_commands(message: Any, commands: list[Any], key: str) -> bool:
    for command in commands:
        update = command.update if isinstance(command.update, Mapping) else {}
        if any(getattr(item, "tool_call_id", None) == message.tool_call_id for item in update.get(key) or ()):
            return True
    return False


def _last_tool_calls(state: Any, key: str) -> list[dict[str, Any]]:
    for message in reversed(_messages(state, key)):
        if getattr(message, "type", "") == "ai":
            return list(getattr(message, "tool_calls", None) or ())
    raise ToolCallError("a ToolNode ran on a state with no AI message to take tool calls from")


__all__ = [
    "ToolCallError",
    "agent_conversation",
    "agent_update",
    "call_tool",
    "find_tool_node",
    "messages_of",
    "run_tool_calls",
]

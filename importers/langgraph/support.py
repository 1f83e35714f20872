"""Run-time helpers of programs imported from LangGraph (`pal import langgraph`).

An imported graph keeps the whole graph state in one `$state:dict` variable; the generated playbooks call
the graph's own node and router functions by import path and call these helpers, bound the same way
(`python: pal.langgraph:<function>`, see runtime.support_modules), for what LangGraph's Pregel loop does between nodes:

- `start_graph` / `finish_graph`: the START superstep (the input written through the reducers) and the
  output, in the shape `graph.invoke` returns.
- `apply_update`, `apply_writes`: one superstep's writes applied to the state through the
  recorded channels: a last-value channel takes one value per superstep, a reducer channel folds every
  value in with its reducer (`Overwrite` bypasses it), exactly in LangGraph's order (nodes triggered by
  edges by name, then `Send` tasks in the order they were sent).
- `destination`, `command_goto`, `send_args`: a router's or a `Command`'s destination as one route name
  the playbook branches on, and the inputs of a `Send` fan-out's tasks; `destinations`, `command_gotos`,
  `send_packets`: the same for a route that may name several nodes at once (a list of names, compared
  whole, and [node, input] pairs).
- `state_view`: the state as a node declared it (a key subset, or a pydantic model / dataclass).
- `resume_node`, `is_interrupted`, `interrupt_question`, `add_answer`: a node that calls `interrupt()`, re-run with the
  human's answers so far, the way LangGraph resumes it.
- `handoff`, `agent_reply`: the `Command` a multi-agent hand-off tool returns, and a supervisor's worker's
  result as langgraph-supervisor passes it on.

The channel description (`schema`) is a JSON literal the importer writes into the program:
`{"channels": {key: {"type": str, "reducer": "module:qualname", "initial": value, "factory":
"module:qualname"}}, "input": [keys], "output": [keys]}`; only `channels` is required.

Nothing here imports LangGraph until a value needs it (a `Command`, `Send`, `Overwrite` or `interrupt()`
can only exist once LangGraph is loaded), so a graph of plain functions runs without it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import sys
from collections.abc import Callable, Mapping
from typing import Any

from pal_core.errors import PalError
from runtime.module_path import resolve

END = "__end__"
"""LangGraph's END node name, which routes use for 'the graph is done'."""
NO_ROUTE = ""
"""What `command_goto` returns when a node's result names no destination."""
_START = "__start__"
_PARENT = "__parent__"
_OVERWRITE_KEY = "__overwrite__"


class GraphStepError(PalError):
    """A node, router or reducer did something the imported program cannot follow (a run failure)."""


class SchemaError(PalError):
    """The `schema` literal of an imported program is malformed (a user error: the program was edited)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Interrupted:
    """What `resume_node` returns when the node asked a question that has no answer yet."""

    value: Any
    """The value the node passed to `interrupt()`: the question for the human."""
    id: str
    """LangGraph's id of the interrupt."""


# --- the schema literal --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Channel:
    """One state key of the schema literal, with its reducer imported."""

    key: str
    """The state key."""
    reducer: Callable[[Any, Any], Any] | None
    """The reducer; None for a key that keeps the last value written."""
    initial: Any
    """The value the key starts with (a reducer key's empty value)."""
    has_initial: bool
    """Whether the key starts with `initial` (otherwise it starts unset)."""


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class _Schema:
    """The schema literal, read."""

    channels: dict[str, _Channel]
    """Every state key, in schema order."""
    input_keys: tuple[str, ...]
    """Keys the input may write."""
    output_keys: tuple[str, ...]
    """Keys the output shows, in order."""


def _read_schema(schema: Any) -> _Schema:
    if not isinstance(schema, Mapping) or not isinstance(schema.get("channels"), Mapping):
        raise SchemaError("schema must be a dict with a 'channels' dict, as `pal import langgraph` writes it")
    channels: dict[str, _Channel] = {}
    for key, spec in schema["channels"].items():
        if not isinstance(spec, Mapping):
            raise SchemaError(f"schema: channel {key!r} must be a dict such as {{'type': 'int'}}")
        reducer_path = spec.get("reducer")
        reducer = _resolve(reducer_path, f"reducer of channel {key!r}") if reducer_path else None
        has_initial = "initial" in spec or "factory" in spec
        initial = spec.get("initial")
        if "factory" in spec:
            initial = _resolve(spec["factory"], f"factory of channel {key!r}")()
        channels[key] = _Channel(key=key, reducer=reducer, initial=initial, has_initial=has_initial)
    every = tuple(channels)
    return _Schema(
        channels=channels,
        input_keys=_keys(schema, "input", every),
        output_keys=_keys(schema, "output", every),
    )


def _keys(schema: Mapping[str, Any], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    keys = schema.get(name)
    if keys is None:
        return default
    if not isinstance(keys, list) or not all(isinstance(key, str) for key in keys):
        raise SchemaError(f"schema: {name!r} must be a list of channel names")
    return tuple(keys)


@functools.lru_cache(maxsize=512)
def _resolve_path(path: str) -> Any:
    # The program's folder is on the path already: its agents bound their nodes when they started.
    return resolve(path)


def _resolve(path: Any, what: str) -> Any:
    if not isinstance(path, str) or ":" not in path:
        raise SchemaError(f"{what}: {path!r} is not an import path such as 'operator:add'")
    try:
        return _resolve_path(path)
    except (ImportError, AttributeError) as error:
        raise SchemaError(f"{what}: cannot import {path!r}: {error}") from error


# --- LangGraph values, recognised without importing LangGraph ------------------------------------


def _langgraph_class(name: str) -> type | None:
    """`langgraph.types.<name>` if LangGraph is loaded; a value of that class cannot exist otherwise."""
    module = sys.modules.get("langgraph.types")
    return getattr(module, name, None) if module is not None else None


def _is_instance(value: Any, class_name: str) -> bool:
    cls = _langgraph_class(class_name)
    return cls is not None and isinstance(value, cls)


def _overwrite_value(value: Any) -> tuple[bool, Any]:
    """(True, new value) for LangGraph's `Overwrite(value)` and its dict forms."""
    if _is_instance(value, "Overwrite"):
        return True, value.value
    if isinstance(value, dict):
        if len(value) == 1 and _OVERWRITE_KEY in value:
            return True, value[_OVERWRITE_KEY]
        if value.get("type") == _OVERWRITE_KEY and "value" in value:
            return True, value["value"]
    return False, None


# --- state updates -------------------------------------------------------------------------------


def start_graph(input: Any, schema: dict) -> dict:
    """The state after LangGraph's START superstep: reducer channels at their empty value, then the
    input's keys (those of the input schema) written through the reducers like any node's update."""
    spec = _read_schema(schema)
    state = {key: channel.initial for key, channel in spec.channels.items() if channel.has_initial}
    if input is None:
        return state
    if not isinstance(input, Mapping):
        raise GraphStepError(f"the graph's input must be a dict of state keys, got {type(input).__name__}")
    allowed = set(spec.input_keys)
    writes = [(key, value) for key, value in input.items() if key in allowed]
    return _apply(state, [(_START, writes)], spec)


def apply_update(state: dict, update: Any, node: str, schema: dict, routes: list | None = None) -> dict:
    """The state after a superstep in which only `node` ran and returned `update`.

    `routes` lists the destinations the import found for the node's `Command(goto=...)`; a goto the
    program does not branch on is an error rather than silently not followed.
    """
    _check_goto(update, node, routes or [])
    return _apply_tasks(state, [(node, update)], _read_schema(schema))


def apply_writes(state: dict, writes: list, schema: dict) -> dict:
    """The state after a superstep in which several tasks ran: `writes` holds [node, update] pairs in
    LangGraph's order (nodes started by edges by name, then Send tasks in the order they were sent)."""
    pairs: list[tuple[str, Any]] = []
    for write in writes:
        if not isinstance(write, (list, tuple)) or len(write) != 2 or not isinstance(write[0], str):
            raise GraphStepError(f"apply_writes: each write must be [node, update], got {write!r}")
        _check_goto(write[1], write[0], [])
        pairs.append((write[0], write[1]))
    return _apply_tasks(state, pairs, _read_schema(schema))


def _apply_tasks(state: Mapping[str, Any], updates: list[tuple[str, Any]], spec: _Schema) -> dict:
    known = set(spec.channels)
    return _apply(state, [(node, _update_pairs(update, node, known)) for node, update in updates], spec)


def _apply(state: Mapping[str, Any], tasks: list[tuple[str, list[tuple[str, Any]]]], spec: _Schema) -> dict:
    values_by_key: dict[str, list[tuple[str, Any]]] = {}
    for node, pairs in tasks:
        for key, value in pairs:
            values_by_key.setdefault(key, []).append((node, value))
    new_state = dict(state)
    for key, written in values_by_key.items():
        channel = spec.channels[key]
        if channel.reducer is None:
            if len(written) > 1:
                nodes = ", ".join(node for node, _ in written)
                raise GraphStepError(
                    f"state key {key!r} was written by {nodes} in one superstep, but it keeps one value; "
                    "give it a reducer (Annotated[type, reducer]) in the graph's state schema"
                )
            is_overwrite, value = _overwrite_value(written[0][1])
            new_state[key] = value if is_overwrite else written[0][1]
            continue
        new_state[key] = _reduce(channel, key in new_state, new_state.get(key), written)
    return new_state


def _reduce(channel: _Channel, present: bool, current: Any, written: list[tuple[str, Any]]) -> Any:
    values = [value for _, value in written]
    if not present:
        current, values = values[0], values[1:]
    overwritten = False
    for value in values:
        is_overwrite, replacement = _overwrite_value(value)
        if is_overwrite:
            if overwritten:
                raise GraphStepError(
                    f"state key {channel.key!r} received two Overwrite values in one superstep"
                )
            current, overwritten = replacement, True
        elif not overwritten and channel.reducer is not None:
            current = channel.reducer(current, value)
    return current


def _update_pairs(update: Any, node: str, known: set[str]) -> list[tuple[str, Any]]:
    """A node's return value as (key, value) pairs for known channels, the way LangGraph reads it."""
    if update is None:
        return []
    if isinstance(update, Mapping):
        return [(key, value) for key, value in update.items() if key in known]
    if _is_instance(update, "Command"):
        if update.graph == _PARENT:
            raise GraphStepError(
                f"node {node!r} returned Command(graph=Command.PARENT), which addresses a parent graph "
                "the imported program does not have at this point"
            )
        return _command_pairs(update.update, node, known)
    if isinstance(update, (list, tuple)) and any(_is_instance(item, "Command") for item in update):
        pairs: list[tuple[str, Any]] = []
        for item in update:
            pairs.extend(_update_pairs(item, node, known))
        return pairs
    fields = _object_fields(update)
    if fields is not None:
        return [(key, value) for key, value in fields if key in known]
    raise GraphStepError(
        f"node {node!r} returned {type(update).__name__}; a node must return a dict of state updates, "
        "a Command, or None"
    )


def _command_pairs(update: Any, node: str, known: set[str]) -> list[tuple[str, Any]]:
    if update is None:
        return []
    if isinstance(update, Mapping):
        return [(key, value) for key, value in update.items() if key in known]
    if isinstance(update, (list, tuple)) and all(
        isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) for item in update
    ):
        return [(key, value) for key, value in update if key in known]
    fields = _object_fields(update)
    if fields is not None:
        return [(key, value) for key, value in fields if key in known]
    raise GraphStepError(f"node {node!r} returned a Command whose update is a {type(update).__name__}")


def _object_fields(value: Any) -> list[tuple[str, Any]] | None:
    """The updates in a pydantic model or dataclass instance, with LangGraph's rule for None values:
    a field counts when it is not None, its default is not None, or (pydantic) it was set explicitly."""
    model_fields = getattr(type(value), "model_fields", None)
    if isinstance(model_fields, Mapping) and hasattr(value, "model_fields_set"):
        explicit = value.model_fields_set
        return [
            (key, getattr(value, key))
            for key, field in model_fields.items()
            if getattr(value, key) is not None or field.default is not None or key in explicit
        ]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        pairs = []
        for field in dataclasses.fields(value):
            current = getattr(value, field.name)
            default = None if field.default is dataclasses.MISSING else field.default
            if current is not None or default is not None or field.default is dataclasses.MISSING:
                pairs.append((field.name, current))
        return pairs
    return None


# --- routes --------------------------------------------------------------------------------------


def destination(result: Any, node: str, ends: Any = None, sends: bool = False) -> str:
    """The one destination a router's result names: a node name or `__end__`.

    `ends` is the router's path map (a dict, or [key, node] pairs when keys are not strings) or the list
    of node names it may return; with `sends`, `Send` packets to one node are allowed too (the packets
    are read by `send_args`).
    """
    unique = list(dict.fromkeys(_route_targets(result, node, ends, sends)))
    if not unique:
        return END
    if len(unique) > 1:
        raise GraphStepError(
            f"the router after {node!r} returned several destinations {unique}; the imported program "
            "follows one destination per route (or one Send fan-out)"
        )
    return unique[0]


def destinations(
    result: Any, node: str, ends: Any = None, sends: bool = False, order: list | None = None
) -> list:
    """Every destination a router's result names, for a router that may name several at once: node
    names in `order` (the order the program's branches list them), without END; `[]` when it names none
    (END, or no `Send` at all). `ends` and `sends` are as for `destination`."""
    targets = _route_targets(result, node, ends, sends)
    return _in_order(
        [target for target in dict.fromkeys(targets) if target != END], order, f"the router after {node!r}"
    )


def _route_targets(result: Any, node: str, ends: Any, sends: bool) -> list[str]:
    """The destination of each item of a router's result (one item, or a list), in order: a name
    mapped through `ends`, or the node of a `Send` packet when `sends` allows them."""
    items = list(result) if isinstance(result, (list, tuple)) else [result]
    targets: list[str] = []
    for item in items:
        if _is_instance(item, "Send"):
            if not sends:
                raise GraphStepError(
                    f"the router after {node!r} returned Send({item.node!r}, ...), which the import did not "
                    "expect; annotate the router's return type with Send to import it as a fan-out"
                )
            if item.node == END:
                raise GraphStepError(f"the router after {node!r} sent a packet to END")
            targets.append(item.node)
        else:
            targets.append(_map_route(item, node, ends))
    return targets


def _in_order(targets: list[str], order: list | None, who: str) -> list[str]:
    if order is None:
        return targets
    unexpected = [target for target in targets if target not in order]
    if unexpected:
        raise GraphStepError(
            f"{who} named {unexpected}, but the import found only {list(order)} as its destinations"
        )
    return sorted(targets, key=order.index)


def send_packets(result: Any, nodes: list, state: dict) -> list:
    """The tasks a router's result starts among `nodes`, as [node, input] pairs in LangGraph's order: a
    plain route to a node first (its input is the state; by node name), then each `Send(node, arg)` in
    the order sent."""
    items: list[Any] = []
    for command in _commands(result):
        items.extend(_goto_list(command.goto))
    if not items:
        items = list(result) if isinstance(result, (list, tuple)) else [result]
    pulled = sorted({item for item in items if isinstance(item, str) and item in nodes})
    pushed = [[item.node, item.arg] for item in items if _is_instance(item, "Send") and item.node in nodes]
    return [[name, state] for name in pulled] + pushed


def command_gotos(update: Any, node: str, order: list | None = None) -> list:
    """Every destination of the `Command(goto=...)` (one name or a list) that `node` returned, in `order`,
    without END; `[]` when it names none."""
    targets: list[str] = []
    for command in _commands(update):
        for target in _goto_list(command.goto):
            if _is_instance(target, "Send"):
                raise GraphStepError(
                    f"node {node!r} returned Command(goto=Send({target.node!r}, ...)); the imported program "
                    "follows a Command to nodes, not a Send fan-out"
                )
            targets.append(str(target))
    return _in_order([target for target in dict.fromkeys(targets) if target != END], order, f"node {node!r}")


def _map_route(item: Any, node: str, ends: Any) -> str:
    if item is None or item == _START:
        raise GraphStepError(f"the router after {node!r} did not return a valid destination: {item!r}")
    if isinstance(ends, Mapping):
        if item in ends:
            return str(ends[item])
        raise GraphStepError(
            f"the router after {node!r} returned {item!r}, which is not in its path map {sorted(map(str, ends))}"
        )
    if isinstance(ends, list) and ends and all(isinstance(pair, list) and len(pair) == 2 for pair in ends):
        for key, target in ends:
            if key == item:
                return str(target)
        raise GraphStepError(f"the router after {node!r} returned {item!r}, which is not in its path map")
    if not isinstance(item, str):
        raise GraphStepError(f"the router after {node!r} returned {item!r}, which is not a node name")
    if isinstance(ends, list) and item not in ends:
        raise GraphStepError(
            f"the router after {node!r} returned {item!r}, which is not one of its destinations {ends}"
        )
    return item


def command_goto(update: Any, node: str) -> str:
    """The destination of a `Command(goto=...)` that `node` returned; `""` when it names none."""
    commands = _commands(update)
    targets: list[str] = []
    for command in commands:
        for target in _goto_list(command.goto):
            if _is_instance(target, "Send"):
                raise GraphStepError(
                    f"node {node!r} returned Command(goto=Send({target.node!r}, ...)); the imported program "
                    "follows a Command to a node, not a Send fan-out"
                )
            targets.append(str(target))
    unique = list(dict.fromkeys(targets))
    if len(unique) > 1:
        raise GraphStepError(
            f"node {node!r} returned Command(goto={unique}); the imported program follows one destination"
        )
    return unique[0] if unique else NO_ROUTE


def _commands(update: Any) -> list[Any]:
    if _is_instance(update, "Command"):
        return [update]
    if isinstance(update, (list, tuple)):
        return [item for item in update if _is_instance(item, "Command")]
    return []


def _goto_list(goto: Any) -> list[Any]:
    if isinstance(goto, str) or _is_instance(goto, "Send"):
        return [goto]
    return list(goto or ())


def _check_goto(update: Any, node: str, routes: list) -> None:
    for command in _commands(update):
        for target in _goto_list(command.goto):
            name = target.node if _is_instance(target, "Send") else target
            if name not in routes:
                expected = f"the import found only {routes}" if routes else "the import found no destinations"
                raise GraphStepError(
                    f"node {node!r} returned Command(goto={name!r}), but {expected} for it; declare them "
                    "with a Command[Literal[...]] return annotation or add_node(..., destinations=...) "
                    "and import the graph again"
                )


def send_args(result: Any, node: str, state: dict) -> list:
    """The inputs of the `node` tasks a router result or Command starts: the state for a plain route to
    `node` (LangGraph runs those first), then each `Send(node, arg)`'s arg in order."""
    items: list[Any] = []
    for command in _commands(result):
        items.extend(_goto_list(command.goto))
    if not items:
        items = list(result) if isinstance(result, (list, tuple)) else [result]
    pulled = [state for item in items if item == node]
    pushed = [item.arg for item in items if _is_instance(item, "Send") and item.node == node]
    return pulled[:1] + pushed


def state_value(state: dict, key: str, default: Any = None) -> Any:
    """`state.get(key, default)`: the router LangGraph's multi-agent swarm uses (the active agent)."""
    return state.get(key, default)


def state_view(state: dict, keys: list | None = None, model: str | None = None) -> Any:
    """The state as a node or router declared its input: only `keys`, and built as `model` (a pydantic
    model or dataclass, by import path) when the schema is a class."""
    view = {key: value for key, value in state.items() if keys is None or key in keys}
    if model is None:
        return view
    return _resolve(model, "state_view model")(**view)


def finish_graph(state: dict, schema: dict) -> dict:
    """The graph's output, as `graph.invoke` returns it: the output keys that have a value, in order."""
    spec = _read_schema(schema)
    return {key: state[key] for key in spec.output_keys if key in state}


# --- interrupts ----------------------------------------------------------------------------------


class _Answers:
    """The parts of LangGraph's task scratchpad that `interrupt()` reads: the answers so far in order."""

    __slots__ = ("_asked", "resume")

    def __init__(self, answers: list) -> None:
        self.resume = list(answers)
        self._asked = 0

    def interrupt_counter(self) -> int:
        index = self._asked
        self._asked += 1
        return index

    def get_null_resume(self, consume: bool = False) -> None:
        return None


async def resume_node(node: str, state: Any, answers: list) -> Any:
    """Run the node function `node` (an import path) with its `interrupt()` calls answered in order from
    `answers`; its update when it finishes, or `Interrupted` at the first question without an answer.

    LangGraph re-runs an interrupted node from its start on every resume, answering its earlier
    `interrupt()` calls with the earlier answers; this does the same.
    """
    function = _resolve(node, "resume_node")
    from langchain_core.runnables.config import var_child_runnable_config
    from langgraph._internal._constants import (
        CONFIG_KEY_CHECKPOINT_NS,
        CONFIG_KEY_SCRATCHPAD,
        CONFIG_KEY_SEND,
    )
    from langgraph.errors import GraphInterrupt

    config = {
        "configurable": {
            CONFIG_KEY_SCRATCHPAD: _Answers(answers),
            CONFIG_KEY_SEND: lambda writes: None,
            CONFIG_KEY_CHECKPOINT_NS: node,
        }
    }
    token = var_child_runnable_config.set(config)
    try:
        result = function(state)
        if inspect.isawaitable(result):
            result = await result
    except GraphInterrupt as interrupt:
        raised = interrupt.args[0][0] if interrupt.args and interrupt.args[0] else None
        if raised is None:
            raise GraphStepError(f"node {node!r} raised an interrupt without a value") from interrupt
        return Interrupted(value=raised.value, id=raised.id)
    finally:
        var_child_runnable_config.reset(token)
    return result


def is_interrupted(update: Any) -> bool:
    """Whether `resume_node` stopped at an `interrupt()` that has no answer yet."""
    return isinstance(update, Interrupted)


def interrupt_question(update: Any) -> Any:
    """The value the node passed to its unanswered `interrupt()`: the question for the human."""
    if not isinstance(update, Interrupted):
        raise GraphStepError("interrupt_question: the node finished; it asked nothing")
    return update.value


def add_answer(answers: list, answer: Any) -> list:
    """`answers` with the human's reply appended. A reply read with `WaitForMessage` (a list of
    messages) counts as the text of its last message."""
    if isinstance(answer, list) and answer and hasattr(answer[-1], "content"):
        answer = answer[-1].content
    return [*answers, answer]


# --- multi-agent hand-offs -----------------------------------------------------------------------


def handoff(agent: str, update: dict | None = None) -> Any:
    """The `Command(goto=agent, update=update)` a hand-off tool returns to the graph that runs the agents."""
    from langgraph.types import Command

    return Command(goto=agent, update=update or {})


def agent_reply(output: dict, mode: str, agent: str, supervisor: str | None = None) -> dict:
    """A langgraph-supervisor worker's result as the supervisor graph takes it: with `last_message`, only
    the last message (and the AI message before a trailing tool message); with `supervisor`, the pair of
    messages that hands control back to it."""
    if not isinstance(output, Mapping) or not isinstance(output.get("messages"), list):
        raise GraphStepError(f"agent {agent!r} must return a dict with a 'messages' list, got {output!r}")
    messages = list(output["messages"])
    if mode == "last_message" and messages:
        ends_with_tool = type(messages[-1]).__name__ == "ToolMessage"
        messages = messages[-2:] if ends_with_tool else messages[-1:]
    elif mode != "full_history":
        raise GraphStepError(f"agent_reply: mode must be 'last_message' or 'full_history', got {mode!r}")
    if supervisor is not None:
        from langgraph_supervisor.handoff import create_handoff_back_messages

        messages.extend(create_handoff_back_messages(agent, supervisor))
    return {**output, "messages": messages}


def unsupported(node: str, reason: str) -> None:
    """Stand-in for a part of a graph the import could not express (reported when it was imported)."""
    raise GraphStepError(f"node {node!r}: {reason}; the import reported this, so the program cannot run here")


HELPERS: Mapping[str, Callable[..., Any]] = {
    "start_graph": start_graph,
    "apply_update": apply_update,
    "apply_writes": apply_writes,
    "destination": destination,
    "destinations": destinations,
    "command_goto": command_goto,
    "command_gotos": command_gotos,
    "send_args": send_args,
    "send_packets": send_packets,
    "state_value": state_value,
    "state_view": state_view,
    "finish_graph": finish_graph,
    "resume_node": resume_node,
    "is_interrupted": is_interrupted,
    "interrupt_question": interrupt_question,
    "add_answer": add_answer,
    "handoff": handoff,
    "agent_reply": agent_reply,
    "unsupported": unsupported,
}
"""Every helper the importer may bind a playbook to, by function name."""

__all__ = [
    "END",
    "HELPERS",
    "NO_ROUTE",
    "GraphStepError",
    "Interrupted",
    "SchemaError",
    *HELPERS,
]

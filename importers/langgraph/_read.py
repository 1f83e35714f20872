"""Reading a StateGraph builder (or a compiled graph's builder) into the importer's model.

Everything comes from the builder: `nodes` (StateNodeSpec: the runnable, input schema, `ends`, policies),
`edges`, `waiting_edges`, `branches` (BranchSpec: router, path map), `channels`, `managed` and `schemas`;
the compiled graph adds its name and `interrupt_before/after` lists.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Iterator
from types import CodeType
from typing import Any

from importers import ImportTargetError
from importers.common.diagnostics import Findings
from importers.common.pal_types import type_text
from importers.common.paths import import_path
from importers.langgraph._agents import (
    ToolNodePlace,
    closure_vars,
    read_tools,
    recognize_agent,
    recognize_state_router,
    recognize_supervisor_worker,
    runnable_function,
)
from importers.langgraph._code import (
    goto_combinations,
    gotos_several,
    return_combinations,
    returns_several,
    send_targets,
    unfollowed_commands,
    writes_command_goto,
)
from importers.langgraph._diagnostics import (
    CONTEXT_SCHEMA,
    DEFERRED_NODE,
    MANAGED_VALUE,
    MODEL_IN_PYTHON,
    NODE_POLICY,
    NODE_WITHOUT_IMPORT_PATH,
    REDUCER_WITHOUT_IMPORT_PATH,
    ROUTER_WITHOUT_IMPORT_PATH,
    STATE_SCHEMA,
    UNSUPPORTED_CHANNEL,
    UNSUPPORTED_COMMAND,
    UNSUPPORTED_NODE,
)
from importers.langgraph._model import (
    END,
    START,
    Callee,
    Channel,
    Graph,
    InputView,
    LlmAgent,
    Node,
    NodeKind,
    Router,
)
from importers.langgraph._model_use import model_reference, reads_run_context
from importers.langgraph._react_loop import fold_react_loops

_JSON_INITIALS = (list, dict, int, float, str, bool)
_DEFAULT_GRAPH_NAME = "LangGraph"


def graph_parts(value: Any) -> tuple[Any, Any | None]:
    """(builder, compiled graph or None) for a StateGraph or a compiled StateGraph."""
    from langgraph.graph.state import CompiledStateGraph, StateGraph

    if isinstance(value, CompiledStateGraph):
        return value.builder, value
    if isinstance(value, StateGraph):
        return value, None
    kind = type(value).__name__
    hint = " (a functional-API entrypoint is not a StateGraph)" if hasattr(value, "stream_channels") else ""
    raise ImportTargetError(f"expected a StateGraph or a compiled StateGraph, got a {kind}{hint}")


def graph_name(compiled: Any | None, fallback: str) -> str:
    """The compiled graph's own name, unless it is LangGraph's default."""
    name = getattr(compiled, "name", None)
    if isinstance(name, str) and name and name != _DEFAULT_GRAPH_NAME:
        return name
    return fallback


def read_graph(
    value: Any,
    *,
    name: str,
    source: str | None,
    scope: str,
    findings: Findings,
    place: ToolNodePlace | None = None,
) -> Graph:
    """The model of a graph. `scope` prefixes subjects of diagnostics inside subgraphs (`sub/`); `place`
    says how the running program finds this graph again (the imported target, node by node)."""
    builder, compiled = graph_parts(value)
    name = graph_name(compiled, name)
    place = place if place is not None else ToolNodePlace(source)
    if compiled is not None:
        agent = recognize_agent(compiled, name, f"agent {scope}{name!r}", findings, where=place)
        if agent is not None:
            # The agent's own bookkeeping keys (remaining steps, middleware jumps) live inside its react
            # playbook, so what they are made of is not reported.
            graph = _agent_graph(builder, agent, _read_channels(builder, scope, Findings()), source)
            return dataclasses.replace(
                graph,
                context_schema=_context_schema(builder, scope, findings),
                takes_context=getattr(builder, "context_schema", None) is not None,
            )
    channels = _read_channels(builder, scope, findings)
    reader = _GraphReader(builder, scope, findings, place)
    nodes = {
        node: reader.node(node, spec) for node, spec in builder.nodes.items() if not spec.is_error_handler
    }
    routers = {
        source_node: tuple(reader.router(source_node, branch) for branch in branches.values())
        for source_node, branches in builder.branches.items()
        if branches
    }
    context_schema = _context_schema(builder, scope, findings)
    graph = Graph(
        name=name,
        source=source,
        channels=channels,
        input_keys=_schema_keys(builder, builder.input_schema),
        output_keys=_schema_keys(builder, builder.output_schema),
        context_schema=context_schema,
        takes_context=getattr(builder, "context_schema", None) is not None,
        nodes=nodes,
        edges=tuple(sorted(builder.edges)),
        joins=tuple(sorted((tuple(sorted(starts)), end) for starts, end in builder.waiting_edges)),
        routers=routers,
        interrupt_before=_interrupt_nodes(compiled, "interrupt_before_nodes", nodes),
        interrupt_after=_interrupt_nodes(compiled, "interrupt_after_nodes", nodes),
    )
    graph = fold_react_loops(graph)
    for node in graph.nodes.values():
        if node.kind is NodeKind.FUNCTION and node.model is not None:
            findings.add(
                MODEL_IN_PYTHON,
                f"node {scope}{node.name!r}",
                f"it calls a chat model inside its Python ({node.model}); the run's model answers the call, "
                "but its prompt and tools stay in Python",
            )
    return graph


def _agent_graph(builder: Any, agent: LlmAgent, channels: tuple[Channel, ...], source: str | None) -> Graph:
    """A whole graph that is one LLM agent: one node, START -> agent -> END."""
    node = Node(name=agent.name, kind=NodeKind.AGENT, agent=agent)
    return Graph(
        name=agent.name,
        source=source,
        channels=channels,
        input_keys=_schema_keys(builder, builder.input_schema),
        output_keys=_schema_keys(builder, builder.output_schema),
        nodes={agent.name: node},
        edges=((START, agent.name), (agent.name, END)),
        joins=(),
        routers={},
        agent=agent,
    )


def _context_schema(builder: Any, scope: str, findings: Findings) -> str | None:
    """The import path of the graph's context schema, which builds a run's context as LangGraph does."""
    schema = getattr(builder, "context_schema", None)
    if schema is None:
        return None
    path, why = import_path(schema)
    if path is None:
        findings.add(
            CONTEXT_SCHEMA,
            f"graph {scope or ''}context schema {getattr(schema, '__name__', schema)!r}",
            f"it cannot be imported by path ({why}); nodes get the context as the dict it is given",
        )
    return path


def _interrupt_nodes(compiled: Any | None, attribute: str, nodes: dict[str, Node]) -> frozenset[str]:
    names = getattr(compiled, attribute, None) or ()
    if names == "*":
        return frozenset(nodes)
    return frozenset(name for name in names if name in nodes)


def _schema_keys(builder: Any, schema: Any) -> tuple[str, ...]:
    from langgraph.managed.base import is_managed_value

    return tuple(key for key, value in builder.schemas[schema].items() if not is_managed_value(value))


# --- channels ------------------------------------------------------------------------------------


def _read_channels(builder: Any, scope: str, findings: Findings) -> tuple[Channel, ...]:
    from langgraph._internal._typing import MISSING
    from langgraph.channels.binop import BinaryOperatorAggregate
    from langgraph.channels.last_value import LastValue

    channels: list[Channel] = []
    for key, channel in builder.channels.items():
        subject = f"state key {scope}{key!r}"
        annotation = getattr(channel, "typ", Any)
        if isinstance(channel, BinaryOperatorAggregate):
            reducer, why = import_path(channel.operator)
            if reducer is None:
                findings.add(
                    REDUCER_WITHOUT_IMPORT_PATH,
                    subject,
                    f"its reducer cannot be imported by path ({why}); updates to it replace the value instead",
                )
            initial = channel.value
            if initial is MISSING:
                channels.append(Channel(key=key, type=type_text(annotation), reducer=reducer))
            elif type(initial) in _JSON_INITIALS and not initial:
                channels.append(
                    Channel(
                        key=key,
                        type=type_text(annotation),
                        reducer=reducer,
                        initial=initial,
                        has_initial=True,
                    )
                )
            else:
                factory, why = import_path(type(initial))
                if factory is None:
                    findings.add(
                        UNSUPPORTED_CHANNEL,
                        subject,
                        f"its starting value, a {type(initial).__name__}, cannot be made by import path ({why}); "
                        "the key starts unset",
                    )
                channels.append(
                    Channel(
                        key=key,
                        type=type_text(annotation),
                        reducer=reducer,
                        factory=factory,
                        has_initial=factory is not None,
                    )
                )
            continue
        if type(channel) is not LastValue:
            findings.add(
                UNSUPPORTED_CHANNEL,
                subject,
                f"it is {_article(type(channel).__name__)} channel; the imported program keeps its last "
                "written value",
            )
        channels.append(Channel(key=key, type=type_text(annotation)))
    for key in builder.managed:
        findings.add(
            MANAGED_VALUE,
            f"state key {scope}{key!r}",
            "it is a managed value LangGraph computes while running (such as remaining steps); the imported "
            "program does not provide it to nodes",
        )
    return tuple(channels)


def _article(word: str) -> str:
    return f"an {word}" if word[:1].lower() in "aeiou" else f"a {word}"


# --- nodes and routers ---------------------------------------------------------------------------


class _GraphReader:
    __slots__ = ("builder", "channel_keys", "findings", "place", "scope")

    def __init__(self, builder: Any, scope: str, findings: Findings, place: ToolNodePlace) -> None:
        self.builder = builder
        self.scope = scope
        self.findings = findings
        self.place = place
        self.channel_keys = frozenset(builder.channels)

    def node(self, name: str, spec: Any) -> Node:
        subject = f"node {self.scope}{name!r}"
        self._policies(name, spec, subject)
        ends = self._command_ends(spec.ends)
        runnable = spec.runnable
        if hasattr(runnable, "builder") and hasattr(runnable, "get_graph"):
            return self._subgraph_node(name, runnable, ends, subject)
        if _is_tool_node(runnable):
            tools = read_tools(runnable, subject, self.findings)
            return Node(
                name=name,
                kind=NodeKind.TOOLS,
                tools=tools,
                tool_node=self.place.locate(name, tools, subject, self.findings),
                messages_key=getattr(runnable, "_messages_key", "messages"),
                command_ends=ends,
            )
        function = runnable_function(runnable)
        if inspect.ismethod(function) and not isinstance(function.__self__, type):
            owner = type(function.__self__).__name__
            reason = f"it is a method of a {owner} object, which has no import path; call it from a module-level function"
            self.findings.add(UNSUPPORTED_NODE, subject, reason)
            return Node(name=name, kind=NodeKind.UNSUPPORTED, command_ends=ends, unsupported_reason=reason)
        if function is None:
            kind = type(runnable).__name__
            reason = f"it is a {kind}, which the importer cannot call by import path; wrap it in a module-level function"
            self.findings.add(UNSUPPORTED_NODE, subject, reason)
            return Node(name=name, kind=NodeKind.UNSUPPORTED, command_ends=ends, unsupported_reason=reason)
        worker = recognize_supervisor_worker(function)
        if worker is not None:
            graph, mode, supervisor = worker
            agent = recognize_agent(
                graph, name, f"agent {self.scope}{name!r}", self.findings, where=self.place.inside(name)
            )
            if agent is not None:
                agent = dataclasses.replace(agent, reply_mode=mode, supervisor=supervisor)
                return Node(name=name, kind=NodeKind.AGENT, agent=agent, command_ends=ends)
        callee = function_callee(function)
        if callee.path is None:
            _, why = import_path(function)
            reason = f"its function cannot be imported by path: {why}"
            self.findings.add(NODE_WITHOUT_IMPORT_PATH, subject, reason)
            return Node(name=name, kind=NodeKind.UNSUPPORTED, command_ends=ends, unsupported_reason=reason)
        # LangGraph's own RunnableCallable read the signature: what it passes, the program passes.
        injected = tuple(sorted(getattr(runnable, "func_accepts", None) or ()))
        model = model_reference(function)
        if not ends and (_is_bare_command(_return_annotation(function)) or writes_command_goto(function)):
            # `-> Command` (or no annotation) names no destinations: its goto may be any node, or END.
            ends = self._command_ends([*self.builder.nodes, END])
        for what in unfollowed_commands(function):
            self.findings.add(
                UNSUPPORTED_COMMAND,
                subject,
                f"it may return {what}, which the imported program does not follow (it stops there with an "
                "error); route with Command(goto=<node names>) or a conditional edge",
            )
        return Node(
            name=name,
            kind=NodeKind.FUNCTION,
            callee=callee,
            view=self.view(spec.input_schema, subject),
            command_ends=ends,
            parallel_goto=bool(ends) and gotos_several(function),
            goto_combinations=goto_combinations(function),
            asks_human=calls_interrupt(function),
            injected=injected,
            reads_context=tuple(reads_run_context(function)),
            model=model,
        )

    def _command_ends(self, ends: Any) -> tuple[str, ...]:
        """A node's Command destinations in the graph's node order, END last: some libraries build
        `destinations` from a set, whose order changes from run to run."""
        if not ends:
            return ()
        order = {name: index for index, name in enumerate(self.builder.nodes)}
        return tuple(
            sorted(set(ends), key=lambda target: (target == END, order.get(target, len(order)), target))
        )

    def _subgraph_node(self, name: str, compiled: Any, ends: tuple[str, ...], subject: str) -> Node:
        inside = self.place.inside(name)
        agent = recognize_agent(
            compiled, graph_name(compiled, name), f"agent {self.scope}{name!r}", self.findings, where=inside
        )
        if agent is not None:
            return Node(name=name, kind=NodeKind.AGENT, agent=agent, command_ends=ends)
        try:
            subgraph = read_graph(
                compiled,
                name=name,
                source=None,
                scope=f"{self.scope}{name}/",
                findings=self.findings,
                place=inside,
            )
        except ImportTargetError as error:
            reason = str(error)
            self.findings.add(UNSUPPORTED_NODE, subject, reason)
            return Node(name=name, kind=NodeKind.UNSUPPORTED, command_ends=ends, unsupported_reason=reason)
        return Node(name=name, kind=NodeKind.SUBGRAPH, subgraph=subgraph, command_ends=ends)

    def _policies(self, name: str, spec: Any, subject: str) -> None:
        if spec.defer:
            self.findings.add(
                DEFERRED_NODE,
                subject,
                "it is deferred until the other branches finish; the imported program runs it where its edges lead",
            )
        kept = [
            what
            for what, value in (
                ("a retry policy", spec.retry_policy),
                ("a cache policy", spec.cache_policy),
                ("a timeout", spec.timeout),
                ("an error handler", spec.error_handler_node),
            )
            if value
        ]
        if kept:
            self.findings.add(
                NODE_POLICY,
                subject,
                f"it has {' and '.join(kept)}, which the imported program does not apply",
            )

    def router(self, source: str, branch: Any) -> Router:
        subject = (
            f"router after {self.scope}{source!r}" if source != START else f"router at {self.scope}START"
        )
        ends = tuple(branch.ends.items()) if branch.ends else None
        function = runnable_function(branch.path)
        schema = branch.input_schema or (
            self.builder.nodes[source].input_schema
            if source in self.builder.nodes
            else self.builder.state_schema
        )
        view = self.view(schema, subject)
        recognized = recognize_state_router(function) if function is not None else None
        if recognized is not None:
            return Router(source=source, callee=None, ends=ends, state_key=recognized)
        if function is None:
            self.findings.add(
                ROUTER_WITHOUT_IMPORT_PATH,
                subject,
                f"it is a {type(branch.path).__name__}, which the importer cannot call; use a module-level function",
            )
            return Router(source=source, callee=None, ends=ends, view=view)
        callee = function_callee(function)
        if callee.path is None:
            _, why = import_path(function)
            self.findings.add(ROUTER_WITHOUT_IMPORT_PATH, subject, f"it cannot be imported by path: {why}")
        returns = _return_annotation(function)
        may_send = _may_send(function, returns)
        several = (
            may_send or (returns is not None and _is_list_of_names(returns)) or returns_several(function)
        )
        return Router(
            source=source,
            callee=callee,
            ends=ends,
            may_send=may_send,
            view=view,
            several=several,
            send_targets=send_targets(function) if may_send else None,
            combinations=None if may_send else return_combinations(function),
        )

    def view(self, schema: Any, subject: str) -> InputView | None:
        """How a node or router with input schema `schema` sees the state (None: the whole dict)."""
        keys = _schema_keys(self.builder, schema)
        model: str | None = None
        if _is_class_state(schema):
            model, why = import_path(schema)
            if model is None:
                self.findings.add(
                    STATE_SCHEMA,
                    subject,
                    f"its state is a {schema.__name__} instance, which cannot be rebuilt by import path ({why}); "
                    "it gets a dict instead",
                )
        if model is None and set(keys) == self.channel_keys:
            return None
        return InputView(keys=None if set(keys) == self.channel_keys else keys, model=model)


def _is_tool_node(runnable: Any) -> bool:
    from langgraph.prebuilt import ToolNode

    return isinstance(runnable, ToolNode)


def _is_class_state(schema: Any) -> bool:
    """Whether LangGraph builds nodes' input as an instance (pydantic model or dataclass)."""
    if not isinstance(schema, type):
        return False
    if dataclasses.is_dataclass(schema):
        return True
    return any(
        base.__name__ == "BaseModel" and base.__module__.startswith("pydantic") for base in schema.__mro__
    )


def function_callee(function: Callable[..., Any]) -> Callee:
    """A Callee for a plain or async function."""
    path, _ = import_path(function)
    try:
        parameters = tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        parameters = ()
    returns = _return_annotation(function)
    doc = inspect.getdoc(function) or ""
    return Callee(
        path=path,
        name=getattr(function, "__name__", "node"),
        parameters=parameters,
        returns=None if returns is None else type_text(returns),
        description=doc.split("\n\n", 1)[0].strip(),
        function=function,
    )


def _return_annotation(function: Any) -> Any:
    try:
        return typing.get_type_hints(function).get("return")
    except Exception:  # unresolvable forward references: the annotation says nothing usable
        return None


def _is_bare_command(annotation: Any) -> bool:
    """Whether a return annotation is `Command` itself, without `Literal[...]` destinations."""
    from langgraph.types import Command

    return annotation is Command


def _is_list_of_names(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return any(_is_list_of_names(arg) for arg in typing.get_args(annotation))
    from collections.abc import Sequence

    if origin in (list, tuple, set, Sequence):
        return not _mentions_send(annotation)
    return False


def _mentions_send(annotation: Any) -> bool:
    from langgraph.types import Send

    if annotation is Send:
        return True
    return any(_mentions_send(arg) for arg in typing.get_args(annotation))


def _may_send(function: Any, returns: Any) -> bool:
    """Whether a router may return Send packets: its return type says so, or its code uses Send."""
    if returns is not None and _mentions_send(returns):
        return True
    from langgraph.types import Send

    return _uses_global(function, "Send", Send)


def calls_interrupt(function: Any) -> bool:
    """Whether a node function calls LangGraph's `interrupt()`."""
    from langgraph.types import interrupt

    return _uses_global(function, "interrupt", interrupt)


def _uses_global(function: Any, name: str, value: Any) -> bool:
    code = getattr(function, "__code__", None)
    if code is None or not any(name in names for names in _code_names(code)):
        return False
    namespace = getattr(function, "__globals__", {})
    return namespace.get(name) is value or closure_vars(function).get(name) is value or name not in namespace


def _code_names(code: CodeType) -> Iterator[tuple[str, ...]]:
    """The global and attribute names of a code object and the code nested in it (comprehensions)."""
    yield code.co_names
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            yield from _code_names(constant)


__all__ = ["END", "calls_interrupt", "function_callee", "graph_name", "graph_parts", "read_graph"]

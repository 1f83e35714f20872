"""What LangGraph gives a node, given to the nodes of an imported graph: `config`, `runtime`, `store`, `writer`.

An imported graph that needs them keeps one `$graph_run` (`GraphRun`, made at START by the helper
`graph_run`): the run's context (`pal run --context`, coerced to the graph's `context_schema` as LangGraph
does), the store (the compiled graph's own, else an in-memory store kept for the process), and the thread
id (the PAL thread the run is recorded in). `run_node` runs a node function with them exactly as LangGraph
would: through LangGraph's own `RunnableCallable` (which decides, from the function's signature, which of
`config`, `runtime`, `store`, `writer`, `previous` it takes), with LangGraph's config in context (so
`get_config()`, `get_runtime()`, `get_store()` and `get_stream_writer()` work inside), a sync function in a
worker thread as `graph.ainvoke` runs it, and every chat model the node calls served by the run's model
(importers.langgraph.served_model). What the node writes to its stream writer is said to the user.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import typing
import uuid
from collections.abc import Mapping
from typing import Any

from importers.langgraph import pal_run
from pal_core.errors import PalError
from runtime.errors import ProgramError, RunError
from runtime.inputs import InputError
from runtime.module_path import resolve

_STORES: dict[str, Any] = {}
"""In-memory stores of graphs compiled without one, by graph import path, kept for the process (as a
LangGraph server keeps its store across runs)."""
_STORES_LOCK = threading.Lock()


class NodeRunError(PalError):
    """A node's function cannot be found again at run time (its import path no longer resolves)."""


class NodeFailed(RunError):
    """A node (or a tool) raised while it ran, its served model's failure included (a run failure naming
    the node; the exception is the `__cause__`)."""


def failed(what: str, error: BaseException) -> BaseException:
    """What a node's or tool's exception becomes: PAL's own errors as they are, any other as NodeFailed."""
    if isinstance(error, (RunError, ProgramError)):
        return error
    return NodeFailed(f"{what} raised {type(error).__name__}: {error}")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class GraphRun:
    """What every node of one run of an imported graph shares, as a LangGraph run's `Runtime` does."""

    graph: str | None
    """The import path of the compiled graph (`module:attr`), when the program records it."""
    context: Any
    """The run's context, as the graph's `context_schema` builds it (None without context)."""
    store: Any
    """The LangGraph `BaseStore` nodes get as `store` and `runtime.store`."""
    thread_id: str
    """The thread id nodes see in `config["configurable"]["thread_id"]`."""
    configurable: Mapping[str, Any]
    """Further `configurable` keys: the context's fields, for graphs that read settings from there."""


def graph_run(
    context: Any = None, graph: str | None = None, context_schema: str | None = None, parent: Any = None
) -> GraphRun:
    """The `GraphRun` of one run of an imported graph: `context` (`pal run --context`, the `context`
    argument of an API or MCP call) built as `context_schema` (an import path) says, the graph's store,
    the thread id. A subgraph is given its parent's (`parent`) and shares it, as in LangGraph.

    A context missing a field the schema requires is an InputError naming it."""
    if isinstance(parent, GraphRun):
        return parent
    schema = _resolve(context_schema, "context_schema") if context_schema else None
    built = coerce_context(schema, context)
    running = pal_run.execution_or_none()
    return GraphRun(
        graph=graph,
        context=built,
        store=graph_store(graph),
        thread_id=pal_run.thread_id(running),
        configurable=dict(context) if isinstance(context, Mapping) else {},
    )


def default_graph_run() -> GraphRun:
    """The run of a node called without one (a program imported before `$graph_run` existed)."""
    return graph_run()


def coerce_context(schema: Any, context: Any) -> Any:
    """`context` as LangGraph's `_coerce_context` builds it for `schema` (a dataclass or pydantic model is
    made from a dict; a TypedDict stays a dict), its required fields checked. No context is `{}`, as a
    LangGraph server gives a run without one: a schema whose fields all have defaults is built from
    them. Without a schema the context is passed as it is."""
    if schema is None:
        return context
    name = getattr(schema, "__name__", str(schema))
    value = {} if context is None else context
    if not isinstance(value, Mapping):
        return value  # an object already (a Python caller's Context(...)): LangGraph passes it as is
    if dataclasses.is_dataclass(schema):
        fields = {field.name: field for field in dataclasses.fields(schema) if field.init}
        required = [
            key
            for key, field in fields.items()
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        ]
        _check_context_keys(name, value, fields, required)
        try:
            return schema(**value)
        except (TypeError, ValueError) as error:
            raise InputError(f"context: {name}({_shown(value)}) failed: {error}") from None
    if _is_pydantic(schema):
        from pydantic import ValidationError

        try:
            return schema.model_validate(dict(value))
        except ValidationError as error:
            problems = tuple(
                f"{'.'.join(str(part) for part in item['loc']) or name}: {item['msg']}"
                for item in error.errors()
            )
            raise InputError(
                f"context: the graph's context schema {name} refuses it: {'; '.join(problems)}{_HINT}",
                problems,
            ) from None
    if typing.is_typeddict(schema):
        keys = typing.get_type_hints(schema)
        _check_context_keys(name, value, keys, sorted(getattr(schema, "__required_keys__", ())))
        return dict(value)
    return value


_HINT = "; give it with pal run --context '{\"key\": value}' or the context argument of the call"


def _check_context_keys(
    name: str, value: Mapping[str, Any], known: Mapping[str, Any], required: list[str]
) -> None:
    missing = [key for key in required if key not in value]
    unknown = sorted(key for key in value if key not in known)
    problems = [f"{key} is required" for key in missing] + [
        f"{key} is not a field of {name}" for key in unknown
    ]
    if problems:
        raise InputError(
            f"context: {'; '.join(problems)} (the graph's context schema is {name}){_HINT}", tuple(problems)
        )


def _shown(value: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={item!r}" for key, item in value.items())


def _is_pydantic(schema: Any) -> bool:
    return isinstance(schema, type) and any(
        base.__name__ == "BaseModel" and base.__module__.startswith("pydantic") for base in schema.__mro__
    )


def graph_store(graph: str | None) -> Any:
    """The store nodes get: the compiled graph's own when it was compiled with one, else an in-memory
    store kept for the process (one per graph)."""
    if graph:
        compiled = _resolve(graph, "graph")
        store = getattr(compiled, "store", None)
        if store is not None:
            return store
    from langgraph.store.memory import InMemoryStore

    key = graph or ""
    with _STORES_LOCK:
        store = _STORES.get(key)
        if store is None:
            store = _STORES[key] = InMemoryStore()
    return store


# --- a node's config and runtime -----------------------------------------------------------------


class _Answers:
    """The parts of LangGraph's task scratchpad that `interrupt()` reads: the answers so far, in order."""

    __slots__ = ("_asked", "resume")

    def __init__(self, answers: list[Any]) -> None:
        self.resume = list(answers)
        self._asked = 0

    def interrupt_counter(self) -> int:
        index = self._asked
        self._asked += 1
        return index

    def get_null_resume(self, consume: bool = False) -> None:
        return None


class UserStream:
    """A node's stream writer: each chunk is said to the user by the running agent (text as it is, other
    values as JSON), in the order written, from the node's thread or from the event loop."""

    __slots__ = ("_loop", "_pending", "_running")

    def __init__(self, running: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._running = running
        self._loop = loop
        self._pending: list[asyncio.Future[None]] = []

    def __call__(self, chunk: Any) -> None:
        if self._running is None:
            return  # outside a PAL run (a helper called directly): nobody to say it to
        text = chunk if isinstance(chunk, str) else json.dumps(chunk, ensure_ascii=False, default=str)
        saying = pal_run.say_to_user(self._running, text)
        if _on_loop(self._loop):
            self._pending.append(self._loop.create_task(saying))
        else:  # a sync node in its worker thread: the loop says it; the node waits, as LangGraph's does
            asyncio.run_coroutine_threadsafe(saying, self._loop).result()

    async def flush(self) -> None:
        """Wait until everything written from the event loop has been said."""
        pending, self._pending = self._pending, []
        for task in pending:
            await task


def _on_loop(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


def node_config(run: GraphRun, node: str, *, writer: Any, answers: list[Any] | None = None) -> dict[str, Any]:
    """The RunnableConfig a LangGraph task of `node` gets: the thread id and configurable keys, LangGraph's
    node metadata, and (under LangGraph's own keys) the Runtime and the scratchpad `interrupt()` reads."""
    from langgraph._internal._constants import (
        CONF,
        CONFIG_KEY_CHECKPOINT_NS,
        CONFIG_KEY_RUNTIME,
        CONFIG_KEY_SCRATCHPAD,
        CONFIG_KEY_SEND,
    )
    from langgraph.runtime import ExecutionInfo, Runtime

    task_id = str(uuid.uuid4())
    namespace = f"{node}:{task_id}"
    runtime = Runtime(
        context=run.context,
        store=run.store,
        stream_writer=writer,
        execution_info=ExecutionInfo(
            checkpoint_id="", checkpoint_ns=namespace, task_id=task_id, thread_id=run.thread_id
        ),
    )
    configurable = {
        **run.configurable,
        "thread_id": run.thread_id,
        CONFIG_KEY_RUNTIME: runtime,
        CONFIG_KEY_SCRATCHPAD: _Answers(answers or []),
        CONFIG_KEY_SEND: _ignore_writes,
        CONFIG_KEY_CHECKPOINT_NS: namespace,
    }
    return {
        "tags": [],
        "metadata": {
            "thread_id": run.thread_id,
            "langgraph_node": node,
            "langgraph_checkpoint_ns": namespace,
        },
        "callbacks": None,
        "recursion_limit": 25,
        CONF: configurable,
    }


def _ignore_writes(writes: Any) -> None:
    """Writes a node makes through LangGraph's send channel: its update comes back as its result instead."""


# --- running a node ------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Interrupted:
    """What `run_node` returns when the node asked a question (`interrupt()`) that has no answer yet."""

    value: Any
    """The value the node passed to `interrupt()`: the question for the human."""
    id: str
    """LangGraph's id of the interrupt."""


async def run_node(
    node: str, function: str, state: Any, answers: list | None = None, graph_run: Any = None
) -> Any:
    """Run the node function at `function` (an import path) on `state` as LangGraph runs node `node`: the
    `config`, `runtime`, `store` and `writer` its signature asks for, LangGraph's config in context, a sync
    function in a worker thread, its chat models served by the run's model. With `answers`, its
    `interrupt()` calls are answered from them in order, and an unanswered one returns `Interrupted`."""
    from langchain_core.runnables.config import var_child_runnable_config
    from langgraph._internal._runnable import coerce_to_runnable
    from langgraph.errors import GraphInterrupt

    from importers.langgraph.served_model import serving

    target = _resolve(function, f"node {node!r}")
    run = graph_run if isinstance(graph_run, GraphRun) else default_graph_run()
    running = pal_run.execution_or_none()
    writer = UserStream(running, asyncio.get_running_loop())
    config = node_config(run, node, writer=writer, answers=answers)
    runnable = coerce_to_runnable(target, name=node, trace=False)
    token = var_child_runnable_config.set(config)
    try:
        with serving(running, f"node {node!r}"):
            result = await runnable.ainvoke(state, config)
    except GraphInterrupt as interrupt:
        raised = interrupt.args[0][0] if interrupt.args and interrupt.args[0] else None
        if answers is None or raised is None:
            raise NodeRunError(
                f"node {node!r} called interrupt() where the import did not expect it to ask the user"
            ) from interrupt
        return Interrupted(value=raised.value, id=raised.id)
    except Exception as error:
        raise failed(f"node {node!r}", error) from error
    finally:
        var_child_runnable_config.reset(token)
        await writer.flush()
    return result


def _resolve(path: Any, what: str) -> Any:
    if not isinstance(path, str) or ":" not in path:
        raise NodeRunError(f"{what}: {path!r} is not an import path such as 'myapp.graph:node'")
    try:
        return resolve(path)
    except (ImportError, AttributeError) as error:
        raise NodeRunError(f"{what}: cannot import {path!r}: {error}") from error


__all__ = [
    "GraphRun",
    "Interrupted",
    "NodeFailed",
    "NodeRunError",
    "UserStream",
    "coerce_context",
    "default_graph_run",
    "failed",
    "graph_run",
    "graph_store",
    "node_config",
    "run_node",
]

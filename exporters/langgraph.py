"""PAL playbooks in LangGraph: a playbook as a graph node, and as a LangChain tool.

    from exporters.langgraph import as_langchain_tool, as_langgraph_node

    node = as_langgraph_node("triage.pal", playbook="Classify", inputs={"text": "message"}, output_key="label")
    builder.add_node("classify", node)               # a StateGraph node, sync (invoke) and async (ainvoke)

    tool = as_langchain_tool("calc.pal", playbook="Add")
    agent = create_react_agent(model, [tool])        # a BaseTool: name, description, argument schema

Both run the playbook through a `runtime.embedding.EmbeddedPlaybook`: the program is loaded once, one run
is started per event loop on first use, and every call gets fresh variables. Async calls (`ainvoke`) run
on the caller's loop. Sync calls (`invoke`) run on an event loop the calling thread keeps for them, so
they work from plain code and from LangGraph's worker threads; from inside a running event loop they run
in a runner thread while the calling loop waits.

A node reads its arguments from the graph state (`inputs`: parameter -> state key, `"*"` for the whole
state), checks them against the playbook's parameter types, and writes the result back (`output_key`, or
the result itself as the update when it is a mapping or a `Command`). Framework packages (langchain-core)
are imported when a node or tool is made, never on import of this module.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exporters import Exporter, ExportError, FrameworkNotInstalled, embedded_playbook
from pal_core.errors import PalError
from pal_core.ir import Playbook, Program
from runtime.embedding import CallOutcome, EmbeddedPlaybook
from runtime.errors import CallError, PlaybookFailed
from runtime.inputs import InputError
from runtime.schema import input_schema, json_schema_for_type

if TYPE_CHECKING:
    from runtime.humans import HumanInput
    from runtime.models.base import Model
    from runtime.program_run import RunLimits
    from runtime.store import Store
    from runtime.trace import Tracer

__all__ = [
    "EXPORTER",
    "INSTALL_HINT",
    "WHOLE_STATE",
    "PalNode",
    "PalTool",
    "as_langchain_tool",
    "as_langgraph_node",
]

INSTALL_HINT = "pip install 'pal-bridge[langgraph]'"
"""What installs LangGraph and langchain-core at the versions this exporter is tested with."""

WHOLE_STATE = "*"
"""In `inputs`, the state key that stands for the whole state (as a dict)."""

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_MISSING = object()


def _require_langchain_core() -> None:
    try:
        import langchain_core.runnables
        import langchain_core.tools  # noqa: F401
    except ImportError as error:
        raise FrameworkNotInstalled(
            f"exporting to LangGraph needs langchain-core (and langgraph to run the graph): {INSTALL_HINT}"
        ) from error


# --- nodes ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeBinding:
    """How a node maps graph state to a playbook's arguments and its result back to a state update."""

    node: str
    """The node's name, for messages."""
    playbook: Playbook
    """The playbook the node runs."""
    qualified_name: str
    """`Agent.Playbook`, for messages."""
    inputs: tuple[tuple[str, str], ...]
    """(parameter, state key) pairs; the key `*` is the whole state."""
    by_name: bool
    """The inputs were not given: each parameter is read from the state key of its name."""
    whole_state_parameter: str | None
    """With `by_name`, the lone dict parameter that takes the whole state when the state has no key of
    its name (as `pal run --input` binds a JSON object); None otherwise."""
    required: tuple[str, ...]
    """The parameters without a default."""
    output_key: str | None
    """The state key the result is written to; None: the result is the update itself."""
    user_messages_key: str | None
    """The state key that receives what the playbook said to the user (a list of str); None: dropped."""

    @classmethod
    def build(
        cls,
        *,
        node: str,
        embedded: EmbeddedPlaybook,
        inputs: Mapping[str, str] | Sequence[str] | None,
        output_key: str | None,
        user_messages_key: str | None,
    ) -> NodeBinding:
        playbook = embedded.playbook
        where = f"node {node!r} ({embedded.qualified_name})"
        parameters = {parameter.name: parameter for parameter in playbook.parameters}
        listed = ", ".join(f"${name}" for name in parameters) or "none"
        pairs: list[tuple[str, str]] = []
        if inputs is not None:
            if isinstance(inputs, str):
                raise ExportError(
                    f"{where}: inputs must map parameters to state keys or list names, not the string "
                    f"{inputs!r}; write [{inputs!r}] or {{'parameter': {inputs!r}}}"
                )
            items = list(inputs.items()) if isinstance(inputs, Mapping) else [(name, name) for name in inputs]
            for parameter, key in items:
                name = parameter.lstrip("$") if isinstance(parameter, str) else parameter
                if name not in parameters:
                    raise ExportError(
                        f"{where}: inputs names {parameter!r}, which is not a parameter ({listed})"
                    )
                if not isinstance(key, str) or not key:
                    raise ExportError(
                        f"{where}: the state key of ${name} must be a non-empty string, got {key!r}"
                    )
                if key == WHOLE_STATE and _json_type(parameters[name].type) not in (None, "object"):
                    raise ExportError(
                        f"{where}: ${name} is {parameters[name].type}, so it cannot take the whole state "
                        f"({WHOLE_STATE!r}); the whole state is a dict"
                    )
                pairs.append((name, key))
            bound = {name for name, _ in pairs}
            unbound = [p.name for p in playbook.parameters if p.name not in bound and p.default is None]
            if unbound:
                raise ExportError(
                    f"{where}: inputs gives no state key for {', '.join('$' + n for n in unbound)}, "
                    "which have no default"
                )
        for label, key in (("output_key", output_key), ("user_messages_key", user_messages_key)):
            if key is not None and (not isinstance(key, str) or not key or key == WHOLE_STATE):
                raise ExportError(f"{where}: {label} must be a state key name, got {key!r}")
        if output_key is not None and output_key == user_messages_key:
            raise ExportError(f"{where}: output_key and user_messages_key are both {output_key!r}")
        by_name = inputs is None
        if by_name:
            pairs = [(name, name) for name in parameters]
        lone = playbook.parameters[0] if len(playbook.parameters) == 1 else None
        return cls(
            node=node,
            playbook=playbook,
            qualified_name=embedded.qualified_name,
            inputs=tuple(pairs),
            by_name=by_name,
            whole_state_parameter=(
                lone.name
                if by_name and lone is not None and _json_type(lone.type) in (None, "object")
                else None
            ),
            required=tuple(p.name for p in playbook.parameters if p.default is None),
            output_key=output_key,
            user_messages_key=user_messages_key,
        )

    # --- state -> arguments ------------------------------------------------------------------------

    def arguments(self, state: Any) -> dict[str, Any]:
        """The playbook's arguments from a graph state (a dict, a pydantic model or a dataclass);
        ExportError naming the node, the parameters and the state keys when they do not fit."""
        is_mapping = isinstance(state, Mapping)
        arguments: dict[str, Any] = {}
        for parameter, key in self.inputs:
            if key == WHOLE_STATE:
                arguments[parameter] = self._whole_state(state)
                continue
            value = state.get(key, _MISSING) if is_mapping else getattr(state, key, _MISSING)
            if value is not _MISSING:
                arguments[parameter] = value
        missing = [name for name in self.required if name not in arguments]
        if missing:
            if self.whole_state_parameter is not None:
                arguments = {self.whole_state_parameter: self._whole_state(state)}
            else:
                raise ExportError(self._missing_message(state, missing))
        return arguments  # checked at the embedded playbook's door (runtime.session.PlaybookCalls)

    def refused(self, error: InputError) -> ExportError:
        """The node's error for arguments the door refused: the problems, and where each came from."""
        return ExportError(
            f"node {self.node!r} cannot run {self.qualified_name} on this state: "
            f"{'; '.join(error.problems)}{self._sources()}"
        )

    def _whole_state(self, state: Any) -> dict[str, Any]:
        try:
            return _whole_state(state)
        except ExportError as error:
            raise ExportError(f"node {self.node!r} ({self.qualified_name}): {error}") from None

    def _missing_message(self, state: Any, missing: list[str]) -> str:
        keys = dict(self.inputs)
        if self.by_name:
            names = ", ".join(repr(name) for name in missing)
            what = f"{names} (parameters are read from the state keys of their names)"
            hint = ". Map them with inputs={'parameter': 'state key'}"
        else:
            what = ", ".join(f"{keys[name]!r} (for ${name})" for name in missing)
            hint = ""
        return (
            f"node {self.node!r} ({self.qualified_name}): the state has no value for {what}; "
            f"state keys with values: {_present_keys(state)}{hint}"
        )

    def _sources(self) -> str:
        renamed = [(p, k) for p, k in self.inputs if p != k]
        if not renamed:
            return ""
        return " (" + ", ".join(f"{p} is state key {k!r}" for p, k in renamed) + ")"

    # --- result -> update --------------------------------------------------------------------------

    def update(self, outcome: CallOutcome) -> Any:
        """The state update of one call: `{output_key: value}`, or the value itself (a mapping, a
        `Command`, or None for no update), plus what was said to the user under `user_messages_key`."""
        value = outcome.value
        if self.output_key is not None:
            update: dict[str, Any] = {self.output_key: value}
        elif isinstance(value, Mapping):
            update = dict(value)
        elif value is None:
            update = {}
        elif _is_command(value):
            if self.user_messages_key is not None:
                raise ExportError(
                    f"node {self.node!r}: {self.qualified_name} returned a Command, which cannot also carry "
                    f"user_messages_key {self.user_messages_key!r}; put the messages in the Command's update"
                )
            return value
        else:
            raise ExportError(
                f"node {self.node!r}: {self.qualified_name} returned {type(value).__name__} {_preview(value)}, "
                "not a dict of state updates; pass output_key='<state key>' to store the result under one key"
            )
        if self.user_messages_key is not None:
            update[self.user_messages_key] = list(outcome.said_to_user)
        return update


def _whole_state(state: Any) -> dict[str, Any]:
    """The state as a dict of its keys (shallow: values are passed as they are)."""
    if isinstance(state, Mapping):
        return dict(state)
    fields = getattr(type(state), "model_fields", None)  # a pydantic model
    if isinstance(fields, Mapping):
        return {name: getattr(state, name) for name in fields}
    if dataclasses.is_dataclass(state) and not isinstance(state, type):
        return {field.name: getattr(state, field.name) for field in dataclasses.fields(state)}
    raise ExportError(
        f"the graph state is a {type(state).__name__}; the whole state can be passed only from a dict, "
        "a pydantic model or a dataclass"
    )


def _present_keys(state: Any) -> str:
    try:
        keys = [key for key, value in _whole_state(state).items() if value is not None]
    except ExportError:
        return "unknown"
    return ", ".join(repr(key) for key in keys) or "none"


def _json_type(pal_type: str | None) -> str | None:
    kind = json_schema_for_type(pal_type).get("type")
    return kind if isinstance(kind, str) else None


def _is_command(value: Any) -> bool:
    try:
        from langgraph.types import Command
    except ImportError:
        return False
    return isinstance(value, Command)


def _preview(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def as_langgraph_node(
    program: Program | str | Path | EmbeddedPlaybook,
    *,
    agent: str | None = None,
    playbook: str | None = None,
    inputs: Mapping[str, str] | Sequence[str] | None = None,
    output_key: str | None = None,
    user_messages_key: str | None = None,
    name: str | None = None,
    model: Model | str | None = None,
    limits: RunLimits | None = None,
    human: HumanInput | None = None,
    tracer: Tracer | None = None,
    store: Store | str | None = None,
    thread: str | None = None,
) -> PalNode:
    """A LangGraph node that runs a playbook on values of the graph state and writes its result back.

    - `program`: a Program, a program file, or an EmbeddedPlaybook to share with other nodes or tools.
    - `agent`, `playbook`: which playbook (`Playbook` or `Agent.Playbook`; default: the entry playbook).
    - `inputs`: `{parameter: state key}` (`"*"`: the whole state as a dict) or a list of names that are
      both; default: each parameter from the state key of its name, and a lone dict parameter the state
      has no key for takes the whole state. Values are checked against the parameter types.
    - `output_key`: the state key the result goes to; default: the result is the update (a dict of
      state keys, a `Command`, or None for no update).
    - `user_messages_key`: the state key for what the playbook said to the user (a list of str).
    - `name`: the node name (default: the playbook's name); `model`, `limits` (per call), `human`,
      `tracer`: as for `EmbeddedPlaybook`.
    - `store` (a URL or a Store): record every call as a thread, durable, whose agents keep their state
      across calls: the graph's `thread_id` (`config={"configurable": {"thread_id": ...}}`), as
      `<thread_id>:<node name>`, or `thread` for one thread of the node's own; without either, a new
      thread per call.

    Raises ExportError for a playbook or options that cannot work, FrameworkNotInstalled without
    langchain-core. The node's `invoke` and `ainvoke` raise ExportError for a state the playbook cannot
    take, and the runtime's errors (CallError, RunError, ModelError) for a call that fails.
    """
    _require_langchain_core()
    embedded = embedded_playbook(
        program,
        agent=agent,
        playbook=playbook,
        model=model,
        limits=limits,
        human=human,
        tracer=tracer,
        store=store,
    )
    node_name = name or embedded.playbook.name
    binding = NodeBinding.build(
        node=node_name,
        embedded=embedded,
        inputs=inputs,
        output_key=output_key,
        user_messages_key=user_messages_key,
    )
    node_class: Any = _classes()[0]
    node: PalNode = node_class(embedded=embedded, binding=binding, name=node_name, thread=thread)
    return node


# --- tools ---------------------------------------------------------------------------------------------


def as_langchain_tool(
    program: Program | str | Path | EmbeddedPlaybook,
    *,
    agent: str | None = None,
    playbook: str | None = None,
    name: str | None = None,
    description: str | None = None,
    model: Model | str | None = None,
    limits: RunLimits | None = None,
    human: HumanInput | None = None,
    tracer: Tracer | None = None,
    store: Store | str | None = None,
    thread: str | None = None,
) -> PalTool:
    """A LangChain `BaseTool` that calls a playbook: named after it, described by its description, with
    its parameters as the JSON Schema of the arguments (checked before every call).

    The tool's result is the playbook's return value; a playbook that returns nothing answers with what it
    said to the user (lines joined). Wrong arguments and playbook failures (CallError, PlaybookFailed)
    raise `ToolException`, so `handle_tool_error` decides whether the model sees them; other run failures
    propagate. Options as for `as_langgraph_node` (with a store, calls go to `thread`, else each to a new
    thread).
    """
    _require_langchain_core()
    embedded = embedded_playbook(
        program,
        agent=agent,
        playbook=playbook,
        model=model,
        limits=limits,
        human=human,
        tracer=tracer,
        store=store,
    )
    tool_name = name or embedded.playbook.name
    if not _TOOL_NAME.fullmatch(tool_name):
        raise ExportError(
            f"tool name {tool_name!r} ({embedded.qualified_name}) must be 1-64 letters, digits, '_' or '-' "
            "(what chat models accept); pass name='...'"
        )
    text = (
        description
        or embedded.playbook.description.strip()
        or (f"Runs the PAL playbook {embedded.qualified_name}.")
    )
    tool_class: Any = _classes()[1]
    tool: PalTool = tool_class(
        name=tool_name,
        description=text,
        args_schema=input_schema(embedded.playbook),
        embedded=embedded,
        thread=thread,
    )
    return tool


def _tool_refused(tool_name: str, error: InputError) -> Exception:
    from langchain_core.tools import ToolException

    return ToolException(f"tool {tool_name!r}: {'; '.join(error.problems)}")


def _tool_result(outcome: CallOutcome) -> Any:
    if outcome.value is None and outcome.said_to_user:
        return "\n".join(outcome.said_to_user)
    return outcome.value


def _tool_failure(tool_name: str, error: PalError) -> Exception:
    from langchain_core.tools import ToolException

    failure = ToolException(f"tool {tool_name!r}: {error}")
    failure.__cause__ = error
    return failure


# --- the framework classes, made on first use ----------------------------------------------------------


@functools.cache
def _classes() -> tuple[type, type]:
    """PalNode and PalTool, defined when langchain-core is first needed (so importing this module never
    imports it)."""
    _require_langchain_core()
    from langchain_core.runnables import Runnable, RunnableConfig
    from langchain_core.tools import BaseTool
    from pydantic import ConfigDict, SkipValidation

    class PalNode(Runnable[Any, Any]):
        """A LangGraph node running a PAL playbook (made by `as_langgraph_node`)."""

        def __init__(
            self, *, embedded: EmbeddedPlaybook, binding: NodeBinding, name: str, thread: str | None = None
        ) -> None:
            self.embedded = embedded
            """The playbook and its runs."""
            self.binding = binding
            """How state becomes arguments and the result an update."""
            self.name = name
            self.thread = thread
            """With a store: the thread of every call (None: the graph's thread_id, else a new thread)."""

        def thread_of(self, config: RunnableConfig | None) -> str | None:
            """The PAL thread of a call: the node's own, else `<graph thread_id>:<node>` (with a store)."""
            if self.embedded.store is None:
                return None
            if self.thread is not None:
                return self.thread
            graph_thread = ((config or {}).get("configurable") or {}).get("thread_id")
            return None if graph_thread is None else f"{graph_thread}:{self.name}"

        def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
            arguments = self.binding.arguments(input)
            try:
                outcome = self.embedded.call_sync(arguments, thread=self.thread_of(config))
            except InputError as error:
                raise self.binding.refused(error) from None
            return self.binding.update(outcome)

        async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
            arguments = self.binding.arguments(input)
            try:
                outcome = await self.embedded.call(arguments, thread=self.thread_of(config))
            except InputError as error:
                raise self.binding.refused(error) from None
            return self.binding.update(outcome)

        def close(self) -> None:
            """Stop the sync runner (see `EmbeddedPlaybook.close`)."""
            self.embedded.close()

        async def aclose(self) -> None:
            """Shut down the run on the running loop and the sync runner (see `EmbeddedPlaybook.aclose`)."""
            await self.embedded.aclose()

        def __repr__(self) -> str:
            return f"PalNode({self.name!r}, {self.embedded.qualified_name})"

    class PalTool(BaseTool):
        """A LangChain tool calling a PAL playbook (made by `as_langchain_tool`)."""

        model_config = ConfigDict(arbitrary_types_allowed=True)
        embedded: SkipValidation[EmbeddedPlaybook]
        """The playbook and its runs."""
        thread: str | None = None
        """With a store: the thread of every call (None: a new thread per call)."""

        def _run(self, **arguments: Any) -> Any:
            try:
                outcome = self.embedded.call_sync(arguments, thread=self.thread)
            except InputError as error:  # checked at the embedded playbook's door
                raise _tool_refused(self.name, error) from None
            except (CallError, PlaybookFailed) as error:
                raise _tool_failure(self.name, error) from error
            return _tool_result(outcome)

        async def _arun(self, **arguments: Any) -> Any:
            try:
                outcome = await self.embedded.call(arguments, thread=self.thread)
            except InputError as error:  # checked at the embedded playbook's door
                raise _tool_refused(self.name, error) from None
            except (CallError, PlaybookFailed) as error:
                raise _tool_failure(self.name, error) from error
            return _tool_result(outcome)

        def close(self) -> None:
            """Stop the sync runner (see `EmbeddedPlaybook.close`)."""
            self.embedded.close()

        async def aclose(self) -> None:
            """Shut down the run on the running loop and the sync runner (see `EmbeddedPlaybook.aclose`)."""
            await self.embedded.aclose()

    for made in (PalNode, PalTool):
        made.__module__ = __name__
        made.__qualname__ = made.__name__
    return PalNode, PalTool


def __getattr__(name: str) -> Any:
    # `from exporters.langgraph import PalNode` (isinstance checks, type hints) makes the classes then.
    if name == "PalNode":
        return _classes()[0]
    if name == "PalTool":
        return _classes()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    PalNode = Any
    PalTool = Any


EXPORTER = Exporter(
    framework="langgraph",
    makers={"node": as_langgraph_node, "tool": as_langchain_tool},
    install_hint=INSTALL_HINT,
)
"""The LangGraph exporter, as `exporters.get_exporter("langgraph")` returns it."""

"""PAL playbooks in Google ADK: a playbook as an ADK agent, and as an ADK tool.

    from exporters.adk import as_adk_agent, as_adk_tool

    scorer = as_adk_agent("scorer.pal", playbook="Score", output_key="score")   # a BaseAgent
    pipeline = SequentialAgent(name="pipeline", sub_agents=[prepare, scorer])  # or LoopAgent, Workflow,
    root = LlmAgent(name="desk", sub_agents=[scorer], ...)                      # a transfer target

    tool = as_adk_tool("calc.pal", playbook="Add")                              # a BaseTool
    agent = LlmAgent(name="calc", tools=[tool], ...)

Both run the playbook through `runtime.embedding.EmbeddedPlaybook`, the one embedding path every exporter
uses: the program is loaded once, one run is kept per event loop, and every call gets fresh variables.

An agent reads the playbook's arguments from the session state (and the user's message), runs it, and
yields one event: the state delta (`output_key`, or the result itself when it is a dict), the reply text
(what the playbook said to the user, or its text result) and, when asked, `escalate`. It works under a
Runner, as a sub-agent an LLM agent transfers to, inside Sequential / Loop / Parallel agents and as a
Workflow node (an ADK agent is a node). A tool declares the playbook's parameters as its JSON Schema and
returns its result to the model. ADK is imported when the first agent or tool is made.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exporters import Exporter, ExportError, FrameworkNotInstalled, embedded_playbook
from pal_core.ir import Program
from runtime.embedding import CallOutcome, EmbeddedPlaybook
from runtime.errors import CallError, PlaybookFailed
from runtime.expressions import coerce
from runtime.schema import JsonSchema, input_schema, json_schema_for_type, schema_problems

if TYPE_CHECKING:
    from runtime.humans import HumanInput
    from runtime.models.base import Model
    from runtime.program_run import RunLimits
    from runtime.store import Store
    from runtime.trace import Tracer

__all__ = [
    "EXPORTER",
    "INSTALL_HINT",
    "USER_MESSAGE",
    "WHOLE_STATE",
    "AgentBinding",
    "PalAdkAgent",
    "PalAdkTool",
    "as_adk_agent",
    "as_adk_tool",
]

INSTALL_HINT = "pip install 'pal-bridge[adk]'"
"""What installs Google ADK at the version this exporter is tested with."""

WHOLE_STATE = "*"
"""In `inputs`, the source that stands for the whole session state (as a dict)."""
USER_MESSAGE = "@message"
"""In `inputs`, the source that stands for the text of the user's message."""


def _require_adk() -> None:
    try:
        import google.adk.agents
        import google.adk.tools  # noqa: F401
    except ImportError as error:
        raise FrameworkNotInstalled(f"exporting to Google ADK needs google-adk: {INSTALL_HINT}") from error


def _json_type(pal_type: str | None) -> str | None:
    kind = json_schema_for_type(pal_type).get("type")
    return kind if isinstance(kind, str) else None


def _is_imported_adk_entry(embedded: EmbeddedPlaybook) -> bool:
    """Whether the playbook is the `Invoke` of a program `pal import adk` wrote (it returns a session)."""
    details = embedded.agent.metadata.extra.get("adk") if embedded.agent.metadata.extra else None
    return embedded.playbook.name == "Invoke" and isinstance(details, Mapping) and "source" in details


# --- agents --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentBinding:
    """How an agent maps the session to a playbook's arguments and its result to an event."""

    name: str
    """The agent's name, for messages."""
    qualified_name: str
    """`Agent.Playbook`, for messages."""
    inputs: tuple[tuple[str, str], ...]
    """(parameter, source) pairs: a state key, `@message` or `*`."""
    required: tuple[str, ...]
    """The parameters without a default."""
    types: Mapping[str, str | None]
    """Each parameter's declared type, for coercing the values read."""
    schema: JsonSchema
    """The JSON Schema of the playbook's arguments, checked before every call."""
    output_key: str | None
    """The state key the result is written to; None: a dict result is the state delta."""
    escalate_key: str | None
    """A key of a dict result that, when true, makes the event escalate (ends a LoopAgent)."""
    returns_session: bool
    """The playbook returns `{"state": <whole state>, "reply": <text>}` (an imported ADK program)."""

    @classmethod
    def build(
        cls,
        *,
        name: str,
        embedded: EmbeddedPlaybook,
        inputs: Mapping[str, str] | Sequence[str] | None,
        output_key: str | None,
        escalate_key: str | None,
        returns_session: bool | None,
    ) -> AgentBinding:
        playbook = embedded.playbook
        where = f"agent {name!r} ({embedded.qualified_name})"
        parameters = {parameter.name: parameter for parameter in playbook.parameters}
        listed = ", ".join(f"${n}" for n in parameters) or "none"
        if inputs is None:
            pairs = [(p.name, _default_source(p.name, p.type)) for p in playbook.parameters]
        else:
            if isinstance(inputs, str):
                raise ExportError(
                    f"{where}: inputs must map parameters to state keys or list names, not {inputs!r}"
                )
            items = list(inputs.items()) if isinstance(inputs, Mapping) else [(n, n) for n in inputs]
            pairs = []
            for parameter, source in items:
                key = parameter.lstrip("$") if isinstance(parameter, str) else parameter
                if key not in parameters:
                    raise ExportError(
                        f"{where}: inputs names {parameter!r}, which is not a parameter ({listed})"
                    )
                if not isinstance(source, str) or not source:
                    raise ExportError(f"{where}: the source of ${key} must be a state key, got {source!r}")
                if source == WHOLE_STATE and _json_type(parameters[key].type) not in (None, "object"):
                    raise ExportError(
                        f"{where}: ${key} is {parameters[key].type}, so it cannot take the whole state"
                    )
                pairs.append((key, source))
            bound = {key for key, _ in pairs}
            unbound = [p.name for p in playbook.parameters if p.name not in bound and p.default is None]
            if unbound:
                raise ExportError(
                    f"{where}: inputs gives no source for {', '.join('$' + n for n in unbound)}, which have no default"
                )
        for label, key in (("output_key", output_key), ("escalate_key", escalate_key)):
            if key is not None and (not isinstance(key, str) or not key):
                raise ExportError(f"{where}: {label} must be a state key name, got {key!r}")
        return cls(
            name=name,
            qualified_name=embedded.qualified_name,
            inputs=tuple(pairs),
            required=tuple(p.name for p in playbook.parameters if p.default is None),
            types={p.name: p.type for p in playbook.parameters},
            schema=input_schema(playbook),
            output_key=output_key,
            escalate_key=escalate_key,
            returns_session=_is_imported_adk_entry(embedded) if returns_session is None else returns_session,
        )

    def arguments(self, state: Mapping[str, Any], message: str) -> dict[str, Any]:
        """The playbook's arguments from the session state and the user's message; ExportError naming
        the agent, the parameters and the state keys when they do not fit."""
        arguments: dict[str, Any] = {}
        for parameter, source in self.inputs:
            if source == USER_MESSAGE:
                arguments[parameter] = message
            elif source == WHOLE_STATE:
                arguments[parameter] = dict(state)
            elif source in state:
                arguments[parameter] = state[source]
        missing = [name for name in self.required if name not in arguments]
        if missing:
            sources = dict(self.inputs)
            wanted = ", ".join(f"{sources[name]!r} (for ${name})" for name in missing)
            present = ", ".join(repr(key) for key in state) or "none"
            raise ExportError(
                f"agent {self.name!r} ({self.qualified_name}): the session state has no value for {wanted}; "
                f"state keys: {present}. Map parameters with inputs={{'parameter': 'state key'}}"
            )
        problems = schema_problems(arguments, self.schema)
        if problems:
            raise ExportError(
                f"agent {self.name!r} cannot run {self.qualified_name} on this state: {'; '.join(problems)}"
            )
        return {name: coerce(value, self.types[name]) for name, value in arguments.items()}

    def event_parts(
        self, outcome: CallOutcome, state: Mapping[str, Any]
    ) -> tuple[dict[str, Any], str | None, bool]:
        """(state delta, reply text, escalate) of one call."""
        value = outcome.value
        said = "\n".join(outcome.said_to_user) or None
        if self.returns_session:
            if not isinstance(value, Mapping) or not isinstance(value.get("state"), Mapping):
                raise ExportError(
                    f"agent {self.name!r}: {self.qualified_name} did not return {{'state': ..., 'reply': ...}}"
                )
            final = value["state"]
            delta = {key: item for key, item in final.items() if key not in state or state[key] != item}
            reply = value.get("reply")
            return delta, reply if isinstance(reply, str) else said, False
        if self.output_key is not None:
            delta = {self.output_key: value}
        elif isinstance(value, Mapping):
            delta = dict(value)
        elif value is None or isinstance(value, str):
            delta = {}
        else:
            raise ExportError(
                f"agent {self.name!r}: {self.qualified_name} returned {type(value).__name__}, not a dict of state "
                "changes; pass output_key='<state key>' to store the result under one key"
            )
        reply = said if said is not None else (value if isinstance(value, str) else None)
        escalate = bool(
            self.escalate_key is not None and isinstance(value, Mapping) and value.get(self.escalate_key)
        )
        return delta, reply, escalate


def _default_source(name: str, pal_type: str | None) -> str:
    """By default a parameter reads the state key of its name; `message` is the user's message and a
    dict `state` the whole state (as an imported ADK program's Invoke takes them)."""
    if name == "message" and _json_type(pal_type) in (None, "string"):
        return USER_MESSAGE
    if name == "state" and _json_type(pal_type) in (None, "object"):
        return WHOLE_STATE
    return name


def as_adk_agent(
    program: Program | str | Path | EmbeddedPlaybook,
    *,
    agent: str | None = None,
    playbook: str | None = None,
    inputs: Mapping[str, str] | Sequence[str] | None = None,
    output_key: str | None = None,
    escalate_key: str | None = None,
    returns_session: bool | None = None,
    name: str | None = None,
    description: str | None = None,
    model: Model | str | None = None,
    limits: RunLimits | None = None,
    human: HumanInput | None = None,
    tracer: Tracer | None = None,
    store: Store | str | None = None,
) -> PalAdkAgent:
    """An ADK agent (a `BaseAgent`) that runs a playbook on values of the session state.

    - `program`: a Program, a program file, or an EmbeddedPlaybook to share with other agents or tools.
    - `agent`, `playbook`: which playbook (`Playbook` or `Agent.Playbook`; default: the entry playbook).
    - `inputs`: `{parameter: source}`, a source being a state key, `"@message"` (the user's message) or
      `"*"` (the whole state), or a list of names that are both. Default: each parameter from the state
      key of its name; `message` from the user's message and a dict `state` from the whole state.
    - `output_key`: the state key the result goes to; default: a dict result is the state delta, a text
      result is the reply.
    - `escalate_key`: a key of a dict result that, when true, makes the event escalate (a LoopAgent
      stops after this agent).
    - `returns_session`: the playbook returns `{"state", "reply"}` (an imported ADK program's `Invoke`):
      the changed keys are the delta. Default: detected from the program `pal import adk` wrote.
    - `name` (an identifier; default: the playbook's name), `description`, `model`, `limits` (per
      call), `human`, `tracer`: as for `EmbeddedPlaybook`.
    - `store` (a URL or a Store): record the agent's calls as a thread per ADK session
      (`<session id>:<agent name>`), durable, whose agents keep their state from one turn of the session
      to the next, whatever process runs it (as ADK's DatabaseSessionService keeps the session's events).

    Raises ExportError for a playbook or options that cannot work, FrameworkNotInstalled without ADK.
    Running it raises ExportError for a state the playbook cannot take, and the runtime's errors for a
    call that fails.
    """
    _require_adk()
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
    agent_name = name or embedded.playbook.name
    if not agent_name.isidentifier():
        raise ExportError(
            f"agent name {agent_name!r} ({embedded.qualified_name}) must be an identifier; pass name='...'"
        )
    binding = AgentBinding.build(
        name=agent_name,
        embedded=embedded,
        inputs=inputs,
        output_key=output_key,
        escalate_key=escalate_key,
        returns_session=returns_session,
    )
    text = (
        description
        or embedded.playbook.description.strip()
        or f"Runs the PAL playbook {embedded.qualified_name}."
    )
    agent_class: Any = _classes()[0]
    made: PalAdkAgent = agent_class(name=agent_name, description=text, embedded=embedded, binding=binding)
    return made


# --- tools ---------------------------------------------------------------------------------------------


def as_adk_tool(
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
) -> PalAdkTool:
    """An ADK tool (a `BaseTool`) that calls a playbook: named after it, described by its description,
    declaring its parameters as the JSON Schema of the arguments (checked before every call).

    The result is the playbook's return value; a playbook that returns nothing answers with what it said
    to the user. Wrong arguments and playbook failures (CallError, PlaybookFailed) are returned to the
    model as `{"error": "..."}`, ADK's convention for a tool that failed; other run failures propagate.
    With a store, the calls of one ADK session are one thread (`<session id>:<tool name>`).
    """
    _require_adk()
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
    if not tool_name.isidentifier() or len(tool_name) > 64:
        raise ExportError(
            f"tool name {tool_name!r} ({embedded.qualified_name}) must be an identifier of 1-64 characters"
        )
    text = (
        description
        or embedded.playbook.description.strip()
        or f"Runs the PAL playbook {embedded.qualified_name}."
    )
    tool_class: Any = _classes()[1]
    made: PalAdkTool = tool_class(name=tool_name, description=text, embedded=embedded)
    return made


def _tool_result(outcome: CallOutcome) -> Any:
    if outcome.value is None and outcome.said_to_user:
        return "\n".join(outcome.said_to_user)
    return outcome.value


def _thread_of(embedded: EmbeddedPlaybook, context: Any, name: str) -> str | None:
    """With a store, the thread of an ADK session's calls of this agent or tool: `<session id>:<name>`."""
    if embedded.store is None:
        return None
    session = getattr(context, "session", None)
    session_id = getattr(session, "id", None)
    return f"{session_id}:{name}" if session_id else None


def _message_text(context: Any) -> str:
    content = getattr(context, "user_content", None)
    parts = getattr(content, "parts", None) or ()
    return "\n".join(part.text for part in parts if getattr(part, "text", None))


# --- the framework classes, made on first use ----------------------------------------------------------


@functools.cache
def _classes() -> tuple[type, type]:
    """PalAdkAgent and PalAdkTool, defined when ADK is first needed (importing this module never imports it)."""
    _require_adk()
    from google.adk.agents import BaseAgent
    from google.adk.events import Event, EventActions
    from google.adk.tools.base_tool import BaseTool
    from google.genai import types
    from pydantic import ConfigDict, SkipValidation

    class PalAdkAgent(BaseAgent):
        """An ADK agent running a PAL playbook (made by `as_adk_agent`)."""

        model_config = ConfigDict(arbitrary_types_allowed=True)
        embedded: SkipValidation[EmbeddedPlaybook]
        """The playbook and its runs."""
        binding: SkipValidation[AgentBinding]
        """How the session becomes arguments and the result an event."""

        async def _run_async_impl(self, ctx: Any) -> AsyncGenerator[Any, None]:
            state = ctx.session.state
            arguments = self.binding.arguments(state, _message_text(ctx))
            outcome = await self.embedded.call(arguments, thread=_thread_of(self.embedded, ctx, self.name))
            delta, reply, escalate = self.binding.event_parts(outcome, state)
            yield Event(
                author=self.name,
                invocation_id=ctx.invocation_id,
                branch=ctx.branch,
                content=types.Content(role="model", parts=[types.Part(text=reply)]) if reply else None,
                actions=EventActions(state_delta=delta, escalate=escalate or None),
            )

        def close(self) -> None:
            """Stop the sync runner (see `EmbeddedPlaybook.close`)."""
            self.embedded.close()

        async def aclose(self) -> None:
            """Shut down the run on the running loop and the sync runner (see `EmbeddedPlaybook.aclose`)."""
            await self.embedded.aclose()

    class PalAdkTool(BaseTool):
        """An ADK tool calling a PAL playbook (made by `as_adk_tool`)."""

        def __init__(self, *, name: str, description: str, embedded: EmbeddedPlaybook) -> None:
            super().__init__(name=name, description=description)
            self.embedded = embedded
            """The playbook and its runs."""
            self.schema = input_schema(embedded.playbook)
            """The JSON Schema of its arguments."""

        def _get_declaration(self) -> Any:
            return types.FunctionDeclaration(
                name=self.name, description=self.description, parameters_json_schema=self.schema
            )

        async def run_async(self, *, args: dict[str, Any], tool_context: Any) -> Any:
            problems = schema_problems(args, self.schema)
            if problems:
                return {"error": f"tool {self.name!r}: {'; '.join(problems)}"}
            types_by_name = {
                parameter.name: parameter.type for parameter in self.embedded.playbook.parameters
            }
            checked = {key: coerce(value, types_by_name.get(key)) for key, value in args.items()}
            try:
                outcome = await self.embedded.call(
                    checked, thread=_thread_of(self.embedded, tool_context, self.name)
                )
            except (CallError, PlaybookFailed) as error:
                return {"error": f"tool {self.name!r}: {error}"}
            return _tool_result(outcome)

        def close(self) -> None:
            """Stop the sync runner (see `EmbeddedPlaybook.close`)."""
            self.embedded.close()

    for made in (PalAdkAgent, PalAdkTool):
        made.__module__ = __name__
        made.__qualname__ = made.__name__
    return PalAdkAgent, PalAdkTool


def __getattr__(name: str) -> Any:
    # `from exporters.adk import PalAdkAgent` (isinstance checks, type hints) makes the classes then.
    if name == "PalAdkAgent":
        return _classes()[0]
    if name == "PalAdkTool":
        return _classes()[1]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    PalAdkAgent = Any
    PalAdkTool = Any


EXPORTER = Exporter(
    framework="adk",
    makers={"agent": as_adk_agent, "tool": as_adk_tool},
    install_hint=INSTALL_HINT,
)
"""The ADK exporter, as `exporters.get_exporter("adk")` returns it."""

"""The `$session` of an imported ADK program, and the helpers that run ADK's own code over it.

A `$session` is `{"message": str, "state": dict, "events": [event, ...]}` (see `importers.adk.support`).
What the imported program cannot do in PAL steps is run here by ADK itself, over a real ADK session made
from the `$session` (its state, its `temp:` keys, its events as history):

- `run_agent`: a custom `BaseAgent`, through its own `run_async` (callbacks included) with a real
  `InvocationContext`; every event it yields is appended by ADK's session service, as a Runner would.
- `agent_callback`: the before / after agent callbacks of an agent whose body is PAL steps.
- `instruction`: an LLM agent's instruction with its `{state_key}` templates filled by ADK's
  `inject_session_state` (an instruction provider is called with a real `ReadonlyContext`).
- `call_tool`: a tool that needs ADK (a `ToolContext`, a `BaseTool` subclass, `exit_loop`), through
  its own `run_async`; its state changes and actions (escalate, skip summarization) become an event.
- `run_node`: one node of a `Workflow` (a function node, a custom node or agent), run by ADK's
  `Runner` as a dynamic node of a one-node driver, so parameter binding, `Event` / `RequestInput`
  yields, routes and state writes are ADK's.

The ADK objects are found again at run time from `source` (the `module:attr` or YAML config the program
was imported from) and `path` (agent and node names from the root, `root/pipeline/counter`); ADK is
imported only when one of these helpers runs.
"""

from __future__ import annotations

import functools
import inspect
import os
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pal_core.errors import PalError
from runtime.module_path import resolve, use_module_folders

TEMP_PREFIX = "temp:"
"""State keys that live for one invocation only."""
APP_PREFIX = "app:"
"""State keys shared by every user of the app."""
USER_PREFIX = "user:"
"""State keys shared by every session of the user."""
USER = "user"
"""The author of the user's events."""
APP_NAME = "pal"
"""The app name of the ADK sessions the helpers make."""
USER_ID = "pal-user"
"""The user id of the ADK sessions the helpers make."""
YAML_SUFFIXES = (".yaml", ".yml")
"""A `source` ending so is an ADK agent config file."""
REQUEST_INPUT = "adk_request_input"
"""The function call ADK makes of a node's `RequestInput`."""


class SessionError(PalError):
    """A `$session` value that is not what the imported program passes around (the program was edited)."""


class AgentStepError(PalError):
    """An agent did something the imported program cannot follow (a run failure): a transfer to an agent
    it may not reach, a route that leads to several nodes, a branch that did not continue its session."""


class AdkRunError(PalError):
    """The ADK object a helper needs cannot be found again at run time (its source does not import, or
    has no agent or node at the path), or ADK is not installed."""


# --- the session ---------------------------------------------------------------------------------


def session_events(session: Any) -> list[dict[str, Any]]:
    """The events of a `$session`, after checking its shape."""
    if not isinstance(session, Mapping) or not isinstance(session.get("events"), list):
        raise SessionError(
            "a session must be a dict with 'message', 'state' and 'events', as StartSession makes it"
        )
    if not isinstance(session.get("state"), Mapping):
        raise SessionError("the session's 'state' must be a dict")
    return session["events"]


def record_event(
    author: str,
    *,
    text: str | None = None,
    state_delta: Mapping[str, Any] | None = None,
    escalate: bool = False,
    skip_summarization: bool = False,
) -> dict[str, Any]:
    """One event as the session keeps it: only the parts that are set."""
    event: dict[str, Any] = {"author": author}
    if text is not None:
        event["text"] = text
    if state_delta:
        event["state_delta"] = dict(state_delta)
    if escalate:
        event["escalate"] = True
    if skip_summarization:
        event["skip_summarization"] = True
    return event


def append_events(session: Mapping[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """`session` with `events` appended and their state deltas applied in order (a new dict)."""
    state = dict(session["state"])
    for event in events:
        state.update(event.get("state_delta") or {})
    return {**session, "state": state, "events": [*session_events(session), *events]}


# --- finding the ADK objects again -----------------------------------------------------------------


def _require_adk() -> None:
    try:
        import google.adk  # noqa: F401
    except ImportError as error:
        raise AdkRunError(
            f"this program was imported from Google ADK and needs it to run: pip install 'pal-bridge[adk]' ({error})"
        ) from error


def agents_folder(config: str | Path) -> str:
    """Where an agent config's `code:` references start: the config's folder's parent, the folder `adk web`
    puts on the path (`code: my_agent.tools.lookup` for `my_agent/root_agent.yaml`)."""
    return str(Path(config).resolve().parent.parent)


def make_importable(config: str | Path) -> None:
    """Make the modules an agent config references importable: the config's folder and the current
    directory as for any program file (runtime.module_path), and ADK's agents folder (`agents_folder`),
    which that rule does not cover, put first where it is not on `sys.path` yet."""
    use_module_folders(config)
    folder = agents_folder(config)
    if folder not in sys.path:
        sys.path.insert(0, folder)


@functools.cache
def load_config(path: str) -> Any:
    """The agent (or workflow) the YAML agent config at absolute `path` builds, once per process: an agent
    instance a `code:` reference names can have only one parent, so building the config twice fails.
    Its `code:` references are made importable first (`make_importable`)."""
    import warnings

    from google.adk.agents.config_agent_utils import from_config

    make_importable(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the config loader, and the classes it builds
        return from_config(path)


@functools.cache
def load_source(source: str) -> Any:
    """The root object of an imported program: the agent (or Workflow) at `module:attr`, the root agent
    of an `App` there, or the agent a YAML config file builds. Loaded once per process."""
    _require_adk()
    if source.endswith(YAML_SUFFIXES):
        path = Path(source)
        if not path.is_file():
            raise AdkRunError(f"agent config {source!r} does not exist (from {os.getcwd()})")
        try:
            return load_config(str(path.resolve()))
        except Exception as error:  # the user's config failed to build: name it
            raise AdkRunError(f"agent config {source!r}: {type(error).__name__}: {error}") from error
    if ":" not in source:
        raise AdkRunError(f"source {source!r} must be module:attribute or a .yaml agent config")
    try:
        # Looked up as every bound module is (runtime.module_path): the running program's own bindings
        # have put its folder and the current directory on the path before any helper runs.
        value: Any = resolve(source)
    except (ImportError, AttributeError, ValueError) as error:
        raise AdkRunError(f"cannot load {source!r}, where this program was imported from: {error}") from error
    root = getattr(value, "root_agent", None)
    if root is not None and type(value).__name__ == "App":
        return root
    return value


def children(value: Any) -> Iterator[Any]:
    """The agents and nodes directly under `value`: sub-agents, a workflow's graph nodes, and the agents
    of its AgentTools."""
    yield from getattr(value, "sub_agents", None) or ()
    graph = getattr(value, "graph", None)
    if graph is not None:
        yield from getattr(graph, "nodes", None) or ()
    for tool in getattr(value, "tools", None) or ():
        agent = getattr(tool, "agent", None)
        if agent is not None and hasattr(agent, "name"):
            yield agent


@functools.cache
def find(source: str, path: str) -> Any:
    """The agent or node at `path` (names from the root, joined by `/`) in the program at `source`."""
    root = load_source(source)
    names = path.split("/")
    if getattr(root, "name", None) != names[0]:
        raise AdkRunError(f"{source!r} is agent {getattr(root, 'name', None)!r}, not {names[0]!r}")
    value = root
    for index, name in enumerate(names[1:], start=1):
        found = next((child for child in children(value) if getattr(child, "name", None) == name), None)
        if found is None:
            raise AdkRunError(f"{source!r} has no agent or node {'/'.join(names[: index + 1])!r}")
        value = found
    return value


# --- ADK sessions made from a $session -------------------------------------------------------------


def _content(text: str, role: str = "user") -> Any:
    from google.genai import types

    return types.Content(role=role, parts=[types.Part(text=text)])


def _text_of(event: Any) -> str | None:
    content = getattr(event, "content", None)
    parts = getattr(content, "parts", None) or ()
    texts = [
        part.text for part in parts if getattr(part, "text", None) and not getattr(part, "thought", False)
    ]
    return "\n".join(texts) if texts else None


def _recording_service() -> Any:
    """An in-memory session service that keeps each event's state delta as it was before ADK trimmed its
    `temp:` keys (they still reach the in-memory state, which later agents of the run read)."""
    from google.adk.sessions import InMemorySessionService

    class RecordingSessionService(InMemorySessionService):
        def __init__(self) -> None:
            super().__init__()
            self.deltas: dict[str, dict[str, Any]] = {}

        async def append_event(self, session: Any, event: Any) -> Any:
            if not event.partial and event.actions and event.actions.state_delta:
                self.deltas[event.id] = dict(event.actions.state_delta)
            return await super().append_event(session, event)

    return RecordingSessionService()


async def _adk_session(session: Mapping[str, Any], *, with_history: bool = True) -> tuple[Any, Any]:
    """(session service, ADK session) holding the `$session`'s state (its `temp:` keys in memory, as
    during an invocation) and, with `with_history`, its events with text as history."""
    from google.adk.events import Event

    service = _recording_service()
    state = session["state"]
    adk = await service.create_session(
        app_name=APP_NAME,
        user_id=USER_ID,
        state={key: value for key, value in state.items() if not key.startswith(TEMP_PREFIX)},
    )
    adk.state.update({key: value for key, value in state.items() if key.startswith(TEMP_PREFIX)})
    if with_history:
        for event in session_events(session):
            if event.get("text") is None:
                continue
            author = event.get("author", USER)
            adk.events.append(
                Event(
                    author=author,
                    invocation_id="pal-history",
                    content=_content(event["text"], "user" if author == USER else "model"),
                )
            )
    return service, adk


def _invocation(service: Any, adk: Any, agent: Any, message: str) -> Any:
    from google.adk.agents.invocation_context import InvocationContext, new_invocation_context_id
    from google.adk.agents.run_config import RunConfig
    from google.adk.artifacts import InMemoryArtifactService

    return InvocationContext(
        session_service=service,
        artifact_service=InMemoryArtifactService(),
        invocation_id=new_invocation_context_id(),
        agent=agent,
        session=adk,
        user_content=_content(message),
        run_config=RunConfig(),
    )


def _record(event: Any, delta: Mapping[str, Any] | None) -> dict[str, Any]:
    actions = event.actions
    return record_event(
        event.author or USER,
        text=_text_of(event),
        state_delta=delta,
        escalate=bool(actions and actions.escalate),
        skip_summarization=bool(actions and actions.skip_summarization),
    )


async def _append(service: Any, adk: Any, event: Any, records: list[dict[str, Any]]) -> None:
    delta = dict(event.actions.state_delta) if event.actions and event.actions.state_delta else None
    await service.append_event(adk, event)
    records.append(_record(event, delta))


def jsonable(value: Any) -> Any:
    """A value a PAL variable can hold and `pal run` can print: pydantic models and ADK contents as
    their JSON form, anything else unchanged."""
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    return value


# --- the helpers ---------------------------------------------------------------------------------


async def run_agent(session: dict, source: str, path: str) -> dict:
    """The session after the custom agent at `path` ran: its `run_async` (with its callbacks) over a real
    ADK session holding the state and history, each yielded event appended by ADK's session service."""
    from google.adk.utils.context_utils import Aclosing

    agent = find(source, path)
    service, adk = await _adk_session(session)
    context = _invocation(service, adk, agent, str(session.get("message", "")))
    records: list[dict[str, Any]] = []
    async with Aclosing(agent.run_async(context)) as events:
        async for event in events:
            if not event.partial:
                await _append(service, adk, event, records)
    return append_events(session, records)


async def agent_callback(session: dict, source: str, path: str, when: str) -> dict:
    """`{"session": ..., "skip": bool}` after the agent's `before` or `after` agent callbacks ran as ADK
    runs them; `skip` is True when a before-callback returned content, which replaces the agent's run."""
    if when not in ("before", "after"):
        raise AgentStepError(f"agent_callback: when must be 'before' or 'after', got {when!r}")
    agent = find(source, path)
    service, adk = await _adk_session(session)
    context = agent._create_invocation_context(
        _invocation(service, adk, agent, str(session.get("message", "")))
    )
    # The lifecycle methods BaseAgent.run_async itself calls around the agent's body.
    if when == "before":
        event = await agent._handle_before_agent_callback(context)
    else:
        event = await agent._handle_after_agent_callback(context)
    records: list[dict[str, Any]] = []
    if event is not None:
        await _append(service, adk, event, records)
    return {
        "session": append_events(session, records),
        "skip": bool(when == "before" and context.end_invocation),
    }


@functools.cache
def _named_agent(name: str) -> Any:
    """A bare agent named `name`: what a ReadonlyContext needs to report a missing state key."""
    from google.adk.agents import LlmAgent

    return LlmAgent(name=name)


async def instruction(
    session: dict, agent: str, template: str | None = None, source: str | None = None, path: str | None = None
) -> str:
    """LLM agent `agent`'s instruction for this turn: `template` with its `{key}`, `{key?}` and
    `{app:key}` references filled from the session state by ADK's `inject_session_state`; without a
    template, the agent at `path` computes it (global instruction, static instruction, instruction
    provider) as ADK's request builder does."""
    if template is not None and "{" not in template:
        return template
    _require_adk()
    from google.adk.agents.readonly_context import ReadonlyContext
    from google.adk.utils.instructions_utils import inject_session_state

    live = find(source, path) if template is None and source and path else _named_agent(agent)
    service, adk = await _adk_session(session, with_history=False)
    context = ReadonlyContext(_invocation(service, adk, live, str(session.get("message", ""))))
    if template is not None:
        return await inject_session_state(template, context)
    parts: list[str] = []
    root = getattr(live, "root_agent", live)
    if getattr(root, "global_instruction", None):
        text, bypass = await root.canonical_global_instruction(context)
        parts.append(text if bypass else await inject_session_state(text, context))
    static = getattr(live, "static_instruction", None)
    if static:
        parts.append(_static_text(static))
    if getattr(live, "instruction", None):
        text, bypass = await live.canonical_instruction(context)
        parts.append(text if bypass else await inject_session_state(text, context))
    return "\n\n".join(part for part in parts if part)


def _static_text(static: Any) -> str:
    """The text of a `static_instruction` (a str, a Content, a Part or a list of them)."""
    if isinstance(static, str):
        return static
    if isinstance(static, (list, tuple)):
        return "\n".join(_static_text(item) for item in static)
    parts = getattr(static, "parts", None)
    if parts is not None:
        return "\n".join(_static_text(part) for part in parts)
    return getattr(static, "text", None) or ""


@functools.cache
def _function_tool(function: Any) -> Any:
    from google.adk.tools.function_tool import FunctionTool

    return FunctionTool(function)


def find_tool(agent: Any, name: str) -> Any:
    """The ADK tool of `agent` that the model calls `name` (a plain function made a FunctionTool)."""
    from google.adk.tools.base_tool import BaseTool

    for tool in getattr(agent, "tools", None) or ():
        if isinstance(tool, BaseTool) and tool.name == name:
            return tool
        if not isinstance(tool, BaseTool) and callable(tool) and getattr(tool, "__name__", None) == name:
            return _function_tool(tool)
    raise AdkRunError(f"agent {getattr(agent, 'name', '?')!r} has no tool {name!r}")


def _tool_arguments(tool: Any, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments a PAL call passed, without the `None`s that stand for an argument the model left out
    whose function default is something else (a PAL parameter's default must be a literal)."""
    function = getattr(tool, "func", None)
    try:
        parameters = inspect.signature(function).parameters if function is not None else {}
    except (TypeError, ValueError):
        parameters = {}
    kept = {}
    for key, value in arguments.items():
        parameter = parameters.get(key)
        if (
            value is None
            and parameter is not None
            and parameter.default not in (None, inspect.Parameter.empty)
        ):
            continue
        kept[key] = value
    return kept


async def call_tool(session: dict, source: str, path: str, tool: str, arguments: dict) -> dict:
    """`{"session": ..., "result": ...}` after tool `tool` of the LLM agent at `path` ran with
    `arguments` through its own `run_async` and a real `ToolContext`: what it wrote to state, and its
    escalate and skip-summarization actions, are one event of the agent."""
    from google.adk.tools.tool_context import ToolContext

    agent = find(source, path)
    found = find_tool(agent, tool)
    service, adk = await _adk_session(session)
    context = ToolContext(
        _invocation(service, adk, agent, str(session.get("message", ""))),
        function_call_id=f"pal-{uuid.uuid4().hex[:12]}",
    )
    result = await found.run_async(args=_tool_arguments(found, arguments), tool_context=context)
    actions = context.actions
    records = []
    if actions.state_delta or actions.escalate or actions.skip_summarization:
        records.append(
            record_event(
                agent.name,
                state_delta=actions.state_delta,
                escalate=bool(actions.escalate),
                skip_summarization=bool(actions.skip_summarization),
            )
        )
    return {"session": append_events(session, records), "result": jsonable(result)}


async def run_node(
    session: dict, source: str, path: str, node_input: Any = None, start: bool = False
) -> dict:
    """`{"session": ..., "output": ..., "route": ...}` after the workflow node at `path` ran on
    `node_input` (with `start`, on the user's message, as a node after START gets it). ADK's Runner runs
    it as a dynamic node of a driver named like its workflow, so the node binds its parameters, yields
    events, writes state and emits routes exactly as inside the workflow."""
    from google.adk.agents.context import Context
    from google.adk.artifacts import InMemoryArtifactService
    from google.adk.runners import Runner
    from google.adk.workflow import FunctionNode

    node = find(source, path)
    message = str(session.get("message", ""))
    value = _content(message) if start else node_input
    workflow = path.split("/")[-2] if "/" in path else "workflow"

    async def drive(ctx: Context) -> Any:
        return await ctx.run_node(node, node_input=value)

    driver = FunctionNode(func=drive, name=workflow, rerun_on_resume=True)
    service, adk = await _adk_session(session, with_history=False)
    runner = Runner(
        app_name=APP_NAME, agent=driver, session_service=service, artifact_service=InMemoryArtifactService()
    )
    temp = {key: value for key, value in session["state"].items() if key.startswith(TEMP_PREFIX)}
    records: list[dict[str, Any]] = []
    output: Any = None
    route: Any = None
    ask: str | None = None
    try:
        async for event in runner.run_async(
            user_id=USER_ID, session_id=adk.id, new_message=_content(message), state_delta=temp or None
        ):
            node_path = event.node_info.path or ""
            if node_path.count("/") == 0:
                continue  # the driver's own echo of the node's output
            own = node_path.count("/") == 1
            if own and event.output is not None:
                output = jsonable(event.output)
            if own and event.actions and event.actions.route is not None:
                route = event.actions.route
            for call in event.get_function_calls() if own else ():
                if call.name == REQUEST_INPUT:  # a RequestInput: the workflow waits for the user here
                    ask = str((call.args or {}).get("message") or "")
            delta = service.deltas.get(event.id)
            if delta or _text_of(event) is not None or (event.actions and event.actions.escalate):
                records.append(_record(event, delta))
    finally:
        await runner.close()
    return {"session": append_events(session, records), "output": output, "route": route, "ask": ask}


__all__ = [
    "APP_PREFIX",
    "TEMP_PREFIX",
    "USER",
    "USER_PREFIX",
    "AdkRunError",
    "AgentStepError",
    "SessionError",
    "agent_callback",
    "agents_folder",
    "append_events",
    "call_tool",
    "children",
    "find",
    "find_tool",
    "instruction",
    "jsonable",
    "load_config",
    "load_source",
    "make_importable",
    "record_event",
    "run_agent",
    "run_node",
    "session_events",
]

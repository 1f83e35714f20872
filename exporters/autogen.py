"""PAL playbooks in AutoGen and ag2: a playbook as a chat agent of a team, and as a tool an agent calls.

    from exporters.autogen import as_ag2_agent, as_autogen_agent, as_autogen_tool

    reviewer = as_autogen_agent("review.pal", playbook="Review", name="reviewer")
    team = RoundRobinGroupChat([writer, reviewer], termination_condition=...)   # also Selector, Swarm, GraphFlow

    tool = as_autogen_tool("calc.pal", playbook="Add")
    assistant = AssistantAgent("assistant", model_client=client, tools=[tool])

    checker = as_ag2_agent("review.pal", playbook="Review", name="checker")  # a ConversableAgent
    GroupChat(agents=[planner, checker], ...)

All three run the playbook through `runtime.embedding.EmbeddedPlaybook` (the program loaded once, one
run per event loop, fresh variables per call), like the LangGraph exporter.

What the playbook gets and gives as an agent: the conversation the agent has seen, as
`[{"source": name, "content": text}, ...]` (the messages given to it plus its own replies: AutoGen gives an
agent only the messages since its last turn, and the exported agent keeps the rest), bound by parameter
name: `messages` (the whole conversation), `new_messages` (since its last turn), or a lone `str`
parameter (the last message's text); a playbook without parameters is called without arguments. Its
result is the reply: a string, `{"content": ..., "handoff": "<agent>"}` for a hand-off in a Swarm, or None
(what it said to the user, joined, is the reply).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from exporters import Exporter, ExportError, FrameworkNotInstalled, embedded_playbook
from pal_core.ir import Playbook, Program
from runtime.embedding import CallOutcome, EmbeddedPlaybook
from runtime.errors import CallError, PlaybookFailed
from runtime.expressions import coerce
from runtime.schema import input_schema, schema_problems

if TYPE_CHECKING:
    from runtime.humans import HumanInput
    from runtime.models.base import Model
    from runtime.program_run import RunLimits
    from runtime.store import Store
    from runtime.trace import Tracer

__all__ = ["EXPORTER", "INSTALL_HINT", "as_ag2_agent", "as_autogen_agent", "as_autogen_tool"]

INSTALL_HINT = "pip install 'pal-bridge[autogen]'"
"""What installs autogen-agentchat and ag2 at the versions this exporter is tested with."""

_PYTHON_TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "list": list,
    "dict": dict,
}


def _require(module: str, what: str) -> None:
    try:
        __import__(module)
    except ImportError as error:
        raise FrameworkNotInstalled(f"{what} needs {module.split('.')[0]}: {INSTALL_HINT}") from error


# --- the conversation -> arguments -> the reply ------------------------------------------------------------


class Conversation:
    """How an exported agent calls its playbook: the arguments from what it has seen, the reply from the result."""

    def __init__(self, embedded: EmbeddedPlaybook, name: str) -> None:
        self.embedded = embedded
        self.name = name
        playbook = embedded.playbook
        parameters = {parameter.name: parameter for parameter in playbook.parameters}
        self.history_parameter = "messages" if "messages" in parameters else None
        self.new_parameter = "new_messages" if "new_messages" in parameters else None
        self.text_parameter: str | None = None
        if not (self.history_parameter or self.new_parameter) and len(playbook.parameters) == 1:
            only = playbook.parameters[0]
            if (only.type or "str").split("[", 1)[0] in ("str", "Any"):
                self.text_parameter = only.name
        bound = {self.history_parameter, self.new_parameter, self.text_parameter} - {None}
        required = [p.name for p in playbook.parameters if p.default is None and p.name not in bound]
        if required:
            raise ExportError(
                f"agent {name!r} ({embedded.qualified_name}): the playbook needs {', '.join('$' + n for n in required)}, "
                "which a chat does not give; an exported agent's playbook takes $messages (the conversation), "
                "$new_messages (since its last turn) or one str parameter (the last message)"
            )

    def arguments(self, history: list[dict[str, Any]], new: list[dict[str, Any]]) -> dict[str, Any]:
        arguments: dict[str, Any] = {}
        if self.history_parameter:
            arguments[self.history_parameter] = list(history)
        if self.new_parameter:
            arguments[self.new_parameter] = list(new)
        if self.text_parameter:
            last = history[-1]["content"] if history else ""
            arguments[self.text_parameter] = "" if last is None else str(last)
        return arguments

    def reply(self, outcome: CallOutcome) -> tuple[str, str | None]:
        """(content, hand-off target or None) of one call's result."""
        value = outcome.value
        if value is None:
            return "\n".join(outcome.said_to_user), None
        if isinstance(value, Mapping):
            if "content" not in value:
                raise ExportError(
                    f"agent {self.name!r}: {self.embedded.qualified_name} returned a dict without 'content' "
                    f"({sorted(value)}); return text, or {{'content': ..., 'handoff': '<agent>'}}"
                )
            handoff = value.get("handoff")
            return str(value["content"]), None if handoff is None else str(handoff)
        return str(value), None


# --- AutoGen agents ------------------------------------------------------------------------------------------


def as_autogen_agent(
    program: Program | str | Path | EmbeddedPlaybook,
    *,
    agent: str | None = None,
    playbook: str | None = None,
    name: str | None = None,
    description: str | None = None,
    handoffs: Sequence[str] = (),
    model: Model | str | None = None,
    limits: RunLimits | None = None,
    human: HumanInput | None = None,
    tracer: Tracer | None = None,
    store: Store | str | None = None,
    thread: str | None = None,
) -> Any:
    """An autogen-agentchat `BaseChatAgent` whose turns run a playbook (see the module docstring).

    `name` must be a Python identifier (AutoGen's rule; default: the playbook's name in snake case);
    `description` defaults to the playbook's; `handoffs` lists the agents it may hand off to (a reply
    naming another raises ExportError). With a `store`, the agent's turns are one thread (`thread`, or a
    new id: `agent.thread`), durable, whose agents keep their state from turn to turn; `save_state()`
    holds the thread and the conversation, so `load_state()` in another process picks the agent up where
    it was; `on_reset` starts a new thread. Other options as for `as_langgraph_node`.
    """
    _require("autogen_agentchat", "exporting to AutoGen")
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
    agent_name = name or _snake(embedded.playbook.name)
    if not agent_name.isidentifier():
        raise ExportError(
            f"agent name {agent_name!r} ({embedded.qualified_name}) must be a Python identifier"
        )
    text = (
        description or _description(embedded.playbook) or f"Runs the PAL playbook {embedded.qualified_name}."
    )
    conversation = Conversation(embedded, agent_name)
    made: Any = _autogen_class()(agent_name, text, conversation, tuple(handoffs), _thread(embedded, thread))
    return made


def _thread(embedded: EmbeddedPlaybook, thread: str | None) -> str | None:
    """The thread an agent's calls go to: the one given, a new one with a store, none without."""
    if embedded.store is None:
        if thread is not None:
            raise ExportError(f"thread={thread!r} needs a store to keep it in: pass store=...")
        return None
    return thread or str(uuid.uuid4())


@functools.cache
def _autogen_class() -> type:
    from autogen_agentchat.agents import BaseChatAgent
    from autogen_agentchat.base import Response
    from autogen_agentchat.messages import BaseChatMessage, HandoffMessage, TextMessage
    from autogen_core import CancellationToken

    class PalChatAgent(BaseChatAgent):
        """An AutoGen chat agent answering from a PAL playbook (made by `as_autogen_agent`)."""

        def __init__(
            self,
            name: str,
            description: str,
            conversation: Conversation,
            handoffs: tuple[str, ...],
            thread: str | None = None,
        ):
            super().__init__(name, description)
            self.conversation = conversation
            self.handoffs = handoffs
            self.history: list[dict[str, Any]] = []
            self.thread = thread
            """With a store: the thread the agent's turns are recorded in."""

        @property
        def embedded(self) -> EmbeddedPlaybook:
            return self.conversation.embedded

        @property
        def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
            return (TextMessage, HandoffMessage) if self.handoffs else (TextMessage,)

        async def on_messages(
            self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
        ) -> Response:
            new = [_entry(message) for message in messages]
            self.history.extend(new)
            outcome = await self.embedded.call(
                self.conversation.arguments(self.history, new), thread=self.thread
            )
            content, target = self.conversation.reply(outcome)
            self.history.append({"source": self.name, "content": content})
            if target is None:
                return Response(chat_message=TextMessage(source=self.name, content=content))
            if target not in self.handoffs:
                raise ExportError(
                    f"agent {self.name!r} handed off to {target!r}, which is not among its handoffs "
                    f"({', '.join(self.handoffs) or 'none'}); pass handoffs=[...] to as_autogen_agent"
                )
            return Response(chat_message=HandoffMessage(source=self.name, target=target, content=content))

        async def on_reset(self, cancellation_token: CancellationToken) -> None:
            self.history.clear()
            if self.thread is not None:
                self.thread = str(uuid.uuid4())  # a new conversation: a new thread

        async def save_state(self) -> Mapping[str, Any]:
            return {"type": "PalChatAgentState", "history": list(self.history), "thread": self.thread}

        async def load_state(self, state: Mapping[str, Any]) -> None:
            self.history = [dict(item) for item in state.get("history", ())]
            if state.get("thread") is not None:
                self.thread = str(state["thread"])

        async def close(self) -> None:
            await self.embedded.aclose()

    PalChatAgent.__module__ = __name__
    return PalChatAgent


def _entry(message: Any) -> dict[str, Any]:
    content = getattr(message, "content", None)
    return {"source": message.source, "content": content if isinstance(content, str) else message.to_text()}


def _snake(name: str) -> str:
    out = []
    for index, char in enumerate(name):
        if char.isupper() and index and (name[index - 1].islower() or name[index - 1].isdigit()):
            out.append("_")
        out.append(char.lower())
    return "".join(out)


def _description(playbook: Playbook) -> str:
    return " ".join(playbook.description.split())


# --- AutoGen tools -------------------------------------------------------------------------------------------


def as_autogen_tool(
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
) -> Any:
    """An autogen-core tool (for `AssistantAgent(tools=[...])`) calling a playbook: named after it, its
    parameters as the arguments (checked before every call); the result is the playbook's value, or what it
    said to the user when it returns nothing. Failures raise, and AssistantAgent reports them to the model.
    With a store, calls go to `thread` (else each to a new thread)."""
    _require("autogen_core", "exporting to AutoGen")
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
    text = (
        description or _description(embedded.playbook) or f"Runs the PAL playbook {embedded.qualified_name}."
    )
    if thread is not None and embedded.store is None:
        raise ExportError(f"thread={thread!r} needs a store to keep it in: pass store=...")
    made: Any = _tool_class()(embedded, tool_name, text, thread)
    return made


@functools.cache
def _tool_class() -> type:
    from autogen_core import CancellationToken
    from autogen_core.tools import BaseTool
    from pydantic import BaseModel, ConfigDict, create_model

    class PalTool(BaseTool[BaseModel, Any]):
        """An AutoGen tool calling a PAL playbook (made by `as_autogen_tool`)."""

        def __init__(
            self, embedded: EmbeddedPlaybook, name: str, description: str, thread: str | None = None
        ) -> None:
            fields: dict[str, Any] = {}
            for parameter in embedded.playbook.parameters:
                kind = _PYTHON_TYPES.get((parameter.type or "").split("[", 1)[0].strip(), Any)
                fields[parameter.name] = (kind, ...) if parameter.default is None else (kind | None, None)
            args = create_model(
                f"{embedded.playbook.name}Args", __config__=ConfigDict(extra="forbid"), **fields
            )
            super().__init__(args, object, name, description)
            self.embedded = embedded
            self.thread = thread
            self._schema = input_schema(embedded.playbook)

        async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> Any:
            arguments = args.model_dump(exclude_unset=True)
            problems = schema_problems(arguments, self._schema)
            if problems:
                raise ExportError(f"tool {self.name!r}: {'; '.join(problems)}")
            types = {parameter.name: parameter.type for parameter in self.embedded.playbook.parameters}
            arguments = {key: coerce(value, types.get(key)) for key, value in arguments.items()}
            try:
                outcome = await self.embedded.call(arguments, thread=self.thread)
            except (CallError, PlaybookFailed) as error:
                raise ExportError(f"tool {self.name!r}: {error}") from error
            if outcome.value is None and outcome.said_to_user:
                return "\n".join(outcome.said_to_user)
            return outcome.value

        def return_value_as_string(self, value: Any) -> str:
            return value if isinstance(value, str) else repr(value)

    PalTool.__module__ = __name__
    return PalTool


# --- ag2 agents ----------------------------------------------------------------------------------------------


def as_ag2_agent(
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
) -> Any:
    """An ag2 `ConversableAgent` (classic API: GroupChat, initiate_chat) whose replies run a playbook on the
    conversation it was sent (ag2 gives an agent the whole conversation). Sync chats call the playbook on
    the calling thread's loop, async chats (`a_initiate_chat`) on the running loop. With a store, its
    replies are one thread (`thread`, or a new id: `agent.pal_thread`)."""
    _require("autogen.agentchat", "exporting to ag2")
    from autogen import Agent, ConversableAgent

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
    agent_name = name or _snake(embedded.playbook.name)
    conversation = Conversation(embedded, agent_name)
    pal_thread = _thread(embedded, thread)
    made = ConversableAgent(
        agent_name,
        llm_config=False,
        human_input_mode="NEVER",
        description=description or _description(embedded.playbook) or f"Runs {embedded.qualified_name}.",
    )

    def arguments(messages: list[dict[str, Any]] | None) -> dict[str, Any]:
        history = [
            {"source": message.get("name") or message.get("role", ""), "content": message.get("content")}
            for message in messages or []
        ]
        return conversation.arguments(history, history[-1:])

    def reply(
        recipient: Any, messages: Any = None, sender: Any = None, config: Any = None
    ) -> tuple[bool, Any]:
        content, _ = conversation.reply(embedded.call_sync(arguments(messages), thread=pal_thread))
        return True, content

    async def a_reply(
        recipient: Any, messages: Any = None, sender: Any = None, config: Any = None
    ) -> tuple[bool, Any]:
        content, _ = conversation.reply(await embedded.call(arguments(messages), thread=pal_thread))
        return True, content

    made.register_reply([Agent, None], reply, position=0)
    made.register_reply([Agent, None], a_reply, position=0, ignore_async_in_sync_chat=True)
    made.embedded = embedded  # type: ignore[attr-defined]  # for closing: made.embedded.close()
    made.pal_thread = pal_thread  # type: ignore[attr-defined]
    return made


EXPORTER = Exporter(
    framework="autogen",
    makers={"agent": as_autogen_agent, "tool": as_autogen_tool, "ag2_agent": as_ag2_agent},
    install_hint=INSTALL_HINT,
)
"""The AutoGen exporter, as `exporters.get_exporter("autogen")` returns it."""

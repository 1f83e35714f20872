"""An execution context: one agent running one chain of playbook calls (its own call stack).

Playbook calls of every kind go through `Execution.call_playbook`: markdown (the interpreter), Python
(the function), remote (the connection), another agent's public playbook (`Agent.Playbook`), and the
builtins. Messages, user input, meetings and artifacts are reached from here too.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import reprlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pal_core.ir import Playbook, PlaybookKind
from pal_core.messaging import Message, MessageType
from runtime.builtins import call_builtin, is_runtime_builtin
from runtime.errors import (
    CallError,
    ControlFlow,
    InputExhausted,
    MeetingOver,
    PlaybookFailed,
    ProgramError,
    RunError,
)
from runtime.expressions import NotEvaluable, coerce, evaluate
from runtime.python_api import call_function, current_execution, touch_call
from runtime.remote import RemoteCallError, remote_call, remote_listing
from runtime.state import Artifact, CallStack
from runtime.value_limits import check_value

if TYPE_CHECKING:
    from runtime.agent import AgentInstance
    from runtime.services import RunServices

MAX_CALL_DEPTH = 50
"""Playbook calls nested in one chain (a call inside a call ...): deeper is a playbook calling itself
without end, stopped with a clear error before Python's own recursion limit (about 8 Python frames each)."""

_call_depth: contextvars.ContextVar[int] = contextvars.ContextVar("pal_call_depth", default=0)


class Execution:
    """One agent executing a chain of playbook calls."""

    def __init__(self, agent: AgentInstance, *, meeting_id: str | None = None) -> None:
        self.agent = agent
        self.services: RunServices = agent.services
        """What the run gives its playbooks (runtime.services)."""
        self.stack = CallStack()
        self.base_meeting_id = meeting_id

    # --- names ---------------------------------------------------------------------------------

    def current_meeting(self) -> str | None:
        return self.stack.current_meeting() or self.base_meeting_id

    def is_callable(self, name: str) -> bool:
        """Whether `name` (`Func`, `Agent.Playbook`, a builtin) can be called from this agent."""
        if is_runtime_builtin(name):
            return True
        agent_name, dot, playbook_name = name.rpartition(".")
        if dot:
            target = self.services.program.agent(agent_name)
            if target is None:
                return False
            playbook = target.playbook(playbook_name)
            if target.metadata.remote is not None:
                return True  # tools are listed when the remote agent connects
            return playbook is not None and playbook.public
        return name in self.agent.playbooks

    # --- calls ---------------------------------------------------------------------------------

    async def call_playbook(
        self, name: str, args: list[Any] | None = None, kwargs: Mapping[str, Any] | None = None
    ) -> Any:
        """Call any callable by name with Python values; return its result."""
        args = list(args or [])
        kwargs = dict(kwargs or {})
        if is_runtime_builtin(name):
            return await call_builtin(self, name, args, kwargs)
        agent_name, dot, playbook_name = name.rpartition(".")
        if dot:
            return await self._call_other_agent(agent_name, playbook_name, args, kwargs)
        playbook = self.agent.playbooks.get(name)
        if playbook is None:
            known = ", ".join(sorted(self.agent.playbooks)) or "none"
            raise CallError(f"agent {self.agent.klass} has no playbook {name} (known: {known})")
        return await self.execute(playbook, args, kwargs)

    async def execute(self, playbook: Playbook, args: list[Any], kwargs: dict[str, Any]) -> Any:
        """Run one of this agent's playbooks."""
        depth = _call_depth.get() + 1
        if depth > MAX_CALL_DEPTH:
            caller = self.stack.top
            raise RunError(
                f"playbook calls nested more than {MAX_CALL_DEPTH} deep (a playbook that calls itself "
                f"without end?); the innermost calls {playbook.name}",
                agent=self.agent.klass,
                playbook=caller.playbook.name if caller is not None else None,
                line=(caller.last_line or caller.line) if caller is not None else None,
            )
        token = _call_depth.set(depth)
        try:
            return await self._execute(playbook, args, kwargs)
        finally:
            _call_depth.reset(token)

    async def _execute(self, playbook: Playbook, args: list[Any], kwargs: dict[str, Any]) -> Any:
        # Values from outside (an MCP client, a caller's Python, a model) meet the size budgets at the door.
        services = self.services
        limits = services.value_limits
        for index, value in enumerate(args):
            check_value(value, limits, f"argument {index + 1} of {playbook.name}")
        for name, value in kwargs.items():
            check_value(value, limits, f"argument {name} of {playbook.name}")
        trace = services.trace
        if trace.enabled:  # the details cost more than a Python playbook call; skip them unread
            trace(
                self.agent, "call", playbook=playbook.name, detail=_describe_call(playbook.name, args, kwargs)
            )
        touch_call()  # a playbook called from inside a Python call: that call reached back into the run
        if playbook.kind is PlaybookKind.PYTHON or playbook.kind is PlaybookKind.REMOTE:
            invoke = self._call_python if playbook.kind is PlaybookKind.PYTHON else self._call_remote
            # A durable run commits the result before anyone sees it, or replays it from the log.
            arguments = {**{str(index): value for index, value in enumerate(args)}, **kwargs}
            call = services.spans.tool(self.agent, playbook, lambda: invoke(playbook, args, kwargs))
            result = await services.recorder.call(self.agent, playbook, arguments, call)
        elif playbook.metadata.meeting and self.current_meeting() is None:
            from runtime.meeting_playbooks import run_meeting_as_owner

            with services.spans.playbook(self.agent, playbook):
                result = await run_meeting_as_owner(self, playbook, args, kwargs)
        else:
            from runtime.interpreter import run_markdown

            with services.spans.playbook(self.agent, playbook):
                result = await run_markdown(self, playbook, args, kwargs)
        check_value(result, limits, f"the result of {playbook.name}")
        if trace.enabled:
            trace(self.agent, "return", playbook=playbook.name, detail=_short(result))
        return result

    async def _call_other_agent(
        self, agent_name: str, playbook_name: str, args: list[Any], kwargs: dict[str, Any]
    ) -> Any:
        target = await self.services.agents.agent_instance(agent_name)
        if target is None:
            raise CallError(f"there is no agent {agent_name} to call {agent_name}.{playbook_name}")
        playbook = target.playbooks.get(playbook_name)
        if playbook is None:
            if target.remote is not None:
                raise CallError(
                    f"remote agent {agent_name} has no tool {playbook_name}; its tools, by PAL name: "
                    f"{remote_listing(target.playbooks.values())}"
                )
            public = sorted(name for name, item in target.playbooks.items() if item.public)
            raise CallError(
                f"agent {agent_name} has no playbook {playbook_name} (public: {', '.join(public) or 'none'})"
            )
        if not playbook.public:
            raise CallError(
                f"{agent_name}.{playbook_name} is not public; mark it `public: true` to call it from another agent"
            )
        return await Execution(target).execute(playbook, args, kwargs)

    async def _call_python(self, playbook: Playbook, args: list[Any], kwargs: dict[str, Any]) -> Any:
        function = self.agent.python_function(playbook.name)
        try:
            _signature(function).bind(*args, **kwargs)
        except TypeError as error:
            raise CallError(f"{playbook.name}: {error}") from None
        except ValueError:
            pass  # builtins without a signature: let the call itself decide
        token = current_execution.set(self)
        try:
            return await call_function(function, args, kwargs)
        except (RunError, ProgramError, ControlFlow, asyncio.CancelledError):
            raise
        except Exception as error:  # the playbook's own code failed: report it as the playbook's failure
            raise PlaybookFailed(
                f"Python playbook {playbook.name} raised {type(error).__name__}: {error}",
                agent=self.agent.klass,
                playbook=playbook.name,
            ) from error
        finally:
            current_execution.reset(token)

    async def _call_remote(self, playbook: Playbook, args: list[Any], kwargs: dict[str, Any]) -> Any:
        connection = self.agent.remote
        if connection is None:
            raise CallError(f"remote agent {self.agent.klass} is not connected")
        arguments = dict(kwargs)
        for parameter, value in zip(playbook.parameters, args, strict=False):
            arguments[parameter.name] = value
        if len(args) > len(playbook.parameters):
            raise CallError(
                f"{self.agent.klass}.{playbook.name} takes {len(playbook.parameters)} arguments, got {len(args)}"
            )
        tool, arguments = remote_call(playbook, arguments)
        # The connection may talk to the user for the remote agent meanwhile (runtime.remote.ask_user).
        token = current_execution.set(self)
        try:
            return await connection.call_tool(tool, arguments)
        except RemoteCallError as error:
            raise PlaybookFailed(str(error), agent=self.agent.klass, playbook=playbook.name) from error
        finally:
            current_execution.reset(token)

    # --- messages --------------------------------------------------------------------------------

    async def say(self, target: str, text: str) -> None:
        """Send `text` to the user, the current meeting, another agent or a meeting by spec. In a meeting,
        `meeting @Name ...` gives the named attendees the turn (runtime.meeting_playbooks.meeting_receiver)."""
        targets: tuple[str, ...] = ()
        if target.strip().strip("\"'").lower().split(" ", 1)[0] == "meeting":
            from runtime.meeting_playbooks import meeting_receiver

            spec, targets = meeting_receiver(self, target.strip().strip("\"'"))
        else:
            spec = self._receiver_spec(target)
        registry = self.services.registry
        stream = await registry.open_stream(self.agent.id, spec)
        if stream.is_streaming:
            # Text to a human streams; a model's whole answer is already here, so it goes in word pieces.
            for piece in _pieces(text):
                await stream.send_chunk(piece)
            await stream.complete(target_agent_ids=targets)
        else:
            await stream.complete(text, target_agent_ids=targets)
        if spec == "human":
            self.services.transcript.append(text)
        self.agent.state.session_log.add(f"{self.agent.klass} said to {spec}: {text}")
        self.services.trace(self.agent, "message", detail=f"to {spec}: {_short(text)}")

    def _receiver_spec(self, target: str) -> str:
        cleaned = target.strip().strip("\"'")
        lowered = cleaned.lower()
        if lowered in ("user", "human", "the user"):
            return "human"
        if lowered == "meeting":
            meeting = self.current_meeting()
            if meeting is None:
                raise CallError("Say(meeting, ...) outside a meeting")
            return f"meeting {meeting}"
        if lowered.startswith(("meeting ", "agent ")):
            return cleaned
        instance = self.services.agents.instance_by_class(cleaned)
        if instance is not None:
            return instance.spec
        return cleaned

    async def wait_for_user(self) -> str:
        """Ask the run's human for input addressed to this agent; record it; return the text."""
        text = await self.services.request_user_input(self.agent)
        if text is None:
            raise InputExhausted(
                "the program is waiting for user input and none is left", agent=self.agent.klass
            )
        await self.services.registry.route_message("human", self.agent.spec, text)
        messages = await self.agent.inbox.get_batch(lambda message: message.sender_id == "human", timeout=5)
        self.receive(messages)
        return text

    async def wait_for_message(self, source: str = "*", timeout: float | None = None) -> list[Message]:
        """Wait for messages from a source (`*`, `human`, `agent 1001`, a class name, `meeting 7`)."""
        lowered = source.strip().lower()
        if lowered == "meeting" or lowered.startswith("meeting "):
            from runtime.meeting_playbooks import wait_in_meeting

            return await wait_in_meeting(self, source.strip())
        if lowered in ("human", "user"):
            pending = self.agent.inbox.peek(lambda message: message.sender_id == "human")
            if pending is None:
                await self.wait_for_user()
                return self.agent.unread[-1:]

        def matches(message: Message) -> bool:
            if lowered in ("*", ""):
                return True
            if lowered in ("human", "user"):
                return message.sender_id == "human"
            if lowered.startswith("agent "):
                return message.sender_id == lowered.split(" ", 1)[1]
            return message.sender_klass == source.strip()

        messages = await self.services.read_messages(
            self.agent, lambda: self.agent.inbox.get_batch(matches, timeout=timeout), matches
        )
        self.receive(messages)
        return messages

    def receive(self, messages: list[Message]) -> None:
        """Record messages the agent has read: session log, and unread for the next prompt."""
        for message in messages:
            self.agent.unread.append(message)
            where = f" in meeting {message.meeting_id}" if message.meeting_id else ""
            self.agent.state.session_log.add(
                f"{message.sender_klass} ({message.sender_id}){where} said: {message.content}"
            )
            self.services.trace(
                self.agent, "message", detail=f"from {message.sender_id}: {_short(message.content)}"
            )

    async def wait_for_meeting(self, meeting_id: str) -> list[Message]:
        """Wait for meeting messages with differential timeouts (`YLD for meeting`, `WaitForMessage("meeting")`);
        MEETING_ENDED ends the wait, and an attendee's wait then raises MeetingOver."""
        from pal_core.messaging import wait_for_meeting_messages

        services = self.services
        messages = await services.read_messages(
            self.agent,
            lambda: wait_for_meeting_messages(
                self.agent.inbox,
                meeting_id,
                self.agent.id,
                names=(self.agent.klass,),
                timeouts=services.meeting_timeouts,
            ),
            lambda message: message.meeting_id == meeting_id,
        )
        self.receive(messages)
        if self.meeting_ended(meeting_id) and services.meetings.meeting(meeting_id).owner_id != self.agent.id:
            raise MeetingOver(meeting_id)
        return messages

    def meeting_ended(self, meeting_id: str) -> bool:
        return any(
            message.meeting_id == meeting_id and message.message_type is MessageType.MEETING_ENDED
            for message in self.agent.unread
        )

    # --- artifacts -------------------------------------------------------------------------------

    def save_artifact(self, name: str, summary: str, content: str) -> str:
        key = name.lstrip("$")
        self.agent.state.artifacts[key] = Artifact(name=key, summary=summary, content=content)
        self.agent.state.session_log.add(f"saved artifact {key}: {summary}")
        return f"Artifact[{key}]"

    def load_artifact(self, name: str) -> Artifact:
        key = name.lstrip("$")
        artifact = self.agent.state.artifacts.get(key)
        if artifact is None:
            known = ", ".join(sorted(self.agent.state.artifacts)) or "none"
            raise CallError(f"no artifact {key!r} (saved: {known})")
        return artifact

    # --- arguments -------------------------------------------------------------------------------

    def bind_parameters(
        self, playbook: Playbook, args: list[Any], kwargs: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Match call arguments to a playbook's parameters; CallError naming what is wrong."""
        bound: dict[str, Any] = {}
        names = [parameter.name for parameter in playbook.parameters]
        if len(args) > len(names):
            raise CallError(f"{playbook.name} takes {len(names)} argument(s), got {len(args)}")
        for name, value in zip(names, args, strict=False):
            bound[name] = value
        for key, value in kwargs.items():
            key = key.lstrip("$")
            if key not in names:
                raise CallError(
                    f"{playbook.name} has no parameter ${key} (parameters: {', '.join('$' + n for n in names) or 'none'})"
                )
            if key in bound:
                raise CallError(f"{playbook.name} got two values for ${key}")
            bound[key] = value
        for parameter in playbook.parameters:
            if parameter.name in bound:
                bound[parameter.name] = coerce(bound[parameter.name], parameter.type)
                continue
            if parameter.default is None:
                raise CallError(f"{playbook.name} needs ${parameter.name}")
            try:
                bound[parameter.name] = evaluate(parameter.default, {})
            except NotEvaluable:
                bound[parameter.name] = parameter.default
        return bound


def _signature(function: Any) -> inspect.Signature:
    """A function's signature for checking arguments, computed once per `def` (inspect.signature costs tens
    of µs): a fresh run executes a python block anew, making new function objects from the same code, whose
    parameters (names, kinds, which have defaults) are the code's."""
    code = getattr(function, "__code__", None)
    if code is None:
        return inspect.signature(function)
    signature = _SIGNATURES.get(code)
    if signature is None:
        if len(_SIGNATURES) >= 1024:
            _SIGNATURES.clear()
        signature = _SIGNATURES[code] = inspect.signature(function)
    return signature


_SIGNATURES: dict[Any, inspect.Signature] = {}


def _pieces(text: str) -> list[str]:
    words = text.split(" ")
    return [word + (" " if index < len(words) - 1 else "") for index, word in enumerate(words)]


_LIMITED = reprlib.Repr()
"""A repr that stops early: trace details of a call whose argument is a long conversation stay cheap."""
_LIMITED.maxlevel, _LIMITED.maxdict, _LIMITED.maxlist, _LIMITED.maxtuple = 3, 8, 8, 8
_LIMITED.maxstring = _LIMITED.maxother = 120


def _short(value: Any, limit: int = 120) -> str:
    text = value if isinstance(value, str) else _LIMITED.repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _describe_call(name: str, args: list[Any], kwargs: Mapping[str, Any]) -> str:
    parts = [_short(arg, 40) for arg in args] + [
        f"{key}={_short(value, 40)}" for key, value in kwargs.items()
    ]
    return f"{name}({', '.join(parts)})"

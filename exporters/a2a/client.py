"""Consuming A2A agents: a remote agent (`remote: {type: a2a, url: ...}`) whose skills are its playbooks.

The runtime finds `connect` through the entry point `pal_bridge.remote: a2a`. Metadata keys:

- `url`: the agent's address; its card is read from `<url>/.well-known/agent-card.json` when the program
  starts, and the agent is called where the card says (JSON-RPC, protocol 1.0 or 0.3).
- `token_env`: the environment variable holding a bearer token (`Authorization: Bearer ...` on every
  request); `headers`: other headers (`${NAME}` is replaced by the environment variable, as in `url`).
- `timeout`: seconds one call may take, the user's answers not counted (default: no limit);
  `connect_timeout`: seconds to read the card (default 60); `idle_timeout`: seconds the agent may stay
  silent while a call runs before the call fails (default 300). Every wait is bounded.

Each skill of the card is a playbook. A skill whose arguments the card declares (a PAL server's card, its
`urn:pal-bridge:a2a:skill-schemas:v1` extension) is called with a data part `{"skill": id, "arguments":
{...}}` and typed from its schema; any other agent's skill takes one argument, `message`, sent as text (an
agent without skills gets one playbook, `Ask(message)`).

A call streams when the agent can: what the agent says on the way (its WORKING status messages) is said to
the run's user for the remote agent; INPUT_REQUIRED becomes a question on the run's user channel, and the
answer goes back on the same task; the final artifacts (else the last message) are the call's result; a
task that fails, is rejected or canceled, a stream that breaks for good, an agent that stays silent past
`idle_timeout`, are call errors saying so, never a hang. A stream that breaks while the task goes on is
followed again with SubscribeToTask / GetTask (another server behind the same address may carry on).
"""

from __future__ import annotations

import asyncio
import logging
import math
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from pal_core.ir import RemoteSpec
from runtime.errors import InputExhausted, ProgramError
from runtime.python_api import idempotency_key
from runtime.remote import RemoteCallError, RemoteTool, ask_user, expand_variables, tell_user

logger = logging.getLogger(__name__)

DEFAULT_CONNECT_TIMEOUT = 60.0
"""Seconds to read the agent card when the metadata does not say."""
DEFAULT_IDLE_TIMEOUT = 300.0
"""Seconds a remote agent may stay silent during a call when the metadata does not say."""
FOLLOW_ATTEMPTS = 3
"""Times a call follows its task again (SubscribeToTask, GetTask) after the stream broke."""
POLL_FIRST, POLL_MOST = 0.1, 2.0
"""Seconds between two reads of the task of an agent that does not stream (doubling up to the most)."""
CANCEL_TIMEOUT = 5.0
"""Seconds spent telling the remote a call was abandoned (CancelTask)."""
TEXT_ARGUMENT = "message"
"""The argument of a skill whose card declares none: the text sent."""
FALLBACK_SKILL = "Ask"
"""The one playbook of an agent whose card lists no skill."""
IDEMPOTENCY_METADATA = "pal"
"""The message metadata key carrying the call's idempotency key in a durable run (`{"pal": {...}}`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class A2AEndpoint:
    """Where a remote A2A agent is, with `${NAME}` expanded."""

    agent: str
    """The remote agent's name in the program, for messages."""
    url: str
    """The agent's base URL (its card is under it)."""
    headers: Mapping[str, str]
    """Headers of every request (the bearer token among them)."""
    call_timeout: float | None
    """Seconds one call may take, the user's answers not counted; None: no limit."""
    connect_timeout: float
    """Seconds to read the card."""
    idle_timeout: float
    """Seconds the agent may stay silent during a call."""


def endpoint_for(spec: RemoteSpec, agent_name: str) -> A2AEndpoint:
    """The endpoint a remote spec names; ProgramError saying which key is wrong and why."""
    import os

    def fail(message: str) -> ProgramError:
        return ProgramError(f"remote agent {agent_name}: {message}")

    url = expand_variables(spec.url, agent_name, "url")
    if not url or not url.startswith(("http://", "https://")):
        raise fail(f"an A2A agent needs `url: http(s)://...` (where its agent card is), got {spec.url!r}")
    if spec.command or spec.args:
        raise fail("an A2A agent is reached by `url`, not `command`/`args`")
    headers = {
        key: expand_variables(value, agent_name, f"headers.{key}") or ""
        for key, value in spec.headers.items()
    }
    token_env = spec.extra.get("token_env")
    if token_env is not None:
        if not isinstance(token_env, str) or not token_env.strip():
            raise fail(f"`token_env` must name an environment variable, got {token_env!r}")
        token = os.environ.get(token_env)
        if not token:
            raise fail(f"`token_env` names {token_env}, and that environment variable is not set (or empty)")
        headers["Authorization"] = f"Bearer {token}"
    timeouts = {}
    for key, default in (
        ("connect_timeout", DEFAULT_CONNECT_TIMEOUT),
        ("idle_timeout", DEFAULT_IDLE_TIMEOUT),
    ):
        value = spec.extra.get(key, default)
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value <= 0
        ):
            raise fail(f"`{key}` must be a positive number of seconds, got {value!r}")
        timeouts[key] = float(value)
    timeout = spec.timeout
    if timeout is not None and (not math.isfinite(timeout) or timeout <= 0):
        raise fail(f"`timeout` must be a positive number of seconds, got {timeout!r}")
    unknown = sorted(set(spec.extra) - {"token_env", "connect_timeout", "idle_timeout"})
    if unknown:
        raise fail(
            f"unknown key(s) {', '.join(unknown)} (A2A: url, token_env, headers, timeout, connect_timeout, idle_timeout)"
        )
    return A2AEndpoint(
        agent=agent_name,
        url=url.rstrip("/") + "/",
        headers=headers,
        call_timeout=timeout,
        connect_timeout=timeouts["connect_timeout"],
        idle_timeout=timeouts["idle_timeout"],
    )


async def connect(spec: RemoteSpec, agent_name: str) -> A2AConnection:
    """Read the card of the A2A agent of a remote agent (entry point `pal_bridge.remote: a2a`)."""
    from exporters.a2a import A2ASdkMissing, require_sdk

    try:
        require_sdk()
    except A2ASdkMissing as missing:
        raise ProgramError(f"remote agent {agent_name}: {missing}") from None
    connection = A2AConnection(endpoint_for(spec, agent_name))
    await connection.open()
    return connection


class A2AConnection:
    """A remote A2A agent, its card read; implements runtime.remote.RemoteConnection."""

    def __init__(self, endpoint: A2AEndpoint) -> None:
        self.endpoint = endpoint
        self.card: Any = None
        """The agent card (a2a.types.AgentCard), once open."""
        self._http: Any = None
        self._client: Any = None
        self._schemas: dict[str, dict[str, Any]] = {}

    @property
    def alive(self) -> bool:
        """Whether the connection is open (each call is a request of its own: nothing to lose between)."""
        return self._client is not None

    def _describe(self) -> str:
        return f"A2A agent at {self.endpoint.url}"

    async def open(self) -> None:
        """Read the agent card and make the SDK's client for the interface it names."""
        import httpx
        from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
        from a2a.client.errors import A2AClientError, AgentCardResolutionError

        from exporters.a2a.card import skill_schemas

        endpoint = self.endpoint
        self._http = httpx.AsyncClient(
            headers=dict(endpoint.headers),
            timeout=httpx.Timeout(endpoint.connect_timeout, read=endpoint.idle_timeout),
        )
        try:
            async with asyncio.timeout(endpoint.connect_timeout):
                card = await A2ACardResolver(self._http, endpoint.url).get_agent_card()
            config = ClientConfig(streaming=True, httpx_client=self._http)
            self._client = ClientFactory(config).create(card)
        except TimeoutError:
            await self.close()
            raise RemoteCallError(
                f"remote agent {endpoint.agent}: the {self._describe()} did not give its agent card within "
                f"{endpoint.connect_timeout:g} s (remote.connect_timeout)"
            ) from None
        except (AgentCardResolutionError, A2AClientError, httpx.HTTPError, ValueError) as error:
            await self.close()
            raise RemoteCallError(
                f"remote agent {endpoint.agent}: cannot read the agent card of the {self._describe()}: "
                f"{_describe_failure(error)}"
            ) from error
        self.card = card
        self._schemas = skill_schemas(card)

    async def list_tools(self) -> list[RemoteTool]:
        """The card's skills, each a tool (typed when the card declares its arguments)."""
        if self.card is None:
            raise RemoteCallError(f"remote agent {self.endpoint.agent}: the connection is closed")
        tools = []
        for skill in self.card.skills:
            schema = self._schemas.get(skill.id, {}).get("input_schema")
            tools.append(
                RemoteTool(
                    name=skill.id,
                    description=skill.description or skill.name,
                    input_schema=schema if isinstance(schema, dict) else _text_schema(skill.description),
                )
            )
        if not tools:
            tools.append(
                RemoteTool(
                    name=FALLBACK_SKILL,
                    description=self.card.description or f"Ask the A2A agent {self.card.name}.",
                    input_schema=_text_schema(self.card.description),
                )
            )
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Send the skill's message and follow its task to the end (see the module docstring)."""
        if self._client is None:
            raise RemoteCallError(f"remote agent {self.endpoint.agent}: the connection is closed")
        call = _Call(self, name, arguments)
        try:
            return await call.run()
        except BaseException:
            if call.task_id is not None and not call.ended:
                await call.abandon()
            raise

    async def close(self) -> None:
        """Close the HTTP client; idempotent."""
        client, self._client = self._client, None
        http, self._http = self._http, None
        if client is not None:
            try:
                await client.close()
            except Exception as error:  # closing must not hide what the caller is doing
                logger.debug("closing the A2A client: %r", error)
        if http is not None:
            await http.aclose()

    # --- what a call needs -------------------------------------------------------------------------------

    def first_message(self, name: str, arguments: Mapping[str, Any]) -> Any:
        """The message that calls skill `name`: a data part for a skill whose arguments the card declares,
        else the text of its `message` argument."""
        from a2a.types import a2a_pb2 as pb
        from google.protobuf import struct_pb2
        from google.protobuf.json_format import ParseDict

        from exporters.a2a.parts import ARGUMENTS_KEY, SKILL_KEY
        from runtime.schema import json_value

        message = pb.Message(message_id=uuid.uuid4().hex, role=pb.Role.ROLE_USER)
        if name in self._schemas:
            body = {SKILL_KEY: name, ARGUMENTS_KEY: json_value(dict(arguments))}
            message.parts.append(
                pb.Part(data=ParseDict(body, struct_pb2.Value()), media_type="application/json")
            )
        else:
            unknown = sorted(set(arguments) - {TEXT_ARGUMENT})
            if unknown:
                raise RemoteCallError(
                    f"skill {name} of the {self._describe()} takes one argument, `{TEXT_ARGUMENT}` (the text sent); "
                    f"got {', '.join(unknown)}"
                )
            message.parts.append(pb.Part(text=str(arguments.get(TEXT_ARGUMENT, ""))))
        key = idempotency_key()
        if key is not None:
            message.metadata.update({IDEMPOTENCY_METADATA: {"idempotency_key": key}})
        return message

    def output_schema(self, name: str) -> dict[str, Any] | None:
        found = self._schemas.get(name, {}).get("output_schema")
        return found if isinstance(found, dict) else None


class _Call:
    """One call: its task followed until it ends."""

    def __init__(self, connection: A2AConnection, name: str, arguments: dict[str, Any]) -> None:
        self.connection = connection
        self.name = name
        self.arguments = arguments
        self.task_id: str | None = None
        self.context_id: str | None = None
        self.ended = False
        self._artifacts: dict[str, list[Any]] = {}
        self._last_message: Any = None
        self._told: list[str] = []

    @property
    def _where(self) -> str:
        return self.connection._describe()

    async def run(self) -> Any:
        from a2a.types import a2a_pb2 as pb

        message = self.connection.first_message(self.name, self.arguments)
        while True:
            state, status = await self._exchange(message)
            if state == pb.TaskState.TASK_STATE_COMPLETED or state is None:
                self.ended = True
                return self._result()
            if state == pb.TaskState.TASK_STATE_INPUT_REQUIRED:
                question = _text(status.message) if status is not None and status.HasField("message") else ""
                told, self._told = self._told, []
                # A question the agent already said on the way (a PAL server streams it) is not said twice.
                shown = None if question and question in ("\n".join(told), *told) else question
                answer = await ask_user(
                    shown if question else f"{self.connection.card.name} asks for more input."
                )
                if answer is None:
                    raise InputExhausted(
                        f"the {self._where} asks for input ({question or 'no question given'}) and nobody can answer",
                        agent=self.connection.endpoint.agent,
                    )
                message = pb.Message(
                    message_id=uuid.uuid4().hex,
                    role=pb.Role.ROLE_USER,
                    parts=[pb.Part(text=answer)],
                    task_id=self.task_id or "",
                    context_id=self.context_id or "",
                )
                continue
            self.ended = True
            said = _text(status.message) if status is not None and status.HasField("message") else ""
            words = {
                pb.TaskState.TASK_STATE_FAILED: "failed",
                pb.TaskState.TASK_STATE_CANCELED: "was canceled",
                pb.TaskState.TASK_STATE_REJECTED: "was rejected",
                pb.TaskState.TASK_STATE_AUTH_REQUIRED: "needs authentication this client cannot give",
            }
            raise RemoteCallError(
                f"the task of skill {self.name} on the {self._where} {words.get(state, pb.TaskState.Name(state))}"
                + (f": {said}" if said else "")
            )

    async def _exchange(self, message: Any) -> tuple[Any, Any]:
        """Send `message`, follow the task until it ends or waits for input: (its state, its status); state
        None for an answer that is a message (no task)."""
        from a2a.types import a2a_pb2 as pb

        client = self.connection._client
        request = pb.SendMessageRequest(message=message)
        try:
            async with asyncio.timeout(self.connection.endpoint.call_timeout):
                outcome = await self._follow(client.send_message(request))
                if (
                    outcome is None
                    and self.task_id is not None
                    and not self.connection.card.capabilities.streaming
                ):
                    outcome = await self._poll_from_start()
                attempts = 0
                while outcome is None:  # the stream broke while the task went on
                    attempts += 1
                    if self.task_id is None or attempts > FOLLOW_ATTEMPTS:
                        last = _text(self._last_message) if self._last_message is not None else ""
                        raise RemoteCallError(
                            f"the {self._where} stopped answering before the task ended"
                            + (f" (its last word: {last})" if last else "")
                        )
                    await asyncio.sleep(0.5 * attempts)
                    outcome = await self._follow_again()
                return outcome
        except TimeoutError:
            raise RemoteCallError(
                f"no answer from the {self._where} within {self.connection.endpoint.call_timeout:g} s "
                "(remote.timeout)"
            ) from None

    async def _follow(self, events: AsyncIterator[Any]) -> tuple[Any, Any] | None:
        """Read a stream of events: (state, status) once the task ends or waits; None when the stream
        broke first (or ended with the task still working)."""
        import httpx
        from a2a.client.errors import A2AClientError, A2AClientTimeoutError
        from a2a.types import a2a_pb2 as pb
        from a2a.utils.errors import A2AError

        from exporters.a2a.tasks import INTERRUPTED, TERMINAL

        status = None
        try:
            async for event in events:
                kind = event.WhichOneof("payload")
                if kind == "message":
                    self._last_message = event.message
                    return None, None
                if kind == "task":
                    self._adopt_task(event.task)
                    status = event.task.status
                elif kind == "status_update":
                    self.task_id = self.task_id or event.status_update.task_id
                    status = event.status_update.status
                    if status.state == pb.TaskState.TASK_STATE_WORKING and status.HasField("message"):
                        said = _text(status.message)
                        if said:
                            self._told.append(said)
                            await tell_user(said)
                    if status.HasField("message"):
                        self._last_message = status.message
                elif kind == "artifact_update":
                    self._add_artifact(event.artifact_update)
                if status is not None and (status.state in TERMINAL or status.state in INTERRUPTED):
                    return status.state, status
        except A2AClientTimeoutError:
            raise RemoteCallError(
                f"the {self._where} said nothing for {self.connection.endpoint.idle_timeout:g} s (remote.idle_timeout)"
            ) from None
        except A2AError as error:
            raise RemoteCallError(
                f"the {self._where} refused the call: {_describe_failure(error)}"
            ) from error
        except (A2AClientError, httpx.HTTPError) as error:
            if self.task_id is None:
                raise RemoteCallError(
                    f"cannot reach the {self._where}: {_describe_failure(error)}"
                ) from error
            logger.info("the stream of task %s broke (%s); following it again", self.task_id, error)
            return None
        return None

    async def _poll_from_start(self) -> tuple[Any, Any] | None:
        """A blocking send answered with a task still working (an agent that does not stream): poll it."""
        from a2a.types import a2a_pb2 as pb

        task = pb.Task(id=self.task_id or "")
        return await self._poll(task)

    async def _follow_again(self) -> tuple[Any, Any] | None:
        """The stream broke: read the task again, and resubscribe while it works."""
        import httpx
        from a2a.client.errors import A2AClientError
        from a2a.types import a2a_pb2 as pb
        from a2a.utils.errors import A2AError

        from exporters.a2a.tasks import INTERRUPTED, TERMINAL

        client = self.connection._client
        try:
            task = await client.get_task(pb.GetTaskRequest(id=self.task_id))
        except (A2AClientError, A2AError, httpx.HTTPError) as error:
            logger.info("task %s: GetTask failed: %s", self.task_id, error)
            return None
        self._adopt_task(task)
        if task.status.state in TERMINAL or task.status.state in INTERRUPTED:
            return task.status.state, task.status
        if self.connection.card.capabilities.streaming:
            return await self._follow(client.subscribe(pb.SubscribeToTaskRequest(id=self.task_id)))
        return await self._poll(task)

    async def _poll(self, task: Any) -> tuple[Any, Any] | None:
        """An agent that does not stream: read the task until it ends or waits, as long as it keeps changing
        within `idle_timeout`."""
        import httpx
        from a2a.client.errors import A2AClientError
        from a2a.types import a2a_pb2 as pb
        from a2a.utils.errors import A2AError

        from exporters.a2a.tasks import INTERRUPTED, TERMINAL

        client = self.connection._client
        loop = asyncio.get_running_loop()
        seen, quiet_since, pause = task.SerializeToString(), loop.time(), POLL_FIRST
        while loop.time() - quiet_since < self.connection.endpoint.idle_timeout:
            await asyncio.sleep(pause)
            pause = min(pause * 2, POLL_MOST)
            try:
                task = await client.get_task(pb.GetTaskRequest(id=self.task_id))
            except (A2AClientError, A2AError, httpx.HTTPError) as error:
                logger.info("task %s: GetTask failed: %s", self.task_id, error)
                return None
            self._adopt_task(task)
            if task.status.state in TERMINAL or task.status.state in INTERRUPTED:
                return task.status.state, task.status
            now = task.SerializeToString()
            if now != seen:
                seen, quiet_since, pause = now, loop.time(), POLL_FIRST
        raise RemoteCallError(
            f"the {self._where} said nothing for {self.connection.endpoint.idle_timeout:g} s (remote.idle_timeout)"
        )

    def _adopt_task(self, task: Any) -> None:
        self.task_id = task.id or self.task_id
        self.context_id = task.context_id or self.context_id
        for artifact in task.artifacts:
            self._artifacts[artifact.artifact_id] = list(artifact.parts)
        if task.status.HasField("message"):
            self._last_message = task.status.message

    def _add_artifact(self, update: Any) -> None:
        artifact = update.artifact
        parts = self._artifacts.setdefault(artifact.artifact_id, [])
        if not update.append:
            parts.clear()
        parts.extend(artifact.parts)

    def _result(self) -> Any:
        """The call's value: the artifacts' parts (one data part: its value; else the text), else the last
        message the agent sent."""
        from exporters.a2a.parts import parts_value

        parts = [part for parts in self._artifacts.values() for part in parts]
        if not parts and self._last_message is not None:
            parts = list(self._last_message.parts)
        value = parts_value(parts)
        schema = self.connection.output_schema(self.name)
        result = (schema or {}).get("properties", {}).get("result") if schema else None
        if isinstance(result, dict) and result.get("type") == "number" and isinstance(value, int):
            return float(value)  # the wire's doubles were read back as whole numbers
        return value

    async def abandon(self) -> None:
        """The call is given up (cancelled, failed here): cancel the remote task, briefly, best effort."""
        from a2a.types import a2a_pb2 as pb

        client = self.connection._client
        if client is None or self.task_id is None:
            return
        try:
            async with asyncio.timeout(CANCEL_TIMEOUT):
                await client.cancel_task(pb.CancelTaskRequest(id=self.task_id))
        except BaseException as error:  # best effort: the caller's own outcome matters
            if isinstance(error, asyncio.CancelledError):
                raise
            logger.debug("cancelling task %s: %r", self.task_id, error)


def _text_schema(description: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            TEXT_ARGUMENT: {"type": "string", "description": description or "What to ask the agent."}
        },
        "required": [TEXT_ARGUMENT],
    }


def _text(message: Any) -> str:
    from exporters.a2a.parts import message_text

    return message_text(message)


def _describe_failure(error: BaseException) -> str:
    """An exception in words (SDK errors carry their message; others their type too); a refused token says
    so."""
    status = _http_status(error)
    if status in (401, 403):
        return (
            f"HTTP {status}: the agent refused this client's credentials (check `token_env` and `headers` of the "
            "remote agent)"
        )
    text = str(error) or type(error).__name__
    message = getattr(error, "message", None)
    if isinstance(message, str) and message:
        text = message
    return text if type(error).__name__ in text else f"{text} ({type(error).__name__})"


def _http_status(error: BaseException | None) -> int | None:
    """The HTTP status behind an error (the SDK wraps httpx's), if any."""
    import httpx

    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, httpx.HTTPStatusError):
            return error.response.status_code
        status = getattr(error, "status_code", None)
        if isinstance(status, int):
            return status
        error = error.__cause__ or error.__context__
        seen += 1
    return None

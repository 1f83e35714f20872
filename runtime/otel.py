"""The spans of runs through OpenTelemetry (runtime.telemetry says when; docs/observability.md says what).

Names and attributes follow the GenAI semantic conventions: a run is `invoke_workflow {program}`, an agent
`invoke_agent {Agent}`, a model call `chat {model}` (kind CLIENT), a Python or remote call `execute_tool
{Playbook}`; a markdown playbook call, which the conventions do not name, is `playbook {Agent.Playbook}`. PAL
adds `pal.*` attributes: the step, the verifier's verdict, the steps a turn executed, repair and rejection
codes (with their messages as span events), whether an answer or result was replayed from the thread's log.

Imported only when spans are on. The spans a run makes per model turn and per Python call sit on the path
of every turn, so the work here is kept small: attribute sets that do not change are built once per run, per
agent and per playbook, and each span's attributes are given in one call.
"""

from __future__ import annotations

import asyncio
import os
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode

from pal_core.contract.verify import ExecutedStep
from pal_core.ir import PlaybookKind
from runtime.errors import ControlFlow, InputExhausted
from runtime.models.base import RequestKind
from runtime.python_api import current_call
from runtime.telemetry import INSTRUMENTATION, Invoke

if TYPE_CHECKING:
    from pal_core.contract.verify import VerifiedTurn
    from pal_core.ir import Playbook
    from runtime.agent import AgentInstance
    from runtime.models.base import ModelRequest, ModelResponse

_BENIGN = (ControlFlow, InputExhausted, asyncio.CancelledError, GeneratorExit, KeyboardInterrupt)
"""What leaves a span without failing it: the control flow a run uses to exit or leave a meeting, a task
cancelled, a run that stops to wait for the user."""
MAX_TEXT = 1000
"""Characters of a message (a rejection, a failure) kept in a span's event or status."""


class OtelTelemetry:
    """Spans through the OpenTelemetry API, into one tracer provider: the one given, else the one the process
    has, else a new one exporting over OTLP/HTTP (set as the process's)."""

    def __init__(self, tracer_provider: Any = None) -> None:
        provider = tracer_provider
        if provider is None:
            current = trace.get_tracer_provider()
            if isinstance(current, trace.ProxyTracerProvider):  # nobody set one: ours, exporting OTLP/HTTP
                provider = _otlp_provider()
                trace.set_tracer_provider(provider)
            else:
                provider = current
        self.provider = provider
        """Where the spans go."""
        self.tracer = provider.get_tracer(INSTRUMENTATION, _version())

    def for_run(self, *, program: str, thread: str, model: str | None) -> OtelSpans:
        return OtelSpans(self.tracer, program=program, thread=thread, model=model)

    def flush(self, timeout_seconds: float = 10.0) -> None:
        """Export the spans still buffered."""
        flush_spans = getattr(self.provider, "force_flush", None)
        if callable(flush_spans):
            flush_spans(int(timeout_seconds * 1000))


def _otlp_provider() -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME") or "pal-bridge"})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("pal-bridge")
    except PackageNotFoundError:
        return "0"


_pending: ContextVar[tuple[Any, Any, dict[str, Any]] | None] = ContextVar("pal_pending_chat", default=None)
"""(request, span, the answer's attributes) of this task's last playbook-turn model call, open until the
verifier's verdict."""


def _close_pending() -> None:
    """End a turn's span that never got its verdict (the turn failed between the call and the verifier)."""
    pending = _pending.get()
    if pending is not None:
        _pending.set(None)
        if pending[2]:
            pending[1].set_attributes(pending[2])
        pending[1].end()


class _Scope:
    """A span, current while the block runs; a failure leaving the block marks it."""

    __slots__ = ("_attributes", "_kind", "_name", "_token", "_tracer", "span")

    def __init__(self, tracer: Any, name: str, attributes: dict[str, Any], kind: SpanKind) -> None:
        self._tracer = tracer
        self._name = name
        self._attributes = attributes
        self._kind = kind
        self.span: Any = None
        self._token: Any = None

    def __enter__(self) -> _Scope:
        self.span = span = self._tracer.start_span(self._name, kind=self._kind, attributes=self._attributes)
        self._token = otel_context.attach(trace.set_span_in_context(span))
        return self

    def __exit__(self, kind: Any, error: BaseException | None, traceback: Any) -> None:
        otel_context.detach(self._token)
        _close_pending()
        failed = error is not None and _mark(self.span, error)
        self._end(failed)

    def _end(self, failed: bool) -> None:
        self.span.end()

    def ended(self, status: str, reason: str) -> None:
        """How the run ended (the run's span)."""
        attributes: dict[str, Any] = {"pal.run.status": status}
        if reason:
            attributes["pal.run.reason"] = reason[:MAX_TEXT]
        self.span.set_attributes(attributes)
        if status == "error":
            self.span.set_attribute("error.type", "RunError")
            self.span.set_status(Status(StatusCode.ERROR, reason[:MAX_TEXT]))


class _Chat(_Scope):
    """A model call's span; a playbook turn's stays open until the verifier's verdict (`OtelSpans.judged`).
    What the answer says is kept until then, so the span's attributes are set once."""

    __slots__ = ("_answer", "_model", "_request")

    def __init__(
        self, tracer: Any, name: str, attributes: dict[str, Any], request: ModelRequest, model: str
    ) -> None:
        super().__init__(tracer, name, attributes, SpanKind.CLIENT)
        self._request = request
        self._model = model
        self._answer: dict[str, Any] = {}

    def __enter__(self) -> _Chat:
        _close_pending()
        super().__enter__()
        return self

    def _end(self, failed: bool) -> None:
        if self._request.kind is RequestKind.TURN and not failed:
            _pending.set((self._request, self.span, self._answer))
            return
        if self._answer:
            self.span.set_attributes(self._answer)
        self.span.end()

    def answered(self, response: ModelResponse, *, replayed: bool) -> None:
        usage = response.usage
        self._answer = answer = {
            "gen_ai.usage.input_tokens": usage.prompt_tokens,
            "gen_ai.usage.output_tokens": usage.completion_tokens,
        }
        if replayed:
            answer["pal.replayed"] = True
        if response.model != self._model:
            answer["gen_ai.response.model"] = response.model


class OtelSpans:
    """The spans of one run."""

    def __init__(self, tracer: Any, *, program: str, thread: str, model: str | None) -> None:
        self.tracer = tracer
        self.program = program
        self.model = model or "unknown"
        self._common: dict[str, Any] = {"gen_ai.conversation.id": thread} if thread else {}
        self._provider: dict[str, Any] = {"gen_ai.provider.name": provider_of(model)} if model else {}
        self._agents: dict[str, dict[str, Any]] = {}
        self._playbooks: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        self._tools: dict[tuple[str, str], tuple[str, dict[str, Any]]] = {}
        self._chat_name = f"chat {self.model}"

    def _agent(self, agent: AgentInstance) -> dict[str, Any]:
        found = self._agents.get(agent.id)
        if found is None:
            found = self._agents[agent.id] = {
                "gen_ai.agent.name": agent.klass,
                "gen_ai.agent.id": str(agent.id),
                **self._common,
            }
        return found

    def run(self) -> _Scope:
        attributes = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": self.program,
            "pal.program": self.program,
            **self._common,
        }
        return _Scope(self.tracer, f"invoke_workflow {self.program}", attributes, SpanKind.INTERNAL)

    def agent(self, agent: AgentInstance) -> _Scope:
        attributes = {"gen_ai.operation.name": "invoke_agent", **self._provider, **self._agent(agent)}
        return _Scope(self.tracer, f"invoke_agent {agent.klass}", attributes, SpanKind.INTERNAL)

    def playbook(self, agent: AgentInstance, playbook: Playbook) -> _Scope:
        key = (agent.id, playbook.name)
        found = self._playbooks.get(key)
        if found is None:
            qualified = f"{agent.klass}.{playbook.name}"
            attributes = {
                **self._agent(agent),
                "pal.playbook": qualified,
                "pal.playbook.kind": playbook.kind.value,
            }
            found = self._playbooks[key] = (f"playbook {qualified}", attributes)
        return _Scope(self.tracer, found[0], found[1], SpanKind.INTERNAL)

    def chat(self, agent: AgentInstance, request: ModelRequest) -> _Chat:
        # The conventions' attributes that identify the call; the rest (settings of the run, the agent's id)
        # are on the run's and the agent's spans, as every span on a model turn's path costs the turn.
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            **self._provider,
            "gen_ai.request.model": self.model,
            "gen_ai.agent.name": agent.klass,
            **self._common,
        }
        if request.kind is not RequestKind.TURN:
            attributes["pal.request.kind"] = request.kind.value
        if request.seed is not None:
            attributes["gen_ai.request.seed"] = request.seed
        line = request.metadata.get("line")
        if line:
            attributes["pal.step"] = str(line)  # the playbook is its parent span's
        return _Chat(self.tracer, self._chat_name, attributes, request, self.model)

    def judged(
        self,
        agent: AgentInstance,
        request: ModelRequest,
        *,
        turn: VerifiedTurn | None = None,
        problems: list[str] | None = None,
    ) -> None:
        pending = _pending.get()
        if pending is None or pending[0] is not request:
            return
        _pending.set(None)
        _, span, attributes = pending
        if turn is not None:
            attributes["pal.verdict"] = "accepted"
            attributes["pal.steps"] = [
                action.step.line for action in turn.actions if isinstance(action, ExecutedStep)
            ]
            if turn.repairs:
                attributes["pal.repair.codes"] = [repaired.code for repaired in turn.repairs]
                for repaired in turn.repairs:
                    span.add_event(
                        "pal.repair", {"pal.code": repaired.code, "pal.message": repaired.format()}
                    )
        elif problems is not None:
            attributes["pal.verdict"] = "rejected"
            attributes["pal.rejection.codes"] = [_code(problem) for problem in problems]
            for problem in problems:
                span.add_event(
                    "pal.rejection", {"pal.code": _code(problem), "pal.message": problem[:MAX_TEXT]}
                )
        span.set_attributes(attributes)
        span.end()

    def tool(self, agent: AgentInstance, playbook: Playbook, invoke: Invoke) -> Invoke:
        key = (agent.id, playbook.name)
        found = self._tools.get(key)
        if found is None:
            remote = playbook.kind is PlaybookKind.REMOTE
            attributes = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": playbook.name,
                "gen_ai.tool.type": "extension" if remote else "function",
                **self._agent(agent),
                "pal.call.via": "remote" if remote else "python",
            }
            if playbook.description:
                attributes["gen_ai.tool.description"] = playbook.description[:MAX_TEXT]
            found = self._tools[key] = (f"execute_tool {playbook.name}", attributes)
        name, attributes = found
        tracer = self.tracer

        async def traced() -> Any:
            call = current_call.get()
            shown = attributes if call is None else {**attributes, "gen_ai.tool.call.id": call.key}
            with _Scope(tracer, name, shown, SpanKind.INTERNAL):
                return await invoke()

        return traced


def _mark(span: Any, error: BaseException) -> bool:
    """Mark the span with `error` if it is a failure; whether it was."""
    if isinstance(error, _BENIGN):
        return False
    span.record_exception(error)
    span.set_attribute("error.type", type(error).__qualname__)
    span.set_status(Status(StatusCode.ERROR, str(error)[:MAX_TEXT]))
    return True


def _code(problem: str) -> str:
    first = problem.split(" ", 1)[0]
    return first if first[:1] in ("V", "R", "P") and any(char.isdigit() for char in first) else "?"


def provider_of(model: str | None) -> str:
    """The `gen_ai.provider.name` of a model string: the litellm provider (`openai/gpt-4o` -> `openai`; a bare
    name is OpenAI's, as litellm reads it), `pal.local` for the bundled model, `pal.scripted`, `pal.replay`
    and `pal.record` for pal-bridge's own models."""
    if not model:
        return "unknown"
    if model.startswith("local/"):
        return "pal.local"
    for prefix in ("scripted", "replay", "record"):
        if model.startswith(prefix):
            return f"pal.{prefix}"
    return model.split("/", 1)[0].lower() if "/" in model else "openai"

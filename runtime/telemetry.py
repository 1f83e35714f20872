"""OpenTelemetry spans of runs (docs/observability.md): a run, each agent, each playbook call, each model call
(`chat`), each Python or remote call (`execute_tool`), named and described as the GenAI semantic conventions
say, plus PAL's own attributes (the step, the verifier's verdict, repair and rejection codes).

The runtime tells a `Spans` object where work begins and ends, as it tells its `Recorder` what to commit; it
never asks whether telemetry is on. A run nobody observes has `NO_SPANS`, whose context managers do nothing
and whose `tool` hands the call back unwrapped, so spans cost nothing when off. `OtelSpans` opens real spans
through the OpenTelemetry API (the `otel` extra, imported only when spans are on).

Spans are on in a process when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set,
or `pal run --otel` asks for them (`enable()`); `OTEL_SDK_DISABLED=true` keeps them off. They go to the
tracer provider the process already has, or to one made here that exports over OTLP/HTTP (the SDK reads the
usual OTEL_* variables: endpoint, headers, service name).
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pal_core.contract.verify import VerifiedTurn
    from pal_core.ir import Playbook
    from runtime.agent import AgentInstance
    from runtime.models.base import ModelRequest, ModelResponse

INSTRUMENTATION = "pal-bridge"
"""The name spans are created under (the tracer's name)."""
ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
"""Either one set turns spans on."""
INSTALL_HINT = "OpenTelemetry spans need the otel extra: pip install 'pal-bridge[otel]'"

Invoke = Callable[[], Awaitable[Any]]
"""A Python or remote call, ready to make."""


class ChatSpan(Protocol):
    """A model call's span, told what came back."""

    def answered(self, response: ModelResponse, *, replayed: bool) -> None:
        """The model's answer (`replayed`: read from the thread's log, no model call)."""
        ...


class RunSpan(Protocol):
    """A run's span, told how the run ended."""

    def ended(self, status: str, reason: str) -> None: ...


class Spans(Protocol):
    """Where a run's work begins and ends, for whoever describes it in spans."""

    def run(self) -> AbstractContextManager[RunSpan]:
        """The whole run."""
        ...

    def agent(self, agent: AgentInstance) -> AbstractContextManager[None]:
        """An agent's life in the run."""
        ...

    def playbook(self, agent: AgentInstance, playbook: Playbook) -> AbstractContextManager[None]:
        """A call of one of the agent's playbooks."""
        ...

    def chat(self, agent: AgentInstance, request: ModelRequest) -> AbstractContextManager[ChatSpan]:
        """A model call. The span of a playbook turn's call stays open until `judged`, so it carries the
        verifier's verdict (it is closed anyway when the agent's next call starts, or its playbook ends)."""
        ...

    def judged(
        self,
        agent: AgentInstance,
        request: ModelRequest,
        *,
        turn: VerifiedTurn | None = None,
        problems: list[str] | None = None,
    ) -> None:
        """The verifier's verdict on the answer to `request`: accepted (`turn`) or rejected (`problems`)."""
        ...

    def tool(self, agent: AgentInstance, playbook: Playbook, invoke: Invoke) -> Invoke:
        """A Python or remote call, wrapped so that making it opens its span (a call answered from the
        thread's log is not made, and has none)."""
        ...


class Telemetry(Protocol):
    """Makes the `Spans` of each run of a process."""

    def for_run(self, *, program: str, thread: str, model: str | None) -> Spans:
        """The spans of one run of `program` (its name), recorded in `thread` (empty: none)."""
        ...


# --- nobody observes -------------------------------------------------------------------------------------------


class _Nothing:
    """A context manager, chat span and run span that does nothing (one shared instance)."""

    __slots__ = ()

    def __enter__(self) -> _Nothing:
        return self

    def __exit__(self, *exc_info: object) -> None:
        return None

    def answered(self, response: ModelResponse, *, replayed: bool) -> None:
        return None

    def ended(self, status: str, reason: str) -> None:
        return None


_NOTHING = _Nothing()


class NoSpans:
    """The spans of a run nobody observes: nothing is made, and a call is handed back as it is."""

    __slots__ = ()

    def run(self) -> _Nothing:
        return _NOTHING

    def agent(self, agent: AgentInstance) -> _Nothing:
        return _NOTHING

    def playbook(self, agent: AgentInstance, playbook: Playbook) -> _Nothing:
        return _NOTHING

    def chat(self, agent: AgentInstance, request: ModelRequest) -> _Nothing:
        return _NOTHING

    def judged(
        self,
        agent: AgentInstance,
        request: ModelRequest,
        *,
        turn: VerifiedTurn | None = None,
        problems: list[str] | None = None,
    ) -> None:
        return None

    def tool(self, agent: AgentInstance, playbook: Playbook, invoke: Invoke) -> Invoke:
        return invoke

    def for_run(self, *, program: str, thread: str, model: str | None) -> NoSpans:
        return self


NO_SPANS = NoSpans()
"""The spans of runs nobody observes (also the Telemetry of a process without spans)."""


# --- which telemetry a process has -------------------------------------------------------------------------------

_lock = threading.Lock()
_process: Telemetry | None = None


def telemetry() -> Telemetry:
    """The process's telemetry: `OtelTelemetry` once `enable()` was called or an OTLP endpoint variable is
    set (and OTEL_SDK_DISABLED is not true), else NO_SPANS. Decided once, on first use."""
    global _process
    found = _process
    if found is not None:
        return found
    with _lock:
        if _process is None:
            wanted = any(os.environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)
            _process = _open() if wanted and not _disabled() else NO_SPANS
        return _process


def enable(*, tracer_provider: Any = None) -> Telemetry:
    """Turn spans on for this process (`pal run --otel`): into `tracer_provider`, else the provider the
    process has, else a new one exporting over OTLP/HTTP (default endpoint http://localhost:4318). ImportError
    with the install hint when the otel extra is missing."""
    global _process
    with _lock:
        _process = _open(tracer_provider)
        return _process


def reset() -> None:
    """Forget the process's telemetry (tests; the next run decides again)."""
    global _process
    with _lock:
        _process = None


def flush(timeout_seconds: float = 10.0) -> None:
    """Export the spans still buffered (a command line does this before it exits)."""
    found = _process
    if isinstance(found, OtelTelemetry):
        found.flush(timeout_seconds)


def _disabled() -> bool:
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def _open(tracer_provider: Any = None) -> OtelTelemetry:
    try:
        return OtelTelemetry(tracer_provider)
    except ImportError as error:
        raise ImportError(f"{INSTALL_HINT} ({error})") from error


# --- OpenTelemetry -------------------------------------------------------------------------------------------------


class OtelTelemetry:
    """Spans through the OpenTelemetry API, into one tracer provider."""

    def __init__(self, tracer_provider: Any = None) -> None:
        from opentelemetry import trace

        provider = tracer_provider
        self._made = None
        if provider is None:
            current = trace.get_tracer_provider()
            if isinstance(
                current, trace.ProxyTracerProvider
            ):  # nobody set one: make ours, exporting OTLP/HTTP
                provider = self._made = _otlp_provider()
                trace.set_tracer_provider(provider)
            else:
                provider = current
        self.provider = provider
        """Where the spans go."""
        self.tracer = provider.get_tracer(INSTRUMENTATION, _version())

    def for_run(self, *, program: str, thread: str, model: str | None) -> OtelSpans:
        return OtelSpans(self.tracer, program=program, thread=thread, model=model)

    def flush(self, timeout_seconds: float = 10.0) -> None:
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


_pending: ContextVar[tuple[Any, Any] | None] = ContextVar("pal_pending_chat_span", default=None)
"""(request, span) of this task's last playbook-turn model call, open until the verifier's verdict."""


def _close_pending() -> None:
    """End a turn's span that never got its verdict (the turn failed between the call and the verifier)."""
    pending = _pending.get()
    if pending is not None:
        _pending.set(None)
        pending[1].end()


class OtelSpans:
    """The spans of one run (GenAI semantic conventions, and `pal.*` attributes)."""

    def __init__(self, tracer: Any, *, program: str, thread: str, model: str | None) -> None:
        self.tracer = tracer
        self.program = program
        self.thread = thread
        self.model = model
        self._common: dict[str, Any] = {"gen_ai.conversation.id": thread} if thread else {}

    @contextlib.contextmanager
    def run(self) -> Iterator[_RunSpan]:
        attributes = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": self.program,
            "pal.program": self.program,
            **self._common,
        }
        with self._span(f"invoke_workflow {self.program}", attributes) as span:
            yield _RunSpan(span)

    @contextlib.contextmanager
    def agent(self, agent: AgentInstance) -> Iterator[None]:
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": agent.klass,
            "gen_ai.agent.id": str(agent.id),
            **self._provider(),
            **self._common,
        }
        with self._span(f"invoke_agent {agent.klass}", attributes):
            yield

    @contextlib.contextmanager
    def playbook(self, agent: AgentInstance, playbook: Playbook) -> Iterator[None]:
        attributes = {
            "gen_ai.agent.name": agent.klass,
            "gen_ai.agent.id": str(agent.id),
            "pal.playbook": f"{agent.klass}.{playbook.name}",
            "pal.playbook.kind": playbook.kind.value,
            **self._common,
        }
        with self._span(f"playbook {agent.klass}.{playbook.name}", attributes):
            yield

    @contextlib.contextmanager
    def chat(self, agent: AgentInstance, request: ModelRequest) -> Iterator[ChatSpan]:
        from opentelemetry import trace
        from opentelemetry.trace import SpanKind

        from runtime.models.base import RequestKind

        _close_pending()
        metadata = request.metadata
        model = self.model or "unknown"
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            **self._provider(),
            "gen_ai.request.model": model,
            "gen_ai.request.max_tokens": request.max_tokens,
            "gen_ai.request.temperature": request.temperature,
            "gen_ai.agent.name": agent.klass,
            "gen_ai.agent.id": str(agent.id),
            "pal.request.kind": request.kind.value,
            **self._common,
        }
        if request.seed is not None:
            attributes["gen_ai.request.seed"] = request.seed
        for key, name in (("playbook", "pal.playbook"), ("line", "pal.step")):
            if metadata.get(key):
                attributes[name] = str(metadata[key])
        span = self.tracer.start_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes)
        try:
            with trace.use_span(
                span, end_on_exit=False, record_exception=False, set_status_on_exception=False
            ):
                yield _ChatSpan(span)
        except BaseException as error:
            _mark(span, error)
            span.end()
            raise
        if request.kind is RequestKind.TURN:
            _pending.set((request, span))  # ended by `judged`, with the verdict
        else:
            span.end()

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
        span = pending[1]
        if turn is not None:
            from pal_core.contract.verify import ExecutedStep

            span.set_attribute("pal.verdict", "accepted")
            steps = [action.step.line for action in turn.actions if isinstance(action, ExecutedStep)]
            span.set_attribute("pal.steps", steps)
            if turn.repairs:
                span.set_attribute("pal.repair.codes", [repaired.code for repaired in turn.repairs])
                for repaired in turn.repairs:
                    span.add_event(
                        "pal.repair", {"pal.code": repaired.code, "pal.message": repaired.format()}
                    )
            if turn.next_line:
                span.set_attribute("pal.next_step", str(turn.next_line))
        elif problems is not None:
            span.set_attribute("pal.verdict", "rejected")
            span.set_attribute("pal.rejection.codes", [_code(problem) for problem in problems])
            for problem in problems:
                span.add_event("pal.rejection", {"pal.code": _code(problem), "pal.message": problem[:1000]})
        span.end()

    def tool(self, agent: AgentInstance, playbook: Playbook, invoke: Invoke) -> Invoke:
        from pal_core.ir import PlaybookKind

        remote = playbook.kind is PlaybookKind.REMOTE
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": playbook.name,
            "gen_ai.tool.type": "extension" if remote else "function",
            "gen_ai.agent.name": agent.klass,
            "gen_ai.agent.id": str(agent.id),
            "pal.call.via": "remote" if remote else "python",
            **self._common,
        }
        if playbook.description:
            attributes["gen_ai.tool.description"] = playbook.description[:500]

        async def traced() -> Any:
            from runtime.python_api import current_call

            call = current_call.get()
            if call is not None and getattr(call, "key", None):
                attributes["gen_ai.tool.call.id"] = call.key
            with self._span(f"execute_tool {playbook.name}", attributes):
                return await invoke()

        return traced

    def _provider(self) -> dict[str, str]:
        return {"gen_ai.provider.name": provider_of(self.model)} if self.model else {}

    @contextlib.contextmanager
    def _span(self, name: str, attributes: dict[str, Any], *, kind: Any = None) -> Iterator[Any]:
        """A span current while the block runs; an exception that is a run's failure marks it (the control
        flow a run uses to exit, stop a meeting or cancel a task does not)."""
        from opentelemetry.trace import SpanKind

        with self.tracer.start_as_current_span(
            name,
            kind=kind or SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                yield span
            except BaseException as error:
                _mark(span, error)
                raise
            finally:
                _close_pending()


def _mark(span: Any, error: BaseException) -> None:
    if _failure(error):
        from opentelemetry.trace import Status, StatusCode

        span.record_exception(error)
        span.set_attribute("error.type", type(error).__qualname__)
        span.set_status(Status(StatusCode.ERROR, str(error)[:500]))


def _failure(error: BaseException) -> bool:
    """Whether an exception leaving a span is a failure: not the control flow a run uses to exit or leave a
    meeting, a cancelled task, or a run that stops to wait for the user (InputExhausted)."""
    import asyncio

    from runtime.errors import ControlFlow, InputExhausted

    benign = ControlFlow | InputExhausted | asyncio.CancelledError | GeneratorExit | KeyboardInterrupt
    return not isinstance(error, benign)


class _RunSpan:
    __slots__ = ("span",)

    def __init__(self, span: Any) -> None:
        self.span = span

    def ended(self, status: str, reason: str) -> None:
        self.span.set_attribute("pal.run.status", status)
        if reason:
            self.span.set_attribute("pal.run.reason", reason[:500])
        if status == "error":
            from opentelemetry.trace import Status, StatusCode

            self.span.set_attribute("error.type", "RunError")
            self.span.set_status(Status(StatusCode.ERROR, reason[:500]))


class _ChatSpan:
    __slots__ = ("span",)

    def __init__(self, span: Any) -> None:
        self.span = span

    def answered(self, response: ModelResponse, *, replayed: bool) -> None:
        span = self.span
        span.set_attribute("gen_ai.response.model", response.model)
        span.set_attribute("gen_ai.usage.input_tokens", response.usage.prompt_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", response.usage.completion_tokens)
        span.set_attribute("pal.replayed", replayed)


def _code(problem: str) -> str:
    first = problem.split(" ", 1)[0]
    return first if first[:1] in ("V", "R", "P") and any(char.isdigit() for char in first) else "?"


def provider_of(model: str | None) -> str:
    """The `gen_ai.provider.name` of a model string: the litellm provider (`openai/gpt-4o` -> `openai`; a bare
    name is OpenAI's, as litellm reads it), `pal.local` for the bundled model, `pal.scripted`, `pal.replay`
    and `pal.record` for pal-bridge's own models (a recording names the provider it records after `=`)."""
    if not model:
        return "unknown"
    if model.startswith("local/"):
        return "pal.local"
    for prefix in ("scripted", "replay", "record"):
        if model.startswith(prefix):
            return f"pal.{prefix}"
    return model.split("/", 1)[0].lower() if "/" in model else "openai"

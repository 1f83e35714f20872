"""OpenTelemetry spans of runs (docs/observability.md): a run, each agent, each playbook call, each model call
(`chat`), each Python or remote call (`execute_tool`), named and described as the GenAI semantic conventions
say, plus PAL's own attributes (the step, the verifier's verdict, repair and rejection codes).

The runtime tells a `Spans` object where work begins and ends, as it tells its `Recorder` what to commit; it
never asks whether telemetry is on. A run nobody observes has `NO_SPANS`, whose context managers do nothing
and whose `tool` hands the call back unwrapped, so spans cost nothing when off. `OtelSpans` opens real spans
through the OpenTelemetry API (runtime.otel; the `otel` extra, imported only when spans are on).

Spans are on in a process when `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set,
or `pal run --otel` asks for them (`enable()`); `OTEL_SDK_DISABLED=true` keeps them off. They go to the
tracer provider the process already has, or to one made here that exports over OTLP/HTTP (the SDK reads the
usual OTEL_* variables: endpoint, headers, service name).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
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
    flush_spans = getattr(_process, "flush", None)
    if callable(flush_spans):
        flush_spans(timeout_seconds)


def _disabled() -> bool:
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def _open(tracer_provider: Any = None) -> Telemetry:
    try:
        from runtime.otel import OtelTelemetry

        return OtelTelemetry(tracer_provider)
    except ImportError as error:
        raise ImportError(f"{INSTALL_HINT} ({error})") from error

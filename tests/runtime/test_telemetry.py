"""OpenTelemetry spans of runs (runtime.telemetry): a run, its agents, playbook calls, model calls (`chat`,
with the verifier's verdict) and Python calls (`execute_tool`), with the GenAI semantic conventions'
attributes and PAL's; none at all when spans are off; and one export over OTLP/HTTP, from `pal run --otel`,
to a receiver this test runs on loopback."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from runtime import telemetry
from runtime.session import ProgramSession
from runtime.store import open_store
from tests.runtime.session.processes import environment
from tests.runtime.studio.threads import DESK, DESK_ANSWERS, desk_model, desk_thread

pytestmark = pytest.mark.anyio


@pytest.fixture
def exporter(monkeypatch: pytest.MonkeyPatch) -> Iterator[InMemorySpanExporter]:
    """Spans on for this process, into the SDK's in-memory exporter; off again afterwards."""
    for name in telemetry.ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    telemetry.enable(tracer_provider=provider)
    yield memory
    telemetry.reset()


def _by_name(spans: tuple[ReadableSpan, ...], prefix: str) -> list[ReadableSpan]:
    return sorted(
        (span for span in spans if span.name.startswith(prefix)), key=lambda span: span.start_time or 0
    )


async def test_a_runs_spans_nest_and_carry_the_conventions_attributes(exporter: InMemorySpanExporter) -> None:
    async with open_store("memory://") as store:
        result = await desk_thread(store, "d1")
    assert result.status == "needs_input"
    spans = exporter.get_finished_spans()
    (run,) = _by_name(spans, "invoke_workflow")
    (agent,) = _by_name(spans, "invoke_agent")
    (playbook,) = _by_name(spans, "playbook")
    chats = _by_name(spans, "chat")
    (tool,) = _by_name(spans, "execute_tool")
    assert run.name == "invoke_workflow desk.pal" and run.parent is None
    assert run.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert (run.attributes["gen_ai.conversation.id"], run.attributes["pal.run.status"]) == (
        "d1",
        "needs_input",
    )
    assert agent.name == "invoke_agent Desk" and agent.parent.span_id == run.context.span_id
    assert (agent.attributes["gen_ai.agent.name"], agent.attributes["gen_ai.agent.id"]) == ("Desk", "1000")
    assert playbook.name == "playbook Desk.Main" and playbook.parent.span_id == agent.context.span_id
    # Four model calls: the third answer rejected (V03), the fourth accepted with a repair (R01).
    assert [chat.name for chat in chats] == [f"chat scripted:{DESK_ANSWERS}"] * 4
    assert all(chat.parent.span_id == playbook.context.span_id for chat in chats)
    assert all(chat.kind is SpanKind.CLIENT for chat in chats)
    first = chats[0].attributes
    assert first["gen_ai.operation.name"] == "chat" and first["gen_ai.provider.name"] == "pal.scripted"
    assert (first["gen_ai.conversation.id"], first["gen_ai.agent.name"]) == ("d1", "Desk")
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (0, 0)
    assert [chat.attributes["pal.step"] for chat in chats] == ["01", "03", "05", "05"]
    assert [chat.attributes["pal.verdict"] for chat in chats] == [
        "accepted",
        "accepted",
        "rejected",
        "accepted",
    ]
    assert tuple(chats[0].attributes["pal.steps"]) == ("01", "02")
    assert tuple(chats[2].attributes["pal.rejection.codes"]) == ("V03",)
    assert [event.name for event in chats[2].events] == ["pal.rejection"]
    assert "step 07 cannot follow step 05.01" in chats[2].events[0].attributes["pal.message"]
    assert tuple(chats[3].attributes["pal.repair.codes"]) == ("R01",)
    assert not any("pal.replayed" in chat.attributes for chat in chats)
    # The Python call, between the second and third model calls.
    assert tool.name == "execute_tool Lookup" and tool.parent.span_id == playbook.context.span_id
    assert tool.attributes["gen_ai.tool.type"] == "function" and tool.attributes["pal.call.via"] == "python"
    assert tool.attributes["gen_ai.tool.call.id"] == "d1#Desk:1"  # the call's idempotency key
    assert chats[1].end_time <= tool.start_time <= tool.end_time <= chats[2].start_time
    assert all(span.status.status_code is StatusCode.UNSET for span in spans)


async def test_a_resumed_run_marks_what_it_replayed(exporter: InMemorySpanExporter) -> None:
    async with open_store("memory://") as store:
        await desk_thread(store, "d1")
        exporter.clear()
        async with await ProgramSession.open(DESK, store=store, thread="d1", model=desk_model()) as session:
            result = await session.run(messages=["no, that is all"])
    assert result.status == "exit", result.reason
    chats = _by_name(exporter.get_finished_spans(), "chat")
    assert [chat.attributes.get("pal.replayed", False) for chat in chats] == [True, True, True, True, False]
    assert not _by_name(exporter.get_finished_spans(), "execute_tool")  # its result came from the log
    (run,) = _by_name(exporter.get_finished_spans(), "invoke_workflow")
    assert run.attributes["pal.run.status"] == "exit"


async def test_a_failing_run_marks_its_spans(exporter: InMemorySpanExporter) -> None:
    from runtime.loader import load
    from runtime.models import ScriptedModel
    from runtime.program_run import ProgramRun, RunLimits

    broken = ['recap – x\nplan – y\n`Step["Main:09:QUE"]` yld user'] * 3
    run = ProgramRun(load(DESK), model=ScriptedModel(broken), limits=RunLimits(max_retries=2))
    result = await run.run()
    assert result.status == "error"
    spans = exporter.get_finished_spans()
    (workflow,) = _by_name(spans, "invoke_workflow")
    assert (
        workflow.status.status_code is StatusCode.ERROR
        and "broke the contract 3 times" in workflow.status.description
    )
    assert "gen_ai.conversation.id" not in workflow.attributes  # a run nobody records has no thread
    (playbook,) = _by_name(spans, "playbook")
    assert playbook.status.status_code is StatusCode.ERROR and playbook.attributes["error.type"] == "RunError"
    assert [chat.attributes["pal.verdict"] for chat in _by_name(spans, "chat")] == ["rejected"] * 3


async def test_a_run_its_process_samples_out_makes_no_spans(monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    for name in telemetry.ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    memory = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    telemetry.enable(tracer_provider=provider)
    try:
        async with open_store("memory://") as store:
            result = await desk_thread(store, "d1")
    finally:
        telemetry.reset()
    assert result.status == "needs_input" and memory.get_finished_spans() == ()


async def test_spans_are_off_unless_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in telemetry.ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    telemetry.reset()
    try:
        assert telemetry.telemetry() is telemetry.NO_SPANS
        telemetry.reset()
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
        assert telemetry.telemetry() is telemetry.NO_SPANS
    finally:
        telemetry.reset()
    invoke = object()
    assert telemetry.NO_SPANS.tool(None, None, invoke) is invoke  # type: ignore[arg-type]  # the call itself


def test_the_provider_of_a_model_string() -> None:
    from runtime.otel import provider_of as provider

    assert [provider(model) for model in ("openai/gpt-4o-mini", "anthropic/claude-x", "gpt-4o")] == [
        "openai",
        "anthropic",
        "openai",
    ]
    assert [provider(model) for model in ("local/smollm2", "scripted:a.jsonl", "replay:c.jsonl", None)] == [
        "pal.local",
        "pal.scripted",
        "pal.replay",
        "unknown",
    ]


class _Receiver(BaseHTTPRequestHandler):
    """An OTLP/HTTP trace receiver: keeps each request's protobuf body."""

    bodies: list[tuple[str, str, bytes]]

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        self.server.bodies.append((self.path, self.headers.get("content-type", ""), body))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.mark.slow
def test_pal_run_exports_its_spans_over_otlp_http(tmp_path: Path) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Receiver)
    server.bodies = []  # type: ignore[attr-defined]
    serving = threading.Thread(target=server.serve_forever, daemon=True)
    serving.start()
    try:
        port = server.server_address[1]
        env = environment(
            tmp_path, OTEL_EXPORTER_OTLP_ENDPOINT=f"http://127.0.0.1:{port}", OTEL_SERVICE_NAME="desk"
        )
        done = subprocess.run(
            [
                *(sys.executable, "-m", "runtime.cli", "run", str(DESK), "--otel", "--thread", "o1"),
                *("--no-input", "--message", "order 1234", "--model", f"scripted:{DESK_ANSWERS}"),
                *("--store", f"sqlite:///{tmp_path / 'runs.db'}", "--create-store"),
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 3, done.stderr
    finally:
        server.shutdown()
        server.server_close()
        serving.join(timeout=30)
    bodies = server.bodies  # type: ignore[attr-defined]
    assert bodies and all(
        path == "/v1/traces" and kind == "application/x-protobuf" for path, kind, _ in bodies
    )
    names: list[str] = []
    conversations: set[str] = set()
    services: set[str] = set()
    for _, _, body in bodies:
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            for attribute in resource_spans.resource.attributes:
                if attribute.key == "service.name":
                    services.add(attribute.value.string_value)
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "pal-bridge"
                for span in scope_spans.spans:
                    names.append(span.name)
                    for attribute in span.attributes:
                        if attribute.key == "gen_ai.conversation.id":
                            conversations.add(attribute.value.string_value)
    assert sorted(name.split(" ")[0] for name in names) == sorted(
        ["invoke_workflow", "invoke_agent", "playbook", "chat", "chat", "chat", "chat", "execute_tool"]
    )
    assert conversations == {"o1"} and services == {"desk"}

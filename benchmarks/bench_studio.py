"""What seeing a run costs (issue 27). Every figure is measured in this run.

1. The studio's page of a 1,000-turn thread, server side: a real thread (the durable-runs benchmark's loop,
   1,000 model turns through the session layer into SQLite, each turn's prompt kept), served by the
   studio's app called directly (no network, no browser): the time from the request to the last byte of
   the page, median of repeats, with the page's size; also the threads list, a turn's prompt, and a live
   update of one new entry. Goal: the thread page in < 300 ms.
2. What keeping each turn's prompt costs the journal (the studio shows it): the same loop with prompts kept
   and with the journal's prompt log replaced by one that keeps nothing, interleaved, into SQLite: time per
   model turn and the SQLite file per turn (the durable-runs benchmark's figures before prompts were kept).
3. OpenTelemetry spans on against off, on the runtime benchmark's loops (benchmarks/bench_runtime.py: the
   30-step playbook of model turns, and the fast-path loop with a Python call each round), the spans going
   to the SDK's in-memory exporter through a batch processor (what an OTLP exporter sits behind), CPU time,
   interleaved in alternating order in one run. Goal: <= 1.05x.

Run: python benchmarks/bench_studio.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.bench_durable import (  # after the path insert, as a script
    loop_model,
    loop_program,
    real_answers,
)

PAGE_GOAL_MS = 300.0
SPANS_GOAL = 1.05


async def _serve(
    app: Any, path: str, query: str, headers: list[tuple[bytes, bytes]]
) -> tuple[float, int, int]:
    """(seconds, status, body bytes) of one request to the ASGI app, measured around the app's own work."""
    finished = asyncio.Event()
    status = 0
    size = 0

    async def receive() -> MutableMapping[str, Any]:
        await finished.wait()
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        nonlocal status, size
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            size += len(message.get("body", b""))
            if not message.get("more_body"):
                finished.set()

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1:8760"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8760),
    }
    started = time.perf_counter()
    await app(scope, receive, send)
    return time.perf_counter() - started, status, size


async def page_times(folder: Path, turns: int, repeats: int) -> None:
    from runtime.program_run import RunLimits
    from runtime.session import ProgramSession
    from runtime.store import open_store
    from runtime.studio import Studio

    url = f"sqlite:///{folder / 'runs.db'}"
    answers = real_answers()
    print(f"1. The studio's pages, server side (a {turns}-turn thread in SQLite, median of {repeats})")
    started = time.perf_counter()
    async with await ProgramSession.open(
        loop_program(turns), store=url, model=loop_model(answers), limits=RunLimits(max_model_calls=None)
    ) as session:
        result = await session.run()
        thread = session.thread_id
    assert result.status == "needs_input", result.reason
    print(f"   made the thread in {time.perf_counter() - started:.1f} s")
    async with open_store(url) as store:
        studio = Studio(store, token="bench")
        auth = [(b"authorization", b"Bearer bench")]
        last = (await store.get_thread(thread)).last_entry
        middle = last // 2  # a turn entry (every entry but the last wait is one)
        requests = {
            "thread page": ("/thread", f"id={thread}"),
            "threads list": ("/", ""),
            "a turn's prompt": ("/api/prompt", f"id={thread}&entry={middle}"),
            "flowchart panel": ("/thread/chart", f"id={thread}"),
        }
        for _ in range(2):  # warm: imports, the program's parse, the page's static files
            for path, query in requests.values():
                await _serve(studio.asgi, path, query, auth)
        print(f"   {'request':<22}{'median':>11}{'max':>11}{'size':>12}")
        figures: dict[str, float] = {}
        for name, (path, query) in requests.items():
            times = []
            for _ in range(repeats):
                seconds, status, size = await _serve(studio.asgi, path, query, auth)
                assert status == 200, (name, status)
                times.append(seconds)
            figures[name] = statistics.median(times)
            print(
                f"   {name:<22}{figures[name] * 1000:>9.1f} ms{max(times) * 1000:>8.1f} ms{size / 1024:>9.0f} KiB"
            )
        # A live update: the stream's first event after one new entry (the page already shows the rest).
        from runtime.session import answer_thread
        from runtime.studio.live import thread_updates

        await answer_thread(store, thread, "done")
        updates = thread_updates(studio, thread, after=last, open_from=0)
        started = time.perf_counter()
        await anext(updates)
        update = time.perf_counter() - started
        await updates.aclose()
        print(f"   {'live update (1 entry)':<22}{update * 1000:>9.1f} ms")
        verdict = "meets" if figures["thread page"] * 1000 < PAGE_GOAL_MS else "MISSES"
        print(
            f"   the {turns}-turn thread's page takes {figures['thread page'] * 1000:.1f} ms to serve; {verdict} "
            f"the goal of < {PAGE_GOAL_MS:g} ms"
        )


async def prompt_costs(folder: Path, turns: int, rounds: int) -> None:
    import sqlite3
    from unittest import mock

    from runtime.program_run import RunLimits
    from runtime.session import ProgramSession
    from runtime.session.prompt_log import PromptLog, RecordedPrompt

    answers = real_answers()

    def nothing(self: PromptLog, messages: Any, *, key: str = "") -> RecordedPrompt:
        return RecordedPrompt(items=[])

    async def one(kept: bool, path: Path) -> float:
        with mock.patch.object(PromptLog, "record", PromptLog.record if kept else nothing):
            started = time.perf_counter()
            async with await ProgramSession.open(
                loop_program(turns),
                store=f"sqlite:///{path}",
                model=loop_model(answers),
                limits=RunLimits(max_model_calls=None),
            ) as session:
                result = await session.run()
            seconds = time.perf_counter() - started
        assert result.status == "needs_input", result.reason
        return seconds

    times: dict[bool, list[float]] = {True: [], False: []}
    sizes: dict[bool, int] = {}
    for number in range(rounds):  # interleaved, so the machine's load falls on both alike
        for kept in (False, True):
            path = folder / f"prompts-{kept}-{number}.db"
            times[kept].append(await one(kept, path))
            with sqlite3.connect(path) as connection:
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                pages, size = (
                    connection.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_count", "page_size")
                )
            connection.close()
            sizes[kept] = pages * size
    print(
        f"\n2. Keeping each turn's prompt: the {turns}-turn loop into SQLite (median of {rounds}), per model turn"
    )
    print(f"   {'':<22}{'time':>11}{'file':>12}")
    for kept, name in ((False, "prompts not kept"), (True, "prompts kept")):
        print(
            f"   {name:<22}{statistics.median(times[kept]) / turns * 1000:>8.3f} ms{sizes[kept] / turns:>10.0f} B"
        )
    extra = (statistics.median(times[True]) - statistics.median(times[False])) / turns * 1000
    print(
        f"   keeping prompts costs {extra:.3f} ms and {(sizes[True] - sizes[False]) / turns:.0f} B per model turn"
    )


class _BareSpans:
    """The floor: one span of the same SDK pipeline per model call and per Python call, with no attributes,
    no context and no verdict (what any OpenTelemetry instrumentation of these calls costs at least)."""

    def __init__(self, tracer: Any) -> None:
        self.tracer = tracer

    def for_run(self, **_: Any) -> _BareSpans:
        return self

    def run(self) -> Any:
        return contextlib.nullcontext(self)

    def agent(self, *_: Any) -> Any:
        return contextlib.nullcontext()

    playbook = agent

    @contextlib.contextmanager
    def chat(self, *_: Any) -> Any:
        span = self.tracer.start_span("chat")
        try:
            yield self
        finally:
            span.end()

    def answered(self, *_: Any, **__: Any) -> None:
        return None

    def ended(self, *_: Any) -> None:
        return None

    def judged(self, *_: Any, **__: Any) -> None:
        return None

    def tool(self, agent: Any, playbook: Any, invoke: Any) -> Any:
        async def traced() -> Any:
            span = self.tracer.start_span("tool")
            try:
                return await invoke()
            finally:
                span.end()

        return traced


async def span_costs(rounds: int) -> None:
    import timeit
    from unittest import mock

    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import runtime.program_run
    from benchmarks.bench_runtime import LOOP_PROGRAM, LOOP_TURNS, STEPS, loop_run, program_text, turns_run
    from pal_core.parser import parse
    from runtime.models.base import ModelRequest, ModelResponse
    from runtime.otel import OtelTelemetry
    from runtime.telemetry import NO_SPANS

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(exporter))
    variants: dict[str, Any] = {
        "off": None,
        "a bare span per call (the floor)": _BareSpans(provider.get_tracer("bench")),
        "on": OtelTelemetry(provider),
    }
    print(
        f"\n3. OpenTelemetry spans on against off (CPU time, median of {rounds} interleaved runs, in turn order)"
    )
    cases = (
        (f"{STEPS}-step playbook, one model turn a step", parse(program_text()), turns_run, STEPS),
        (
            f"fast-path loop, {LOOP_TURNS} rounds with a Python call",
            parse(LOOP_PROGRAM),
            loop_run,
            LOOP_TURNS,
        ),
    )
    for name, program, measure, calls in cases:
        times: dict[str, list[float]] = {variant: [] for variant in variants}
        await measure(program)  # warm-up
        for number in range(rounds):
            for variant in list(variants) if number % 2 else list(reversed(variants)):
                chosen = variants[variant]
                if chosen is None:
                    times[variant].append(await measure(program))
                    continue
                with mock.patch.object(runtime.program_run, "telemetry", lambda chosen=chosen: chosen):
                    times[variant].append(await measure(program))
            provider.force_flush()
            exporter.clear()
        off = statistics.median(times["off"])
        print(f"   {name}: off {off * 1000:.2f} ms")
        for variant in list(variants)[1:]:
            value = statistics.median(times[variant])
            print(
                f"     {variant:<34} {value * 1000:8.2f} ms  ratio {value / off:.3f}  "
                f"(+{(value - off) / calls * 1e6:.1f} µs a call)"
            )
        on = statistics.median(times["on"]) / off
        verdict = "meets" if on <= SPANS_GOAL else "MISSES"
        print(f"     spans on: {verdict} the goal of <= {SPANS_GOAL}")
    provider.shutdown()
    # What the hooks cost when spans are off: the calls a model turn makes on NO_SPANS.
    request = ModelRequest(messages=())
    response = ModelResponse(text="", model="m")

    def one_turn() -> None:
        with NO_SPANS.chat(None, request) as span:  # type: ignore[arg-type]
            span.answered(response, replayed=False)
        NO_SPANS.judged(None, request, turn=None)  # type: ignore[arg-type]

    repeats = 200_000
    seconds = min(timeit.repeat(one_turn, number=repeats, repeat=5)) / repeats
    print(f"   with spans off, a model turn's calls to the spans (NO_SPANS) take {seconds * 1e6:.2f} µs")


async def main(quick: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="pal-bench-studio-") as temporary:
        await page_times(Path(temporary), 300 if quick else 1000, 5 if quick else 15)
        await prompt_costs(Path(temporary), 300 if quick else 1000, 3 if quick else 5)
    await span_costs(7 if quick else 21)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller thread, fewer repeats")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.quick))

"""Serving a PAL program over MCP: every public playbook is a tool.

    async with PlaybookServer(program, model=model) as served:
        async with mcp.Client(served.mcp_server) as client:      # in process; or serve_stdio / serving_http
            result = await client.call_tool("Add", {"a": 1, "b": 2})

A call checks its arguments against the tool's input schema, runs the playbook (runtime.serving.host), sends a
progress notification per executed step when the client asked for progress, and answers with the result
as text plus structured content `{"result": ...}` when the playbook declares a return type. Whatever
fails inside the call (bad arguments, a model that keeps breaking the contract, a Python playbook that
raises, a playbook waiting for a user, a call past one of its budgets: steps, seconds, model calls, value
sizes) comes back as a tool error (`isError`) with a clear message; the traceback goes to the server's
log, never to the client, and the server keeps serving. A call the client cancels stops at once (its run
is cancelled at the next step or await; the protocol sends no result for it); `request_stop` ends every
call in progress with a tool error, for a server shutting down.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import TracebackType
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext

from pal_core.errors import PalError
from pal_core.ir import Program
from runtime.errors import InputExhausted
from runtime.expressions import coerce
from runtime.inputs import InputError
from runtime.models.base import Model, ModelError
from runtime.program_run import RunLimits
from runtime.schema import RESULT_KEY, json_value, returns_value, schema_problems
from runtime.serving.host import CallOutcome, PlaybookHost
from runtime.serving.operations import ServerMetrics
from runtime.serving.playbooks import ServedPlaybook
from runtime.store import Store
from runtime.trace import TraceEvent

logger = logging.getLogger(__name__)
calls_log = logging.getLogger("mcp_bridge.calls")
"""One line per tool call (runtime.serving.logs)."""

THREAD_META = "pal/thread"
"""The key of a tool call's `_meta` that names the thread the call continues (with a store)."""
FAILURE_META = "pal/failure"
"""The key of a tool error's `_meta` that names the kind of failure (`PlaybookFailed`, `BudgetExceeded`...)."""

ProgressReport = Callable[[float, float | None, str | None], Awaitable[None]]
"""Sends one progress notification: (progress, total, message)."""


def server_name(program: Program) -> str:
    """The name a served program goes by: its file name without suffix, else its first agent's name."""
    if program.source:
        return Path(program.source).stem
    return program.agents[0].name if program.agents else "pal"


def _package_version() -> str:
    try:
        return version("pal-bridge")
    except PackageNotFoundError:
        return "0"


class PlaybookServer:
    """A program's public playbooks as an MCP server (`mcp_server`), usable once entered."""

    def __init__(
        self,
        program: Program,
        *,
        model: Model | None = None,
        limits: RunLimits | None = None,
        name: str | None = None,
        store: Store | str | None = None,
        shared_thread: str | None = None,
        lease: float | None = None,
        log_calls: bool = False,
    ) -> None:
        """`store` records every call as a thread (see runtime.serving.host); `shared_thread` names the one
        thread of a `state: shared` program's calls; `lease`: seconds a thread stays blocked after the
        process running its call died (docs/durability.md)."""
        self.program = program
        self.name = name or server_name(program)
        self.log_calls = log_calls
        """Log every answered call at INFO (`pal mcp serve` does); a failed call is always logged, at WARNING.
        Off by default: a program embedding the server may log at INFO for reasons of its own."""
        self.host = PlaybookHost(
            program,
            model=model,
            limits=limits,
            store=store,
            shared_thread=shared_thread or (f"mcp-{self.name}" if store is not None else None),
            lease=lease,
        )
        self._listed: list[types.Tool] = []
        self._server: Server[Any] | None = None
        self._stop = asyncio.Event()
        self.metrics: ServerMetrics | None = None
        """The Prometheus metrics, once `enable_metrics` (the HTTP transport calls it when
        prometheus-client is installed)."""

    def enable_metrics(self) -> ServerMetrics:
        """Count calls, failures, latency, model calls and tokens from now on (runtime.serving.operations)."""
        if self.metrics is None:
            self.metrics = ServerMetrics("mcp", "Tool calls", label="tool")
            self.host.trace_listeners.append(self.metrics.on_trace)
        return self.metrics

    async def not_ready(self) -> str | None:
        """Why the server cannot take calls now (not open, stopping, its store not answering), or None."""
        if self._server is None:
            return "the server is not open"
        if self._stop.is_set():
            return "the server is shutting down"
        return await self.host.not_ready()

    async def __aenter__(self) -> PlaybookServer:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Load the program's agents, connect its remote agents and build the tool list."""
        served = await self.host.open()
        self._listed = [_listing(tool) for tool in served.values()]
        self._server = Server(
            self.name,
            version=_package_version(),
            instructions=_instructions(self.program),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=self._input_schema,
        )

    async def close(self) -> None:
        """Stop the shared run and remote agents; idempotent."""
        await self.host.close()

    def request_stop(self, reason: str = "the server is shutting down") -> None:
        """Stop serving: every call in progress ends now with a tool error saying `reason`, later calls are
        refused the same way, and `stopped` is set (the transports return when it is)."""
        stopped = self.host.stop_calls(reason)
        if stopped:
            logger.warning("stopping %d call(s) in progress: %s", stopped, reason)
        self._stop.set()

    async def stopped(self) -> None:
        """Return once `request_stop` was called."""
        await self._stop.wait()

    @property
    def mcp_server(self) -> Server[Any]:
        """The low-level MCP server (for `mcp.Client(...)` in process, stdio or HTTP)."""
        if self._server is None:
            raise RuntimeError("open the PlaybookServer (async with) before using its MCP server")
        return self._server

    @property
    def tools(self) -> Mapping[str, ServedPlaybook]:
        """The tools (the served playbooks), by name."""
        return self.host.served

    # --- MCP handlers --------------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._listed)

    def _input_schema(self, name: str) -> Mapping[str, Any] | None:
        tool = self.host.served.get(name)
        return tool.input_schema if tool is not None else None

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        # Always wired: report_progress does nothing when the client did not ask for progress, and an
        # in-process client asks through a callback that leaves no token in the request to look at.
        meta = params.meta or {}
        thread = meta.get(THREAD_META)
        if THREAD_META in meta:
            problem = _thread_problem(thread)
            if problem is not None:
                return tool_error(f"{params.name}: {problem}")
        return await self.call(
            params.name, params.arguments, report=ctx.session.report_progress, thread=thread
        )

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        report: ProgressReport | None = None,
        thread: str | None = None,
    ) -> types.CallToolResult:
        """Run one tool call to its MCP result. `report(progress, total, message)` is awaited per executed
        step when given. With a store, the call continues `thread` (else a new thread), and the result's
        `_meta` names the thread (`pal/thread`). Cancellation propagates (the run is shut down on the way
        out)."""
        tool = self.host.served.get(name)
        if tool is None:
            offered = ", ".join(sorted(self.host.served)) or "none"
            return tool_error(f"Unknown tool: {name} (this server offers: {offered})")
        started = time.perf_counter()
        outcome, failure = "cancelled", None
        if self.metrics is not None:
            self.metrics.in_progress.inc()
        try:
            result = await self._call(tool, arguments, report, thread)
            if result.is_error:
                outcome = "error"
                failure = (result.meta or {}).get(FAILURE_META) or "ToolError"
            else:
                outcome = "ok"
            return result
        finally:
            seconds = time.perf_counter() - started
            if self.metrics is not None:
                self.metrics.in_progress.dec()
                self.metrics.call_ended(tool.name, outcome, seconds, failure)
            if outcome != "ok" or self.log_calls:
                _log_call(tool.name, thread, outcome, failure, seconds)

    async def _call(
        self,
        tool: ServedPlaybook,
        arguments: Mapping[str, Any] | None,
        report: ProgressReport | None,
        thread: str | None,
    ) -> types.CallToolResult:
        try:
            if thread is not None and self.host.store is None:
                return tool_error(
                    f"{tool.name}: the call names thread {thread!r}, but this server keeps no threads "
                    "(start it with --store)"
                )
            # The host checks the arguments at its door, for every protocol.
            if report is None:
                outcome = await self.host.call(tool, arguments or {}, thread=thread)
            else:
                outcome = await _call_with_progress(self.host, tool, arguments or {}, report, thread)
        except InputError as error:
            return tool_error(str(error), failure="InvalidArguments")
        except asyncio.CancelledError:
            logger.info("tool %s: the client cancelled the call; its run was stopped", tool.name)
            raise
        except InputExhausted:
            return tool_error(
                f"{tool.name} stopped: {tool.qualified_name} waits for user input, and a tool call has no user "
                "to ask; give what it asks for as arguments, or serve a playbook that does not wait",
                failure="InputExhausted",
            )
        except (PalError, ModelError) as error:
            return tool_error(f"{tool.name} failed: {error}", failure=type(error).__name__)
        except Exception as error:  # a bug in a playbook's Python or in ours: report it, keep serving
            logger.exception("tool %s raised", tool.name)
            return tool_error(f"{tool.name} failed: {type(error).__name__}: {error}", failure="InternalError")
        return tool_result(tool, outcome)


async def _call_with_progress(
    host: PlaybookHost,
    tool: ServedPlaybook,
    arguments: Mapping[str, Any],
    report: ProgressReport,
    thread: str | None,
) -> CallOutcome:
    """Run a call, reporting each executed step; every report is sent before the result."""
    progress = _ProgressForwarder(report, tool.name)
    try:
        outcome = await host.call(tool, arguments, listener=progress.on_event, thread=thread)
        await progress.finish()
        return outcome
    finally:
        progress.cancel()


class _ProgressForwarder:
    """Turns `step` trace events (delivered synchronously) into awaited progress reports, in order.

    The sending task is started on the first step only, so a call that executes no steps (a Python
    playbook) pays nothing for progress.
    """

    def __init__(self, report: ProgressReport, tool_name: str) -> None:
        self._report = report
        self._tool_name = tool_name
        self._pending: deque[str] = deque()
        self._sent = 0
        self._task: asyncio.Task[None] | None = None

    def on_event(self, event: TraceEvent) -> None:
        if event.event != "step":
            return
        self._pending.append(_step_message(event))
        # A task that has returned is done at once, so a step is never left behind between two senders.
        if self._task is None or self._task.done():
            self._task = asyncio.get_running_loop().create_task(
                self._send(), name=f"progress of {self._tool_name}"
            )

    async def _send(self) -> None:
        while self._pending:
            message = self._pending.popleft()
            self._sent += 1
            try:
                await self._report(self._sent, None, message)
            except Exception as error:  # a client that stopped listening must not fail the call
                logger.debug("progress for %s not sent: %r", self._tool_name, error)

    async def finish(self) -> None:
        """Wait until every step so far has been reported."""
        if self._task is not None:
            await self._task

    def cancel(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()


def _step_message(event: TraceEvent) -> str:
    """`Calculator.Double:02:CND condition holds`: where the step is, and what it did."""
    where = ":".join(part for part in (f"{event.agent}.{event.playbook}", event.line, event.opcode) if part)
    return f"{where} {event.detail}" if event.detail else where


# --- results -----------------------------------------------------------------------------------------


def tool_error(message: str, *, failure: str | None = None) -> types.CallToolResult:
    """A tool error the client (and its model) can read; `failure` names its kind for the metrics and the
    log (kept in the result's `_meta`, `pal/failure`)."""
    meta = {FAILURE_META: failure} if failure else None
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True, _meta=meta)


def _thread_problem(thread: object) -> str | None:
    """Why a `_meta` `pal/thread` value cannot name a thread, or None."""
    from runtime.store import StoreError
    from runtime.store.format import check_thread_id

    if not isinstance(thread, str):
        return (
            f"`_meta` {THREAD_META!r} must be a thread id (a string), not {type(thread).__name__} {thread!r}"
        )
    try:
        check_thread_id(thread, what=f"`_meta` {THREAD_META!r}")
    except StoreError as error:
        return str(error)
    return None


def _log_call(tool: str, thread: str | None, outcome: str, failure: str | None, seconds: float) -> None:
    """The call's line in the log: INFO when it answered, WARNING when it failed (runtime.serving.logs)."""
    level = logging.INFO if outcome == "ok" else logging.WARNING
    if not calls_log.isEnabledFor(level):
        return
    milliseconds = round(seconds * 1000, 3)
    where = f" in thread {thread}" if thread else ""
    said = outcome if failure is None else f"{outcome} ({failure})"
    calls_log.log(
        level,
        "call %s%s: %s, %.1f ms",
        tool,
        where,
        said,
        milliseconds,
        extra={
            "tool": tool,
            "thread_id": thread,
            "outcome": outcome,
            "error": failure,
            "duration_ms": milliseconds,
        },
    )


def tool_result(tool: ServedPlaybook, outcome: CallOutcome) -> types.CallToolResult:
    """The MCP result of a finished call: the return value as text (and as structured content when the
    playbook declares a return type), then what the playbook said to the user."""
    said = [types.TextContent(text=text) for text in outcome.said_to_user]
    meta = {THREAD_META: outcome.thread} if outcome.thread is not None else None
    playbook = tool.playbook
    if returns_value(playbook):
        data = json_value(coerce(outcome.value, playbook.returns))
        problems = schema_problems(data, (tool.output_schema or {})["properties"][RESULT_KEY], "result")
        if problems:
            return tool_error(
                f"{tool.name} returned a value that does not match its declared return type "
                f"{playbook.returns}: {'; '.join(problems)}"
            )
        return types.CallToolResult(
            content=[types.TextContent(text=_text(data)), *said],
            structured_content={RESULT_KEY: data},
            _meta=meta,
        )
    if outcome.value is None:
        return types.CallToolResult(content=said, _meta=meta)
    return types.CallToolResult(
        content=[types.TextContent(text=_text(json_value(outcome.value))), *said], _meta=meta
    )


def _text(data: Any) -> str:
    return data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)


def _listing(tool: ServedPlaybook) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.qualified_name,
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=tool.output_schema,
    )


def _instructions(program: Program) -> str | None:
    lines = [
        f"{agent.name}: {agent.description.strip()}"
        for agent in program.agents
        if agent.metadata.remote is None and agent.description.strip()
    ]
    return "\n".join(lines) or None

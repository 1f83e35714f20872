"""A PAL program's agent as an A2A server.

    async with A2AServer(program, store="sqlite:///runs.db") as served:
        async with serving_a2a(served, port=0) as endpoint:      # JSON-RPC at endpoint.url, the card at
            ...                                                   # <url>.well-known/agent-card.json

The server runs the program on a PlaybookHost (runtime.serving.host: the same host, door and threads as
`pal mcp serve`) whose every call is a thread of the store, answers A2A requests with PalRequestHandler
(exporters.a2a.handler) through the SDK's JSON-RPC dispatcher with the 0.3 method names switched on, and
serves over HTTP with the operator endpoints every served program has (`/healthz`, `/readyz`, `/metrics`,
the access log), the bearer token (declared in the card) and, on a loopback address, the Host/Origin check.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from types import TracebackType
from typing import TYPE_CHECKING

from exporters.a2a import TOKEN_ENV, require_sdk
from exporters.a2a.runs import TaskRun, calls_log
from pal_core.ir import Agent, Program
from runtime.errors import ProgramError
from runtime.models.base import Model
from runtime.program_run import RunLimits
from runtime.serving import http
from runtime.serving.host import PlaybookHost
from runtime.serving.operations import ServerMetrics
from runtime.serving.playbooks import ServedPlaybook
from runtime.session.session import DEFAULT_LEASE
from runtime.store import Store

if TYPE_CHECKING:
    from a2a.types import a2a_pb2 as pb

    from exporters.a2a.handler import PalRequestHandler

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
"""HTTP binds the loopback address unless told otherwise."""
DEFAULT_PORT = 9999
"""The port when none is given (the A2A samples' usual one)."""
RPC_PATH = "/"
"""The JSON-RPC endpoint: the root of the server's address."""
CARD_PATHS = ("/.well-known/agent-card.json", "/.well-known/agent.json")
"""Where the agent card is served: the 1.0 and 0.3 path, and the older one some clients still ask for."""


class A2AServer:
    """One agent of a program (the one with public playbooks, or `agent`) served over A2A; open it (async
    with) before serving it."""

    def __init__(
        self,
        program: Program,
        *,
        agent: str | None = None,
        model: Model | None = None,
        limits: RunLimits | None = None,
        store: Store | str | None = None,
        lease: float | None = None,
        name: str | None = None,
        public_url: str | None = None,
        token: str | None = None,
        log_calls: bool = False,
    ) -> None:
        """`store` keeps the tasks (a Store, a URL, or None: a memory store, gone with the server); `lease`:
        seconds a task stays blocked after its server died before another takes it over; `public_url`: the
        address clients reach the server by, for the card (default: the address it listens on); `token`:
        declared in the card (the HTTP transport checks it)."""
        require_sdk()
        self.program = program
        self.agent_name = agent
        self.name = name
        self.public_url = public_url
        self.token = token
        self.lease = lease or DEFAULT_LEASE
        self.log_calls = log_calls
        """Log every task run at INFO (`pal a2a serve` does); a failed one is always logged, at WARNING."""
        self.limits = limits or RunLimits()
        self.host = PlaybookHost(
            program, model=model, limits=self.limits, store=store or "memory://", lease=self.lease
        )
        self.agent: Agent | None = None
        """The served agent, once open."""
        self.skills: Mapping[str, ServedPlaybook] = {}
        """Its skills (its served playbooks) by id, once open."""
        self.metrics: ServerMetrics | None = None
        """The Prometheus metrics, once `enable_metrics` (the HTTP transport calls it when prometheus-client
        is installed)."""
        self._handler: PalRequestHandler | None = None
        self._stop = asyncio.Event()

    async def __aenter__(self) -> A2AServer:
        await self.open()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Start the program, pick the agent, make the handler and start looking for tasks to take over.
        ProgramError when the program has no agent to serve (or several, and `agent` names none)."""
        from exporters.a2a.handler import PalRequestHandler

        served = await self.host.open()
        try:
            self.agent = _served_agent(self.program, served, self.agent_name)
            self.skills = {name: item for name, item in served.items() if item.agent == self.agent.name}
        except BaseException:
            await self.host.close()
            raise
        self._handler = PalRequestHandler(
            self.host,
            agent=self.agent.name,
            skills=self.skills,
            lease=self.lease,
            follow_for=self.limits.max_seconds,
            started=self._started,
            ended=self._ended,
        )
        self._handler.start_sweeping()

    async def close(self) -> None:
        """Stop the sweeper and the runs, close the host; idempotent."""
        if self._handler is not None:
            self.host.stop_calls("the server is closing")
            await self._handler.close()
        await self.host.close()

    @property
    def handler(self) -> PalRequestHandler:
        """The A2A request handler (for the SDK's routes, or a client in process)."""
        if self._handler is None:
            raise RuntimeError("open the A2AServer (async with) before using its handler")
        return self._handler

    def card(self, url: str) -> pb.AgentCard:
        """The agent card, naming `url` (or the public URL) as where to reach the agent."""
        from exporters.a2a.card import agent_card

        if self.agent is None:
            raise RuntimeError("open the A2AServer (async with) before asking for its card")
        return agent_card(
            self.agent,
            list(self.skills.values()),
            url=self.public_url or url,
            token=self.token is not None,
            name=self.name,
        )

    # --- operations ------------------------------------------------------------------------------------------

    def enable_metrics(self) -> ServerMetrics:
        """Count task runs, failures, latency, model calls and tokens from now on."""
        if self.metrics is None:
            self.metrics = ServerMetrics("a2a", "Task calls", label="skill")
            self.host.trace_listeners.append(self.metrics.on_trace)
        return self.metrics

    async def not_ready(self) -> str | None:
        """Why the server cannot take tasks now (not open, stopping, its store not answering), or None."""
        if self._handler is None:
            return "the server is not open"
        if self._stop.is_set():
            return "the server is shutting down"
        return await self.host.not_ready()

    def request_stop(self, reason: str = "the server is shutting down") -> None:
        """Stop serving: new messages are refused, the calls in progress end (their tasks stay unfinished in
        the store, for another server to take over), and `stopped` is set."""
        if self._handler is not None:
            self._handler.stop(reason)
        stopped = self.host.stop_calls(reason)
        if stopped:
            logger.warning("stopping %d task call(s) in progress: %s", stopped, reason)
        self._stop.set()

    async def stopped(self) -> None:
        """Return once `request_stop` was called."""
        await self._stop.wait()

    def _started(self, run: TaskRun) -> None:
        if self.metrics is not None:
            self.metrics.in_progress.inc()

    def _ended(self, run: TaskRun, outcome: str, failure: str | None, seconds: float) -> None:
        if self.metrics is not None:
            self.metrics.in_progress.dec()
        if outcome == "busy":
            return  # a take-over that found the task held by a live server: nothing happened
        if self.metrics is not None:
            self.metrics.call_ended(run.record.skill, outcome, seconds, failure)
        failed = outcome in ("error", "stopped")
        level = logging.WARNING if failed else logging.INFO
        if (failed or self.log_calls) and calls_log.isEnabledFor(level):
            milliseconds = round(seconds * 1000, 3)
            state = run.task.status.state
            from a2a.types import a2a_pb2 as pb

            calls_log.log(
                level,
                "task %s (%s): %s%s, %.1f ms",
                run.task_id,
                run.record.skill,
                pb.TaskState.Name(state),
                f" ({failure})" if failure else "",
                milliseconds,
                extra={
                    "skill": run.record.skill,
                    "task_id": run.task_id,
                    "thread_id": run.task_id,
                    "state": pb.TaskState.Name(state),
                    "outcome": outcome,
                    "error": failure,
                    "duration_ms": milliseconds,
                },
            )


def _served_agent(program: Program, served: Mapping[str, ServedPlaybook], wanted: str | None) -> Agent:
    """The agent to serve: `wanted`, else the one agent with served playbooks."""
    with_skills = list(dict.fromkeys(item.agent for item in served.values()))
    if wanted is not None:
        agent = program.agent(wanted)
        if agent is None or agent.metadata.remote is not None:
            local = [item.name for item in program.agents if item.metadata.remote is None]
            raise ProgramError(
                f"the program has no local agent {wanted} (agents: {', '.join(local) or 'none'})"
            )
        if wanted not in with_skills:
            raise ProgramError(
                f"agent {wanted} has no public playbook to serve as a skill; mark playbooks `public: true`"
            )
        return agent
    if not with_skills:
        raise ProgramError(
            "the program has no public playbook to serve as a skill; mark playbooks `public: true` (metadata) "
            "or `@playbook(public=True)`"
        )
    if len(with_skills) > 1:
        raise ProgramError(
            f"several agents have public playbooks ({', '.join(with_skills)}); pick the one to serve with "
            "--agent (agent=...)"
        )
    agent = program.agent(with_skills[0])
    assert agent is not None  # the served playbooks come from the program's agents
    return agent


# --- HTTP ---------------------------------------------------------------------------------------------------


def a2a_app(server: A2AServer, *, url: str, host: str = DEFAULT_HOST, token: str | None = None) -> http.App:
    """The ASGI app: the agent card (open to all, as A2A wants: it says how to authenticate), JSON-RPC at
    the root with the 0.3 names too (behind the bearer token when there is one) and /metrics, the probes
    and the access log (runtime.serving.operations), and the Host/Origin check on a loopback address."""
    from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
    from starlette.applications import Starlette

    from runtime.serving.operations import MetricsRoute, OperatorEndpoints

    card = server.card(url)
    cards = Starlette(
        routes=[route for path in CARD_PATHS for route in create_agent_card_routes(card, card_url=path)]
    )
    rpc: http.App = Starlette(routes=create_jsonrpc_routes(server.handler, RPC_PATH, enable_v0_3_compat=True))
    gated: http.App = MetricsRoute(rpc, server)
    if token:
        gated = http.BearerTokenGate(gated, token, realm="pal-a2a")
    return OperatorEndpoints(
        http.HostOriginCheck.wrap(_CardsFirst(cards, gated), host), server, protocol="a2a"
    )


class _CardsFirst:
    """ASGI: GET of a card path goes to the card app; everything else to `rest`."""

    def __init__(self, cards: http.App, rest: http.App) -> None:
        self.cards = cards
        self.rest = rest

    async def __call__(self, scope: http.Scope, receive: http.Receive, send: http.Send) -> None:
        if scope["type"] == "http" and scope.get("path") in CARD_PATHS:
            await self.cards(scope, receive, send)
            return
        await self.rest(scope, receive, send)


def check_exposure(host: str, token: str | None, allow_unauthenticated: bool) -> None:
    """Refuse to serve a host other machines can reach without a token, unless told to."""
    http.check_exposure(host, token, allow_unauthenticated, token_env=TOKEN_ENV)


@asynccontextmanager
async def serving_a2a(
    server: A2AServer,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    allow_unauthenticated: bool = False,
) -> AsyncIterator[http.HttpEndpoint]:
    """Serve over HTTP while the block runs (port 0: a free port); the endpoint's URL is the JSON-RPC
    endpoint and the base of the card's path. A host other machines can reach needs a token, or
    `allow_unauthenticated` (ExposureRefused otherwise). `token` defaults to the server's."""
    from runtime.serving.operations import metrics_available

    token = token if token is not None else server.token
    check_exposure(host, token, allow_unauthenticated)
    if server.metrics is None and metrics_available():
        server.enable_metrics()

    def make(url: str) -> http.App:
        return a2a_app(server, url=url, host=host, token=token)

    async with http.serving_app(
        make, host=host, port=port, path=RPC_PATH, name="A2A server", for_url=True
    ) as endpoint:
        yield endpoint


async def serve_a2a(
    server: A2AServer,
    *,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    allow_unauthenticated: bool = False,
    announce: Callable[[str], None] | None = None,
    handle_signals: bool = True,
) -> None:
    """Serve until the server is asked to stop (`request_stop`; SIGINT or SIGTERM when `handle_signals`),
    then stop gracefully; `announce(url)` is called once listening."""
    if allow_unauthenticated:
        http.warn_if_exposed(host, token if token is not None else server.token)
    with http.stopping_on_signals(server, command="pal a2a") if handle_signals else http.nothing():
        async with serving_a2a(
            server, host=host, port=port, token=token, allow_unauthenticated=allow_unauthenticated
        ) as endpoint:
            if announce is not None:
                announce(endpoint.url)
            await http.serve_until_stopped(server, endpoint)

"""What a turn, a playbook call or a meeting needs from the run it belongs to, passed down explicitly.

`RunServices` is built once by `ProgramRun` and handed to every agent instance it creates; an `Execution`
(one chain of playbook calls) and the code it runs (turns, react rounds, meetings, builtins, triggers) read
it instead of the run object. The run keeps its lifecycle (start, instances, tasks, finish, shutdown); the
agents it holds are reached through the narrow `AgentDirectory` view, and who records the run through its
`Recorder` (runtime.recorder).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from runtime.errors import RunError
from runtime.models.base import RequestKind
from runtime.telemetry import NO_SPANS, Spans

if TYPE_CHECKING:
    from pal_core.contract.verify import VerifiedTurn
    from pal_core.ir import Agent, Program
    from pal_core.messaging import ChannelRegistry, MeetingManager, MeetingTimeouts, Message
    from runtime.agent import AgentInstance
    from runtime.budget import Budget
    from runtime.humans import HumanInput
    from runtime.models.base import Model, ModelRequest, ModelResponse, TurnShaping
    from runtime.program_run import RunLimits
    from runtime.recorder import Recorder
    from runtime.trace import Tracer
    from runtime.value_limits import ValueLimits


class AgentDirectory(Protocol):
    """The agent instances of a run, as the code running in it finds and makes them."""

    @property
    def instances(self) -> Mapping[str, AgentInstance]:
        """Every instance by id, in creation order."""
        ...

    def instance_by_class(self, name: str) -> AgentInstance | None:
        """The first instance of an agent class, if there is one."""
        ...

    async def agent_instance(self, name: str) -> AgentInstance | None:
        """The instance of an agent class (created on first use for standby agents), or by `agent <id>`."""
        ...

    async def spawn_instance(self, agent: Agent, *, name: str | None = None) -> AgentInstance:
        """One more instance of an agent class (the CreateAgent builtin)."""
        ...


class RunTrace:
    """Emits a run's trace events (`tracer`), or nothing when the run keeps no trace (an embedded
    playbook without a tracer: building an event's details costs more than a Python call)."""

    __slots__ = ("enabled", "tracer")

    def __init__(self, tracer: Tracer, *, enabled: bool = True) -> None:
        self.tracer = tracer
        """Where events go."""
        self.enabled = enabled
        """Whether events are built at all."""

    def __call__(self, agent: AgentInstance | None, event: str, **fields: Any) -> None:
        if self.enabled:
            self.tracer.emit(
                event=event,
                agent=agent.klass if agent is not None else "",
                agent_id=agent.id if agent is not None else "",
                **fields,
            )


class UserChannel:
    """Where a run's questions to the user go: the human who answers (a session may swap it between calls),
    through the run's recorder (a durable run commits the wait and the answer, a resumed one replays it)."""

    __slots__ = ("human", "recorder")

    def __init__(self, human: HumanInput, recorder: Recorder) -> None:
        self.human = human
        """Who answers."""
        self.recorder = recorder
        """Who records the answers."""

    async def read(self, agent: AgentInstance) -> str | None:
        """The user's next message to `agent` (None when nobody answers)."""
        human = self.human
        return await self.recorder.user_input(agent, lambda: human.read(agent.klass))

    def reachable(self, agent: AgentInstance) -> bool:
        """Whether asking the user something (an approval) can get an answer: a human who can still answer,
        or an answer the resumed run's log already holds."""
        return self.recorder.holds_user_input(agent) or self.human.interactive


@dataclass(frozen=True, slots=True, kw_only=True)
class RunServices:
    """What a turn, a call or a meeting needs from its run."""

    program: Program
    """The program running."""
    model: Model | None
    """The model for turns the runtime cannot execute alone (None: none configured)."""
    shaping: TurnShaping | None
    """How the model wants its turns shaped (a grammar and example turns, for the bundled model), or None."""
    limits: RunLimits
    """Limits and sampling settings."""
    value_limits: ValueLimits
    """The value-size budgets (from `limits`)."""
    registry: ChannelRegistry
    """Messaging: participants, channels, streams."""
    meetings: MeetingManager
    """The run's meetings."""
    meeting_timeouts: MeetingTimeouts
    """How long a meeting wait gathers messages."""
    agents: AgentDirectory
    """The run's agent instances."""
    recorder: Recorder
    """Who records the run (a durable run's journal; by default nobody)."""
    user: UserChannel
    """Questions to the user."""
    trace: RunTrace
    """The run's trace: `services.trace(agent, "step", ...)`."""
    transcript: list[str]
    """Everything said to the user, in order (the run's `messages_to_user`)."""
    budget: Callable[[], Budget]
    """The budget work in the calling task spends (its call's, else the run's)."""
    spans: Spans = NO_SPANS
    """Who describes the run in OpenTelemetry spans (runtime.telemetry; by default nobody)."""

    @property
    def program_folder(self) -> Path:
        """The folder of the program's file (the current directory for a program built in memory)."""
        source = self.program.source
        return Path(source).resolve().parent if source else Path.cwd()

    async def call_model(self, request: ModelRequest, agent: AgentInstance) -> tuple[int, ModelResponse]:
        """Ask the run's model; return (call id, response). RunError when no model is configured.

        In a durable run, an answer the thread's log holds is returned from it (call id 0, no model call);
        a live answer to anything but a playbook turn is committed here (a turn's answer is committed by
        `checkpoint_answer` once the verifier has judged it)."""
        with self.spans.chat(agent, request) as span:
            call_id, response = await self._ask_model(request, agent)
            span.answered(response, replayed=call_id == 0)
            return call_id, response

    async def _ask_model(self, request: ModelRequest, agent: AgentInstance) -> tuple[int, ModelResponse]:
        recorder = self.recorder
        metadata = request.metadata
        recorded = recorder.replay_answer(agent, request)
        if recorded is not None:
            self.trace(
                agent,
                "model_call",
                playbook=str(metadata.get("playbook", "")) or None,
                line=str(metadata.get("line", "")) or None,
                model_call=0,
                detail=f"replayed from thread {recorder.thread_id}",
            )
            return 0, recorded
        if self.model is None:
            raise RunError(
                "this step needs a model and none is configured; pass --model (or set PAL_MODEL)",
                agent=agent.klass,
                playbook=str(metadata.get("playbook", "")) or None,
                line=str(metadata.get("line", "")) or None,
            )
        limiter = self.budget().limiter
        response = await limiter.complete(self.model, request)
        call_id = limiter.calls
        self.trace(
            agent,
            "model_call",
            playbook=str(metadata.get("playbook", "")) or None,
            line=str(metadata.get("line", "")) or None,
            model_call=call_id,
            tokens={"prompt": response.usage.prompt_tokens, "completion": response.usage.completion_tokens},
            detail=f"{response.model}: {len(response.text)} characters",
        )
        if request.kind is not RequestKind.TURN:
            await recorder.commit_answer(agent, request, response)
        return call_id, response

    async def checkpoint_answer(
        self,
        agent: AgentInstance,
        request: ModelRequest,
        response: ModelResponse,
        *,
        turn: VerifiedTurn | None = None,
        problems: list[str] | None = None,
    ) -> None:
        """Commit a playbook turn's answer with the verifier's verdict (the accepted `turn`, or the broken
        rules) before any of it is applied; nothing for a run nobody records."""
        self.spans.judged(agent, request, turn=turn, problems=problems)
        await self.recorder.commit_answer(agent, request, response, turn=turn, problems=problems)

    async def request_user_input(self, agent: AgentInstance) -> str | None:
        """The user's next message to `agent` (None when nobody answers); the run's clock stops meanwhile."""
        self.trace(agent, "yield", detail="waiting for user input")
        with self.budget().waiting_for_user():
            return await self.user.read(agent)

    async def read_messages(
        self,
        agent: AgentInstance,
        take: Callable[[], Coroutine[Any, Any, list[Message]]],
        accepts: Callable[[Message], bool],
    ) -> list[Message]:
        """The next batch of messages `agent` reads (`take()` takes it from its inbox); a durable run commits
        it before the agent acts on it, and a resumed one reads exactly the recorded batch (`accepts` is
        the reader's own filter)."""
        return await self.recorder.deliveries(agent, take, accepts)

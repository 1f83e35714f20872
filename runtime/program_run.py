"""A run of a program: agent instances, messaging, the model, limits, trace, and the main loop of seed 003.

Start: every agent class whose startup mode is not `standby` gets an instance (ids 1000, 1001, ...);
remote agents connect and list their tools; each agent runs its BGN playbooks, then a message loop
(one asyncio task per agent). The run ends when a playbook yields exit, when every agent is idle with
nothing left to read, or on a failure; tasks never outlive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pal_core.errors import PalError
from pal_core.ir import Agent, Program, TriggerCode
from pal_core.messaging import (
    DEFAULT_MEETING_TIMEOUTS,
    AsyncMessageQueue,
    ChannelRegistry,
    HumanParticipant,
    MeetingManager,
    MeetingTimeouts,
    Message,
    MessageType,
    QueueClosed,
    StreamObserver,
)
from runtime.agent import AgentInstance
from runtime.budget import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STEPS, Budget, current_budget
from runtime.errors import BudgetExceeded, InputExhausted, ProgramError, ProgramExit, RunError
from runtime.execution import Execution
from runtime.humans import HumanInput, NoHuman
from runtime.models.base import Model, ModelError, RequestKind, with_capabilities
from runtime.models.limits import check_timeout
from runtime.recorder import NO_RECORDER, Recorder
from runtime.remote import RemoteOpener, open_remote, remote_playbooks
from runtime.services import RunServices, RunTrace, UserChannel
from runtime.telemetry import Spans, telemetry
from runtime.trace import Tracer
from runtime.triggers import TriggerWatcher, check_message_triggers
from runtime.value_limits import DEFAULT_VALUE_LIMITS, ValueLimits

ANSWER_TOKENS: dict[RequestKind, int] = {
    RequestKind.REACT: 384,
    RequestKind.TRIGGERS: 64,
}
"""Answer budgets (tokens) of the kinds of request shorter than a playbook turn: a react round is a few calls
or a value (an unconstrained one ran to 1,024 tokens of repetition), a trigger check two lines. A playbook
turn (up to ten steps of real answers: 99 % of the paired corpus fits in 700 tokens) and a raw playbook's
answer get `max_answer_tokens`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunLimits:
    """Limits and sampling settings of a run."""

    max_model_calls: int | None = 200
    """Model calls allowed in the whole run (None: no limit)."""
    max_retries: int = 2
    """Re-asks after a rejected answer before the playbook fails (N in the issue)."""
    model_timeout: float | None = None
    """Seconds one model call may take; None (the default): no wall-clock limit, so a slow or busy
    machine cannot fail a run. A call's budget is `max_answer_tokens`."""
    max_answer_tokens: int = 1024
    """Token cap of any one answer: the per-call budget, the same on any machine. Each kind of request has
    a budget of its own within it (`answer_tokens`): a react round or a trigger check is short."""
    temperature: float = 0.0
    """Sampling temperature."""
    seed: int | None = None
    """Sampling seed, for models that take one."""
    max_react_rounds: int = 8
    """Rounds a react playbook may take."""
    meeting_attendance_timeout: float = 30.0
    """Seconds a meeting waits for its required attendees."""
    max_steps: int | None = DEFAULT_MAX_STEPS
    """Steps the run may execute (a model turn counts one); for a served or embedded program, each call.
    Stops a loop that never ends (docs/security.md)."""
    max_seconds: float | None = DEFAULT_MAX_SECONDS
    """Wall-clock seconds the run may take, not counting time spent waiting for the user; for a served or
    embedded program, each call."""
    max_int_digits: int | None = DEFAULT_VALUE_LIMITS.max_int_digits
    """Decimal digits of any int the run computes or stores (4300: the most Python prints by default)."""
    max_string_length: int | None = DEFAULT_VALUE_LIMITS.max_string_length
    """Characters of any string the run computes or stores (and of all the text in one list or dict)."""
    max_items: int | None = DEFAULT_VALUE_LIMITS.max_items
    """Items of any list or dict the run computes or stores, nested ones included."""

    def __post_init__(self) -> None:
        for name in ("max_steps", "max_int_digits", "max_string_length", "max_items"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"RunLimits.{name} must be a whole number >= 1 or None, not {value!r}")
        if self.max_seconds is not None:
            check_timeout(self.max_seconds, "RunLimits.max_seconds")
        printable = sys.get_int_max_str_digits()
        digits = self.max_int_digits
        if digits is not None and digits > sys.int_info.default_max_str_digits and 0 < printable < digits:
            # The runtime prints values (traces, prompts, results); Python refuses to above its limit.
            raise ValueError(
                f"RunLimits.max_int_digits={self.max_int_digits} is more than Python converts to text "
                f"({printable} digits); call sys.set_int_max_str_digits({self.max_int_digits}) first "
                "(`pal --max-int-digits` does)"
            )

    def answer_tokens(self, kind: RequestKind) -> int:
        """The token budget of one answer to a request of `kind` (ANSWER_TOKENS, within max_answer_tokens)."""
        return min(self.max_answer_tokens, ANSWER_TOKENS.get(kind, self.max_answer_tokens))

    @property
    def value_limits(self) -> ValueLimits:
        """The value-size budgets, as the evaluator and the variables take them."""
        return ValueLimits(
            max_int_digits=self.max_int_digits,
            max_string_length=self.max_string_length,
            max_items=self.max_items,
        )


@dataclass(slots=True, kw_only=True)
class RunResult:
    """How a run ended."""

    status: str
    """`exit` (a playbook yielded exit), `idle` (nothing left to do), `needs_input`, or `error`."""
    reason: str = ""
    """Why, in words."""
    error: BaseException | None = None
    """The failure, for status `error`."""
    model_calls: int = 0
    """Model calls made."""
    variables: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Each agent's variables at the end, by `Klass:id`."""
    messages_to_user: list[str] = field(default_factory=list)
    """Everything said to the user, in order."""

    @property
    def ok(self) -> bool:
        return self.status != "error"


class ProgramRun:
    """One run of a program: its lifecycle (start, agent instances, their tasks, how it finishes, shutdown).
    What the code running in it needs (the model, limits, messaging, the recorder, the trace, ...) is its
    `services` (runtime.services.RunServices), given to every agent instance it creates."""

    long_lived = False
    """A run that answers calls for a long time (an MCP server, an embedded playbook): each call brings a
    budget of its own, the run's own budget has no clock, and each batch of messages an agent handles
    outside a call gets a fresh budget."""

    def __init__(
        self,
        program: Program,
        *,
        model: Model | None = None,
        limits: RunLimits | None = None,
        human: HumanInput | None = None,
        tracer: Tracer | None = None,
        observers: tuple[StreamObserver, ...] = (),
        meeting_timeouts: MeetingTimeouts = DEFAULT_MEETING_TIMEOUTS,
        remote_connector: RemoteOpener | None = None,
        recorder: Recorder | None = None,
        tracing: bool = True,
        spans: Spans | None = None,
    ) -> None:
        """`model` answers the turns the runtime cannot execute alone (a Model, or an object with only `name`
        and `complete`); `recorder` records the run (a durable run's journal); `tracing=False` builds no trace
        events at all (an embedded playbook nobody traces); `spans` describe the run in OpenTelemetry spans
        (default: the process's telemetry, runtime.telemetry: none unless turned on)."""
        self.program = program
        self.model: Model | None = with_capabilities(model) if model is not None else None
        self.limits = limits = limits or RunLimits()
        self.tracer = tracer or Tracer()
        self.value_limits = limits.value_limits
        """The value-size budgets (from `limits`)."""
        self.budget = Budget(limits, owner=self, clock=not self.long_lived)
        """The run's budget: steps, wall-clock time, model calls (calls of a long-lived run bring their own)."""
        self.limiter = self.budget.limiter
        self.registry = ChannelRegistry()
        self.meetings = MeetingManager(self.registry)
        self.human_inbox = AsyncMessageQueue("inbox of human")
        for observer in observers:
            self.registry.add_stream_observer(observer)
        self.instances: dict[str, AgentInstance] = {}
        self._next_id = 1000
        self._open_remote = remote_connector or open_remote
        self._tasks: list[asyncio.Task[None]] = []
        self._finished = asyncio.Event()
        self._failed = asyncio.Event()
        self._result: RunResult | None = None
        self._busy: set[str] = set()
        self._started = False
        self._driving = False
        self._creating: dict[str, asyncio.Future[AgentInstance]] = {}
        self.messages_to_user: list[str] = []
        self.recorder: Recorder = recorder or NO_RECORDER
        """Who records the run (runtime.recorder): a durable run's journal commits what the run takes in
        before acting on it, and answers a resumed run from its log; by default nobody."""
        self.recorder.watch(self.instances)
        self.services = RunServices(
            program=program,
            model=self.model,
            # A model that decodes under a grammar (the bundled local model) shapes its turns.
            shaping=self.model.turn_shaping() if self.model is not None else None,
            limits=limits,
            value_limits=self.value_limits,
            registry=self.registry,
            meetings=self.meetings,
            meeting_timeouts=meeting_timeouts,
            agents=self,
            recorder=self.recorder,
            user=UserChannel(human or NoHuman(), self.recorder),
            trace=RunTrace(self.tracer, enabled=tracing),
            transcript=self.messages_to_user,
            budget=self.current_budget,
            spans=spans
            if spans is not None
            else telemetry().for_run(
                program=Path(program.source).name if program.source else "program",
                thread=self.recorder.thread_id,
                model=self.model.name if self.model is not None else None,
            ),
        )
        """What the code running in this run needs (given to every agent instance)."""

    @property
    def human(self) -> HumanInput:
        """Who answers when an agent waits for the user (a session may swap it between calls)."""
        return self.services.user.human

    @human.setter
    def human(self, human: HumanInput) -> None:
        self.services.user.human = human

    @property
    def tracing(self) -> bool:
        """Whether trace events are built."""
        return self.services.trace.enabled

    @property
    def meeting_timeouts(self) -> MeetingTimeouts:
        return self.services.meeting_timeouts

    # --- lifecycle -------------------------------------------------------------------------------

    async def start(self) -> None:
        """Register the human, create the start-up agents, connect remote agents."""
        if self._started:
            return
        self._started = True
        if self.model is not None:
            # Slow imports (litellm, a local model file) happen here, not inside the first call's timeout.
            await self.model.prepare()
        self.registry.register(HumanParticipant(inbox=self.human_inbox))
        for agent in self.program.agents:
            if (agent.metadata.startup_mode or "default") != "standby":
                await self.create_instance(agent)

    async def create_instance(self, agent: Agent) -> AgentInstance:
        """A new instance of an agent class: id, inbox, Python code, remote tools."""
        instance = AgentInstance(id=str(self._next_id), ir=agent, run=self, services=self.services)
        self._next_id += 1
        self.instances[instance.id] = instance
        self.registry.register(instance.participant())
        instance.load_python(self.python_namespace(instance))
        if agent.metadata.remote is not None:
            await self._connect_remote(instance)
        TriggerWatcher(instance).install()
        self.trace(instance, "agent", detail=f"{agent.name} started as agent {instance.id}")
        return instance

    async def spawn_instance(self, agent: Agent, *, name: str | None = None) -> AgentInstance:
        """One more instance of an agent class (the CreateAgent builtin), its message loop running when the
        run is; `name` is how it introduces itself."""
        instance = await self.create_instance(agent)
        if name:
            instance.display_name = str(name)
        if self._tasks:
            self._spawn_loop_only(instance)
        return instance

    @property
    def program_folder(self) -> Path:
        """The folder of the program's file (the current directory for a program built in memory)."""
        return self.services.program_folder

    async def _connect_remote(self, instance: AgentInstance) -> None:
        try:
            connection, tools = await self._open_remote(instance.ir)
        except ProgramError:
            raise
        except Exception as error:
            kind = instance.ir.metadata.remote.type if instance.ir.metadata.remote else "?"
            raise ProgramError(
                f"remote agent {instance.klass} ({kind}) could not connect: {error}"
            ) from error
        instance.remote = connection
        for playbook in remote_playbooks(tools):
            instance.playbooks[playbook.name] = playbook
        self.trace(instance, "agent", detail=f"remote agent {instance.klass}: {len(tools)} tool(s)")

    def python_namespace(self, instance: AgentInstance) -> dict[str, Any]:
        """The globals an instance's python blocks are loaded with."""
        from runtime.python_namespace import namespace_for

        return namespace_for(instance)

    def forget_instance(self, instance: AgentInstance) -> None:
        """Remove an instance from the run (its messages are no longer delivered)."""
        self.instances.pop(instance.id, None)
        self._busy.discard(instance.id)
        if not self.registry.shut_down:
            self.registry.unregister(instance.id)

    async def run(self) -> RunResult:
        """Run every agent's BGN playbooks and message loops until exit, idleness, or failure."""
        try:
            await self.start()
        except PalError as error:  # a program that cannot start, a model that is not installed
            await self.shutdown()
            return self._finish_result("error", str(error), error)
        with self.services.spans.run() as span:  # the agents' tasks start inside it: their spans are its
            self._driving = True
            for instance in list(self.instances.values()):
                self._spawn(instance)
            if not self._tasks:
                self._finish("idle", "no agent to run")
            try:
                async with self.budget.bound():
                    await self._finished.wait()
            except BudgetExceeded as error:
                self._finish("error", str(error), error)
            await self.shutdown()
            result = self._result or self._finish_result("idle", "finished")
            span.ended(result.status, result.reason)
            return result

    async def guard(self, call: Coroutine[Any, Any, Any]) -> Any:
        """Await `call` (a playbook called from outside the message loops: `run_playbook`, `pal run --input`,
        an embedded call), ending it with the failure if another agent's loop fails meanwhile (an attendee
        of a meeting the call runs), instead of letting it wait for an answer that will never come."""
        task = asyncio.ensure_future(call)
        failed = asyncio.ensure_future(self._failed.wait())
        try:
            await asyncio.wait({task, failed}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            failed.cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        error = self._result.error if self._result is not None else None
        if isinstance(error, BaseException):
            raise error
        raise RunError(self._result.reason if self._result is not None else "another agent failed")

    def _spawn(self, instance: AgentInstance) -> None:
        self._busy.add(instance.id)
        task = asyncio.create_task(self._agent_main(instance), name=f"agent {instance.klass} {instance.id}")
        self._tasks.append(task)

    async def _agent_main(self, instance: AgentInstance) -> None:
        try:
            with self.services.spans.agent(instance):
                for playbook in instance.playbooks.values():
                    if any(trigger.code == TriggerCode.BGN for trigger in playbook.triggers):
                        await Execution(instance).execute(playbook, [], {})
                await self._message_loop(instance)
        except ProgramExit as stop:
            self._finish("exit", stop.reason)
        except InputExhausted as error:
            self._finish("needs_input", str(error))
        except QueueClosed:
            self._finish("idle", "shut down")
        except (RunError, ProgramError, ModelError) as error:
            self._finish("error", str(error), error)
        except asyncio.CancelledError:
            raise
        except Exception as error:  # a bug in a playbook's Python or ours: report it, never hang
            self._finish("error", f"{type(error).__name__}: {error}", error)

    async def _message_loop(self, instance: AgentInstance) -> None:
        execution = Execution(instance)
        meetings = self.meetings
        joined = instance.state.joined_meetings
        services = self.services

        def for_the_loop(message: Message) -> bool:
            # Messages of a meeting the agent is in belong to the playbook running it (the owner's meeting
            # playbook may run outside this loop: `pal run --input`, an embedded call), not to the loop.
            meeting_id = message.meeting_id
            return meeting_id is None or meeting_id not in joined or meetings.meeting(meeting_id).ended

        while True:
            if not instance.inbox.peek(for_the_loop):
                self._set_idle(instance.id)
            messages = await services.read_messages(
                instance, lambda: instance.inbox.get_batch(for_the_loop), for_the_loop
            )
            self._busy.add(instance.id)
            if self.long_lived:
                async with self.new_budget().bound():
                    await self._handle_messages(instance, execution, messages)
            else:
                await self._handle_messages(instance, execution, messages)

    async def _handle_messages(
        self, instance: AgentInstance, execution: Execution, messages: list[Any]
    ) -> None:
        invitations = [m for m in messages if m.message_type is MessageType.MEETING_INVITATION]
        others = [m for m in messages if m.message_type is not MessageType.MEETING_INVITATION]
        if others:
            execution.receive(others)
            await check_message_triggers(execution)
        for invitation in invitations:
            from runtime.meeting_playbooks import join_meeting

            await join_meeting(Execution(instance), invitation)

    def _set_idle(self, agent_id: str) -> None:
        self._busy.discard(agent_id)
        if self._busy or not self._driving:
            # Only `run()` ends on idleness; when a caller drives single playbook calls, idle is normal.
            return
        pending = any(instance.inbox.peek(lambda _message: True) for instance in self.instances.values())
        if not pending:
            self._finish("idle", "every agent is waiting and no message is pending")

    def _finish(self, status: str, reason: str, error: BaseException | None = None) -> None:
        if self._result is None:
            self._result = self._finish_result(status, reason, error)
        self._finished.set()
        if status == "error":
            self._failed.set()
            self.recorder.freeze(reason, error)  # what agents do while the run unwinds is not recorded

    def _finish_result(self, status: str, reason: str, error: BaseException | None = None) -> RunResult:
        result = RunResult(
            status=status,
            reason=reason,
            error=error,
            model_calls=self.limiter.calls,
            variables={f"{i.klass}:{i.id}": i.state.variables.snapshot() for i in self.instances.values()},
            messages_to_user=list(self.messages_to_user),
        )
        self.trace(None, "exit", detail=f"{status}: {reason}")
        return result

    async def shutdown(self) -> None:
        """Cancel agent tasks, close remote connections and the messaging layer; idempotent."""
        for task in self._tasks:
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        for instance in self.instances.values():
            if instance.remote is not None:
                connection, instance.remote = instance.remote, None
                try:
                    await connection.close()
                except Exception as error:  # closing must not hide the run's own outcome
                    self.trace(instance, "error", detail=f"closing remote agent: {error}")
        if not self.registry.shut_down:
            await self.registry.shutdown()
        self.tracer.close()

    # --- agents (runtime.services.AgentDirectory) ------------------------------------------------

    def agent_class(self, name: str) -> Agent | None:
        return self.program.agent(name)

    def instance_by_class(self, name: str) -> AgentInstance | None:
        for instance in self.instances.values():
            if instance.klass == name:
                return instance
        return None

    async def agent_instance(self, name: str) -> AgentInstance | None:
        """The instance of an agent class (created on first use for standby agents), or by `agent <id>`."""
        if name.startswith("agent "):
            return self.instances.get(name.split(" ", 1)[1].strip())
        if name in self.instances:
            return self.instances[name]
        existing = self.instance_by_class(name)
        if existing is not None:
            return existing
        agent = self.agent_class(name)
        if agent is None:
            return None
        pending = self._creating.get(name)
        if pending is None:
            pending = asyncio.get_running_loop().create_future()
            self._creating[name] = pending
            try:
                instance = await self.create_instance(agent)
            except BaseException as error:
                pending.set_exception(error)
                del self._creating[name]
                raise
            pending.set_result(instance)
            if self._tasks:
                self._spawn_loop_only(instance)
            return instance
        return await pending

    def start_loops(self) -> None:
        """Run every agent's message loop without BGN playbooks (for calling one playbook from outside:
        meeting attendees and other agents still answer)."""
        for instance in list(self.instances.values()):
            self._spawn_loop_only(instance)

    def _spawn_loop_only(self, instance: AgentInstance) -> None:
        self._busy.add(instance.id)
        task = asyncio.create_task(self._loop_only(instance), name=f"agent {instance.klass} {instance.id}")
        self._tasks.append(task)

    async def _loop_only(self, instance: AgentInstance) -> None:
        try:
            with self.services.spans.agent(instance):
                await self._message_loop(instance)
        except QueueClosed:
            return
        except (RunError, ProgramError, ModelError) as error:
            self._finish("error", str(error), error)
        except ProgramExit as stop:
            self._finish("exit", stop.reason)

    # --- budgets ---------------------------------------------------------------------------------

    def current_budget(self) -> Budget:
        """The budget work in this task spends: its call's (see `new_budget`), else the run's."""
        return current_budget(self) or self.budget

    def new_budget(self) -> Budget:
        """A fresh budget of the run's limits for one call: `async with run.new_budget().bound(): ...`."""
        return Budget(self.limits, owner=self)

    def trace(self, agent: AgentInstance | None, event: str, **fields: Any) -> None:
        self.services.trace(agent, event, **fields)

"""One model turn: prompt, answer, parse, verify, and only then apply.

A rejected answer changes nothing; the model is asked again with the broken rules named (at most
`RunLimits.max_retries` times), then the playbook stops with a RunError quoting the last answer.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pal_core.builtins import SPEECH_CALLS
from pal_core.contract import ContractSyntaxError
from pal_core.contract.fixed import computed_assignment, computed_condition, computed_return
from pal_core.contract.model import ArtifactAction, ReturnAction, TriggerAction, VarAction, WhatAction
from pal_core.contract.turn import TurnContext, describe_turn
from pal_core.contract.verify import ContractViolation, ExecutedStep, VerifiedTurn, Violation, read_turn
from pal_core.flow import END, PlaybookFlow
from pal_core.ir import Call, Opcode, YieldKind
from pal_core.messaging import MessagingError
from runtime.calls import invoke_call
from runtime.control import Control
from runtime.errors import RunError
from runtime.expressions import coerce, contract_evaluator
from runtime.fastpath import assigned_value, computed_value, guard_holds, is_computed
from runtime.models.base import ChatMessage, ModelRequest, TurnShape
from runtime.prompt import build_messages, retry_message
from runtime.value_limits import ValueTooLarge, check_value

if TYPE_CHECKING:
    from runtime.execution import Execution
    from runtime.state import Frame


def turn_context(execution: Execution, frame: Frame, flow: PlaybookFlow) -> TurnContext:
    """Where execution stands, as the verifier, the prompt and the local grammar all read it: built by the
    same pal_core function `pal check-turn` uses, from what the run knows live (the agent's playbooks with
    remote tools listed, the variables that exist and their values, the messages the turn brings)."""
    agent = execution.agent
    variables = agent.state.variables
    others = {
        instance.klass: list(instance.playbooks.values())
        for instance in execution.services.agents.instances.values()
        if instance.klass != agent.klass
    }
    return describe_turn(
        execution.services.program,
        agent.ir,
        frame.playbook,
        frame.line,
        flow=flow,
        playbooks=agent.playbooks.values(),
        other_playbooks=others,
        variables={name: variables.type_of(name) for name in variables},
        values=variables.snapshot(),
        declared_types=variables.types,
        in_meeting=frame.meeting_id is not None,
        heard=[message.content for message in agent.unread],
        evaluate=contract_evaluator(variables.limits),
        last_line=frame.last_line,
        participants=_participants(execution, frame.meeting_id),
    )


def _participants(execution: Execution, meeting_id: str | None) -> tuple[str, ...] | None:
    """Who is in the frame's meeting now, by agent class (`human` for the user); None outside one."""
    if meeting_id is None:
        return None
    services = execution.services
    try:
        meeting = services.meetings.meeting(meeting_id)
    except MessagingError:
        return None
    names: list[str] = []
    for member in (*meeting.participant_ids, *meeting.invitations):
        if member == "human":
            name = "human"
        else:
            instance = services.agents.instances.get(member)
            if instance is None:
                continue
            name = instance.klass
        if name not in names:
            names.append(name)
    return tuple(names)


async def model_turn(execution: Execution, frame: Frame, flow: PlaybookFlow) -> Control:
    """Ask the model to continue the frame; apply the verified answer; return how it yields."""
    services = execution.services
    # The one description of this turn: the prompt, the model's shaping and the verifier all read it.
    context = turn_context(execution, frame, flow)
    shape = services.shaping.shape(context) if services.shaping is not None else TurnShape()
    grammar = shape.grammar
    messages = build_messages(
        execution,
        frame,
        context=context,
        examples=shape.examples,
        under_grammar=grammar is not None,  # the grammar enforces the rules the full prompt spells out
    )
    attempts = 0
    while True:
        request = ModelRequest(
            messages=tuple(messages),
            max_tokens=services.limits.max_answer_tokens,
            temperature=services.limits.temperature,
            seed=services.limits.seed,
            grammar=grammar,
            metadata={"agent": execution.agent.klass, "playbook": frame.playbook.name, "line": frame.line},
        )
        call_id, response = await services.call_model(request, execution.agent)
        text = response.text
        try:
            turn = verify_answer(execution, context, text)
        except ContractSyntaxError as error:
            problems = [f"{error.code} answer line {error.line}: {error.message}"]
        except ContractViolation as error:
            problems = [violation.format() for violation in error.violations]
        else:
            # Committed (in a durable run) before anything of it is applied.
            await services.checkpoint_answer(execution.agent, request, response, turn=turn)
            for repaired in turn.repairs:
                services.trace(
                    execution.agent,
                    "repair",
                    playbook=frame.playbook.name,
                    line=frame.line,
                    model_call=call_id,
                    detail=repaired.format(),
                )
            frame.turns += 1
            tokens = {"prompt": response.usage.prompt_tokens, "completion": response.usage.completion_tokens}
            return await apply_turn(execution, frame, flow, turn, call_id, tokens)
        attempts += 1
        await services.checkpoint_answer(execution.agent, request, response, problems=problems)
        services.trace(
            execution.agent,
            "violation",
            playbook=frame.playbook.name,
            line=frame.line,
            model_call=call_id,
            detail="; ".join(problems),
        )
        if attempts > services.limits.max_retries:
            raise RunError(
                f"the model broke the contract {attempts} times in a row; last: {'; '.join(problems)}",
                agent=execution.agent.klass,
                playbook=frame.playbook.name,
                line=frame.line,
                violations=tuple(problems),
                answer=text,
            )
        messages = [
            *messages,
            ChatMessage(role="assistant", content=text),
            ChatMessage(role="user", content=retry_message(problems, frame)),
        ]


def verify_answer(execution: Execution, context: TurnContext, text: str) -> VerifiedTurn:
    """The runtime's whole check of an answer before anything of it is applied: parse, repair and verify
    against the turn's context (pal_core.contract.read_turn, what `pal check-turn` runs too), then the run's
    value budgets on every value the answer writes (a value over them is a V12 violation, so that a
    rejected answer changes nothing). Raises ContractSyntaxError or ContractViolation."""
    turn = read_turn(text, context)
    limits = execution.agent.state.variables.limits
    if limits is None:
        return turn
    problems: list[Violation] = []
    for action in turn.actions:
        values: list[tuple[str, Any]] = []
        if isinstance(action, VarAction):
            values.append((f"${action.name}", action.value))
        elif isinstance(action, ReturnAction):
            values.append(("the return value", action.value))
        elif isinstance(action, ExecutedStep):
            values.extend(
                (f"an argument of {call.name}", argument.value)
                for call in action.calls
                for argument in call.arguments
            )
        for what, value in values:
            try:
                check_value(value, limits, what)
            except ValueTooLarge as error:
                span = (
                    action.action.span if isinstance(action, ExecutedStep) else getattr(action, "span", None)
                )
                problems.append(
                    Violation(code="V12", message=str(error), answer_line=span.line if span else None)
                )
    if problems:
        raise ContractViolation(problems, text, turn.repairs)
    return turn


async def apply_turn(
    execution: Execution,
    frame: Frame,
    flow: PlaybookFlow,
    turn: VerifiedTurn,
    call_id: int,
    tokens: dict[str, int] | None = None,
) -> Control:
    """Apply a verified turn in the order the model wrote it."""
    services = execution.services
    agent = execution.agent
    variables = agent.state.variables
    returned: Any = None
    program_return: Any = _NOT_RETURNED
    execution.agent.unread.clear()  # the model has seen them
    changes = _changes_by_step(turn, variables)
    owned = _owned_vars(turn)
    steps = [index for index, action in enumerate(turn.actions) if isinstance(action, ExecutedStep)]
    first = True
    for index, action in enumerate(turn.actions):
        if isinstance(action, ExecutedStep):
            step = action.step
            following = next((turn.actions[later] for later in steps if later > index), None)
            diverted = _program_guards(execution, frame, flow, action, following, call_id)
            if diverted is not None:
                # A guard the program computes decides otherwise than the answer's path (it depended on what
                # this turn's calls returned): the program's way is taken, and the rest of the answer dropped.
                await _flush_calls(execution, frame)
                frame.line = diverted
                return Control(model_call=call_id)
            if computed_assignment(step):
                value = assigned_value(execution, frame, step)  # the program computes it, not the model
                if is_computed(value) and step.assignment is not None:
                    changes.setdefault(index, {})[step.assignment.target.name] = value
            elif computed_return(step):
                program_return = _program_return(execution, frame, step)
            for line in action.implied:
                implied = flow.by_line[line]
                services.trace(
                    agent,
                    "step",
                    playbook=frame.playbook.name,
                    line=line,
                    opcode=implied.opcode,
                    model_call=call_id,
                    detail="implied: left unwritten on the way to " + step.line,
                )
            services.trace(
                agent,
                "step",
                playbook=frame.playbook.name,
                line=step.line,
                opcode=step.opcode,
                changed=changes.get(index, {}),
                model_call=call_id,
                tokens=tokens if first else None,
                detail=action.action.note[:200],
            )
            first = False
            agent.state.session_log.add(
                f"{frame.playbook.name}:{step.line}:{step.opcode} {action.action.note}".rstrip()
            )
            for call in action.calls:
                if call.name in action.approvals and not await ask_approval(
                    execution, call, call_id, playbook=frame.playbook.name, line=frame.line
                ):
                    continue
                if call.name in SPEECH_CALLS or step.opcode == Opcode.EXE:
                    await invoke_call(execution, call)
                else:
                    frame.queued.append(call)
        elif isinstance(action, VarAction):
            value = _var_value(action, variables)
            declared = variables.type_of(action.name)
            value = coerce(value, declared)
            variables.set(action.name, value)
            if index not in owned and action.name != "__":
                # Var lines before the first step (what the model read from the user's reply, say).
                services.trace(
                    agent,
                    "assign",
                    playbook=frame.playbook.name,
                    line=frame.line,
                    changed={action.name: value},
                    model_call=call_id,
                    detail="set before the first step of the answer",
                )
        elif isinstance(action, ArtifactAction):
            execution.save_artifact(action.name, action.summary, action.content)
        elif isinstance(action, TriggerAction):
            written = {call.name for call in action.calls}
            for ref in action.fired:
                services.trace(agent, "trigger", playbook=ref.playbook, detail=str(ref), model_call=call_id)
                if ref.playbook not in written:
                    frame.queued.append(Call(name=ref.playbook))
            frame.queued.extend(action.calls)  # the calls the triggers make, with their arguments
        elif isinstance(action, ReturnAction):
            returned = _return_value(action, variables)
        elif isinstance(action, WhatAction):
            agent.state.session_log.add(f"what? {action.text}")
    if turn.summary is not None:
        agent.state.session_log.add(f"{frame.playbook.name} summary: {turn.summary}")
    last = turn.steps[-1].step if turn.steps else None
    frame.last_line = last.line if last is not None else frame.last_line
    frame.line = turn.next_line
    if turn.yield_target is YieldKind.RETURN or turn.next_line == END:
        if program_return is not _NOT_RETURNED:
            frame.return_value = program_return  # the RET step's own value, computed by the runtime
        elif turn.returned is not None:
            frame.return_value = coerce(returned, frame.playbook.returns)
    return Control(yield_kind=turn.yield_target, yield_name=turn.yield_name, model_call=call_id)


_NOT_RETURNED = object()


def _program_guards(
    execution: Execution,
    frame: Frame,
    flow: PlaybookFlow,
    executed: ExecutedStep,
    following: Any,
    call_id: int,
) -> str | None:
    """Where execution goes instead when a guard the program computes, on the way to (or at) this step,
    does not agree with the answer's path; None when every such guard agrees (or none can be computed)."""
    path = [*executed.implied, executed.step.line]
    after = [*following.implied, following.step.line] if following is not None else []
    for position, line in enumerate(path):
        guard = flow.by_line[line]
        if not computed_condition(guard):
            continue
        holds = guard_holds(execution, frame, guard)
        if holds is None:
            continue
        ahead = path[position + 1] if position + 1 < len(path) else (after[0] if after else None)
        taken = executed.entered if line == executed.step.line else None
        if taken is None and ahead is not None:
            taken = ahead.startswith(guard.line + ".")
        if taken is None or taken == holds:
            continue
        target = guard.children[0].line if holds else flow.after(guard)[0]
        frame.last_line = line
        execution.services.trace(
            execution.agent,
            "step",
            playbook=frame.playbook.name,
            line=line,
            opcode=guard.opcode,
            model_call=call_id,
            detail=f"condition {'holds' if holds else 'fails'} (computed by the program; the answer's path "
            "was not taken)",
        )
        return target
    return None


def _program_return(execution: Execution, frame: Frame, step: Any) -> Any:
    """The value of a RET step the program computes (`RET "urgent"`); a computation that fails fails it."""
    value = computed_value(execution, frame, step, step.text)
    if not is_computed(value):
        return _NOT_RETURNED
    return coerce(value, frame.playbook.returns, execution.agent.state.variables.limits)


async def _flush_calls(execution: Execution, frame: Frame) -> None:
    while frame.queued:
        await invoke_call(execution, frame.queued.pop(0))


def _changes_by_step(turn: VerifiedTurn, variables: Any) -> dict[int, dict[str, Any]]:
    """The variables each step sets: the Var lines written after it, before the next step (by action index)."""
    changes: dict[int, dict[str, Any]] = {}
    owner: int | None = None
    for index, action in enumerate(turn.actions):
        if isinstance(action, ExecutedStep):
            owner = index
        elif isinstance(action, VarAction) and owner is not None and action.name != "__":
            value = coerce(_var_value(action, variables), variables.type_of(action.name))
            changes.setdefault(owner, {})[action.name] = value
    return changes


def _owned_vars(turn: VerifiedTurn) -> set[int]:
    """Indexes of the Var lines written after a step (traced with that step's changes)."""
    owned: set[int] = set()
    seen_step = False
    for index, action in enumerate(turn.actions):
        if isinstance(action, ExecutedStep):
            seen_step = True
        elif isinstance(action, VarAction) and seen_step:
            owned.add(index)
    return owned


async def ask_approval(
    execution: Execution, call: Call, call_id: int, *, playbook: str, line: str | None = None
) -> bool:
    """Ask the run's human whether a call the model makes on its own may run (`requires_approval: true`),
    at `line` of `playbook` (a react playbook has no lines). The question and the answer go into the trace;
    a run with no human to ask refuses."""
    services = execution.services
    agent = execution.agent
    shown = f"{call.name}({', '.join(argument.text for argument in call.arguments)})"
    if not services.user.reachable(agent):
        services.trace(
            agent,
            "approval",
            playbook=playbook,
            line=line,
            model_call=call_id,
            detail=f"refused {shown}: no human to approve it (non-interactive run)",
        )
        agent.state.session_log.add(
            f"the call {shown} needs a human's approval and none can be asked; it did not run"
        )
        return False
    await execution.say(
        "user", f"The model wants to run {shown}, which needs your approval. Allow it? (yes/no)"
    )
    answer = await services.request_user_input(agent)
    approved = answer is not None and answer.strip().lower() in ("y", "yes", "ok", "approve", "allow")
    services.trace(
        agent,
        "approval",
        playbook=playbook,
        line=line,
        model_call=call_id,
        detail=f"{'approved' if approved else 'refused'} {shown} (the user answered {answer!r})",
    )
    if not approved:
        agent.state.session_log.add(f"the user refused the call {shown}; it did not run")
    return approved


def _var_value(action: VarAction, variables: Any) -> Any:
    if action.literal:
        return action.value
    raw = action.raw.strip()
    if raw.startswith("$") and raw[1:] in variables:
        return variables[raw[1:]]
    return action.value


def _return_value(action: ReturnAction, variables: Any) -> Any:
    raw = action.raw.strip()
    if raw.startswith("$") and raw[1:] in variables:
        return variables[raw[1:]]
    return action.value

"""Verifying a model's answer against the running program before any of it is applied.

The verifier is pure: it reads the (repaired) answer and a description of where execution stands
(pal_core.contract.turn.TurnContext), and either returns a `VerifiedTurn` (what to apply, in order, and
where execution continues) or raises `ContractViolation` listing every broken rule with a stable code,
the answer line, and a message written for the model to read on the retry. `read_turn(text, context)`
is the whole pipeline: parse, repair (pal_core.contract.repair), verify.

Rules (codes are stable; docs/contract.md explains each):
  V01 a Step names another playbook, or a line that does not exist
  V02 a Step's code is not the opcode of that line
  V03 the steps do not form a legal path from the current line: a line that does work (EXE, QUE, TNK,
      CHK, YLD, RET) skipped, steps out of order, or a CND's stated outcome (`yes`/`no`) not followed
      (decision lines and JMP may stay unwritten: flow.reachable)
  V04 a step after one that ends the turn (YLD, RET, an inline `; YLD ...`)
  V05 the final yld does not match the yielding step (YLD for user answered with `yld call`, ...)
  V06 no final `yld`
  V07 RET without a `Var[$__, summary]`
  V08 an invalid variable name
  V09 `trig?` names a trigger that does not exist
  V10 a call that is not allowed: outside a step, on a step that calls something else, an unknown
      callee, one only steps may call, or an argument that is not a literal or a known `$variable`
  V11 a yield the program does not offer here (exit or return mid-playbook, user at a step that does not ask)
  V12 a value that does not fit the variable's declared type
  V13 no step executed
  V14 an unknown yield target
  V15 something after the final `yld`
  V16 `Return[...]` where the playbook does not end
  V17-V19 values the program fixes (pal_core.contract.fixed): a value stated otherwise than the program
      computes it, a guard it computes taken the other way, a value outside the choices a step gives
"""

from __future__ import annotations

import ast
import keyword
import re
from dataclasses import dataclass, replace

from pal_core.builtins import SPEECH_CALLS
from pal_core.contract.fixed import check_fixed
from pal_core.contract.meeting import check_meeting_targets
from pal_core.contract.model import (
    Answer,
    ArtifactAction,
    ReturnAction,
    StepAction,
    TriggerAction,
    VarAction,
    WhatAction,
    YieldAction,
)
from pal_core.contract.parse import StrayCallAction, parse_answer
from pal_core.contract.repair import Repair, cnd_outcome, repair
from pal_core.contract.turn import TurnContext
from pal_core.declared_types import fits_type
from pal_core.errors import PalError
from pal_core.flow import END, PlaybookFlow
from pal_core.ir import ArgKind, Call, Opcode, Step, YieldKind
from pal_core.pysource import parse_python
from pal_core.step_text import python_source

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CONDITIONAL = re.compile(
    r"\b(?:if|unless|when|whether|necessary|needed|already|optionally)\b", re.IGNORECASE
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Violation:
    """One broken rule."""

    code: str
    """The rule, `V01`..`V16`."""
    message: str
    """What is wrong and what the model should do instead."""
    answer_line: int | None = None
    """The line of the answer where it happened (1-based), when known."""

    def format(self) -> str:
        where = f"answer line {self.answer_line}: " if self.answer_line else ""
        return f"{self.code} {where}{self.message}"


class ContractViolation(PalError):
    """An answer that breaks the contract; nothing of it has been applied."""

    def __init__(self, violations: list[Violation], answer: str, repairs: tuple[Repair, ...] = ()) -> None:
        self.violations = tuple(violations)
        self.answer = answer
        self.repairs = repairs
        super().__init__("; ".join(violation.format() for violation in violations))


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutedStep:
    """A verified step with what the model attached to it."""

    step: Step
    """The program step."""
    action: StepAction
    """The model's Step action (its inline calls and note)."""
    calls: tuple[Call, ...] = ()
    """The inline calls to run, with the step's declared result variable filled in when omitted."""
    implied: tuple[str, ...] = ()
    """Lines passed unwritten on the way to this step (decision lines and JMPs), in order."""
    entered: bool | None = None
    """For a CND (or a conversation step): the outcome the answer states (`yes`/`no`), if it states one."""
    approvals: tuple[str, ...] = ()
    """Callees of `calls` that need a human's approval first (the model calls them on its own)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VerifiedTurn:
    """What the runtime applies, in order, and where execution goes next."""

    actions: tuple[ExecutedStep | VarAction | ArtifactAction | TriggerAction | ReturnAction | WhatAction, ...]
    """The answer's actions, steps resolved to program steps."""
    yield_target: YieldKind
    """How the turn ends."""
    yield_name: str | None
    """The meeting id or agent for MEETING / AGENT yields."""
    next_line: str
    """The line to continue at (END when the playbook is done)."""
    returned: ReturnAction | None = None
    """The return value, when the playbook returns."""
    summary: str | None = None
    """The `$__` summary, when given."""
    repairs: tuple[Repair, ...] = ()
    """The benign forms rewritten before verifying (pal_core.contract.repair)."""

    @property
    def steps(self) -> tuple[ExecutedStep, ...]:
        return tuple(action for action in self.actions if isinstance(action, ExecutedStep))


def read_turn(text: str, context: TurnContext) -> VerifiedTurn:
    """Parse, repair and verify a model answer. Raises ContractSyntaxError or ContractViolation (which
    carries the repairs made before the rules were checked)."""
    answer, repairs = repair(parse_answer(text), context)
    try:
        turn = verify(answer, context)
    except ContractViolation as violation:
        violation.repairs = repairs
        raise
    if not repairs:
        return turn
    return VerifiedTurn(
        actions=turn.actions,
        yield_target=turn.yield_target,
        yield_name=turn.yield_name,
        next_line=turn.next_line,
        returned=turn.returned,
        summary=turn.summary,
        repairs=repairs + turn.repairs,
    )


def verify(answer: Answer, context: TurnContext) -> VerifiedTurn:
    """Check every rule; return what to apply, or raise ContractViolation with all violations."""
    checker = _Checker(answer, context)
    turn = checker.run()
    if not checker.violations and turn is not None:
        turn = _with_fixed_values(turn, context, checker.violations)

    if checker.violations or turn is None:
        raise ContractViolation(checker.violations, answer.raw)
    return turn


def _with_fixed_values(turn: VerifiedTurn, context: TurnContext, violations: list[Violation]) -> VerifiedTurn:
    """The turn with the values the program fixes in place (pal_core.contract.fixed): what the answer stated
    otherwise is replaced (R16), and its broken rules (V17-V19) are added to `violations`."""
    fixed, replaced, broken = check_fixed(turn, context)
    broken += check_meeting_targets(fixed, context)
    violations.extend(
        Violation(code=item.code, message=item.message, answer_line=_line_of(item.action)) for item in broken
    )
    if not replaced:
        return fixed
    notes = tuple(
        Repair(code="R16", message=item.message, answer_line=_line_of(item.action)) for item in replaced
    )
    return replace(fixed, repairs=fixed.repairs + notes)


def _line_of(action: object) -> int | None:
    span = getattr(action, "span", None)
    return span.line if span is not None else None


class _Checker:
    def __init__(self, answer: Answer, context: TurnContext) -> None:
        self.answer = answer
        self.context = context
        self.flow = context.flow
        self.violations: list[Violation] = []
        self.known: set[str] = set(context.variables)
        """Variables that exist at this point of the answer: those of the context, plus every one set by
        an earlier Var line or call result of the same answer (the user's reply stored, then used)."""

    def add(self, code: str, message: str, action: object = None) -> None:
        self.violations.append(Violation(code=code, message=message, answer_line=_line_of(action)))

    def run(self) -> VerifiedTurn | None:
        actions = list(self.answer.actions)
        final = self._final_yield(actions)
        resolved: list = []
        previous: ExecutedStep | None = None
        ended_by: Step | None = None
        returned: ReturnAction | None = None
        summary: str | None = None
        queued = False
        """Whether a call of this answer waits in the queue (a `yld call` would run it)."""
        for action in actions:
            if isinstance(action, YieldAction):
                continue
            if isinstance(action, StrayCallAction):
                self.add(
                    "V10",
                    f"the call {action.call.name}(...) is not attached to a step; write it after the "
                    '`Step["Playbook:Line:Code"]` that makes it',
                    action,
                )
                continue
            if isinstance(action, StepAction):
                step = self._resolve_step(action)
                if step is None:
                    continue
                if previous is not None and step is previous.step:
                    # A restated step (models repeat the step they yield at): merge its calls.
                    merged = self._calls(step, action)
                    index = resolved.index(previous)
                    previous = resolved[index] = _with_calls(previous, merged)
                    continue
                if ended_by is not None:
                    self.add(
                        "V04",
                        f"step {step.line} comes after step {ended_by.line}, which ends the turn; stop at "
                        f"{ended_by.line} with its yld",
                        action,
                    )
                    continue
                implied = self._check_path(previous, step, action)
                executed = self._executed(step, action, implied)
                resolved.append(executed)
                previous = executed
                if executed.calls and any(
                    call.name not in SPEECH_CALLS and step.opcode == Opcode.QUE for call in executed.calls
                ):
                    queued = True
                if _ends_turn(step, self.flow) and not (_yields_call(step) and not queued):
                    ended_by = step
                continue
            if isinstance(action, VarAction):
                self._check_var(action)
                self.known.add(action.name)
                if action.name == "__":
                    summary = str(action.value)
                resolved.append(action)
                continue
            if isinstance(action, TriggerAction):
                self._check_trigger(action)
                resolved.append(action)
                continue
            if isinstance(action, ReturnAction):
                returned = action
                resolved.append(action)
                continue
            resolved.append(action)  # ArtifactAction, WhatAction
        executed_steps = [item for item in resolved if isinstance(item, ExecutedStep)]
        for executed in executed_steps:
            self._check_speech(executed)
        fired = [item for item in resolved if isinstance(item, TriggerAction) and item.fired]
        if not executed_steps and fired and final is not None and final.target.kind is YieldKind.CALL:
            # A turn that only fires a trigger (the user's reply stored, `trig? Trigger[...]`, `yld call`):
            # the trigger runs, then execution goes on where it stood.
            return VerifiedTurn(
                actions=tuple(resolved),
                yield_target=YieldKind.CALL,
                yield_name=None,
                next_line=self.context.current_line,
            )
        if not executed_steps:
            line = self.context.current_line
            self.add(
                "V13",
                f"no step was executed; continue {self.context.playbook.name} at line {line} with "
                f'`Step["{self.context.playbook.name}:{line}:{self._opcode(line)}"]`',
            )
        if final is None:
            self.add("V06", "the answer has no final `yld user|call|return|exit|meeting` line")
            return None
        if final.target.kind is YieldKind.UNKNOWN:
            self.add(
                "V14",
                f"unknown yield target {final.target.name!r}; use yld user, call, return, exit or meeting",
                final,
            )
            return None
        if not executed_steps:
            return None
        last = executed_steps[-1]
        next_line = self._check_yield(last, final, returned, summary)
        return VerifiedTurn(
            actions=tuple(resolved),
            yield_target=final.target.kind,
            yield_name=final.target.name,
            next_line=next_line,
            returned=returned,
            summary=summary,
        )

    # --- pieces ----------------------------------------------------------------------------------

    def _final_yield(self, actions: list) -> YieldAction | None:
        yields = [index for index, action in enumerate(actions) if isinstance(action, YieldAction)]
        if not yields:
            return None
        last = yields[-1]
        for earlier in yields[:-1]:
            self.add("V15", "only one yld may end a turn; remove the earlier one", actions[earlier])
        for action in actions[last + 1 :]:
            if isinstance(action, (StepAction, VarAction, ReturnAction, ArtifactAction, StrayCallAction)):
                self.add("V15", "nothing may follow the final yld; end the answer there", action)
        return actions[last]

    def _opcode(self, line: str) -> str:
        step = self.flow.by_line.get(line)
        return step.opcode if step is not None else "?"

    def _resolve_step(self, action: StepAction) -> Step | None:
        ref = action.ref
        name = self.context.playbook.name
        if ref.playbook != name:
            self.add(
                "V01",
                f'Step["{ref}"] names playbook {ref.playbook}, but the running playbook is {name}',
                action,
            )
            return None
        step = self.flow.by_line.get(ref.line)
        if step is None:
            self.add("V01", f"{name} has no line {ref.line}", action)
            return None
        if ref.code != step.opcode:
            self.add(
                "V02",
                f'line {name}:{ref.line} is {step.opcode}, not {ref.code}: write Step["{name}:{ref.line}:{step.opcode}"]',
                action,
            )
            return None
        return step

    def _check_path(self, previous: ExecutedStep | None, step: Step, action: StepAction) -> tuple[str, ...]:
        """The unwritten lines passed to reach `step` (V03 when it cannot be reached)."""
        name = self.context.playbook.name
        if previous is None:
            current = self.context.current_line
            entries = self.flow.entries(current)
            if step.line in entries:
                return entries[step.line]
            self.add(
                "V03",
                f"execution continues at {name}:{current}, not {step.line}; do not skip steps"
                + _missing(self.flow, current, step.line),
                action,
            )
            return ()
        reachable = self.flow.reachable(previous.step.line, entered=previous.entered)
        if step.line in reachable:
            return reachable[step.line]
        options = " or ".join(
            sorted(line for line in self.flow.successors(previous.step.line) if line != END)
        )
        said = ""
        if previous.entered is not None:
            said = f" ({previous.step.line} says {'yes' if previous.entered else 'no'})"
        self.add(
            "V03",
            f"step {step.line} cannot follow step {previous.step.line}{said}; after {previous.step.line} "
            f"comes {options or 'the end'}",
            action,
        )
        return ()

    def _executed(self, step: Step, action: StepAction, implied: tuple[str, ...]) -> ExecutedStep:
        entered = cnd_outcome(action.note) if self.flow.is_decision(step.line) else None
        if entered is not None and step.opcode == Opcode.CND and not step.children:
            entered = None  # a CND without a body: nothing to enter
        calls, approvals = self._calls(step, action, with_approvals=True)
        return ExecutedStep(
            step=step, action=action, calls=calls, implied=implied, entered=entered, approvals=approvals
        )

    def _calls(self, step: Step, action: StepAction, *, with_approvals: bool = False):  # type: ignore[no-untyped-def]
        calls: list[Call] = []
        approvals: list[str] = []
        declared = step.call
        for call in action.calls:
            if call.name not in SPEECH_CALLS and step.opcode not in (Opcode.QUE, Opcode.EXE):
                self.add(
                    "V10",
                    f"step {step.line} is {step.opcode}; calls such as {call.name}(...) belong on QUE or EXE steps",
                    action,
                )
                continue
            literal = declared is not None and call.name == declared.name
            if (
                declared is not None
                and call.name != declared.name
                and not (call.name in SPEECH_CALLS and declared.name in SPEECH_CALLS)
                and not self._spoken_for_unknown(declared, call)
            ):
                self.add(
                    "V10",
                    f"step {step.line} calls {declared.name}, but the answer calls {call.name}",
                    action,
                )
                continue
            callee = self.context.callee(call.name)
            if callee is None:
                self.add("V10", f"{call.name} is not a playbook this agent can call{self._known()}", action)
                continue
            if not literal and call.name not in SPEECH_CALLS and not callee.model_callable:
                self.add(
                    "V10",
                    f"{call.name} may only be called by a step that names it (model_callable: false)",
                    action,
                )
                continue
            if not self._arguments_ok(call, action):
                continue
            if not literal and callee.requires_approval:
                approvals.append(call.name)
            if call.result is None and declared is not None and declared.result is not None:
                call = Call(
                    name=call.name, arguments=call.arguments, result=declared.result, natural=call.natural
                )
            if call.result is not None:
                self.known.add(call.result.name)
            calls.append(call)
        if with_approvals:
            return tuple(calls), tuple(approvals)
        return tuple(calls)

    def _spoken_for_unknown(self, declared: Call, call: Call) -> bool:
        """`01:QUE $name = Ask(the user for their name)` names a call that nothing answers (no playbook,
        no builtin, no remote tool): it cannot run as written, in this runtime or the original, so the
        step is natural language. Saying it (a Say, then the step's yield) is how it is done; any other
        call stays the step's business (V10)."""
        return call.name in SPEECH_CALLS and self.context.callee(declared.name) is None

    def _check_speech(self, executed: ExecutedStep) -> None:
        """A step whose work is to say something must say it: `03:QUE Say(user, Greet the user)` executed
        with no Say would report a message that was never sent. (A conversation step is exempt: re-entered
        after its yield, it may only decide that it is done.)"""
        step = executed.step
        declared = step.call
        if (
            declared is None
            or declared.name not in SPEECH_CALLS
            or step.opcode not in (Opcode.QUE, Opcode.EXE)
        ):
            return
        if step.line in self.flow.until or any(call.name in SPEECH_CALLS for call in executed.calls):
            return
        if _CONDITIONAL.search(step.text):
            return  # `Say(meeting, Show the board if not already shown)`: saying nothing is a decision
        self.add(
            "V10",
            f"step {step.line} is `{step.text[:60]}`: write its {declared.name}(...) with the message",
            executed.action,
        )

    def _known(self) -> str:
        names = sorted(
            name
            for name, callee in self.context.callees.items()
            if callee.model_callable and callee.kind.value != "builtin"
        )
        return f" (callable: {', '.join(names[:12])}{', ...' if len(names) > 12 else ''})" if names else ""

    def _arguments_ok(self, call: Call, action: object) -> bool:
        ok = True
        for argument in call.arguments:
            if argument.kind is ArgKind.VARIABLE:
                if argument.value not in self.known:
                    self.add(
                        "V10", f"argument ${argument.value} of {call.name} is not a known variable", action
                    )
                    ok = False
            elif argument.kind is not ArgKind.LITERAL and not _data_display(argument.text, self.known):
                self.add(
                    "V10",
                    f"argument {argument.text!r} of {call.name} must be a literal, a $variable, or a list, "
                    "dict or `+` of them",
                    action,
                )
                ok = False
        return ok

    def _check_trigger(self, action: TriggerAction) -> None:
        callees = set()
        for ref in action.fired:
            info = self.context.triggers.get(str(ref))
            if info is None:
                known = ", ".join(sorted(self.context.triggers)) or "none"
                self.add("V09", f'Trigger["{ref}"] does not exist; known triggers: {known}', action)
                continue
            callees.add(info.callee)
        for call in action.calls:
            if call.name not in callees:
                self.add(
                    "V10",
                    f"trig? may call only the playbooks of the triggers it fires ({', '.join(sorted(callees)) or 'none'}), not {call.name}",
                    action,
                )
                continue
            self._arguments_ok(call, action)

    def _check_var(self, action: VarAction) -> None:
        name = action.name
        if name != "__" and (not _NAME_RE.match(name) or keyword.iskeyword(name)):
            self.add("V08", f"${name} is not a valid variable name", action)
            return
        declared = self.context.declared_types.get(name) or action.type
        # null is "no value" (a call that failed, an answer not given yet): it fits every type.
        if action.literal and action.value is not None and not fits_type(action.value, declared):
            self.add(
                "V12",
                f"${name} is declared {declared}, but the answer sets it to {action.raw!r}",
                action,
            )

    def _check_yield(
        self, last: ExecutedStep, final: YieldAction, returned: ReturnAction | None, summary: str | None
    ) -> str:
        step = last.step
        kind = final.target.kind
        declared = step.yield_target
        ahead = self.flow.reachable(step.line, entered=last.entered)
        if step.opcode == Opcode.RET:
            if kind is not YieldKind.RETURN:
                self.add("V05", f"step {step.line} is RET: end the turn with yld return", final)
            if summary is None:
                self.add("V07", f'RET at {step.line} needs `Var[$__, "1-5 line summary"]`', final)
            return END
        if returned is not None and END not in ahead:
            self.add("V16", f"Return[...] but the playbook does not end after step {step.line}", returned)
        if declared is not None:
            if kind is declared.kind:
                return _continue_after(self.flow, last)
            if (
                kind is YieldKind.RETURN
                and declared.kind is YieldKind.CALL
                and self.flow.successors(step.line) == {END}
            ):
                return END  # R11: YLD call at the playbook's end, then the return
            if (
                kind is YieldKind.MEETING
                and declared.kind in (YieldKind.USER, YieldKind.CALL)
                and self.context.in_meeting
                and step.opcode != Opcode.YLD
            ):
                # In a meeting the others answer for "the user", and waiting for them also runs what a
                # `yld call` would have run.
                return _continue_after(self.flow, last)
            if kind is YieldKind.MEETING and declared.kind is YieldKind.USER and self.context.in_meeting:
                return _continue_after(self.flow, last)
            self.add(
                "V05",
                f"step {step.line} yields for {declared.kind.value}; end with yld {declared.kind.value}",
                final,
            )
            return _continue_after(self.flow, last)
        if kind is YieldKind.CALL:
            return _continue_after(self.flow, last)
        if kind is YieldKind.MEETING and self.context.in_meeting:
            return (
                step.line
                if self.flow.is_decision(step.line) and last.entered is None
                else _continue_after(self.flow, last)
            )
        if kind is YieldKind.RETURN and END in ahead:
            return END
        self.add(
            "V11",
            f"yld {kind.value} is not offered at step {step.line}; "
            + ("use yld call to continue" if kind is not YieldKind.CALL else ""),
            final,
        )
        return step.line


def _ends_turn(step: Step, flow: PlaybookFlow) -> bool:
    """Whether nothing may follow the step in the same answer: a YLD, a RET, or an inline yield (a
    conversation step's yield is optional: it may be done at once)."""
    if step.opcode in (Opcode.YLD, Opcode.RET):
        return True
    return step.yield_target is not None and step.line not in flow.until


def _data_display(text: str, known: set[str]) -> bool:
    """Whether an argument is data whose parts are literals or known variables: `[$players, "user"]`,
    `{"city": $city}`, `"Hello " + $name`, or a known variable named without its `$` (`pin` for `$pin`).
    The runtime fills in the variables (its bounded evaluator joins the text); nothing else is computed."""
    try:
        tree = parse_python(python_source(text.strip()), mode="eval")
    except (SyntaxError, ValueError):
        return False
    stack: list[ast.AST] = [tree.body]  # type: ignore[attr-defined]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            stack.extend(node.elts)
        elif isinstance(node, ast.Dict):
            if any(key is None for key in node.keys):
                return False
            stack.extend(key for key in node.keys if key is not None)
            stack.extend(node.values)
        elif isinstance(node, ast.Name):
            if node.id not in known:
                return False
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            stack.append(node.operand)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            # `"Hello " + $name + "!"`: a message put together from text and variables.
            stack.extend((node.left, node.right))
        elif not isinstance(node, ast.Constant):
            return False
    return True


def _yields_call(step: Step) -> bool:
    """A step whose own yield is `call` (an inline `; YLD for call`): with nothing queued it runs nothing,
    so an answer may go on past it."""
    return (
        step.opcode != Opcode.YLD
        and step.yield_target is not None
        and step.yield_target.kind is YieldKind.CALL
    )


def _with_calls(executed: ExecutedStep, calls: tuple[Call, ...]) -> ExecutedStep:
    return ExecutedStep(
        step=executed.step,
        action=executed.action,
        calls=executed.calls + calls,
        implied=executed.implied,
        entered=executed.entered,
        approvals=executed.approvals,
    )


def _missing(flow: PlaybookFlow, current: str, target: str) -> str:
    """`; 02 (EXE) comes first` when the current line does work, so it cannot stay unwritten."""
    step = flow.by_line.get(current)
    if step is None or flow.is_silent(current) or target == current:
        return ""
    return f"; {current} ({step.opcode}) comes first"


def _continue_after(flow: PlaybookFlow, executed: ExecutedStep) -> str:
    """The next line after a step that ended a turn: its only successor (the one its stated outcome
    picks), or the step itself when the model must still decide (a CND with two ways out)."""
    step = executed.step
    edges = [edge.target for edge in flow.edges_from(step.line)]
    if executed.entered is not None:
        chosen = flow.reachable(step.line, entered=executed.entered)
        direct = [target for target in edges if target in chosen and not chosen[target]]
        if len(direct) == 1:
            return direct[0]
    successors = set(edges)
    if len(successors) == 1:
        return next(iter(successors))
    return step.line

"""Verifying a model's answer against the running program before any of it is applied.

The verifier is pure: it reads the answer, the program and a description of where execution stands
(`TurnContext`), and either returns a `VerifiedTurn` (what to apply, in order, and where execution
continues) or raises `ContractViolation` listing every broken rule with a stable code, the answer
line, and a message written for the model to read on the retry.

Rules (codes are stable; docs/contract.md explains each):
  V01 a Step names another playbook, or a line that does not exist
  V02 a Step's code is not the opcode of that line
  V03 the steps do not form a legal path from the current line (a skipped or out-of-order step)
  V04 a step after one that ends the turn (YLD, RET, an inline `; YLD ...`)
  V05 the final yld does not match the yielding step (YLD for user answered with `yld call`, ...)
  V06 no final `yld`
  V07 RET without a `Var[$__, summary]`
  V08 an invalid variable name
  V09 `trig?` names a trigger that does not exist
  V10 a call that is not allowed: outside a step, on a step that calls something else, an unknown
      callee, or an argument that is not a literal or a known `$variable`
  V11 a yield the program does not offer here (exit or return mid-playbook, user at a step that does not ask)
  V12 a value that does not fit the variable's declared type
  V13 no step executed
  V14 an unknown yield target
  V15 something after the final `yld`
  V16 `Return[...]` where the playbook does not end
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

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
from pal_core.contract.parse import StrayCallAction
from pal_core.errors import PalError
from pal_core.flow import END, PlaybookFlow
from pal_core.ir import ArgKind, Call, Playbook, Step, YieldKind
from pal_core.values import SPEECH_CALLS, fits_type

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnContext:
    """Where execution stands when the model is asked to continue a playbook."""

    playbook: Playbook
    """The running playbook."""
    flow: PlaybookFlow
    """Its control-flow graph."""
    current_line: str
    """The line to execute next."""
    resumed_line: str | None = None
    """The line that ended the previous turn (a model may restate it before going on)."""
    variables: Mapping[str, str | None] = field(default_factory=dict)
    """Variables that exist now (name without `$` -> declared type or None)."""
    declared_types: Mapping[str, str] = field(default_factory=dict)
    """Types the program declares for variables (`$x:int` anywhere in the agent)."""
    is_callable: Callable[[str], bool] = lambda name: False
    """Whether a callee name (`Func`, `Agent.Playbook`, a builtin) can be called from here."""
    triggers: frozenset[str] = frozenset()
    """Trigger references that exist: `Playbook:T1:CND`."""
    in_meeting: bool = False
    """Whether the running frame is in a meeting (yld meeting is then always allowed)."""


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

    def __init__(self, violations: list[Violation], answer: str) -> None:
        self.violations = tuple(violations)
        self.answer = answer
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

    @property
    def steps(self) -> tuple[ExecutedStep, ...]:
        return tuple(action for action in self.actions if isinstance(action, ExecutedStep))


def verify(answer: Answer, context: TurnContext) -> VerifiedTurn:
    """Check every rule; return what to apply, or raise ContractViolation with all violations."""
    checker = _Checker(answer, context)
    turn = checker.run()
    if checker.violations or turn is None:
        raise ContractViolation(checker.violations, answer.raw)
    return turn


def _line_of(action: object, answer: Answer) -> int | None:
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
        self.violations.append(
            Violation(code=code, message=message, answer_line=_line_of(action, self.answer))
        )

    def run(self) -> VerifiedTurn | None:
        actions = list(self.answer.actions)
        final = self._final_yield(actions)
        resolved: list = []
        previous: Step | None = None
        ended_by: Step | None = None
        returned: ReturnAction | None = None
        summary: str | None = None
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
                resumed = self.context.resumed_line
                if (
                    previous is None
                    and step.line == resumed
                    and resumed != self.context.current_line
                    and not action.calls
                ):
                    # The model restates the step it yielded at last turn: already done, not run again.
                    previous = step
                    continue
                if ended_by is not None and step is not ended_by:
                    self.add(
                        "V04",
                        f"step {step.line} comes after step {ended_by.line}, which ends the turn; stop at "
                        f"{ended_by.line} with its yld",
                        action,
                    )
                    continue
                if previous is not None and step is previous:
                    # A restated step (models repeat the step they yield at): merge its calls.
                    merged = self._calls(step, action)
                    if resolved and isinstance(resolved[-1], ExecutedStep):
                        last = resolved[-1]
                        resolved[-1] = ExecutedStep(step=step, action=last.action, calls=last.calls + merged)
                    continue
                self._check_path(previous, step, action)
                resolved.append(ExecutedStep(step=step, action=action, calls=self._calls(step, action)))
                previous = step
                if _ends_turn(step):
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
                for ref in action.fired:
                    if str(ref) not in self.context.triggers:
                        known = ", ".join(sorted(self.context.triggers)) or "none"
                        self.add("V09", f'Trigger["{ref}"] does not exist; known triggers: {known}', action)
                resolved.append(action)
                continue
            if isinstance(action, ReturnAction):
                returned = action
                resolved.append(action)
                continue
            resolved.append(action)  # ArtifactAction, WhatAction
        executed = [item for item in resolved if isinstance(item, ExecutedStep)]
        if not executed:
            self.add(
                "V13",
                f"no step was executed; continue {self.context.playbook.name} at line "
                f"{self.context.current_line} with "
                f'`Step["{self.context.playbook.name}:{self.context.current_line}:'
                f'{self._opcode(self.context.current_line)}"]`',
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
        if not executed:
            return None
        last = executed[-1].step
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

    def _check_path(self, previous: Step | None, step: Step, action: StepAction) -> None:
        name = self.context.playbook.name
        if previous is None:
            allowed = {self.context.current_line}
            if self.context.resumed_line is not None:
                allowed.add(self.context.resumed_line)
            if step.line not in allowed:
                self.add(
                    "V03",
                    f"execution continues at {name}:{self.context.current_line}, not {step.line}; "
                    "do not skip steps",
                    action,
                )
            return
        successors = self.flow.successors(previous.line)
        if step.line not in successors:
            options = " or ".join(sorted(line for line in successors if line != END)) or "the end"
            self.add(
                "V03",
                f"step {step.line} cannot follow step {previous.line}; after {previous.line} comes {options}",
                action,
            )

    def _calls(self, step: Step, action: StepAction) -> tuple[Call, ...]:
        calls: list[Call] = []
        declared = step.call
        for call in action.calls:
            if call.name not in SPEECH_CALLS and step.opcode not in ("QUE", "EXE"):
                self.add(
                    "V10",
                    f"step {step.line} is {step.opcode}; calls such as {call.name}(...) belong on QUE or EXE steps",
                    action,
                )
                continue
            if (
                declared is not None
                and call.name != declared.name
                and not (call.name in SPEECH_CALLS and declared.name in SPEECH_CALLS)
            ):
                self.add(
                    "V10",
                    f"step {step.line} calls {declared.name}, but the answer calls {call.name}",
                    action,
                )
                continue
            if call.name not in SPEECH_CALLS and not self.context.is_callable(call.name):
                self.add("V10", f"{call.name} is not a playbook this agent can call", action)
                continue
            if not self._arguments_ok(call, action):
                continue
            if call.result is None and declared is not None and declared.result is not None:
                call = Call(
                    name=call.name, arguments=call.arguments, result=declared.result, natural=call.natural
                )
            if call.result is not None:
                self.known.add(call.result.name)
            calls.append(call)
        return tuple(calls)

    def _arguments_ok(self, call: Call, action: StepAction) -> bool:
        ok = True
        for argument in call.arguments:
            if argument.kind is ArgKind.VARIABLE:
                if argument.value not in self.known:
                    self.add(
                        "V10", f"argument ${argument.value} of {call.name} is not a known variable", action
                    )
                    ok = False
            elif argument.kind is not ArgKind.LITERAL:
                self.add(
                    "V10",
                    f"argument {argument.text!r} of {call.name} must be a literal or a $variable",
                    action,
                )
                ok = False
        return ok

    def _check_var(self, action: VarAction) -> None:
        name = action.name
        if name != "__" and (not _NAME_RE.match(name) or keyword.iskeyword(name)):
            self.add("V08", f"${name} is not a valid variable name", action)
            return
        declared = self.context.declared_types.get(name)
        if action.literal and not fits_type(action.value, declared):
            self.add(
                "V12",
                f"${name} is declared {declared}, but the answer sets it to {action.raw!r}",
                action,
            )

    def _check_yield(
        self, last: Step, final: YieldAction, returned: ReturnAction | None, summary: str | None
    ) -> str:
        kind = final.target.kind
        declared = last.yield_target
        if last.opcode == "RET":
            if kind is not YieldKind.RETURN:
                self.add("V05", f"step {last.line} is RET: end the turn with yld return", final)
            if summary is None:
                self.add("V07", f'RET at {last.line} needs `Var[$__, "1-5 line summary"]`', final)
            return END
        if returned is not None and END not in self.flow.successors(last.line):
            self.add("V16", f"Return[...] but the playbook does not end after step {last.line}", returned)
        if declared is not None:
            if kind is not declared.kind:
                self.add(
                    "V05",
                    f"step {last.line} yields for {declared.kind.value}; end with yld {declared.kind.value}",
                    final,
                )
            return _continue_after(self.flow, last)
        if kind is YieldKind.CALL:
            return _continue_after(self.flow, last)
        if kind is YieldKind.MEETING and self.context.in_meeting:
            return last.line if last.opcode == "CND" else _continue_after(self.flow, last)
        if kind is YieldKind.RETURN and END in self.flow.successors(last.line):
            return END
        self.add(
            "V11",
            f"yld {kind.value} is not offered at step {last.line}; "
            + ("use yld call to continue" if kind is not YieldKind.CALL else ""),
            final,
        )
        return last.line


def _ends_turn(step: Step) -> bool:
    return step.opcode in ("YLD", "RET") or step.yield_target is not None


def _continue_after(flow: PlaybookFlow, step: Step) -> str:
    """The next line after a step that ended a turn: its only successor, or the step itself when the
    model must still decide (a CND with two ways out)."""
    successors = flow.successors(step.line)
    if len(successors) == 1:
        return next(iter(successors))
    return step.line

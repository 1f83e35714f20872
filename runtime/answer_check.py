"""Debugging model answers: parse each, and (given a program and a location) repair and verify each
there, exactly as the runtime would (both read pal_core.contract.turn and pal_core.contract.read_turn).

`check_answers(texts, program=None, at=None)` is the public function; `pal check-turn` prints its report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pal_core.contract import ContractSyntaxError, StepAction, VarAction, parse_answer
from pal_core.contract.repair import repair
from pal_core.contract.turn import TurnContext, describe_turn
from pal_core.contract.verify import ContractViolation, verify
from pal_core.ir import PlaybookKind, Program
from runtime.errors import CallError


@dataclass(slots=True, kw_only=True)
class AnswerReport:
    """What happened to one answer."""

    index: int
    """0-based position in the input."""
    parsed: bool
    """Whether the answer parsed."""
    summary: str = ""
    """What was read (action kinds and steps), or where parsing failed."""
    repairs: list[str] = field(default_factory=list)
    """Benign forms rewritten before verifying (`R06 ...`)."""
    violations: list[str] = field(default_factory=list)
    """Broken rules when verifying."""


@dataclass(slots=True, kw_only=True)
class CheckReport:
    """All answers."""

    answers: list[AnswerReport]
    verified: bool

    @property
    def parsed(self) -> int:
        return sum(1 for answer in self.answers if answer.parsed)

    @property
    def failed(self) -> int:
        return len(self.answers) - self.parsed

    @property
    def violations(self) -> int:
        return sum(1 for answer in self.answers if answer.violations)

    @property
    def repaired(self) -> int:
        return sum(1 for answer in self.answers if answer.repairs)

    def summary_line(self) -> str:
        line = f"{self.parsed} parsed, {self.failed} failed"
        if self.verified:
            line += f", {self.violations} violations, {self.repaired} repaired"
        return line


def location_context(program: Program, at: str) -> TurnContext:
    """The turn context of `Playbook:Line` (or `Agent.Playbook:Line`) of a program, built as the runtime
    builds it, with every variable the agent names taken to exist."""
    target, _, line = at.rpartition(":")
    if not target or not line:
        raise CallError(f"--at must look like Playbook:Line, got {at!r}")
    agent_name, dot, playbook_name = target.rpartition(".")
    found = False
    for agent in program.agents:
        if dot and agent.name != agent_name:
            continue
        for playbook in agent.playbooks:
            if playbook.name != playbook_name or playbook.kind is not PlaybookKind.MARKDOWN:
                continue
            found = True
            context = describe_turn(
                program, agent, playbook, line, in_meeting=bool(playbook.metadata.meeting)
            )
            if line in context.flow.by_line:
                return context
    if found:
        raise CallError(f"{playbook_name} has no line {line}")
    raise CallError(f"no markdown playbook {target} in the program")


def check_answers(texts: Iterable[str], program: Program | None = None, at: str | None = None) -> CheckReport:
    """Parse every answer; repair and verify each at `at` when a program is given."""
    context = location_context(program, at) if program is not None and at else None
    reports = []
    for index, text in enumerate(texts):
        try:
            answer = parse_answer(text)
        except ContractSyntaxError as error:
            reports.append(AnswerReport(index=index, parsed=False, summary=str(error)))
            continue
        report = AnswerReport(index=index, parsed=True)
        if context is not None:
            answer, repairs = repair(answer, context)
            report.repairs = [item.format() for item in repairs]
            try:
                verify(answer, context)
            except ContractViolation as violation:
                report.violations = [item.format() for item in violation.violations]
        report.summary = _summary(answer)
        reports.append(report)
    return CheckReport(answers=reports, verified=context is not None)


def _summary(answer) -> str:  # type: ignore[no-untyped-def]
    steps = [str(action.ref) for action in answer.actions if isinstance(action, StepAction)]
    variables = [action.name for action in answer.actions if isinstance(action, VarAction)]
    final = answer.final_yield
    summary = f"{len(answer.actions)} action(s); steps {', '.join(steps) or 'none'}"
    if variables:
        summary += f"; vars {', '.join('$' + name for name in variables)}"
    summary += f"; yld {final.target.kind.value}" if final else "; no yld"
    return summary

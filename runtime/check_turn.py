"""Debugging model answers: parse each, and (given a program and a location) verify each there.

`check_answers(texts, program=None, at=None)` is the public function; `pal check-turn` prints its report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pal_core.contract import ContractSyntaxError, StepAction, VarAction, parse_answer
from pal_core.contract.verify import ContractViolation, TurnContext, verify
from pal_core.flow import PlaybookFlow
from pal_core.ir import Program
from runtime.errors import CallError
from runtime.execution import BUILTIN_NAMES


@dataclass(slots=True, kw_only=True)
class AnswerReport:
    """What happened to one answer."""

    index: int
    """0-based position in the input."""
    parsed: bool
    """Whether the answer parsed."""
    summary: str = ""
    """What was read (action kinds and steps), or where parsing failed."""
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

    def summary_line(self) -> str:
        line = f"{self.parsed} parsed, {self.failed} failed"
        if self.verified:
            line += f", {self.violations} violations"
        return line


def location_context(program: Program, at: str) -> TurnContext:
    """A verifier context for `Playbook:Line` (or `Agent.Playbook:Line`) of a program, with every variable
    the agent's steps and parameters name treated as known."""
    target, _, line = at.rpartition(":")
    if not target or not line:
        raise CallError(f"--at must look like Playbook:Line, got {at!r}")
    agent_name, dot, playbook_name = target.rpartition(".")
    for agent in program.agents:
        if dot and agent.name != agent_name:
            continue
        playbook = agent.playbook(playbook_name)
        if playbook is None:
            continue
        flow = PlaybookFlow(playbook)
        if line not in flow.by_line:
            raise CallError(f"{playbook.name} has no line {line}")
        variables: dict[str, str | None] = {}
        for candidate in agent.playbooks:
            for parameter in candidate.parameters:
                variables.setdefault(parameter.name, parameter.type)
            for step in candidate.all_steps():
                target_var = (
                    step.call.result if step.call else (step.assignment.target if step.assignment else None)
                )
                if target_var is not None:
                    variables.setdefault(target_var.name, target_var.type)
        names = {p.name for p in agent.playbooks}
        public = {f"{other.name}.{p.name}" for other in program.agents for p in other.playbooks if p.public}
        triggers = frozenset(f"{p.name}:{t.id}:{t.code}" for p in agent.playbooks for t in p.triggers)
        return TurnContext(
            playbook=playbook,
            flow=flow,
            current_line=line,
            variables=variables,
            declared_types={k: v for k, v in variables.items() if v},
            is_callable=lambda name, names=names, public=public: (
                name in names or name in public or name in BUILTIN_NAMES
            ),
            triggers=triggers,
            in_meeting=bool(playbook.metadata.meeting),
        )
    raise CallError(f"no playbook {target} in the program")


def check_answers(texts: Iterable[str], program: Program | None = None, at: str | None = None) -> CheckReport:
    """Parse every answer; verify each at `at` when a program is given."""
    context = location_context(program, at) if program is not None and at else None
    reports = []
    for index, text in enumerate(texts):
        try:
            answer = parse_answer(text)
        except ContractSyntaxError as error:
            reports.append(AnswerReport(index=index, parsed=False, summary=str(error)))
            continue
        steps = [str(action.ref) for action in answer.actions if isinstance(action, StepAction)]
        variables = [action.name for action in answer.actions if isinstance(action, VarAction)]
        final = answer.final_yield
        summary = f"{len(answer.actions)} action(s); steps {', '.join(steps) or 'none'}"
        if variables:
            summary += f"; vars {', '.join('$' + name for name in variables)}"
        summary += f"; yld {final.target.kind.value}" if final else "; no yld"
        report = AnswerReport(index=index, parsed=True, summary=summary)
        if context is not None:
            try:
                verify(answer, context)
            except ContractViolation as violation:
                report.violations = [item.format() for item in violation.violations]
        reports.append(report)
    return CheckReport(answers=reports, verified=context is not None)

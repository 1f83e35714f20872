"""Checks on one playbook's steps: numbering, nesting, command codes, CND bodies, JMP and YLD targets.

Two linear passes: the first indexes every step (numbers, jump targets, which numbers have sub-steps
claimed under them), the second walks each block of siblings once. Follow-on findings are held back
where one mistake would otherwise be reported several times (a step that is already reported as
misplaced does not also break the sequence of its neighbours).
"""

from __future__ import annotations

import re

from pal_core.ir import OPCODES, ConditionKind, Opcode, Playbook, Step, YieldKind
from pal_core.validate import rules
from pal_core.validate.report import FindingReporter, Location

# Every level two digits or more, from 01: `03`, `03.01`, `100`; never `3`, `003` or `00`.
_NUMBER_RE = re.compile(r"(?:0[1-9]|[1-9]\d+)(?:\.(?:0[1-9]|[1-9]\d+))*\Z")
_OPCODE_LIST = ", ".join(sorted(OPCODES))
_ALTERNATIVES = frozenset({ConditionKind.OTHERWISE, ConditionKind.ELSE_IF})
_LEAVES_BLOCK = frozenset({Opcode.RET, Opcode.JMP})


def check_steps(playbook: Playbook, report: FindingReporter, fallback: Location) -> list[Step]:
    """Report the step problems of `playbook`; return its steps that contain a call, in program order.

    `fallback` locates steps that carry no span of their own.
    """
    checker = _StepChecker(playbook, report, fallback)
    checker.index(playbook.steps)
    checker.block(playbook.steps, parent=None, parent_path=())
    return checker.calls


def _path(line: str) -> tuple[int, ...]:
    """`03.01` -> (3, 1); empty when the number is not digits (Step.path, without the generator)."""
    try:
        return tuple(map(int, line.split(".")))
    except ValueError:
        return ()


def format_number(path: tuple[int, ...]) -> str:
    """(3, 1) -> `03.01`."""
    return ".".join(f"{part:02d}" for part in path)


class _StepChecker:
    __slots__ = ("calls", "claimed", "fallback", "first_by_line", "jump_targets", "playbook", "report")

    def __init__(self, playbook: Playbook, report: FindingReporter, fallback: Location) -> None:
        self.playbook = playbook
        self.report = report
        self.fallback = fallback
        self.first_by_line: dict[str, Step] = {}
        self.jump_targets: set[str] = set()
        self.claimed: set[str] = set()
        """Numbers that some step's number places it under (`03` and `03.01` for `03.01.02`)."""
        self.calls: list[Step] = []

    # --- pass 1 ----------------------------------------------------------------------------------

    def index(self, steps: tuple[Step, ...]) -> None:
        pending = list(reversed(steps))
        while pending:
            step = pending.pop()
            self.first_by_line.setdefault(step.line, step)
            if step.jump_target is not None:
                self.jump_targets.add(step.jump_target)
            line = step.line
            while "." in line:
                line = line.rpartition(".")[0]
                self.claimed.add(line)
            pending.extend(reversed(step.children))

    # --- pass 2 ----------------------------------------------------------------------------------

    def block(
        self, siblings: tuple[Step, ...], *, parent: Step | None, parent_path: tuple[int, ...] | None
    ) -> None:
        """Check one list of sibling steps and, recursively, their bodies.

        `parent_path` is the number the siblings must start with; None when the parent's own number is
        unreadable, which leaves nothing to compare with.
        """
        expected = 1
        previous: Step | None = None
        previous_misplaced = False
        leaving: Step | None = None
        unreachable_reported = False
        for step in siblings:
            span = step.span or self.fallback
            path = _path(step.line)
            self.check_number(step, path, span)
            duplicate = self.first_by_line[step.line] is not step
            if duplicate:
                self.report_duplicate(step, span)
            misplaced = False
            if parent_path is not None and path:
                depth = len(parent_path)
                if len(path) == depth + 1 and path[:depth] == parent_path:
                    if not duplicate:
                        expected = self.check_sequence(step, path, parent_path, expected, span)
                else:
                    misplaced = True
                    self.report_misplaced(step, parent, previous if previous_misplaced else None, span)
                    if len(path) > depth and path[:depth] == parent_path and path[depth] == expected:
                        # Its missing parent would have had this number: the next sibling is no gap.
                        expected += 1
            self.check_kind(step, previous, span)
            if leaving is not None and step.line in self.jump_targets:
                leaving = None
            if leaving is not None:
                if not unreachable_reported:
                    self.report.add(
                        rules.UNREACHABLE_STEP,
                        f"step {step.line} can never run: step {leaving.line} ({leaving.opcode}) leaves the "
                        f"block before it; remove it or move it before step {leaving.line}",
                        span,
                    )
                    unreachable_reported = True
            elif step.opcode in _LEAVES_BLOCK:
                leaving = step
                unreachable_reported = False
            if step.children:
                self.block(step.children, parent=step, parent_path=path or None)
            previous = step
            previous_misplaced = misplaced

    # --- numbering -------------------------------------------------------------------------------

    def check_number(self, step: Step, path: tuple[int, ...], span: Location) -> None:
        if _NUMBER_RE.match(step.line):
            return
        if not path:
            hint = "use digits with dots between levels, such as 03 or 03.01"
        elif not all(path):
            hint = "numbering starts at 01 on every level"
        else:
            hint = f"write {format_number(path)}"
        self.report.add(
            rules.BAD_LINE_NUMBER,
            f"step number {step.line!r} must have two digits per level (01, 02, ..., 01.01); {hint}",
            span,
        )

    def report_duplicate(self, step: Step, span: Location) -> None:
        first = self.first_by_line[step.line]
        where = f" (line {first.span.line})" if first.span is not None else ""
        self.report.add(
            rules.DUPLICATE_LINE_NUMBER,
            f"step number {step.line} is already used{where} in playbook {self.playbook.name}; give every "
            "step its own number",
            span,
        )

    def check_sequence(
        self,
        step: Step,
        path: tuple[int, ...],
        parent_path: tuple[int, ...],
        expected: int,
        span: Location,
    ) -> int:
        """Report a step whose number is not the next one of its block; return the number after it."""
        number = path[-1]
        if number != expected:
            wanted = format_number((*parent_path, expected))
            self.report.add(
                rules.OUT_OF_SEQUENCE,
                f"step {step.line} is out of sequence: expected {wanted} here; number sibling steps "
                "01, 02, 03, ... without gaps or going back",
                span,
            )
        return number + 1

    def report_misplaced(
        self, step: Step, parent: Step | None, misplaced_before: Step | None, span: Location
    ) -> None:
        """A step whose number names a parent it is not nested in; `misplaced_before` is the misplaced
        step just before it, when there is one (a numbering slip there cuts the following steps off)."""
        named_parent = step.line.rpartition(".")[0]
        if parent is not None and not step.line.startswith(parent.line + "."):
            message = (
                f"step {step.line} is nested under step {parent.line} but its number does not start with "
                f"{parent.line}.; renumber it or move it out of step {parent.line}"
            )
        elif named_parent not in self.first_by_line:
            message = (
                f"step {step.line} has no parent step {named_parent}; add step {named_parent} before it "
                "or renumber it"
            )
        elif misplaced_before is not None:
            message = (
                f"step {step.line} is cut off from its parent step {named_parent} by the misnumbered step "
                f"{misplaced_before.line} before it; fix that step's number"
            )
        else:
            message = (
                f"step {step.line} is outside the body of step {named_parent}, where its number puts it; "
                f"move it up to follow step {named_parent}'s other sub-steps, or renumber it"
            )
        self.report.add(rules.MISPLACED_STEP, message, span)

    # --- command codes ---------------------------------------------------------------------------

    def check_kind(self, step: Step, previous: Step | None, span: Location) -> None:
        opcode = step.opcode
        if opcode not in OPCODES:
            upper = opcode.upper()
            hint = f"did you mean {upper!r}?" if upper in OPCODES else f"use one of {_OPCODE_LIST}"
            self.report.add(
                rules.UNKNOWN_OPCODE,
                f"step {step.line} has unknown command code {opcode!r}; {hint}",
                span,
                token=opcode,
            )
        elif opcode == Opcode.CND:
            self.check_condition(step, previous, span)
        elif step.children:
            self.report.add(
                rules.BODY_UNDER_NON_CONDITION,
                f"{opcode} step {step.line} has sub-steps, but only CND steps have a body; make step "
                f"{step.line} a CND or move its sub-steps out",
                span,
            )
        if opcode == Opcode.JMP:
            self.check_jump(step, span)
        target = step.yield_target
        if target is not None and target.kind is YieldKind.UNKNOWN:
            words = (target.name or "").split()
            if words and words[0].lower() in ("for", "to"):
                words = words[1:]
            written = " ".join(words)
            what = f"YLD target {written!r} is not known" if written else "YLD names no target"
            self.report.add(
                rules.UNKNOWN_YIELD_TARGET,
                f"step {step.line}: {what}; yield for user, call, return, exit, meeting or agent <name>",
                span,
                token=written or None,
            )
        if step.call is not None:
            self.calls.append(step)

    def check_condition(self, step: Step, previous: Step | None, span: Location) -> None:
        if not step.children and step.line not in self.claimed:
            self.report.add(
                rules.EMPTY_CONDITION,
                f"CND step {step.line} has no body; add the steps it controls under it as {step.line}.01, "
                f"{step.line}.02, ...",
                span,
            )
        condition = step.condition
        if (
            condition is not None
            and condition.kind in _ALTERNATIVES
            and (previous is None or previous.opcode != Opcode.CND)
        ):
            word = step.text.split(None, 1)[0] if step.text.strip() else "Otherwise"
            self.report.add(
                rules.DANGLING_OTHERWISE,
                f"CND step {step.line} ({word}) is an alternative, but the step before it is not a CND; "
                "place it directly after the If or When it is the alternative of",
                span,
            )

    def check_jump(self, step: Step, span: Location) -> None:
        target = step.jump_target
        if target is None:
            self.report.add(
                rules.JUMP_WITHOUT_TARGET,
                f"JMP step {step.line} names no step number; write the target first, as in 'JMP 03'",
                span,
            )
        elif target == step.line:
            self.report.add(
                rules.JUMP_TO_ITSELF,
                f"JMP step {step.line} jumps to itself, a loop that never ends; jump to the step that "
                "should run next",
                span,
                token=target,
            )
        elif target not in self.first_by_line:
            self.report.add(
                rules.JUMP_TARGET_MISSING,
                f"JMP step {step.line} jumps to {target}, which is not a step of playbook "
                f"{self.playbook.name}{self.spelling_hint(target)}",
                span,
                token=target,
            )

    def spelling_hint(self, target: str) -> str:
        """`; did you mean 03?` when the target is another spelling of an existing number."""
        try:
            path = tuple(int(part) for part in target.split("."))
        except ValueError:
            return ""
        candidate = format_number(path)
        if candidate in self.first_by_line:
            return f"; did you mean {candidate}?"
        return "; jump to an existing step number"

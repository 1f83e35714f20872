"""The paired real-answer corpus (tests/fixtures/paired): loading it, judging each answer as the runtime
does (the turn context of `pal check-turn`, then parse, repair, verify), and telling whether a mutant that
passes does what its original does. Shared by the corpus test and benchmarks/bench_contract.py."""

from __future__ import annotations

import collections
import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from pal_core.contract import ContractSyntaxError, parse_answer
from pal_core.contract.model import ReturnAction, TriggerAction, VarAction
from pal_core.contract.repair import repair
from pal_core.contract.turn import TurnContext
from pal_core.contract.verify import ContractViolation, ExecutedStep, VerifiedTurn, verify
from pal_core.flow import END
from pal_core.ir import YieldKind
from pal_core.parser import parse
from runtime.answer_check import location_context

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "paired"


@dataclass(slots=True)
class Outcome:
    """What happened to one answer."""

    record: dict
    parsed: bool
    turn: VerifiedTurn | None
    problems: list[str]
    repairs: list[str]


def load_records() -> list[dict]:
    with gzip.open(FIXTURE / "answers.jsonl.gz", "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def contexts(records: list[dict]) -> dict[tuple[str, str], TurnContext]:
    found: dict[tuple[str, str], TurnContext] = {}
    for record in records:
        key = (record["program"], record["at"])
        if key not in found:
            path = FIXTURE / "programs" / f"{record['program']}.pal"
            program = parse(path.read_text(encoding="utf-8"), file=str(path))
            found[key] = location_context(program, record["at"])
    return found


def judge(record: dict, context: TurnContext) -> Outcome:
    try:
        answer = parse_answer(record["text"])
    except ContractSyntaxError as error:
        return Outcome(record, False, None, [f"{error.code} {error.message}"], [])
    answer, repairs = repair(answer, context)
    try:
        turn = verify(answer, context)
    except ContractViolation as violation:
        return Outcome(
            record,
            True,
            None,
            [item.format() for item in violation.violations],
            [r.format() for r in repairs],
        )
    return Outcome(record, True, turn, [], [r.format() for r in (*repairs, *_fixed_values(turn))])


def _fixed_values(turn: VerifiedTurn) -> tuple:
    """What the verifier replaced with the program's own values (R16), with the repairs."""
    return tuple(item for item in turn.repairs if item.code == "R16")


def effect(turn: VerifiedTurn, context: TurnContext) -> tuple:
    """What a verified turn does, for comparing a mutant with its original: the lines that do work (not
    the decision lines and JMPs, which only route) with their calls, the variables set, the triggers
    fired, the return, the yield and where execution continues."""
    done: list = []
    for action in turn.actions:
        if isinstance(action, ExecutedStep):
            if context.flow.is_silent(action.step.line) and not action.calls:
                continue
            calls = tuple((call.name, tuple(arg.text for arg in call.arguments)) for call in action.calls)
            done.append(("step", action.step.line, calls))
        elif isinstance(action, VarAction) and action.name != "__":  # the summary is words, not effect
            done.append(("var", action.name, action.raw))
        elif isinstance(action, ReturnAction):
            done.append(("return", action.raw))
        elif isinstance(action, TriggerAction) and action.fired:
            done.append(("trigger", tuple(str(ref) for ref in action.fired)))
    # Any yield where the playbook ends is a return.
    kind = (
        YieldKind.RETURN
        if turn.next_line == END and turn.yield_target is YieldKind.CALL
        else turn.yield_target
    )
    return (tuple(done), kind, turn.yield_name, _resumes_at(turn.next_line, context))


def _resumes_at(line: str, context: TurnContext) -> str:
    """Where execution really resumes: a JMP is followed to its target (it does nothing else)."""
    seen = set()
    step = context.flow.by_line.get(line)
    while step is not None and step.opcode == "JMP" and step.jump_target and line not in seen:
        seen.add(line)
        line = step.jump_target
        step = context.flow.by_line.get(line)
    return line


def original_of(mutant: Outcome, candidates: list[Outcome]) -> Outcome | None:
    """The real answer a mutant was made from (the mutant files do not say): the one of its group that
    shares the most lines with it."""
    lines = collections.Counter(mutant.record["text"].splitlines())
    best, score = None, -1
    for candidate in candidates:
        shared = sum((lines & collections.Counter(candidate.record["text"].splitlines())).values())
        if shared > score:
            best, score = candidate, shared
    return best

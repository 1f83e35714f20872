"""How the answer contract fares on real model answers: tests/fixtures/paired (real answers that frontier
models wrote for the original Playbooks runtime, each paired with its program and start line, and one-rule
mutants of each).

Prints three figures, the first two against the issue's goals, and their breakdowns:
  1. parsed: real answers the parser reads (goal >= 99 %)
  2. accepted: real answers that pass repair + verification (goal >= 90 %), and the rejected ones by rule
  3. mutants caught, by kind, of those whose change alters what executes (goal 100 %): a mutant the
     verifier accepts is "benign" when its verified turn does exactly what the original's does (same
     steps, calls, variables, yield and next line), else "missed"

    python benchmarks/bench_contract.py [--list missed|rejected|repaired] [--kind KIND]
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pal_core.contract import ContractSyntaxError, parse_answer
from pal_core.contract.model import ReturnAction, TriggerAction, VarAction
from pal_core.contract.repair import repair
from pal_core.contract.turn import TurnContext
from pal_core.contract.verify import ContractViolation, ExecutedStep, VerifiedTurn, verify
from pal_core.flow import END
from pal_core.ir import YieldKind
from pal_core.parser import parse
from runtime.check_turn import location_context

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "paired"


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
    return Outcome(record, True, turn, [], [r.format() for r in repairs])


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


def _original(mutant: Outcome, candidates: list[Outcome]) -> Outcome | None:
    """The real answer a mutant was made from (the mutant files do not say): the one of its group that
    shares the most lines with it."""
    lines = collections.Counter(mutant.record["text"].splitlines())
    best, score = None, -1
    for candidate in candidates:
        shared = sum((lines & collections.Counter(candidate.record["text"].splitlines())).values())
        if shared > score:
            best, score = candidate, shared
    return best


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("--list", choices=("missed", "rejected", "repaired", "unparsed"))
    options.add_argument("--kind", help="only mutants of this kind (with --list missed)")
    arguments = options.parse_args()

    started = time.perf_counter()
    records = load_records()
    by_context = contexts(records)
    outcomes = [judge(record, by_context[(record["program"], record["at"])]) for record in records]
    elapsed = time.perf_counter() - started

    real = [o for o in outcomes if o.record["kind"] == "real"]
    by_group: dict[str, list[Outcome]] = collections.defaultdict(list)
    for outcome in real:
        by_group[outcome.record["group"]].append(outcome)
    parsed = sum(o.parsed for o in real)
    accepted = sum(o.turn is not None for o in real)
    repaired = sum(bool(o.repairs) and o.turn is not None for o in real)
    print(
        f"real answers: {len(real)} in {len({o.record['group'] for o in real})} groups; "
        f"{len(outcomes) - len(real)} mutants; {elapsed:.1f} s for all"
    )
    print(f"1. parsed:   {parsed}/{len(real)} = {100 * parsed / len(real):.1f} % (goal >= 99 %)")
    print(
        f"2. accepted: {accepted}/{len(real)} = {100 * accepted / len(real):.1f} % (goal >= 90 %); "
        f"{repaired} of them repaired"
    )
    rules: collections.Counter[str] = collections.Counter()
    for outcome in real:
        if outcome.turn is None:
            for code in sorted({problem.split()[0] for problem in outcome.problems}):
                rules[code] += 1
    print(
        "   rejected by rule (an answer may break several): "
        + ", ".join(f"{code} {count}" for code, count in sorted(rules.items()))
    )
    repairs: collections.Counter[str] = collections.Counter()
    for outcome in real:
        for code in {item.split()[0] for item in outcome.repairs}:
            repairs[code] += 1
    print(
        "   repairs used (answers): "
        + ", ".join(f"{code} {count}" for code, count in sorted(repairs.items()))
    )

    kinds: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    missed: list[Outcome] = []
    for outcome in outcomes:
        kind = outcome.record["kind"]
        if kind == "real":
            continue
        tally = kinds[kind]
        tally["total"] += 1
        if outcome.turn is None:
            tally["caught"] += 1
            continue
        original = _original(outcome, by_group[outcome.record["group"]])
        context = by_context[(outcome.record["program"], outcome.record["at"])]
        if (
            original is not None
            and original.turn is not None
            and effect(original.turn, context) == effect(outcome.turn, context)
        ):
            tally["benign"] += 1
        else:
            tally["missed"] += 1
            missed.append(outcome)
    altering = sum(t["total"] - t["benign"] for t in kinds.values())
    caught = sum(t["caught"] for t in kinds.values())
    print(
        f"3. mutants caught: {caught}/{altering} that alter what executes = "
        f"{100 * caught / max(altering, 1):.2f} % (goal 100 %)"
    )
    for kind, tally in sorted(kinds.items()):
        print(
            f"   {kind:17} caught {tally['caught']:5} / {tally['total'] - tally['benign']:5}"
            f"   (benign, same effect: {tally['benign']}; missed: {tally['missed']})"
        )

    chosen: list[Outcome] = []
    if arguments.list == "missed":
        chosen = [o for o in missed if arguments.kind in (None, o.record["kind"])]
    elif arguments.list == "rejected":
        chosen = [o for o in real if o.parsed and o.turn is None]
    elif arguments.list == "unparsed":
        chosen = [o for o in real if not o.parsed]
    elif arguments.list == "repaired":
        chosen = [o for o in real if o.repairs]
    for outcome in chosen:
        record = outcome.record
        print(
            f"\n===== {record['group']} {record['at']} {record['kind']} #{record['index']} ({record['program']})"
        )
        for line in outcome.repairs:
            print(f"repaired: {line}")
        for line in outcome.problems:
            print(line)
        print(record["text"])


if __name__ == "__main__":
    main()

"""The answer contract on real model answers (tests/fixtures/paired): the issue's three figures, and the
exact list of rejected real answers (tests/fixtures/paired/rejected.tsv, each with the rules it breaks and
why it is genuinely wrong). A change that rejects another real answer, or accepts a listed one, must update
that list on purpose; benchmarks/bench_contract.py prints the breakdowns."""

from __future__ import annotations

import collections
from functools import cache

from tests.paired_corpus import FIXTURE, Outcome, contexts, effect, judge, load_records, original_of


@cache
def _outcomes() -> tuple[Outcome, ...]:
    records = load_records()
    by_context = contexts(records)
    return tuple(judge(record, by_context[(record["program"], record["at"])]) for record in records)


def _real() -> list[Outcome]:
    return [outcome for outcome in _outcomes() if outcome.record["kind"] == "real"]


def _listed() -> dict[tuple[str, int], tuple[str, str]]:
    listed: dict[tuple[str, int], tuple[str, str]] = {}
    for line in (FIXTURE / "rejected.tsv").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        group, index, rules, reason = line.split("\t")
        assert reason.strip(), f"{group} #{index} has no reason"
        listed[(group, int(index))] = (rules, reason)
    return listed


def test_at_least_99_percent_of_the_real_answers_parse() -> None:
    real = _real()
    parsed = sum(outcome.parsed for outcome in real)
    assert len(real) == 2290
    assert parsed / len(real) >= 0.99, f"{parsed}/{len(real)}"


def test_at_least_90_percent_of_the_real_answers_are_accepted() -> None:
    real = _real()
    accepted = sum(outcome.turn is not None for outcome in real)
    assert accepted / len(real) >= 0.90, f"{accepted}/{len(real)}"


def test_the_rejected_real_answers_are_exactly_the_listed_ones_for_the_listed_rules() -> None:
    listed = _listed()
    rejected = {}
    for outcome in _real():
        if outcome.turn is None:
            rules = ",".join(sorted({problem.split()[0] for problem in outcome.problems}))
            rejected[(outcome.record["group"], outcome.record["index"])] = rules
    newly_rejected = sorted(set(rejected) - set(listed))
    newly_accepted = sorted(set(listed) - set(rejected))
    assert not newly_rejected, (
        f"rejected but not listed (a regression, or list it with a reason): {newly_rejected}"
    )
    assert not newly_accepted, f"listed but now accepted (remove them from rejected.tsv): {newly_accepted}"
    changed = {key: (listed[key][0], rejected[key]) for key in rejected if listed[key][0] != rejected[key]}
    assert not changed, f"rejected for other rules than listed (listed, now): {changed}"


def test_every_mutant_that_alters_what_executes_is_caught() -> None:
    outcomes = _outcomes()
    by_group: dict[str, list[Outcome]] = collections.defaultdict(list)
    for outcome in outcomes:
        if outcome.record["kind"] == "real":
            by_group[outcome.record["group"]].append(outcome)
    records = load_records()
    by_context = contexts(records)
    missed = []
    kinds: collections.Counter[str] = collections.Counter()
    for outcome in outcomes:
        kind = outcome.record["kind"]
        if kind == "real":
            continue
        kinds[kind] += 1
        if outcome.turn is None:
            continue
        # Accepted: fine only when it does exactly what the answer it was made from does.
        original = original_of(outcome, by_group[outcome.record["group"]])
        context = by_context[(outcome.record["program"], outcome.record["at"])]
        if (
            original is None
            or original.turn is None
            or effect(original.turn, context) != effect(outcome.turn, context)
        ):
            missed.append(f"{outcome.record['group']} {kind} #{outcome.record['index']}")
    assert set(kinds) == {
        "bad-line",
        "wrong-opcode",
        "unknown-playbook",
        "swapped-steps",
        "skipped-step",
        "missing-yld",
    }
    assert not missed, missed[:20]

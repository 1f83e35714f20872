"""The value mutants of the paired real answers (tests/value_mutants.py): every mutant that changes what
executes is rejected; the others (a value restated otherwise, a call left out) do exactly what their
original does, because the runtime does the program's part."""

from __future__ import annotations

import collections

from tests.paired_corpus import contexts, judge, load_records
from tests.value_mutants import ALTERING, judge_mutant, mutants


def test_every_value_mutant_is_caught_or_does_what_its_original_does() -> None:
    records = [record for record in load_records() if record["kind"] == "real"]
    by_context = contexts(records)
    kinds: collections.Counter[str] = collections.Counter()
    wrong: list[str] = []
    for record in records:
        context = by_context[(record["program"], record["at"])]
        for mutant in mutants(judge(record, context), context):
            verdict = judge_mutant(mutant)
            kinds[mutant.kind] += 1
            if verdict.caught or (verdict.benign and mutant.kind not in ALTERING):
                continue
            wrong.append(f"{mutant.kind} {record['group']} {record['at']}: {verdict.outcome.problems}")
    assert not wrong, "\n".join(wrong[:10])
    for kind in ("return-value", "say-message", "assigned-value", "bare-call", "made-up-result"):
        assert kinds[kind] >= 20, kinds
    assert kinds["overwritten-variable"] >= 1000, kinds

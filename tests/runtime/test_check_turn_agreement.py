"""`pal check-turn` and the runtime agree on every answer of the paired corpus: for each program and start
line, a real run is put at that line (the agent's variables set, as check-turn assumes), and every answer,
real or mutant, is judged by the runtime's own check (runtime.turns.verify_answer, what model_turn runs) and
by check-turn: both accept it, or both reject it for the same rules."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from functools import cache

import pytest

from pal_core.contract.turn import agent_variables
from pal_core.ir import PlaybookKind, Program
from pal_core.parser import parse
from runtime.answer_check import check_answers
from runtime.execution import Execution
from runtime.program_run import ProgramRun
from runtime.state import Frame
from runtime.turns import turn_context, verify_answer
from tests.conftest import FIXTURES

pytestmark = pytest.mark.anyio

PAIRED = FIXTURES / "paired"


@cache
def _records() -> dict[tuple[str, str], list[dict]]:
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    with gzip.open(PAIRED / "answers.jsonl.gz", "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            groups[(record["program"], record["at"])].append(record)
    return groups


@cache
def _program(digest: str) -> Program:
    path = PAIRED / "programs" / f"{digest}.pal"
    return parse(path.read_text(encoding="utf-8"), file=str(path))


def _runtime_verdict(execution: Execution, frame: Frame, text: str) -> tuple[bool, tuple[str, ...]]:
    from pal_core.contract import ContractSyntaxError
    from pal_core.contract.verify import ContractViolation

    context = turn_context(execution, frame, frame.flow)  # type: ignore[arg-type]
    try:
        verify_answer(execution, context, text)
    except ContractSyntaxError:
        return False, ("parse",)
    except ContractViolation as violation:
        return False, tuple(sorted({item.code for item in violation.violations}))
    return True, ()


def _check_turn_verdict(program: Program, at: str, text: str) -> tuple[bool, tuple[str, ...]]:
    (report,) = check_answers([text], program, at).answers
    if not report.parsed:
        return False, ("parse",)
    return not report.violations, tuple(sorted({item.split()[0] for item in report.violations}))


async def _positioned(program: Program, at: str) -> tuple[ProgramRun, Execution, Frame]:
    """A run with the agent of `at` at that line, every variable its playbooks name set."""
    target, _, line = at.rpartition(":")
    agent_name, dot, playbook_name = target.rpartition(".")
    for agent in program.agents:
        if dot and agent.name != agent_name:
            continue
        playbook = next(
            (
                candidate
                for candidate in agent.playbooks
                if candidate.name == playbook_name
                and candidate.kind is PlaybookKind.MARKDOWN
                and candidate.steps
            ),
            None,
        )
        if playbook is None:
            continue
        run = ProgramRun(program)
        await run.start()
        instance = await run.agent_instance(agent.name)
        assert instance is not None
        for name, declared in agent_variables(agent).items():
            instance.state.variables.set(name, None, declared)
        flow = instance.flow(playbook)
        meeting = "100" if playbook.metadata.meeting else None
        frame = Frame(playbook=playbook, flow=flow, line=line, meeting_id=meeting)
        return run, Execution(instance, meeting_id=meeting), frame
    raise AssertionError(f"no markdown playbook {target}")


async def test_check_turn_and_the_runtime_agree_on_every_answer_of_the_corpus() -> None:
    disagreements: list[str] = []
    judged = 0
    for (digest, at), records in sorted(_records().items()):
        program = _program(digest)
        run, execution, frame = await _positioned(program, at)
        try:
            for record in records:
                runtime = _runtime_verdict(execution, frame, record["text"])
                checked = _check_turn_verdict(program, at, record["text"])
                judged += 1
                if runtime != checked:
                    disagreements.append(
                        f"{record['group']} {at} {record['kind']} #{record['index']}: runtime {runtime}, "
                        f"check-turn {checked}"
                    )
        finally:
            await run.shutdown()
    assert judged == 12499
    assert not disagreements, "\n".join(disagreements[:20])

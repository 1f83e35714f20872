"""Runtime overhead per model turn (prompt build + parse + verify + apply) with an instant ScriptedModel on a
30-step playbook, and the prompt size per turn. Goal (issue 4): median overhead <= 1 ms per turn.

Each of the 30 steps is natural language, so each needs one model turn; the scripted model answers from a
precomputed list (no work per call), so what is measured is the runtime's own cost.

Budget checks (issue 13): the same playbook, and a fast-path loop (arithmetic, conditions, a Python call:
no model, so the checks' share is the largest it can be), timed with the budget checks on and with them
switched off (the step/time check, the value-size checks of variables, arguments and results, and the
evaluator's size estimates replaced by no-ops), interleaved in one run. Goal: under 5 % overhead.
Run: python benchmarks/bench_runtime.py
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from unittest import mock

from pal_core.contract import parse_answer
from pal_core.contract.verify import verify
from pal_core.parser import parse
from runtime.execution import Execution
from runtime.models import ScriptedModel
from runtime.program_run import ProgramRun
from runtime.prompt import build_messages
from runtime.state import Frame
from runtime.turns import turn_context

STEPS = 30
GOAL_MS = 1.0
BUDGET_GOAL = 1.05
LOOP_TURNS = 2000


def program_text() -> str:
    lines = [f"{n:02d}:EXE Note down fact number {n} about the order in $notes" for n in range(1, STEPS + 1)]
    return (
        "# Clerk\nKeeps notes about orders.\n\n## Bench($order:str) -> None\nTakes notes.\n### Triggers\n"
        "T1:CND When asked to take notes\n### Steps\n" + "\n".join(lines) + f"\n{STEPS + 1:02d}:RET\n"
    )


def answers() -> list[str]:
    return [
        f"recap – noted {n - 1} facts\nplan – note fact {n}\n"
        f'`Step["Bench:{n:02d}:EXE"]` noted fact {n}\n`Var[$notes, "fact {n}"]`\ntrig? no\nyld call'
        for n in range(1, STEPS + 1)
    ]


async def one_run(program) -> tuple[float, int, list[int]]:
    model = ScriptedModel(answers())
    run = ProgramRun(program, model=model)
    await run.start()
    instance = await run.agent_instance("Clerk")
    start = time.perf_counter()
    await Execution(instance).call_playbook("Bench", ["A-1"])
    elapsed = time.perf_counter() - start
    await run.shutdown()
    sizes = [sum(len(m.content) for m in request.messages) // 4 for request in model.requests]
    return elapsed, model.calls, sizes


async def stages(program) -> dict[str, float]:
    """Per-stage medians at a mid-playbook line (microseconds)."""
    run = ProgramRun(program, model=ScriptedModel(answers()))
    await run.start()
    instance = await run.agent_instance("Clerk")
    execution = Execution(instance)
    playbook = instance.playbooks["Bench"]
    flow = instance.flow(playbook)
    instance.state.variables.set("order", "A-1", "str")
    instance.state.variables.set("notes", "fact 14")
    frame = Frame(playbook=playbook, flow=flow, line="15", last_line="14")
    execution.stack.push(frame)
    text = answers()[14]
    results: dict[str, list[float]] = {"prompt build": [], "parse": [], "verify": []}
    for _ in range(300):
        t0 = time.perf_counter()
        context = turn_context(execution, frame, flow)
        build_messages(execution, frame, context=context)
        t1 = time.perf_counter()
        answer = parse_answer(text)
        t2 = time.perf_counter()
        verify(answer, context)
        t3 = time.perf_counter()
        results["prompt build"].append(t1 - t0)
        results["parse"].append(t2 - t1)
        results["verify"].append(t3 - t2)
    await run.shutdown()
    return {name: statistics.median(values) * 1e6 for name, values in results.items()}


LOOP_PROGRAM = f"""# Counter
Counts on the fast path.

```python
@playbook
async def Score(n: int) -> int:
    return n % 7
```

## Loop() -> int
### Steps
01:EXE $i:int = 0
02:EXE $total:int = 0
03:CND While $i < {LOOP_TURNS}
  03.01:EXE $i = $i + 1
  03.02:EXE $total = $total + $i * 2
  03.03:EXE $score:int = Score($i)
  03.04:CND If $score == 3
    03.04.01:EXE $total = $total - 1
  03.05:JMP 03
04:RET $total
"""


@contextmanager
def checks_disabled() -> Iterator[None]:
    """The budget checks replaced by no-ops: the code path without them, for comparison."""
    import runtime.execution
    import runtime.state
    from runtime.budget import Budget
    from runtime.expressions import _Evaluator

    def no_check(*_args: object, **_kwargs: object) -> None:
        return None

    with ExitStack() as stack:
        stack.enter_context(mock.patch.object(Budget, "check", lambda self, agent, frame: False))
        stack.enter_context(mock.patch.object(runtime.state, "check_value", no_check))
        stack.enter_context(mock.patch.object(runtime.execution, "check_value", no_check))
        for name in ("_check_binary", "_check_built", "_check_conversion"):
            stack.enter_context(mock.patch.object(_Evaluator, name, no_check))
        yield


async def loop_run(program) -> float:
    """CPU seconds of one run of the loop (CPU time: on a shared machine, wall time mostly measures the
    other processes)."""
    run = ProgramRun(program)
    await run.start()
    instance = await run.agent_instance("Counter")
    start = time.process_time()
    await Execution(instance).call_playbook("Loop")
    elapsed = time.process_time() - start
    await run.shutdown()
    return elapsed


async def turns_run(program) -> float:
    """CPU seconds of one run of the 30-turn playbook."""
    model = ScriptedModel(answers())
    run = ProgramRun(program, model=model)
    await run.start()
    instance = await run.agent_instance("Clerk")
    start = time.process_time()
    await Execution(instance).call_playbook("Bench", ["A-1"])
    elapsed = time.process_time() - start
    await run.shutdown()
    return elapsed


async def budget_overhead(name: str, program, measure, rounds: int) -> None:
    """Median CPU time with checks and without, interleaved and in alternating order (so machine load
    and warm caches favour neither)."""
    with_checks: list[float] = []
    without: list[float] = []
    await measure(program)  # warm-up
    for round_number in range(rounds):
        for checked in (True, False) if round_number % 2 else (False, True):
            if checked:
                with_checks.append(await measure(program))
            else:
                with checks_disabled():
                    without.append(await measure(program))
    on, off = statistics.median(with_checks), statistics.median(without)
    ratio = on / off
    verdict = "ok" if ratio <= BUDGET_GOAL else "OVER"
    print(
        f"  {name:<44}: with checks {on * 1000:8.2f} ms, without {off * 1000:8.2f} ms, "
        f"ratio {ratio:.3f} (goal <= {BUDGET_GOAL}) {verdict}"
    )


async def main() -> None:
    program = parse(program_text())
    await one_run(program)  # warm-up
    per_turn = []
    sizes: list[int] = []
    for _ in range(7):
        elapsed, calls, sizes = await one_run(program)
        per_turn.append(elapsed / calls * 1000)
    median = statistics.median(per_turn)
    print(f"{STEPS}-step playbook, one model turn per step, instant scripted model (median of 7 runs)")
    print(
        f"overhead per turn (build + model call bookkeeping + parse + verify + apply): {median:.3f} ms  "
        f"goal {GOAL_MS} ms  ratio {median / GOAL_MS:.2f}x"
    )
    for name, micros in (await stages(program)).items():
        print(f"  {name:<13}: {micros:8.1f} µs")
    print(
        f"prompt size per turn (characters / 4): first {sizes[0]}, last {sizes[-1]}, median {statistics.median(sizes):.0f}"
    )
    print("budget checks (issue 13), median of interleaved runs:")
    await budget_overhead(f"{STEPS}-step playbook, one model turn a step", program, turns_run, 15)
    loop = parse(LOOP_PROGRAM)
    await budget_overhead(f"fast-path loop, {LOOP_TURNS} turns ({LOOP_TURNS * 6} steps)", loop, loop_run, 21)


if __name__ == "__main__":
    asyncio.run(main())

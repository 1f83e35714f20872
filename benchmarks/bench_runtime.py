"""Runtime overhead per model turn (prompt build + parse + verify + apply) with an instant ScriptedModel on a
30-step playbook, and the prompt size per turn. Goal (issue 4): median overhead <= 1 ms per turn.

Each of the 30 steps is natural language, so each needs one model turn; the scripted model answers from a
precomputed list (no work per call), so what is measured is the runtime's own cost.
Run: python benchmarks/bench_runtime.py
"""

from __future__ import annotations

import asyncio
import statistics
import time

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
        build_messages(execution, frame)
        t1 = time.perf_counter()
        answer = parse_answer(text)
        t2 = time.perf_counter()
        verify(answer, turn_context(execution, frame, flow))
        t3 = time.perf_counter()
        results["prompt build"].append(t1 - t0)
        results["parse"].append(t2 - t1)
        results["verify"].append(t3 - t2)
    await run.shutdown()
    return {name: statistics.median(values) * 1e6 for name, values in results.items()}


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


if __name__ == "__main__":
    asyncio.run(main())

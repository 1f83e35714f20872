"""The bundled local model (issue 6): speed on this CPU, grammar sizes, and how often one model turn
passes the verifier with instructions only, with example turns, and with example turns plus the
turn grammar.

Every turn is a real generation by SmolLM2-135M (llama-cpp-python, 2 threads unless PAL_LOCAL_THREADS
says otherwise), checked by the real `parse_answer` and `verify`. The prompt is the runtime's system
prompt (runtime.prompt.SYSTEM) and a user message with the playbook, the example turns (when used)
and the task line, as the runtime writes them. Seeds are fixed, so a rerun on the same machine gives
the same answers; only the timings move with the machine's load.
Then the three example programs (examples/) run end to end on the runtime with and without the grammar:
whether each finishes, contract compliance on the first try, retries per turn, model calls per playbook,
seconds per model call.
Run: python benchmarks/bench_local_model.py [seeds per case, default 5]
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pal_core.contract import ContractSyntaxError, parse_answer
from pal_core.contract.verify import ContractViolation, TurnContext, verify
from pal_core.flow import PlaybookFlow
from pal_core.ir import PlaybookKind, Program
from pal_core.parser import parse
from pal_core.writer import write_playbook
from runtime.execution import BUILTIN_NAMES
from runtime.local.fewshot import build_example_turns, render_examples
from runtime.local.gbnf_check import parse_gbnf
from runtime.local.grammar import build_turn_grammar
from runtime.local.model import LocalSettings, engine
from runtime.local.turns import GrammarError, TurnSpec
from runtime.prompt import SYSTEM

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
MAX_TOKENS = 256
TEMPERATURE = 0.7


@dataclass(frozen=True, slots=True, kw_only=True)
class Case:
    """One turn to ask for."""

    path: Path
    """The program."""
    agent: str
    """The agent."""
    playbook: str
    """The playbook."""
    line: str
    """The line the turn starts at."""
    variables: dict[str, object]
    """Variables that exist at that point."""


CASES = (
    Case(
        path=ROOT / "tests/fixtures/pal/seed_customer_support.pal",
        agent="CustomerSupport",
        playbook="Greeting",
        line="01",
        variables={},
    ),
    Case(
        path=CORPUS / "05-country-facts.pbasm",
        agent="FactsAboutNearbyCountries",
        playbook="Main",
        line="03",
        variables={"country": "India"},
    ),
    Case(
        path=CORPUS / "playbooks-python-interop.pbasm",
        agent="Interop",
        playbook="XY",
        line="01",
        variables={"num": 2},
    ),
)


def _program(path: Path) -> Program:
    return parse(path.read_text(encoding="utf-8"), file=str(path))


def _messages(case: Case, program: Program, examples: bool) -> list[dict[str, str]]:
    playbook = program.agent(case.agent).playbook(case.playbook)  # type: ignore[union-attr]
    step = PlaybookFlow(playbook).by_line[case.line]  # type: ignore[arg-type]
    parts = [
        f"# Agent {case.agent}",
        "## The playbook you are executing\n```pal\n" + write_playbook(playbook).rstrip() + "\n```",
    ]  # type: ignore[arg-type]
    if case.variables:
        parts.append(
            "## State\n" + "\n".join(f"- ${name} = {value!r}" for name, value in case.variables.items())
        )
    if examples:
        turns = build_example_turns(program, case.agent, case.playbook, variables=case.variables)
        parts.append(
            "## Example answers (format only; use the real lines of the program)\n" + render_examples(turns)
        )
    parts.append(
        f"## Your task\nContinue executing {case.playbook} at line {case.line}: `{step.line}:{step.opcode} {step.text}`\n"
        f'Begin with recap and plan, then `Step["{case.playbook}:{case.line}:{step.opcode}"]`.'
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def _verifies(case: Case, program: Program, text: str) -> bool:
    agent = program.agent(case.agent)
    playbook = agent.playbook(case.playbook)  # type: ignore[union-attr]
    context = TurnContext(
        playbook=playbook,  # type: ignore[arg-type]
        flow=PlaybookFlow(playbook),  # type: ignore[arg-type]
        current_line=case.line,
        variables={name: None for name in case.variables},
        is_callable=lambda name: name in BUILTIN_NAMES or agent.playbook(name) is not None,  # type: ignore[union-attr]
        triggers=frozenset(f"{p.name}:{t.id}:{t.code}" for p in agent.playbooks for t in p.triggers),  # type: ignore[union-attr]
    )
    try:
        verify(parse_answer(text), context)
    except (ContractSyntaxError, ContractViolation):
        return False
    return True


def speed() -> None:
    local = engine("smollm2", LocalSettings.from_environment())
    started = time.perf_counter()
    local.generate([{"role": "user", "content": "Hi"}], max_tokens=1, temperature=0.0)
    print(
        f"load + first call: {time.perf_counter() - started:.2f} s (model load {local.load_seconds:.2f} s), threads {local.settings.n_threads}"
    )
    long_prompt = [
        {"role": "user", "content": "Summarise this. " + "The quick brown fox jumps over the lazy dog. " * 60}
    ]
    prompt_only = local.generate(long_prompt, max_tokens=1, temperature=0.0)
    print(
        f"prompt: {prompt_only.prompt_tokens} tokens in {prompt_only.seconds:.2f} s = {prompt_only.prompt_tokens / prompt_only.seconds:.0f} tok/s"
    )
    free = "root ::= [a-z ]{200,400}"
    story = local.generate(long_prompt, max_tokens=160, temperature=0.8, seed=1, grammar=free)
    rate = (story.completion_tokens - 1) / max(story.seconds - prompt_only.seconds, 1e-6)
    print(f"generation (simple grammar): {story.completion_tokens} tokens, {rate:.0f} tok/s after the prompt")


def grammar_sizes() -> None:
    rules: list[int] = []
    sizes: list[int] = []
    seconds: list[float] = []
    for path in sorted(CORPUS.glob("*.pbasm")):
        program = _program(path)
        for agent in program.agents:
            for playbook in agent.playbooks:
                if playbook.kind is not PlaybookKind.MARKDOWN or not playbook.steps:
                    continue
                for line in PlaybookFlow(playbook).by_line:
                    started = time.perf_counter()
                    try:
                        built = build_turn_grammar(
                            TurnSpec(
                                program=program, agent=agent.name, playbook=playbook.name, current_line=line
                            )
                        )
                    except GrammarError:
                        continue
                    seconds.append(time.perf_counter() - started)
                    parse_gbnf(built.text)
                    rules.append(built.rule_count)
                    sizes.append(len(built.text))
    print(
        f"grammars: {len(sizes)} (every line of every corpus playbook); rules median {statistics.median(rules):.0f} "
        f"max {max(rules)}; characters median {statistics.median(sizes):.0f} max {max(sizes)}; "
        f"build median {statistics.median(seconds) * 1000:.2f} ms max {max(seconds) * 1000:.2f} ms"
    )


def compliance(seeds: int) -> None:
    local = engine("smollm2", LocalSettings.from_environment())
    conditions = (
        ("instructions only", False, False),
        ("examples", True, False),
        ("examples + grammar", True, True),
    )
    for label, examples, constrained in conditions:
        passed = 0
        total = 0
        seconds: list[float] = []
        for case in CASES:
            program = _program(case.path)
            grammar = None
            if constrained:
                spec = TurnSpec(
                    program=program,
                    agent=case.agent,
                    playbook=case.playbook,
                    current_line=case.line,
                    variables=case.variables,
                )
                grammar = build_turn_grammar(spec).text
            messages = _messages(case, program, examples)
            for seed in range(seeds):
                answer = local.generate(
                    messages, max_tokens=MAX_TOKENS, temperature=TEMPERATURE, seed=seed, grammar=grammar
                )
                seconds.append(answer.seconds)
                passed += _verifies(case, program, answer.text)
                total += 1
        print(
            f"{label:20} verified {passed}/{total}; seconds per turn median {statistics.median(seconds):.1f}"
        )


EXAMPLES = ROOT / "examples"
RUNS = (
    ("hello.pal", []),
    ("greeting.pal", ["Alice"]),
    ("customer_support.pb", ["My order number is 12345678"]),
)


async def _run_example(program: Program, replies: list[str], *, grammar: bool) -> dict[str, float]:
    """One end-to-end run of an example on the runtime; figures from its trace."""
    from runtime.humans import ScriptedHuman
    from runtime.local.hooks import turn_examples
    from runtime.models import resolve_model
    from runtime.program_run import ProgramRun, RunLimits
    from runtime.trace import Tracer

    tracer = Tracer()
    options = {} if grammar else {"grammar": lambda *_: None, "examples": turn_examples}
    run = ProgramRun(
        program,
        model=resolve_model("local/smollm2"),
        human=ScriptedHuman(replies),
        tracer=tracer,
        limits=RunLimits(seed=7, max_model_calls=12, max_retries=2),
        **options,
    )
    start = time.perf_counter()
    result = await run.run()
    elapsed = time.perf_counter() - start
    calls = [event.model_call for event in tracer.events if event.event == "model_call"]
    rejected = {event.model_call for event in tracer.events if event.event == "violation"}
    accepted = [call for call in calls if call not in rejected]
    # A turn's first try is a call right after an accepted call (or the run's first call).
    first_tries = [call for index, call in enumerate(calls) if index == 0 or calls[index - 1] not in rejected]
    first_ok = sum(1 for call in first_tries if call not in rejected)
    turns = len(accepted) + (1 if result.status == "error" else 0)
    return {
        "finished": float(result.status in ("exit", "idle")),
        "calls": len(calls),
        "turns": turns,
        "first_ok": first_ok,
        "first_tries": len(first_tries),
        "retries": len(rejected),
        "seconds": elapsed,
    }


def end_to_end() -> None:
    """The example programs run end to end, with and without the turn grammar (example turns in both)."""
    import asyncio

    from runtime.loader import load

    for grammar in (False, True):
        label = "with grammar   " if grammar else "without grammar"
        for name, replies in RUNS:
            figures = asyncio.run(_run_example(load(EXAMPLES / name), replies, grammar=grammar))
            turns = max(figures["turns"], 1)
            print(
                f"{label} {name:20} {'finished' if figures['finished'] else 'FAILED  '}  "
                f"first-try compliance {figures['first_ok']:.0f}/{figures['first_tries']:.0f}  "
                f"retries per turn {figures['retries'] / turns:.2f}  model calls {figures['calls']:.0f}  "
                f"seconds per call {figures['seconds'] / max(figures['calls'], 1):.1f}"
            )


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    grammar_sizes()
    speed()
    compliance(seeds)
    end_to_end()


if __name__ == "__main__":
    main()

"""The bundled local model (issue 6): speed on this CPU, grammar sizes, and how often one model turn
passes the verifier with instructions only, with example turns, and with example turns plus the
turn grammar.

Every turn is a real generation by SmolLM2-135M (llama-cpp-python, threads chosen for the free cores unless
PAL_LOCAL_THREADS says), checked by the real `parse_answer` and `verify`. The prompt is the runtime's system
prompt (runtime.prompt.SYSTEM) and a user message with the playbook, the example turns (when used)
and the task line, as the runtime writes them. Seeds are fixed, so a rerun on the same machine gives
the same answers; only the timings move with the machine's load.
Then the three example programs (examples/) run end to end on the runtime with and without the grammar:
whether each finishes, contract compliance on the first try, retries per turn, model calls per playbook,
seconds per model call.
Then, for issue 12, in the same run:
- turns: each example program and the demo run once on the runtime; their model requests are replayed
  in order on bare llama-cpp-python as the runtime used it before (every prompt from scratch,
  `create_chat_completion` with the grammar) and on our engine without and with prompt reuse: seconds
  per turn, prompt tokens evaluated per turn, and whether the three give the same answers;
- speed: our prompt and generation tokens/s against bare llama-cpp-python on the same prompt, grammar
  and settings;
- load: a turn while another process keeps one core busy, on one thread and on two, and the number of
  threads the engine chooses by itself.
All comparisons use the same thread count (PAL_LOCAL_THREADS, else what the machine allowed at start).
Run: python benchmarks/bench_local_model.py [seeds per case, default 5] [--only turns,speed,load,...]
(sections: sizes, speed1, compliance, end_to_end, turns, speed, load, shapes, react; the last two are issue 28's,
in benchmarks/local_shapes.py: imported programs run on the bundled model, and react rounds with their grammar
against the same prompt unconstrained)
"""

from __future__ import annotations

import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pal_core.contract import ContractSyntaxError, parse_answer
from pal_core.contract.verify import ContractViolation, verify
from pal_core.flow import PlaybookFlow
from pal_core.ir import PlaybookKind, Program
from pal_core.parser import parse
from pal_core.writer import write_playbook
from runtime.local.fewshot import build_example_turns, render_examples
from runtime.local.gbnf_check import parse_gbnf
from runtime.local.grammar import build_turn_grammar
from runtime.local.model import LocalSettings, engine
from runtime.local.turn_plan import GrammarError, local_context
from runtime.prompt import SYSTEM

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.local_shapes import react_turns, shapes

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
        turns = build_example_turns(_context(case, program))
        parts.append(
            "## Example answers (format only; use the real lines of the program)\n" + render_examples(turns)
        )
    parts.append(
        f"## Your task\nContinue executing {case.playbook} at line {case.line}: `{step.line}:{step.opcode} {step.text}`\n"
        f'Begin with recap and plan, then `Step["{case.playbook}:{case.line}:{step.opcode}"]`.'
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def _context(case: Case, program: Program):  # type: ignore[no-untyped-def]
    """The turn as the runtime describes it (the one description the grammar, examples and verifier read)."""
    return local_context(program, case.agent, case.playbook, current_line=case.line, variables=case.variables)


def _verifies(case: Case, program: Program, text: str) -> bool:
    try:
        verify(parse_answer(text), _context(case, program))
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
                            local_context(program, agent.name, playbook.name, current_line=line)
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
                grammar = build_turn_grammar(_context(case, program)).text
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
    from runtime.models import resolve_model
    from runtime.program_run import ProgramRun, RunLimits
    from runtime.trace import Tracer

    tracer = Tracer()
    model = resolve_model("local/smollm2")
    run = ProgramRun(
        program,
        model=model if grammar else _without_grammar(model),
        human=ScriptedHuman(replies),
        tracer=tracer,
        limits=RunLimits(seed=7, max_model_calls=12, max_retries=2),
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


def _examples_only_class() -> type:
    from runtime.local.shaping import GrammarShaping
    from runtime.models.base import Model, TurnShape

    class ExamplesOnly(GrammarShaping):
        """The bundled model's example answers without its grammar."""

        def shape(self, turn):  # type: ignore[no-untyped-def]
            return TurnShape(examples=super().shape(turn).examples)

        def trigger_check(self, triggers):  # type: ignore[no-untyped-def]
            return TurnShape()

    class Unconstrained(Model):
        """The bundled model asked without grammars (its example answers still in the prompt)."""

        def __init__(self, inner: Model) -> None:
            self.inner = inner

        @property
        def name(self) -> str:
            return self.inner.name

        async def prepare(self) -> None:
            await self.inner.prepare()

        def turn_shaping(self):  # type: ignore[no-untyped-def]
            return ExamplesOnly()

        async def complete(self, request):  # type: ignore[no-untyped-def]
            return await self.inner.complete(request)

    return Unconstrained


def _without_grammar(model):  # type: ignore[no-untyped-def]
    return _examples_only_class()(model)


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


# --- issue 12: turns before and after prompt reuse, tokens/s against bare llama-cpp-python, load --------

TURN_RUNS = (*RUNS, ("order_status.pal", ["Hi! Where is my order 2718?"]))
"""The three example programs and the demo, with the replies `make demo` and the tests give."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Turn:
    """One model request of a real run, as the runtime sent it."""

    program: str
    messages: list[dict[str, str]]
    grammar: str | None
    max_tokens: int
    temperature: float
    seed: int | None
    stable_prefix: tuple[int, int] | None


def _threads() -> int:
    from runtime.local.cpu import choose_threads

    fixed = LocalSettings.from_environment().n_threads
    return fixed or choose_threads()


def _record(name: str, replies: list[str]) -> list[Turn]:
    """Run an example on the runtime with the bundled model and keep every request it made."""
    import asyncio

    from runtime.humans import ScriptedHuman
    from runtime.loader import load
    from runtime.models import resolve_model
    from runtime.program_run import ProgramRun, RunLimits

    model = resolve_model("local/smollm2")
    recorded: list[Turn] = []

    from runtime.models.base import ObservedModel

    def keep(request) -> None:  # type: ignore[no-untyped-def]
        recorded.append(
            Turn(
                program=name,
                messages=[{"role": m.role, "content": m.content} for m in request.messages],
                grammar=request.grammar,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                seed=request.seed,
                stable_prefix=request.stable_prefix,
            )
        )

    run = ProgramRun(
        load(EXAMPLES / name),
        model=ObservedModel(model, keep),
        human=ScriptedHuman(replies),
        limits=RunLimits(seed=7, max_model_calls=12, max_retries=2),
    )
    result = asyncio.run(run.run())
    print(f"  recorded {name}: {len(recorded)} turn(s), {result.status}: {result.reason}", flush=True)
    return recorded


def _bare(threads: int):  # type: ignore[no-untyped-def]
    """Bare llama-cpp-python, loaded as the runtime loaded it before (n_batch 512)."""
    from llama_cpp import Llama

    from runtime.local.model import DEFAULT_SEED, find_bundled_model

    return Llama(
        model_path=str(find_bundled_model()),
        n_ctx=4096,
        n_threads=threads,
        n_threads_batch=threads,
        seed=DEFAULT_SEED,
        verbose=False,
    )


def _with_full_system_prompt(turn: Turn) -> Turn:
    """The request as the runtime wrote it before issue 12: the full system prompt (runtime.prompt.SYSTEM,
    which spells out the rules the grammar enforces) instead of the short one it now sends under a grammar."""
    from dataclasses import replace

    messages = [
        {**message, "content": SYSTEM} if message["role"] == "system" else message
        for message in turn.messages
    ]
    return replace(turn, messages=messages)


def _bare_turn(llama, turn: Turn) -> tuple[str, int, float]:  # type: ignore[no-untyped-def]
    """The runtime's turn before issue 12: reset, then create_chat_completion under the grammar."""
    from llama_cpp import LlamaGrammar

    from runtime.local.model import DEFAULT_SEED

    started = time.perf_counter()
    llama.reset()
    result = llama.create_chat_completion(
        messages=turn.messages,
        max_tokens=turn.max_tokens,
        temperature=turn.temperature,
        seed=DEFAULT_SEED if turn.seed is None else turn.seed,
        grammar=LlamaGrammar.from_string(turn.grammar, verbose=False) if turn.grammar else None,
    )
    seconds = time.perf_counter() - started
    return result["choices"][0]["message"]["content"] or "", result["usage"]["prompt_tokens"], seconds


def turns() -> None:
    """Seconds and prompt tokens evaluated per turn: before (bare llama-cpp-python, every prompt from scratch,
    the full system prompt), then the requests the runtime sends now (the short system prompt under a
    grammar): bare, ours without reuse, ours on the first run of the program on this machine (reuse within
    the process; the stable part of the prompt is saved to the prefix cache), and ours when the program ran
    before (a new process whose first turn loads the stable part from the prefix cache). Same answers: bare
    and ours on the same requests."""
    import tempfile

    from runtime.local.model import LocalEngine, find_bundled_model

    threads = _threads()
    recorded = {name: _record(name, replies) for name, replies in TURN_RUNS}
    labels = {
        "before": "before (bare, full prompt)",
        "bare": "bare, short prompt",
        "fresh": "ours, no reuse",
        "first": "ours, first run",
        "again": "ours, ran before",
    }
    print(
        f"same requests replayed, {threads} thread(s); per turn: wall seconds, CPU seconds of this process,"
        " prompt tokens evaluated\n"
        f"{'program':22}{'turns':>6}  "
        + "  ".join(f"{label:>26}" for label in labels.values())
        + f"  {'before / first run, wall, CPU':>30}  {'before / ran before, wall, CPU':>30}  same answers"
    )
    totals = {key: [0.0, 0.0, 0.0] for key in labels}
    count = 0
    for name, requests in recorded.items():
        # A fresh process per program: nothing cached from another program's turns, an empty prefix cache.
        bare = _bare(threads)
        with tempfile.TemporaryDirectory(prefix="pal-bench-prefixes-") as folder:
            engines = {
                "fresh": LocalEngine(
                    find_bundled_model(), LocalSettings(n_threads=threads, reuse_prompt=False)
                ),
                "first": LocalEngine(
                    find_bundled_model(), LocalSettings(n_threads=threads, prefix_cache=Path(folder))
                ),
                # Another process, later: "first" has saved the stable part by the time this one needs it.
                "again": LocalEngine(
                    find_bundled_model(), LocalSettings(n_threads=threads, prefix_cache=Path(folder))
                ),
            }
            figures = {key: [0.0, 0.0, 0.0] for key in labels}
            same = 0
            for turn in requests:
                _timed_bare_turn(bare, _with_full_system_prompt(turn), figures["before"])
                answers = [_timed_bare_turn(bare, turn, figures["bare"])]
                for key, local in engines.items():
                    cpu = time.process_time()
                    generation = _generate(local, turn)
                    figures[key][0] += generation.seconds
                    figures[key][1] += time.process_time() - cpu
                    figures[key][2] += generation.evaluated_tokens
                    answers.append(generation.text)
                same += len(set(answers)) == 1
        count += len(requests)
        for key in totals:
            totals[key] = [total + part for total, part in zip(totals[key], figures[key], strict=True)]
        _turn_row(name, len(requests), figures, f"{same}/{len(requests)}")
        bare.close()
    _turn_row("all turns", count, totals, "")


def _timed_bare_turn(llama, turn: Turn, row: list[float]) -> str:  # type: ignore[no-untyped-def]
    """A bare turn's answer; its wall seconds, CPU seconds and prompt tokens added to `row`."""
    cpu = time.process_time()
    text, prompt_tokens, seconds = _bare_turn(llama, turn)
    row[0] += seconds
    row[1] += time.process_time() - cpu
    row[2] += prompt_tokens
    return text


def _generate(local, turn: Turn):  # type: ignore[no-untyped-def]
    """Our engine answering a recorded request with its own settings."""
    return local.generate(
        turn.messages,
        max_tokens=turn.max_tokens,
        temperature=turn.temperature,
        seed=turn.seed,
        grammar=turn.grammar,
        stable_prefix=turn.stable_prefix,
    )


def _turn_row(name: str, turns: int, figures: dict[str, list[float]], same: str) -> None:
    n = max(turns, 1)
    cells = "  ".join(
        f"{figures[key][0] / n:6.1f} s {figures[key][1] / n:5.1f} cpu {figures[key][2] / n:5.0f} t"
        for key in figures
    )
    before = figures["before"]

    def ratios(key: str) -> str:
        ours = figures[key]
        return f"{before[0] / max(ours[0], 1e-9):.2f}x, {before[1] / max(ours[1], 1e-9):.2f}x"

    print(f"{name:22}{turns:>6}  {cells}  {ratios('first'):>30}  {ratios('again'):>30}  {same}", flush=True)


def _demo_turn() -> Turn:
    """The demo's second turn (the user has answered): the longest prompt of the demo."""
    return _record("order_status.pal", ["Hi! Where is my order 2718?"])[-1]


def throughput(repeats: int = 5) -> None:
    """Our prompt and answer tokens/s against bare llama-cpp-python: same prompt, grammar, threads, greedy.

    Each side answers the demo turn from scratch twice, once stopped after the first token (the prompt)
    and once in full; the answer's rate is what the full call adds. Rates are given per wall second and
    per CPU second of this process: on a shared machine the wall clock moves with the other jobs, the
    CPU time much less."""
    from llama_cpp import LlamaGrammar

    from runtime.local.model import DEFAULT_SEED, LocalEngine, find_bundled_model

    threads = _threads()
    turn = _demo_turn()
    bare = _bare(threads)
    ours = LocalEngine(find_bundled_model(), LocalSettings(n_threads=threads, reuse_prompt=False))
    prompt = _bare_prompt_tokens(bare, turn.messages)

    def timed(call):  # type: ignore[no-untyped-def]
        wall, cpu = time.perf_counter(), time.process_time()
        written = call()
        return written, time.perf_counter() - wall, time.process_time() - cpu

    def ours_call(grammar: str | None, limit: int):  # type: ignore[no-untyped-def]
        return lambda: (
            ours.generate(
                turn.messages, max_tokens=limit, temperature=0.0, seed=DEFAULT_SEED, grammar=grammar
            ).completion_tokens
        )

    def bare_call(grammar: str | None, limit: int):  # type: ignore[no-untyped-def]
        def call() -> int:
            bare.reset()
            result = bare.create_completion(
                prompt=prompt,
                max_tokens=limit,
                temperature=0.0,
                seed=DEFAULT_SEED,
                grammar=LlamaGrammar.from_string(grammar, verbose=False) if grammar else None,
            )
            return int(result["usage"]["completion_tokens"])

        return call

    rates: dict[str, list[tuple[float, float]]] = {}
    for _ in range(repeats):
        for grammar in (turn.grammar, None):
            label = " (grammar)" if grammar else ""
            for side, make in (("ours", ours_call), ("bare", bare_call)):
                _, first_wall, first_cpu = timed(make(grammar, 1))
                written, wall, cpu = timed(make(grammar, 160))
                if not grammar:
                    rates.setdefault(f"{side} prompt", []).append(
                        (len(prompt) / first_wall, len(prompt) / first_cpu)
                    )
                rates.setdefault(f"{side} answer{label}", []).append(
                    ((written - 1) / (wall - first_wall), (written - 1) / max(cpu - first_cpu, 1e-9))
                )
    bare.close()
    print(f"demo turn: {len(prompt)} prompt tokens, {threads} thread(s), greedy, median of {repeats}")
    for what in ("prompt", "answer (grammar)", "answer"):
        ours_wall = statistics.median(rate[0] for rate in rates[f"ours {what}"])
        ours_cpu = statistics.median(rate[1] for rate in rates[f"ours {what}"])
        bare_wall = statistics.median(rate[0] for rate in rates[f"bare {what}"])
        bare_cpu = statistics.median(rate[1] for rate in rates[f"bare {what}"])
        print(
            f"  {what:17} per wall second: ours {ours_wall:6.1f} tok/s, bare llama-cpp-python {bare_wall:6.1f}"
            f" ({ours_wall / bare_wall:.2f}x); per CPU second: ours {ours_cpu:6.1f}, bare {bare_cpu:6.1f}"
            f" ({ours_cpu / bare_cpu:.2f}x)"
        )


def _bare_prompt_tokens(llama, messages: list[dict[str, str]]) -> list[int]:  # type: ignore[no-untyped-def]
    """The prompt tokens llama-cpp-python's chat handler makes of `messages` (the GGUF's own template)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    formatted = Jinja2ChatFormatter(
        template=llama.metadata["tokenizer.chat_template"], eos_token="", bos_token=""
    )(messages=messages)
    return llama.tokenize(formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True)


def load_comparison(repeats: int = 3) -> None:
    """A full turn (prompt from scratch and answer) while another process keeps one core busy."""
    import subprocess

    from runtime.local.cpu import measure_busy, threads_for, usable_cpus
    from runtime.local.model import LocalEngine, find_bundled_model

    turn = _demo_turn()
    engines = {
        count: LocalEngine(find_bundled_model(), LocalSettings(n_threads=count, reuse_prompt=False))
        for count in (1, 2)
    }
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = measure_busy(0.5)
        chosen = threads_for(usable_cpus(), busy)
        seconds: dict[int, list[float]] = {1: [], 2: []}
        for _ in range(repeats):
            for count, local in engines.items():
                seconds[count].append(_generate(local, turn).seconds)
    finally:
        burner.kill()
        burner.wait()
    one, two = statistics.median(seconds[1]), statistics.median(seconds[2])
    print(
        f"one core kept busy by another process; {usable_cpus()} core(s); others measured busy {busy:.2f} cores\n"
        f"  demo turn: 1 thread {one:.1f} s, 2 threads {two:.1f} s (median of {repeats}): "
        f"2 threads take {two / one:.2f}x the time of 1; the engine chooses {chosen} thread(s)"
    )


def main() -> None:
    import argparse

    sections = {
        "sizes": grammar_sizes,
        "speed1": speed,
        "compliance": lambda: compliance(options.seeds),
        "end_to_end": end_to_end,
        "turns": turns,
        "speed": throughput,
        "load": load_comparison,
        "shapes": lambda: recorded.extend(shapes()),
        "react": lambda: react_turns(recorded or None),
    }
    recorded: list = []
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "seeds", nargs="?", type=int, default=5, help="seeds per compliance case (default: 5)"
    )
    parser.add_argument("--only", default="", help=f"comma-separated sections: {','.join(sections)}")
    options = parser.parse_args()
    wanted = set(options.only.split(",")) if options.only else set(sections)
    unknown = wanted - set(sections)
    if unknown:
        parser.error(f"unknown section(s) {', '.join(sorted(unknown))}; sections: {', '.join(sections)}")
    for name, section in sections.items():
        if name in wanted:
            print(f"--- {name}", flush=True)
            section()


if __name__ == "__main__":
    main()

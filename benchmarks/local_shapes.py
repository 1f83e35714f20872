"""Issue 28 on the bundled model: imported programs in the shapes real ones have (tests/fixtures/shapes), and
react rounds with their grammar against the same prompt unconstrained on bare llama-cpp-python.

Sections of benchmarks/bench_local_model.py:
- shapes: an ADK LlmAgent with two tools, an ADK tree of five agents with long instructions, an AutoGen
  Selector team of three agents and a LangGraph ReAct loop, each run RUNS times on `local/smollm2` (sampling
  at TEMPERATURE, seeds 1..RUNS) within a model-call budget: how each run ended, the turns accepted the
  first time, and the prompt tokens per turn;
- react: the react rounds those runs made, replayed on our engine with their grammar and on bare
  llama-cpp-python (`create_chat_completion`, no grammar) with the same prompt: seconds and answer tokens per
  round, and how many of the unconstrained answers the verifier would accept.
"""

from __future__ import annotations

import asyncio
import statistics
import time

from tests.shape_runs import RUNS, SHAPE_RUNS, RunFigures, run_shape

REACT_ROUNDS = 10
"""React rounds replayed (each unconstrained answer may run to 1,024 tokens: minutes on a busy machine)."""


def shapes(only: tuple[str, ...] = ()) -> list[RunFigures]:
    """Each shape (of `only`, when given) RUNS times; prints a line per run and a summary per shape."""
    everything: list[RunFigures] = []
    for shape in SHAPE_RUNS:
        if only and shape.file not in only:
            continue
        runs = []
        for seed in range(1, RUNS + 1):
            figures = asyncio.run(run_shape(shape, seed))
            runs.append(figures)
            tokens = figures.prompt_tokens
            print(
                f"  {shape.file:22} seed {seed}: {figures.ended[:90]:90} turns {figures.turns}, accepted first "
                f"time {figures.first_time}, prompt tokens per call {min(tokens, default=0)}-{max(tokens, default=0)}"
                f", {figures.seconds:.0f} s",
                flush=True,
            )
        tokens = [count for figures in runs for count in figures.prompt_tokens]
        clean = sum(
            figures.ended == "value" or "budget" in figures.ended or "limit" in figures.ended
            for figures in runs
        )
        print(
            f"{shape.file:24} ended cleanly {clean}/{len(runs)} (returned {sum(f.ended == 'value' for f in runs)}); "
            f"turns accepted first time {sum(f.first_time for f in runs)}/{sum(f.turns for f in runs)}; "
            f"prompt tokens per call median {statistics.median(tokens) if tokens else 0:.0f}, max {max(tokens, default=0)}",
            flush=True,
        )
        everything.extend(runs)
    return everything


def react_turns(recorded: list[RunFigures] | None = None) -> None:
    """React rounds with their grammar (our engine) against the same prompt unconstrained on bare
    llama-cpp-python as the runtime asked before issue 28 (no grammar, the 1,024-token budget): seconds and
    answer tokens per round, and how many unconstrained answers parse, and fit the round's contract (its
    grammar, which admits only what the react verifier accepts)."""
    from llama_cpp import Llama

    from pal_core.contract import ContractSyntaxError, parse_answer
    from runtime.local.cpu import choose_threads
    from runtime.local.engine import DEFAULT_SEED, LocalSettings, engine, find_bundled_model
    from runtime.local.gbnf_check import parse_gbnf

    if recorded is None:
        recorded = [asyncio.run(run_shape(shape, 1)) for shape in SHAPE_RUNS]
    rounds = [request for figures in recorded for request in figures.requests][:REACT_ROUNDS]
    if not rounds:
        print("no react rounds were recorded")
        return
    threads = LocalSettings.from_environment().n_threads or choose_threads()
    ours = engine("smollm2", LocalSettings(n_threads=threads, reuse_prompt=False))
    bare = Llama(
        model_path=str(find_bundled_model()),
        n_ctx=8192,
        n_threads=threads,
        n_threads_batch=threads,
        seed=DEFAULT_SEED,
        verbose=False,
    )
    figures: dict[str, list[float]] = {"ours_s": [], "ours_t": [], "bare_s": [], "bare_t": []}
    parsed = fitting = 0
    for request in rounds:
        messages = [{"role": message.role, "content": message.content} for message in request.messages]
        generation = ours.generate(
            messages,
            max_tokens=request.max_tokens,
            temperature=0.0,
            seed=DEFAULT_SEED,
            grammar=request.grammar,
        )
        figures["ours_s"].append(generation.seconds)
        figures["ours_t"].append(generation.completion_tokens)
        started = time.perf_counter()
        bare.reset()
        result = bare.create_chat_completion(
            messages=messages, max_tokens=1024, temperature=0.0, seed=DEFAULT_SEED
        )
        figures["bare_s"].append(time.perf_counter() - started)
        figures["bare_t"].append(result["usage"]["completion_tokens"])
        text = result["choices"][0]["message"]["content"] or ""
        try:
            parse_answer(text)
            parsed += 1
        except ContractSyntaxError:
            pass
        if request.grammar is not None and parse_gbnf(request.grammar).accepts(text):
            fitting += 1
    count = len(rounds)
    median = {name: statistics.median(values) for name, values in figures.items()}
    print(
        f"{count} react round(s) of the shapes' runs, {threads} thread(s), greedy, the prompts the runtime sent:\n"
        f"  with the grammar (ours):              {median['ours_s']:6.1f} s, {median['ours_t']:5.0f} answer tokens per round\n"
        f"  unconstrained (bare llama-cpp-python): {median['bare_s']:6.1f} s, {median['bare_t']:5.0f} answer tokens per round"
        f" ({median['bare_s'] / max(median['ours_s'], 1e-9):.2f}x the time)\n"
        f"  unconstrained answers that parse: {parsed}/{count}; that fit the round's contract: {fitting}/{count}"
    )

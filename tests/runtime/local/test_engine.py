"""The local engine with the real model: prompt reuse gives the answers a fresh engine gives, the number
of threads does not change an answer, progress is reported as the call goes, and a run on the bundled
model finishes while another process keeps a core busy."""

from __future__ import annotations

import os
import subprocess
import sys

import anyio
import pytest

pytest.importorskip(
    "llama_cpp", reason="the local model needs llama-cpp-python: pip install 'pal-bridge[local]'"
)

from pal_core.parser import parse
from runtime.local.cpu import usable_cpus
from runtime.local.fewshot import build_example_turns, render_examples
from runtime.local.grammar import build_turn_grammar
from runtime.local.model import DEFAULT_MODEL, LocalEngine, LocalSettings, engine, find_bundled_model
from runtime.local.turn_plan import local_context
from runtime.models import resolve_model
from runtime.models.progress import ModelProgress, listening_to_progress
from runtime.program_run import ProgramRun, RunLimits
from runtime.trace import Tracer
from tests.conftest import FIXTURES

pytestmark = pytest.mark.local_model

SEED_PROGRAM = FIXTURES / "pal" / "seed_customer_support.pal"
EXAMPLES = FIXTURES.parent.parent / "examples"


def _turn(line_text: str) -> tuple[list[dict[str, str]], str]:
    """A real turn's prompt (example turns of the seed program) whose last line varies, and its grammar."""
    program = parse(SEED_PROGRAM.read_text(encoding="utf-8"), file=str(SEED_PROGRAM))
    context = local_context(program, "CustomerSupport", "Greeting")
    examples = render_examples(build_example_turns(context))
    system = "You execute PAL playbooks step by step and answer in exactly the format of the examples.\n\n"
    grammar = build_turn_grammar(context).text
    messages = [
        {"role": "system", "content": system + examples},
        {"role": "user", "content": f"{line_text}\nContinue executing Greeting at line 01."},
    ]
    return messages, grammar


def _answer(local: LocalEngine, messages: list[dict[str, str]], grammar: str, **options: object) -> str:
    return local.generate(messages, max_tokens=120, temperature=0.7, seed=5, grammar=grammar, **options).text


def test_reusing_the_prompt_prefix_gives_the_answers_of_a_fresh_engine() -> None:
    first, grammar = _turn("The user has not said anything yet.")
    second, _ = _turn("The user said: my order number is 4242.")
    cached = LocalEngine(find_bundled_model(), LocalSettings(n_threads=1))
    fresh = LocalEngine(find_bundled_model(), LocalSettings(n_threads=1, reuse_prompt=False))

    _answer(cached, first, grammar)
    reused_answer = _answer(cached, second, grammar)
    reuse = cached.generations[-1]
    assert reuse.reused_tokens > 0 and reuse.reused_tokens % cached.settings.chunk_tokens == 0
    assert reuse.evaluated_tokens == reuse.prompt_tokens - reuse.reused_tokens
    assert reuse.evaluated_tokens < reuse.prompt_tokens / 2  # the shared system prompt is not read again

    assert _answer(fresh, second, grammar) == reused_answer
    assert fresh.generations[-1].reused_tokens == 0
    # The same prompt again reuses all but its last chunk, and answers the same.
    assert _answer(cached, second, grammar) == reused_answer
    assert cached.generations[-1].evaluated_tokens <= cached.settings.chunk_tokens


def test_the_number_of_threads_does_not_change_the_answer() -> None:
    messages, grammar = _turn("The user said hello.")
    one = LocalEngine(find_bundled_model(), LocalSettings(n_threads=1, reuse_prompt=False))
    two = LocalEngine(find_bundled_model(), LocalSettings(n_threads=2, reuse_prompt=False))
    assert _answer(one, messages, grammar) == _answer(two, messages, grammar)
    assert (one.generations[-1].threads, two.generations[-1].threads) == (1, 2)


def test_progress_is_reported_while_the_model_works() -> None:
    messages, grammar = _turn("The user asked where their parcel is.")
    heard: list[ModelProgress] = []
    local = LocalEngine(find_bundled_model(), LocalSettings(n_threads=1, reuse_prompt=False))
    generation = local.generate(
        messages, max_tokens=120, temperature=0.7, seed=5, grammar=grammar, progress=heard.append
    )
    reading = [event for event in heard if event.answer_tokens == 0 and not event.done]
    writing = [event for event in heard if event.answer_tokens > 0 and not event.done]
    assert len(reading) == -(-generation.prompt_tokens // local.settings.chunk_tokens)  # one per chunk
    assert [event.evaluated_tokens for event in reading] == sorted({e.evaluated_tokens for e in reading})
    assert reading[-1].evaluated_tokens == generation.prompt_tokens
    assert [event.answer_tokens for event in writing] == list(range(1, len(writing) + 1))
    last = heard[-1]
    assert last.done and heard.count(last) == 1
    assert (last.prompt_tokens, last.answer_tokens, last.threads) == (
        generation.prompt_tokens,
        generation.completion_tokens,
        1,
    )


@pytest.mark.anyio
async def test_progress_reaches_a_listener_through_the_model_interface() -> None:
    """`local/smollm2` goes through the model interface and a worker thread; the listener of the caller's context
    hears it."""
    from runtime.models import ChatMessage, ModelRequest

    messages, grammar = _turn("The user is waiting.")
    model = resolve_model(DEFAULT_MODEL)
    heard: list[ModelProgress] = []
    request = ModelRequest(
        messages=tuple(ChatMessage(role=m["role"], content=m["content"]) for m in messages),
        max_tokens=60,
        grammar=grammar,
        seed=3,
    )
    with listening_to_progress(heard.append), anyio.fail_after(1800):
        response = await model.complete(request)
    assert heard and heard[-1].done
    assert heard[-1].prompt_tokens == response.usage.prompt_tokens
    assert heard[-1].model == DEFAULT_MODEL


def _burn_one_core() -> subprocess.Popen[bytes]:
    """A process that keeps one core busy until it is killed."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_run_finishes_while_another_process_keeps_a_core_busy() -> None:
    """No wall-clock limit by default: a slow answer is still an answer. The thread count follows the load."""
    burner = _burn_one_core()
    try:
        program = parse((EXAMPLES / "hello.pal").read_text(encoding="utf-8"))
        tracer = Tracer()
        run = ProgramRun(
            program,
            model=resolve_model(DEFAULT_MODEL),
            tracer=tracer,
            limits=RunLimits(seed=7, max_retries=2),
        )
        assert run.limits.model_timeout is None
        local = engine("smollm2", LocalSettings.from_environment())
        before = len(local.generations)
        with anyio.fail_after(3600):  # only against a hang: on a busy 2-core machine this takes minutes
            result = await run.run()
        assert burner.poll() is None, "the busy process ended early; the run was not under load"
    finally:
        burner.kill()
        burner.wait()
    assert result.status == "exit", result.reason
    assert len(result.messages_to_user) == 3
    calls = list(local.generations)[before:]
    assert calls, "the run made no call to the local model"
    if "PAL_LOCAL_THREADS" not in os.environ:
        # A core is taken: the model never runs as many threads as there are cores (on 2 cores: one).
        assert all(call.threads <= max(usable_cpus() - 1, 1) for call in calls), [c.threads for c in calls]


def test_the_engine_of_a_model_is_shared_per_settings() -> None:
    assert engine("smollm2") is engine("smollm2")
    assert engine("smollm2", LocalSettings(n_threads=1)) is not engine("smollm2")

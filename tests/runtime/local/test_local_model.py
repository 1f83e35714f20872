"""The bundled model for real: llama.cpp loads every turn grammar and agrees with gbnf_check on what it
admits; SmolLM2 generates verified turns under a grammar, the same for the same seed in any process;
the `local/smollm2` model string works through the model interface; a bad grammar is an error, not a crash."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from functools import cache
from pathlib import Path

import anyio
import pytest

pytest.importorskip(
    "llama_cpp", reason="the local model needs llama-cpp-python: pip install 'pal-bridge[local]'"
)

from pal_core.contract import parse_answer
from pal_core.contract.turn import describe_turn
from pal_core.contract.verify import read_turn
from pal_core.flow import PlaybookFlow
from pal_core.ir import PlaybookKind, Program
from pal_core.parser import parse
from runtime.local.fewshot import build_example_turns, render_examples
from runtime.local.gbnf_check import GbnfError, parse_gbnf
from runtime.local.grammar import build_turn_grammar
from runtime.local.llama_grammar import accepts, check_grammar, vocabulary
from runtime.local.model import LocalGrammarError, engine, find_bundled_model, register_local_model
from runtime.local.turn_plan import GrammarError, local_context
from runtime.models import ChatMessage, ModelRequest, resolve_model
from tests.conftest import CORPUS, FIXTURES
from tests.runtime.local.sampling import sample

pytestmark = pytest.mark.local_model

SEED_PROGRAM = FIXTURES / "pal" / "seed_customer_support.pal"


@cache
def program(path: Path) -> Program:
    return parse(path.read_text(encoding="utf-8"), file=str(path))


def _grammars() -> list[tuple[str, str]]:
    """(label, grammar) for every line of every corpus playbook."""
    found = []
    for path in [*sorted(CORPUS.glob("*.pbasm")), SEED_PROGRAM]:
        source = program(path)
        for agent in source.agents:
            for playbook in agent.playbooks:
                if playbook.kind is not PlaybookKind.MARKDOWN or not playbook.steps:
                    continue
                for line in PlaybookFlow(playbook).by_line:
                    context = describe_turn(source, agent, playbook, line, variables={})
                    try:
                        found.append(
                            (f"{path.name}:{playbook.name}:{line}", build_turn_grammar(context).text)
                        )
                    except GrammarError:
                        continue
    return found


def test_llama_cpp_loads_every_turn_grammar_of_the_corpus() -> None:
    vocab = vocabulary(find_bundled_model())
    grammars = _grammars()
    assert len(grammars) > 200
    for label, text in grammars:
        try:
            check_grammar(vocab, text)
        except GbnfError as error:
            pytest.fail(f"{label}: {error}")


def test_llama_cpp_refuses_what_gbnf_check_refuses() -> None:
    vocab = vocabulary(find_bundled_model())
    for bad in ["root ::= missing", 'root ::= root "a"', 'root ::= "a', "rot ::= [a]"]:
        with pytest.raises(GbnfError):
            parse_gbnf(bad)
        with pytest.raises(GbnfError, match=r"llama\.cpp refuses the grammar"):
            check_grammar(vocab, bad)


def test_llama_cpp_and_gbnf_check_admit_the_same_answers() -> None:
    vocab = vocabulary(find_bundled_model())
    rng = random.Random(6)
    compared = 0
    for path in [
        CORPUS / "05-country-facts.pbasm",
        CORPUS / "06-triggers.pbasm",
        SEED_PROGRAM,
        CORPUS / "two-player-game.pbasm",
    ]:
        source = program(path)
        for agent in source.agents:
            for playbook in agent.playbooks:
                if playbook.kind is not PlaybookKind.MARKDOWN or not playbook.steps:
                    continue
                for turn in build_example_turns(local_context(source, agent.name, playbook.name)):
                    grammar = build_turn_grammar(turn.context, resume_after=turn.resume_after).text
                    ours = parse_gbnf(grammar)
                    texts = [turn.answer, *(sample(ours, rng) for _ in range(3))]
                    # Near misses: cut short, one character changed, something appended.
                    for text in list(texts):
                        cut = rng.randrange(1, len(text))
                        texts += [text[:cut], text[:cut] + "#" + text[cut + 1 :], text + "\n"]
                    for text in texts:
                        assert accepts(vocab, grammar, text) == ours.accepts(text), (playbook.name, text)
                        compared += 1
    assert compared > 100


def _turn_messages(path: Path, agent: str, playbook: str) -> list[dict[str, str]]:
    """A short prompt (the examples, no program text): prompt time dominates on a shared CPU."""
    examples = render_examples(build_example_turns(local_context(program(path), agent, playbook)))
    system = (
        "You execute PAL playbooks step by step and answer in exactly the format of the examples.\n\n"
        + examples
    )
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Continue executing {playbook} at line 01."},
    ]


def test_the_model_writes_a_verified_turn_under_the_grammar_and_repeats_it_for_the_same_seed() -> None:
    source = program(SEED_PROGRAM)
    context = local_context(source, "CustomerSupport", "Greeting")
    grammar = build_turn_grammar(context).text
    messages = _turn_messages(SEED_PROGRAM, "CustomerSupport", "Greeting")
    local = engine("smollm2")
    first = local.generate(messages, max_tokens=250, temperature=0.7, seed=11, grammar=grammar)
    again = local.generate(messages, max_tokens=250, temperature=0.7, seed=11, grammar=grammar)
    assert again.text == first.text
    assert first.completion_tokens > 10 and first.prompt_tokens > 100
    assert parse_gbnf(grammar).accepts(first.text), first.text
    turn = read_turn(first.text, context)
    assert [step.step.line for step in turn.steps] == ["01", "02"]
    assert local.load_seconds is not None


def test_the_same_seed_gives_the_same_answer_in_another_process() -> None:
    source = program(SEED_PROGRAM)
    grammar = build_turn_grammar(local_context(source, "CustomerSupport", "Greeting")).text
    messages = _turn_messages(SEED_PROGRAM, "CustomerSupport", "Greeting")
    request = json.dumps({"messages": messages, "grammar": grammar})
    code = (
        "import json, sys; from runtime.local.model import engine; r = json.loads(sys.stdin.read()); "
        "print(json.dumps(engine('smollm2').generate(r['messages'], max_tokens=250, temperature=0.9, seed=5, "
        "grammar=r['grammar']).text))"
    )
    answers = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", code],
                input=request,
                capture_output=True,
                text=True,
                check=True,
                timeout=600,
            ).stdout
        )
        for _ in range(2)
    ]
    here = engine("smollm2").generate(messages, max_tokens=250, temperature=0.9, seed=5, grammar=grammar).text
    assert answers[0] == answers[1] == here


@pytest.mark.anyio
async def test_the_local_model_string_works_through_the_model_interface() -> None:
    register_local_model()
    model = resolve_model("local/smollm2")
    source = program(SEED_PROGRAM)
    grammar = build_turn_grammar(local_context(source, "CustomerSupport", "Greeting"), resume_after="02").text
    messages = tuple(
        ChatMessage(role=m["role"], content=m["content"])
        for m in _turn_messages(SEED_PROGRAM, "CustomerSupport", "Greeting")
    )
    request = ModelRequest(messages=messages, max_tokens=300, temperature=0.5, seed=3, grammar=grammar)
    with anyio.fail_after(600):
        response = await model.complete(request)
    assert response.model == "local/smollm2"
    assert response.usage.prompt_tokens > 100 and response.usage.completion_tokens > 10
    assert parse_gbnf(grammar).accepts(response.text), response.text
    assert parse_answer(response.text).steps[0].ref.line == "03"


def test_a_grammar_llama_cpp_would_refuse_is_an_error_and_the_model_still_works() -> None:
    local = engine("smollm2")
    messages = [{"role": "user", "content": "Say yes or no."}]
    with pytest.raises(LocalGrammarError, match="undefined rule `answer`"):
        local.generate(messages, max_tokens=5, temperature=0.0, grammar="root ::= answer")
    assert local.generate(messages, max_tokens=5, temperature=0.0, grammar='root ::= "yes" | "no"').text in (
        "yes",
        "no",
    )


def test_a_prompt_too_long_for_the_window_names_its_largest_parts() -> None:
    from runtime.local.model import LocalSettings, PromptTooLong

    small = engine("smollm2", LocalSettings(n_ctx=256))
    messages = [
        {"role": "system", "content": "You run playbooks."},
        {
            "role": "user",
            "content": "# Agent Clerk\n\n## State\n"
            + "- $notes = a long note\n" * 120
            + "\n\n## Your task\nGo on.",
        },
    ]
    with pytest.raises(
        PromptTooLong, match=r"context window of 256 .*the largest parts of the prompt: ## State \d"
    ):
        small.generate(messages, max_tokens=16, temperature=0.0)

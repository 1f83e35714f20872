"""resolve_model: every spec form, PAL_MODEL and defaults, and prefixes added by later code."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runtime.models import (
    LiteLLMModel,
    Model,
    ModelNotAvailable,
    ModelSpecError,
    ReplayModel,
    ScriptedModel,
    read_cassette,
    register_model_prefix,
    registered_model_prefixes,
    resolve_model,
    unregister_model_prefix,
)
from runtime.models.registry import MODEL_ENV
from tests.runtime.models.helpers import ask

pytestmark = pytest.mark.anyio


@pytest.fixture
def answers(tmp_path: Path) -> Path:
    file = tmp_path / "answers.jsonl"
    file.write_text(
        "".join(json.dumps({"text": text}) + "\n" for text in ["one", "two", "three"]), encoding="utf-8"
    )
    return file


@pytest.fixture
def no_env_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MODEL_ENV, raising=False)


@pytest.fixture
def temporary_prefixes() -> Iterator[list[str]]:
    added: list[str] = []
    yield added
    for prefix in added:
        unregister_model_prefix(prefix)


def test_a_model_passes_through() -> None:
    model = ScriptedModel(["x"])
    assert resolve_model(model) is model


async def test_scripted_reads_answers_from_a_jsonl_file(answers: Path) -> None:
    model = resolve_model(f"scripted:{answers}")
    assert isinstance(model, ScriptedModel)
    assert [(await model.complete(ask(str(n)))).text for n in range(3)] == ["one", "two", "three"]


async def test_record_then_replay_through_specs(answers: Path, tmp_path: Path) -> None:
    cassette = tmp_path / "tape.jsonl"
    recorder = resolve_model(f"record:{cassette}=scripted:{answers}")
    assert isinstance(recorder, ReplayModel) and recorder.mode == "record"
    assert [(await recorder.complete(ask(text))).text for text in ["a", "b"]] == ["one", "two"]
    assert [record.model for record in read_cassette(cassette)] == [f"scripted:{answers}"] * 2

    player = resolve_model(f"replay:{cassette}")
    assert isinstance(player, ReplayModel) and player.mode == "replay"
    assert [(await player.complete(ask(text))).text for text in ["b", "a"]] == ["two", "one"]
    with pytest.raises(ModelNotAvailable, match="no recorded answer"):
        await player.complete(ask("c"))


async def test_replay_with_a_model_records_only_what_is_missing(answers: Path, tmp_path: Path) -> None:
    cassette = tmp_path / "tape.jsonl"
    await resolve_model(f"record:{cassette}=scripted:{answers}").complete(ask("a"))
    auto = resolve_model(f"replay:{cassette}=scripted:{answers}")
    assert isinstance(auto, ReplayModel) and auto.mode == "auto"
    assert (await auto.complete(ask("a"))).text == "one"  # from the cassette
    assert (await auto.complete(ask("new"))).text == "one"  # a fresh inner model's first answer, recorded
    assert len(read_cassette(cassette)) == 2


def test_any_other_string_is_a_litellm_model_and_imports_nothing_yet() -> None:
    model = resolve_model("  openai/gpt-4o-mini ")
    assert isinstance(model, LiteLLMModel)
    assert model.name == "openai/gpt-4o-mini"
    probe = (
        "import sys; from runtime.models import resolve_model; resolve_model('anthropic/claude-3-5-haiku-latest'); "
        "print('litellm' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"


def test_no_spec_reads_pal_model_then_the_default(monkeypatch: pytest.MonkeyPatch, answers: Path) -> None:
    monkeypatch.setenv(MODEL_ENV, f"scripted:{answers}")
    assert isinstance(resolve_model(None, default="openai/gpt-4o-mini"), ScriptedModel)
    monkeypatch.setenv(MODEL_ENV, "  ")  # blank counts as unset
    default = resolve_model(None, default="openai/gpt-4o-mini")
    assert isinstance(default, LiteLLMModel) and default.name == "openai/gpt-4o-mini"
    monkeypatch.delenv(MODEL_ENV)
    assert resolve_model(None, default="openai/gpt-4o").name == "openai/gpt-4o"


@pytest.mark.usefixtures("no_env_model")
def test_no_model_anywhere_lists_the_options() -> None:
    with pytest.raises(ModelSpecError) as caught:
        resolve_model(None)
    message = str(caught.value)
    assert "no model given: pass one, or set PAL_MODEL" in message
    for form in (
        "openai/gpt-4o-mini",
        "scripted:answers.jsonl",
        "replay:cassette.jsonl",
        "record:cassette.jsonl=<spec>",
    ):
        assert form in message
    assert isinstance(caught.value, ModelNotAvailable)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "the model spec is empty"),
        ("scripted:", "'scripted:' needs a file of answers"),
        ("replay:", "'replay:' needs a cassette file"),
        ("record:tape.jsonl", "'record:tape.jsonl' needs the model to record"),
        ("record:=openai/gpt-4o-mini", "'record:' needs a cassette file"),
        ("replay:tape.jsonl=", "has nothing after '='"),
    ],
)
def test_malformed_specs_say_what_is_missing(spec: str, message: str) -> None:
    with pytest.raises(ModelSpecError, match=message):
        resolve_model(spec)


def test_a_spec_that_is_neither_string_nor_model_is_refused() -> None:
    with pytest.raises(TypeError, match="a model spec is a string or a Model, not int"):
        resolve_model(42)  # type: ignore[arg-type]


async def test_later_code_adds_prefixes_without_touching_the_resolver(
    temporary_prefixes: list[str], tmp_path: Path
) -> None:
    built: list[str] = []

    def local(rest: str) -> Model:
        built.append(rest)
        return ScriptedModel([f"local answer from {rest}"], name=f"paltest-local/{rest}")

    register_model_prefix("paltest-local/", local)
    temporary_prefixes.append("paltest-local/")
    model = resolve_model("paltest-local/smollm2-135m")
    assert built == ["smollm2-135m"]
    assert (await model.complete(ask("x"))).text == "local answer from smollm2-135m"
    assert "paltest-local/" in registered_model_prefixes()

    # Nested specs reach registered prefixes too.
    inner = resolve_model(f"record:{tmp_path / 'tape.jsonl'}=paltest-local/tiny")
    assert (
        isinstance(inner, ReplayModel)
        and inner.inner is not None
        and inner.inner.name == "paltest-local/tiny"
    )

    # The error listing names what was added.
    with pytest.raises(ModelSpecError, match=r"also registered: .*paltest-local/\.\.\."):
        resolve_model("")


def test_the_longest_matching_prefix_wins(temporary_prefixes: list[str]) -> None:
    register_model_prefix("paltest:", lambda rest: ScriptedModel([], name=f"short {rest}"))
    register_model_prefix("paltest:fast:", lambda rest: ScriptedModel([], name=f"long {rest}"))
    temporary_prefixes.extend(["paltest:", "paltest:fast:"])
    assert resolve_model("paltest:fast:x").name == "long x"
    assert resolve_model("paltest:slow:x").name == "short slow:x"


def test_a_taken_prefix_needs_replace(temporary_prefixes: list[str]) -> None:
    def first(rest: str) -> Model:
        return ScriptedModel([], name="first")

    def second(rest: str) -> Model:
        return ScriptedModel([], name="second")

    register_model_prefix("paltest-taken:", first)
    temporary_prefixes.append("paltest-taken:")
    register_model_prefix("paltest-taken:", first)  # the same factory again is fine
    with pytest.raises(ValueError, match="'paltest-taken:' is already registered"):
        register_model_prefix("paltest-taken:", second)
    register_model_prefix("paltest-taken:", second, replace=True)
    assert resolve_model("paltest-taken:x").name == "second"


@pytest.mark.parametrize("prefix", ["", "  ", " local/"])
def test_bad_prefixes_are_refused(prefix: str) -> None:
    with pytest.raises(ValueError, match="non-empty string without surrounding spaces"):
        register_model_prefix(prefix, lambda rest: ScriptedModel([]))


def test_unregistering_an_unknown_prefix_is_an_error() -> None:
    with pytest.raises(KeyError):
        unregister_model_prefix("paltest-never-registered:")

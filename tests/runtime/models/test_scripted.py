"""ScriptedModel: answers in order or from a function, records requests, fails clearly when it runs out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.models import Model, ModelError, ModelRequest, ScriptedModel
from tests.runtime.models.helpers import ask

pytestmark = pytest.mark.anyio


async def test_list_answers_come_in_order_and_requests_are_kept() -> None:
    model = ScriptedModel(["first", "second", "third"])
    requests = [ask("step 1"), ask("step 2"), ask("step 3")]
    texts = [(await model.complete(request)).text for request in requests]
    assert texts == ["first", "second", "third"]
    assert model.requests == tuple(requests)
    assert model.calls == 3
    assert model.remaining == 0


async def test_the_response_names_the_model() -> None:
    model = ScriptedModel(["x"], name="host-script")
    response = await model.complete(ask("hello"))
    assert response.model == "host-script"
    assert model.name == "host-script"
    assert isinstance(model, Model)


async def test_running_out_names_the_count_and_shows_the_prompt_tail() -> None:
    model = ScriptedModel(["only one", "and two"])
    await model.complete(ask("a"))
    await model.complete(ask("b"))
    prompt = "\n".join(f"line {number}" for number in range(1, 200)) + "\n02:QUE Ask the user for their name"
    with pytest.raises(ModelError) as caught:
        await model.complete(ask(prompt))
    message = str(caught.value)
    assert "had 2" in message
    assert "call 3" in message
    assert "02:QUE Ask the user for their name" in message
    assert "line 1\n" not in message  # only the tail is shown
    assert model.calls == 3  # the refused request is still recorded for the test to inspect
    assert model.requests[-1].messages[-1].content == prompt


async def test_an_empty_list_fails_on_the_first_call() -> None:
    with pytest.raises(ModelError, match="had 0 and this is call 1"):
        await ScriptedModel([]).complete(ask("anything"))


async def test_a_function_answers_from_the_request() -> None:
    def answer(request: ModelRequest) -> str:
        return request.messages[-1].content.upper()

    model = ScriptedModel(answer)
    assert (await model.complete(ask("shout"))).text == "SHOUT"
    assert (await model.complete(ask("again"))).text == "AGAIN"
    assert model.calls == 2
    assert model.remaining is None


async def test_an_async_function_is_awaited() -> None:
    async def answer(request: ModelRequest) -> str:
        return f"{len(request.messages)} messages, max {request.max_tokens}"

    model = ScriptedModel(answer)
    assert (await model.complete(ask("x", max_tokens=7))).text == "2 messages, max 7"


async def test_a_function_returning_a_non_string_is_reported() -> None:
    def answer(request: ModelRequest) -> object:
        return 42

    with pytest.raises(TypeError, match="returned a int for call 1"):
        await ScriptedModel(answer).complete(ask("x"))  # type: ignore[arg-type]


async def test_a_model_error_from_the_function_passes_through() -> None:
    def answer(request: ModelRequest) -> str:
        raise ModelError("provider down (simulated by the test's script)")

    with pytest.raises(ModelError, match="provider down"):
        await ScriptedModel(answer).complete(ask("x"))


def test_a_single_string_is_refused_rather_than_split_into_characters() -> None:
    with pytest.raises(TypeError, match=r"ScriptedModel\(\['hello'\]\)"):
        ScriptedModel("hello")


def test_non_string_answers_are_refused_with_their_position() -> None:
    with pytest.raises(TypeError, match="answer 1 is a int"):
        ScriptedModel(["ok", 3])  # type: ignore[list-item]


async def test_answers_from_a_jsonl_file(tmp_path: Path) -> None:
    file = tmp_path / "answers.jsonl"
    file.write_text(
        json.dumps({"text": "Say hello"}) + "\n\n" + json.dumps({"text": "multi\nline ✓"}) + "\n",
        encoding="utf-8",
    )
    model = ScriptedModel.from_jsonl(file)
    assert model.name == f"scripted:{file}"
    assert [(await model.complete(ask(str(n)))).text for n in range(2)] == ["Say hello", "multi\nline ✓"]


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"text": "ok"}\nnot json\n', r"answers.jsonl:2: not a JSON object"),
        ('{"answer": "ok"}\n', r'answers.jsonl:1: expected an object with a string "text"'),
        ('{"text": 5}\n', r'answers.jsonl:1: expected an object with a string "text"'),
    ],
)
def test_a_bad_answers_file_names_the_line(tmp_path: Path, content: str, expected: str) -> None:
    file = tmp_path / "answers.jsonl"
    file.write_text(content, encoding="utf-8")
    with pytest.raises(ModelError, match=expected):
        ScriptedModel.from_jsonl(file)


def test_a_missing_answers_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match=r"cannot read scripted answers from .*nowhere\.jsonl"):
        ScriptedModel.from_jsonl(tmp_path / "nowhere.jsonl")


async def test_an_observed_model_shows_each_request_and_keeps_the_inner_models_capabilities() -> None:
    from runtime.local.shaping import local_turn_shaping
    from runtime.models.base import ChatMessage, ModelRequest, ObservedModel

    inner = ScriptedModel(["first", "second"], shaping=local_turn_shaping())
    seen: list[ModelRequest] = []
    observed = ObservedModel(inner, seen.append)
    requests = [ModelRequest(messages=(ChatMessage(role="user", content=text),)) for text in ("a", "b")]
    answers = [(await observed.complete(request)).text for request in requests]
    assert answers == ["first", "second"] and seen == requests
    assert observed.name == inner.name and observed.turn_shaping() is inner.turn_shaping()
    assert list(inner.requests) == requests
    resumed = ObservedModel(ScriptedModel(["x", "y"]), seen.append)
    resumed.resume_thread(1)  # passed on: the script goes on after its first answer
    assert (await resumed.complete(requests[0])).text == "y"

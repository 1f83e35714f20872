"""ReplayModel: record a model's answers to a JSONL cassette, replay them offline, fail clearly on a gap."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.models import (
    CassetteError,
    ModelNotAvailable,
    ModelRequest,
    ModelResponse,
    ReplayModel,
    ScriptedModel,
    Usage,
    read_cassette,
)
from tests.runtime.models.helpers import ask

pytestmark = pytest.mark.anyio


class CountingModel:
    """A real Model answering `<n>:<last message>` with token counts, so recorded data is checkable."""

    def __init__(self, name: str = "counting") -> None:
        self.name = name
        self.calls = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.calls += 1
        text = request.messages[-1].content
        return ModelResponse(
            text=f"{self.calls}:{text}",
            model=self.name,
            usage=Usage(prompt_tokens=len(text), completion_tokens=self.calls),
        )


async def test_record_then_replay_in_a_new_instance(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    inner = CountingModel("openai/gpt-4o-mini")
    recorder = ReplayModel(cassette, inner=inner, mode="record")
    prompts = [ask("hello"), ask("plan", temperature=0.7, seed=3, stop=("\n\n",)), ask("hello")]
    recorded = [await recorder.complete(request) for request in prompts]
    assert [response.text for response in recorded] == ["1:hello", "2:plan", "3:hello"]
    assert recorder.recorded == 3

    lines = cassette.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    first = json.loads(lines[0])
    assert set(first) == {"prompt_hash", "model", "request", "text", "usage"}
    assert first["prompt_hash"] == prompts[0].prompt_hash()
    assert first["model"] == "openai/gpt-4o-mini"
    assert first["request"]["messages"][-1] == {"role": "user", "content": "hello"}
    assert first["usage"] == {"prompt_tokens": 5, "completion_tokens": 1}
    assert json.loads(lines[1])["request"]["stop"] == ["\n\n"]

    player = ReplayModel(cassette)
    replayed = [await player.complete(request) for request in prompts]
    assert replayed == recorded  # same text, model and usage; identical prompts in recorded order
    assert player.replayed == 3
    assert inner.calls == 3  # replay never called a model


async def test_each_record_is_on_disk_before_the_next_call(tmp_path: Path) -> None:
    cassette = tmp_path / "crash.jsonl"
    seen_lines: list[int] = []

    def answer(request: ModelRequest) -> str:
        seen_lines.append(len(cassette.read_text().splitlines()) if cassette.exists() else 0)
        return "ok"

    recorder = ReplayModel(cassette, inner=ScriptedModel(answer), mode="record")
    for number in range(4):
        await recorder.complete(ask(str(number)))
    assert seen_lines == [0, 1, 2, 3]


async def test_replay_mode_refuses_a_prompt_it_has_not_seen(tmp_path: Path) -> None:
    cassette = tmp_path / "known.jsonl"
    await ReplayModel(cassette, inner=CountingModel(), mode="record").complete(ask("known"))
    player = ReplayModel(cassette)
    unknown = ask("Step 03: ask the user\nwhich city\nthey live in\nand why\nand when\nand how")
    with pytest.raises(ModelNotAvailable) as caught:
        await player.complete(unknown)
    message = str(caught.value)
    assert "no recorded answer for this prompt" in message
    assert unknown.prompt_hash() in message
    assert str(cassette) in message
    assert "Step 03: ask the user" in message
    assert "and why" in message and "and when" not in message  # first lines only
    assert "(2 more lines)" in message
    assert f"'replay:{cassette}=<model string>'" in message  # how to record it


async def test_asking_more_often_than_recorded_says_so(tmp_path: Path) -> None:
    cassette = tmp_path / "twice.jsonl"
    recorder = ReplayModel(cassette, inner=CountingModel(), mode="record")
    await recorder.complete(ask("same"))
    await recorder.complete(ask("same"))
    player = ReplayModel(cassette)
    assert [(await player.complete(ask("same"))).text for _ in range(2)] == ["1:same", "2:same"]
    with pytest.raises(
        ModelNotAvailable, match="holds 2 answers for this prompt and all were used; this is ask number 3"
    ):
        await player.complete(ask("same"))


async def test_sampling_settings_are_part_of_the_key(tmp_path: Path) -> None:
    cassette = tmp_path / "settings.jsonl"
    await ReplayModel(cassette, inner=CountingModel(), mode="record").complete(ask("x", temperature=0.0))
    with pytest.raises(ModelNotAvailable):
        await ReplayModel(cassette).complete(ask("x", temperature=0.5))
    # metadata is not part of the key: where a prompt came from does not change its answer
    answer = await ReplayModel(cassette).complete(ask("x", metadata={"agent": "Host", "line": 12}))
    assert answer.text == "1:x"


async def test_auto_replays_what_is_recorded_and_records_the_rest(tmp_path: Path) -> None:
    cassette = tmp_path / "auto.jsonl"
    first_inner = CountingModel()
    first = ReplayModel(cassette, inner=first_inner, mode="auto")
    assert (await first.complete(ask("a"))).text == "1:a"
    assert (await first.complete(ask("b"))).text == "2:b"

    second_inner = CountingModel()
    second = ReplayModel(cassette, inner=second_inner, mode="auto")
    assert (await second.complete(ask("a"))).text == "1:a"  # replayed
    assert (await second.complete(ask("c"))).text == "1:c"  # recorded by the new inner model
    assert (await second.complete(ask("a"))).text == "2:a"  # recorded: only one "a" was on tape
    assert (second.replayed, second.recorded, second_inner.calls) == (1, 2, 2)
    assert [record.text for record in read_cassette(cassette)] == ["1:a", "2:b", "1:c", "2:a"]


async def test_record_mode_appends_to_an_existing_cassette(tmp_path: Path) -> None:
    cassette = tmp_path / "append.jsonl"
    await ReplayModel(cassette, inner=CountingModel(), mode="record").complete(ask("x"))
    again = ReplayModel(cassette, inner=CountingModel("second"), mode="record")
    assert (await again.complete(ask("x"))).model == "second"  # record mode always asks
    assert [record.model for record in read_cassette(cassette)] == ["counting", "second"]


async def test_metadata_is_recorded_in_a_json_safe_form(tmp_path: Path) -> None:
    cassette = tmp_path / "meta.jsonl"
    recorder = ReplayModel(cassette, inner=CountingModel(), mode="record")
    await recorder.complete(ask("x", metadata={"agent": "Host", "path": tmp_path}))
    (record,) = read_cassette(cassette)
    assert record.request["metadata"] == {"agent": "Host", "path": str(tmp_path)}


async def test_a_half_written_last_line_is_ignored_and_cut_before_appending(tmp_path: Path) -> None:
    cassette = tmp_path / "torn.jsonl"
    recorder = ReplayModel(cassette, inner=CountingModel(), mode="record")
    await recorder.complete(ask("kept"))
    with cassette.open("a", encoding="utf-8") as file:
        file.write('{"prompt_hash": "abc", "model": "cou')  # the crash landed mid-write
    assert [record.text for record in read_cassette(cassette)] == ["1:kept"]

    resumed = ReplayModel(cassette, inner=CountingModel(), mode="auto")
    assert (await resumed.complete(ask("kept"))).text == "1:kept"
    await resumed.complete(ask("new"))
    lines = cassette.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2
    assert all(json.loads(line)["model"] == "counting" for line in lines)


async def test_a_complete_last_line_without_a_line_break_is_kept(tmp_path: Path) -> None:
    cassette = tmp_path / "edited.jsonl"
    await ReplayModel(cassette, inner=CountingModel(), mode="record").complete(ask("one"))
    cassette.write_text(cassette.read_text(encoding="utf-8").rstrip("\n"), encoding="utf-8")
    resumed = ReplayModel(cassette, inner=CountingModel(), mode="auto")
    await resumed.complete(ask("two"))
    assert [record.text for record in read_cassette(cassette)] == ["1:one", "1:two"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json\n{}\n", r"bad\.jsonl:1: not a JSON line"),
        ("[1, 2]\n", r"bad\.jsonl:1: a record must be a JSON object, not list"),
        ('{"prompt_hash": "h", "model": "m", "request": {}}\n', r"bad\.jsonl:1: field 'text' must be a str"),
        (
            '\n{"prompt_hash": "h", "model": "m", "request": {}, "text": "t", "usage": {"prompt_tokens": -1}}\n',
            r"bad\.jsonl:2: usage\.prompt_tokens must be a whole number",
        ),
    ],
)
def test_a_malformed_cassette_names_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    cassette = tmp_path / "bad.jsonl"
    cassette.write_text(content, encoding="utf-8")
    with pytest.raises(CassetteError, match=message):
        ReplayModel(cassette)


def test_replaying_a_missing_cassette_says_how_to_record_it(tmp_path: Path) -> None:
    with pytest.raises(ModelNotAvailable, match=r"does not exist; record it first.*mode='auto'"):
        ReplayModel(tmp_path / "never-recorded.jsonl")


def test_recording_needs_an_inner_model_and_a_known_mode(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs inner="):
        ReplayModel(tmp_path / "c.jsonl", mode="record")
    with pytest.raises(ValueError, match="needs inner="):
        ReplayModel(tmp_path / "c.jsonl", mode="auto")
    with pytest.raises(ValueError, match="mode must be one of replay, record, auto"):
        ReplayModel(tmp_path / "c.jsonl", inner=CountingModel(), mode="rewind")  # type: ignore[arg-type]


async def test_recording_creates_missing_folders(tmp_path: Path) -> None:
    cassette = tmp_path / "deep" / "er" / "tape.jsonl"
    await ReplayModel(cassette, inner=CountingModel(), mode="record").complete(ask("x"))
    assert len(read_cassette(cassette)) == 1


PROMPTS = st.lists(st.sampled_from(["a", "b", "c", "ü\nmulti-line", ""]), min_size=1, max_size=12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(prompts=PROMPTS)
def test_any_recorded_sequence_replays_identically(
    tmp_path_factory: pytest.TempPathFactory, prompts: list[str]
) -> None:
    cassette = tmp_path_factory.mktemp("property") / "tape.jsonl"

    async def run() -> tuple[list[ModelResponse], list[ModelResponse]]:
        recorder = ReplayModel(cassette, inner=CountingModel(), mode="record")
        recorded = [await recorder.complete(ask(text)) for text in prompts]
        player = ReplayModel(cassette)
        replayed = [await player.complete(ask(text)) for text in prompts]
        return recorded, replayed

    recorded, replayed = asyncio.run(run())
    assert replayed == recorded

"""Each model answer's entry keeps its prompt, the part every turn of a playbook shares stored once per thread
(runtime.session.prompt_log); reading it back gives the messages exactly. The journal also keeps each turn's
repairs and the thread's token totals, which `read_state` folds in."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime.models.base import ChatMessage, ModelRequest, ModelResponse, Usage
from runtime.session import ProgramSession
from runtime.session.prompt_log import KEYFRAME_EVERY, PromptLog, PromptMissing, read_prompt
from runtime.session.view import read_state
from runtime.store import Entry, open_store
from tests.runtime.studio.threads import DESK, desk_model

texts = st.text(st.characters(codec="utf-8"), max_size=60)
lines = st.lists(st.text(st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=30), max_size=8)


@st.composite
def prompts(draw: st.DrawFn) -> list[ChatMessage]:
    """A system message, the turn's user message with its stable mark somewhere and a changing part of a few
    lines (line ends of any kind), and maybe a retry."""
    system = ChatMessage(role="system", content=draw(st.sampled_from(["You are the CPU.", "Short."])))
    shared = draw(st.sampled_from(["# Agent A\n## Main\n01:EXE", "# Agent B\n"]))
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    tail = ending.join(draw(lines)) + draw(texts)
    user = ChatMessage(role="user", content=shared + tail, stable_chars=len(shared))
    messages = [system, user]
    if draw(st.booleans()):
        messages += [
            ChatMessage(role="assistant", content=draw(texts)),
            ChatMessage(role="user", content=draw(texts)),
        ]
    return messages


def _entry(number: int, prompt: list[dict[str, object]]) -> Entry:
    payload = {"agent": "A", "playbook": "Main", "prompt": prompt}
    return Entry(number=number, kind="turn", key=None, created=datetime.now(UTC), payload=payload)


async def _recorded(turns: list[list[ChatMessage]], key: str = "A:Main") -> dict[int, Entry]:
    log = PromptLog()
    entries: dict[int, Entry] = {}
    for number, messages in enumerate(turns, start=1):
        recorded = log.record(messages, key=key)
        entries[number] = _entry(number, recorded.items)
        log.written(number, recorded)
    return entries


async def _read_all(entries: dict[int, Entry]) -> list[list[tuple[str, str]]]:
    async def read_entry(number: int) -> Entry | None:
        return entries.get(number)

    read = []
    for number in sorted(entries):
        messages = await read_prompt(entries[number], read_entry)
        assert messages is not None
        read.append([(message.role, message.text) for message in messages])
    return read


@pytest.mark.anyio
@given(turns=st.lists(prompts(), min_size=1, max_size=20))
async def test_a_recorded_prompt_reads_back_exactly(turns: list[list[ChatMessage]]) -> None:
    entries = await _recorded(turns)
    assert await _read_all(entries) == [[(m.role, m.content) for m in messages] for messages in turns]
    seen: set[str] = set()
    for number in sorted(entries):
        for item in entries[number].payload["prompt"]:
            if "part" in item:  # a shared part's text is stored the first time only
                assert ("head" in item) == (item["part"] not in seen)
                seen.add(item["part"])
    # A log read again (a resumed run) names the parts the entries hold instead of storing them again, and
    # stores the next turn exactly as the run that wrote the log would have.
    again = PromptLog(entries.values()).record(turns[0], key="A:Main")
    assert all("head" not in item for item in again.items)
    for cut in range(1, len(turns)):
        resumed = PromptLog(entries[number] for number in range(1, cut + 1))
        assert resumed.record(turns[cut], key="A:Main").items == entries[cut + 1].payload["prompt"]


@pytest.mark.anyio
async def test_a_sliding_session_log_is_stored_as_the_lines_that_changed() -> None:
    shared = "# Agent Counter\n## Main\n"
    turns = []
    for turn in range(40):
        log = "".join(f"- Counter said: number {n} is fine\n" for n in range(max(0, turn - 30), turn))
        text = f"## State\n- $i = {turn}\n\n## Session log\n{log}\n## Your task\nGo on at 02"
        turns.append(
            [
                ChatMessage(role="system", content="CPU"),
                ChatMessage(role="user", content=shared + text, stable_chars=len(shared)),
            ]
        )
    entries = await _recorded(turns)
    assert await _read_all(entries) == [[(m.role, m.content) for m in messages] for messages in turns]
    kinds = ["delta" if "delta" in entries[n].payload["prompt"][1] else "whole" for n in sorted(entries)]
    # A whole copy every KEYFRAME_EVERY turns, and while the window is short (its edits would be most of it).
    assert kinds[0] == "whole" and kinds.count("whole") <= -(-40 // KEYFRAME_EVERY) + 3
    stored = sum(len(json.dumps(entries[n].payload["prompt"])) for n in entries)
    whole = sum(
        len(json.dumps([{"role": m.role, "text": m.content} for m in messages])) for messages in turns
    )
    assert stored * 2 < whole  # the shared part once; each turn, the lines that changed


@pytest.mark.anyio
async def test_a_prompt_naming_a_part_nobody_holds_is_an_error() -> None:
    entry = _entry(5, [{"role": "system", "part": "0123456789abcdef", "at": 2, "tail": ""}])

    async def nothing(number: int) -> Entry | None:
        return None

    with pytest.raises(
        PromptMissing, match="entry 5: its prompt names the shared part 0123456789abcdef of entry 2"
    ):
        await read_prompt(entry, nothing)
    older = Entry(number=1, kind="turn", key=None, created=datetime.now(UTC), payload={"answer": "..."})
    assert await read_prompt(older, nothing) is None  # written before prompts were kept


class CountingModel:
    """The desk's scripted answers, with token counts as a real model reports them."""

    name = "counting"

    def __init__(self) -> None:
        self.inner = desk_model()

    def resume_thread(self, answered: int) -> None:
        self.inner.resume_thread(answered)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        answer = await self.inner.complete(request)
        prompt = sum(len(message.content) for message in request.messages) // 4
        return ModelResponse(
            text=answer.text, model=self.name, usage=Usage(prompt_tokens=prompt, completion_tokens=10)
        )


@pytest.mark.anyio
async def test_token_totals_and_repairs_are_kept() -> None:
    async with open_store("memory://?snapshot_every=3") as store:
        async with await ProgramSession.open(DESK, store=store, thread="t", model=CountingModel()) as session:
            await session.run(messages=["order 1234"])
        entries = await store.read_entries("t")
        turns = [entry for entry in entries if entry.kind == "turn"]
        expected = {
            "prompt": sum(turn.payload["tokens"]["prompt"] for turn in turns),
            "completion": 10 * len(turns),
        }
        assert expected["prompt"] > 0
        state = await read_state(store, "t")
        assert state.tokens == expected
        loaded = await store.load("t")
        assert loaded.snapshot is not None and loaded.snapshot.state["tokens"] == expected
        assert [turn.payload.get("repairs") for turn in turns] == [
            None,
            None,
            None,
            ['R01 answer line 4: Step["Main:05.01"] read as Step["Main:05.01:QUE"]'],
        ]

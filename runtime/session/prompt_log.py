"""The prompt of each model answer, kept in the answer's `turn` entry so a reader (`pal studio`) can show what
the model was asked, in a form that keeps a thread's storage linear and small.

Most of a turn's prompt is the same in every turn of its playbook: the system message and the first part of
the user message (the agent, the playbook's text, what it can call, the triggers: up to the mark the prompt
builder sets, `ChatMessage.stable_chars`). That part is stored once per thread; later turns name it by its
hash and the entry that holds its text. What changes from turn to turn (the state, the session log, the
task, a retry's answer and reasons) is stored with each turn.

A recorded prompt is a list with one item per chat message:

    {"role": "system", "part": "3f9c...", "head": "You are the CPU ...", "tail": ""}   (first time)
    {"role": "system", "part": "3f9c...", "at": 1, "tail": ""}                         (later: text at entry 1)
    {"role": "user", "part": "77ab...", "at": 1, "tail": "## State ..."}
    {"role": "assistant", "tail": "recap - ..."}                                       (no shared part)

The message's text is `head + tail`. Nothing replays from it: a resumed run builds its prompts anew.
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from runtime.models.base import ChatMessage
from runtime.store import Entry
from runtime.store.records import EntryKind

PART_ID_LENGTH = 16
"""Hex digits of a shared part's SHA-256 kept as its name (64 bits: no collision in one thread)."""


def _part_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:PART_ID_LENGTH]


def _split(messages: Sequence[ChatMessage]) -> list[tuple[str, str, str]]:
    """(role, shared head, tail) per message: the messages before the stable mark are shared whole, the one
    that carries the mark up to it, the ones after it not at all. Without a mark, system messages are shared
    (they are the same all run long) and the others are not."""
    marked = next((index for index, message in enumerate(messages) if message.stable_chars is not None), None)
    split: list[tuple[str, str, str]] = []
    for index, message in enumerate(messages):
        content = message.content
        if marked is None:
            head = content if message.role == "system" else ""
        elif index < marked:
            head = content
        elif index == marked:
            head = content[: message.stable_chars]
        else:
            head = ""
        split.append((message.role, head, content[len(head) :]))
    return split


class PromptLog:
    """The shared parts a thread's log already holds (by id, the entry that holds the text), so that each
    new turn stores only what is new. One per journal."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._held: dict[str, int] = {}
        for entry in entries:
            self.note(entry)

    def note(self, entry: Entry) -> None:
        """Learn the shared parts whose text `entry` holds (an entry of the log, read or just written)."""
        if entry.kind != EntryKind.TURN:
            return
        for item in entry.payload.get("prompt") or ():
            if isinstance(item, dict) and "head" in item and isinstance(item.get("part"), str):
                self._held.setdefault(item["part"], entry.number)

    def record(self, messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
        """The prompt as a turn entry stores it: shared parts the log holds are named, not repeated."""
        recorded: list[dict[str, Any]] = []
        for role, head, tail in _split(messages):
            item: dict[str, Any] = {"role": role}
            if head:
                part = _part_id(head)
                item["part"] = part
                held = self._held.get(part)
                if held is None:
                    item["head"] = head
                else:
                    item["at"] = held
            item["tail"] = tail
            recorded.append(item)
        return recorded

    def written(self, number: int, recorded: list[dict[str, Any]]) -> None:
        """The turn entry holding `recorded` was committed as entry `number`: later turns name its parts."""
        for item in recorded:
            if "head" in item:
                self._held.setdefault(item["part"], number)


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptMessage:
    """One message of a recorded prompt, read back."""

    role: str
    """`system`, `user` or `assistant`."""
    text: str
    """The whole text the model was given."""
    shared: int
    """How many of its first characters are the part every turn of the playbook shares."""


class PromptMissing(LookupError):
    """A recorded prompt names a shared part that its thread does not hold (a thread document edited by
    hand, or an entry range read without the entry holding the part)."""


async def read_prompt(
    entry: Entry, read_entry: Callable[[int], Awaitable[Entry | None]]
) -> list[PromptMessage] | None:
    """The prompt of a `turn` entry, its shared parts read through `read_entry(number)`; None for an entry
    written before prompts were recorded."""
    recorded = entry.payload.get("prompt")
    if not isinstance(recorded, list):
        return None
    cache: dict[int, Entry | None] = {entry.number: entry}
    messages: list[PromptMessage] = []
    for item in recorded:
        head = ""
        if "head" in item:
            head = str(item["head"])
        elif "part" in item:
            number = int(item.get("at", 0))
            if number not in cache:
                cache[number] = await read_entry(number)
            holder = cache[number]
            head = _head_in(holder, str(item["part"])) if holder is not None else None
            if head is None:
                raise PromptMissing(
                    f"entry {entry.number}: its prompt names the shared part {item['part']} of entry {number}, "
                    "which does not hold it"
                )
        messages.append(
            PromptMessage(
                role=str(item.get("role", "")), text=head + str(item.get("tail", "")), shared=len(head)
            )
        )
    return messages


def _head_in(entry: Entry, part: str) -> str | None:
    for item in entry.payload.get("prompt") or ():
        if isinstance(item, dict) and item.get("part") == part and "head" in item:
            return str(item["head"])
    return None

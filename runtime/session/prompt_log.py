"""The prompt of each model answer, kept in the answer's `turn` entry so a reader (`pal studio`) can show what
the model was asked, in a form that keeps a thread's storage linear and small.

Most of a turn's prompt is the same in every turn of its playbook: the system message and the first part of
the user message (the agent, the playbook's text, what it can call, the triggers: up to the mark the prompt
builder sets, `ChatMessage.stable_chars`). That part is stored once per thread; later turns name it by its
hash and the entry that holds its text. The rest of that message (the state, the session log, the task)
changes a little from turn to turn: the session log is a window that slides by a line or two. So it is
stored whole every `KEYFRAME_EVERY` turns of an agent's playbook (a keyframe), and in between as the lines
that differ from the previous turn's. Reading a prompt reads at most `KEYFRAME_EVERY` other entries.

A recorded prompt is a list with one item per chat message:

    {"role": "system", "part": "3f9c...", "head": "You are the CPU ...", "tail": ""}   (first time)
    {"role": "system", "part": "3f9c...", "at": 1, "tail": ""}                         (later: text at entry 1)
    {"role": "user", "part": "77ab...", "at": 1, "chain": true, "tail": "## State ..."} (stored whole)
    {"role": "user", "part": "77ab...", "at": 1, "chain": true, "delta": {"base": 4, "ops": [[0, 3], "- a\\n"]}}
                                                                (the previous turn's tail, edited)
    {"role": "assistant", "tail": "recap - ..."}                                       (no shared part)

The message's text is its head and its tail (`chain` marks the message whose changing part is stored as
edits of the playbook's previous turn); a delta's tail is the tail of the same message in entry `base`
(the playbook's previous turn) with `ops` applied in order: `[i, j]` copies its lines i to j-1, a string is
new text. Nothing replays from any of
it: a resumed run builds its prompts anew.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from runtime.models.base import ChatMessage
from runtime.store import Entry
from runtime.store.records import EntryKind

PART_ID_LENGTH = 16
"""Hex digits of a shared part's SHA-256 kept as its name (64 bits: no collision in one thread)."""
KEYFRAME_EVERY = 16
"""Turns of an agent's playbook between two whole copies of the changing part of its prompt."""


def _part_id(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:PART_ID_LENGTH]


def _split(messages: Sequence[ChatMessage]) -> tuple[list[tuple[str, str, str]], int | None]:
    """(role, shared head, tail) per message, and the index of the message that carries the stable mark: the
    messages before the mark are shared whole, the one that carries it up to it, the ones after it not at
    all. Without a mark, system messages are shared (they are the same all run long) and the others are not."""
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
    return split, marked


@dataclass(slots=True)
class _Chain:
    """The turns of one agent's playbook: where their changing part was last stored, and what it was."""

    entry: int
    """The entry of the playbook's last turn."""
    lines: list[str]
    """Its changing part, split into lines (ends kept)."""
    since: int = 0
    """Turns stored as deltas since the last whole copy."""


@dataclass(frozen=True, slots=True)
class RecordedPrompt:
    """A prompt as a turn entry stores it (`items`), and the keyframe it makes once committed."""

    items: list[dict[str, Any]]
    """What the entry's `prompt` holds."""
    chain: tuple[str, list[str], bool] | None = None
    """(playbook key, its changing part's lines, whether stored whole) for the playbook's next turn."""


class PromptLog:
    """What of the prompts a thread's log already holds: the shared parts (by id, the entry holding the text)
    and each agent's playbook's latest keyframe, so that each new turn stores only what is new. One per
    journal; a journal that resumes a thread starts new keyframes."""

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._held: dict[str, int] = {}
        self._chains: dict[str, _Chain] = {}
        for entry in entries:
            self.note(entry)

    @staticmethod
    def key(agent: str, playbook: str | None) -> str:
        """The name of an agent's playbook's chain of prompts (its turns' changing parts)."""
        return f"{agent}:{playbook or ''}"

    def note(self, entry: Entry) -> None:
        """Learn what `entry` (an entry of the log, in order) holds: the shared parts it stores, and the
        changing part of its playbook's prompt, so that a journal that resumes a thread goes on storing its
        prompts exactly as the run that wrote the log would have."""
        if entry.kind != EntryKind.TURN:
            return
        payload = entry.payload
        for item in payload.get("prompt") or ():
            if not isinstance(item, dict):
                continue
            if "head" in item and isinstance(item.get("part"), str):
                self._held.setdefault(item["part"], entry.number)
            if item.get("chain"):
                self._follow(
                    self.key(str(payload.get("agent", "")), payload.get("playbook")), entry.number, item
                )

    def _follow(self, key: str, number: int, item: dict[str, Any]) -> None:
        if "delta" not in item:
            self._chains[key] = _Chain(
                entry=number, lines=str(item.get("tail", "")).splitlines(keepends=True)
            )
            return
        chain = self._chains.get(key)
        delta = item["delta"]
        if chain is None or chain.entry != delta.get("base"):
            self._chains.pop(key, None)  # a log this journal cannot follow: the next turn starts a new chain
            return
        lines = _apply(chain.lines, delta.get("ops") or ())
        self._chains[key] = _Chain(entry=number, lines=lines, since=chain.since + 1)

    def record(self, messages: Sequence[ChatMessage], *, key: str = "") -> RecordedPrompt:
        """The prompt as a turn entry stores it: shared parts the log holds are named, not repeated, and the
        changing part of the marked message is a delta against `key`'s keyframe when there is a fresh one
        (`key` names the agent's playbook whose turns these are). Call `written` once it is committed."""
        split, marked = _split(messages)
        recorded: list[dict[str, Any]] = []
        chain: tuple[str, list[str], bool] | None = None
        for index, (role, head, tail) in enumerate(split):
            item: dict[str, Any] = {"role": role}
            if head:
                part = _part_id(head)
                item["part"] = part
                held = self._held.get(part)
                if held is None:
                    item["head"] = head
                else:
                    item["at"] = held
            if index == marked and key:
                lines = tail.splitlines(keepends=True)
                delta = self._delta(key, lines)
                chain = (key, lines, delta is None)
                item["chain"] = True
                if delta is None:
                    item["tail"] = tail
                else:
                    item["delta"] = delta
            else:
                item["tail"] = tail
            recorded.append(item)
        return RecordedPrompt(items=recorded, chain=chain)

    def _delta(self, key: str, lines: list[str]) -> dict[str, Any] | None:
        """`lines` as edits of the playbook's previous turn, or None when it is time for a whole copy (none
        yet, KEYFRAME_EVERY turns since the last, or edits that would be more than half the text)."""
        chain = self._chains.get(key)
        if chain is None or chain.since >= KEYFRAME_EVERY - 1:
            return None
        ops: list[Any] = []
        matcher = difflib.SequenceMatcher(None, chain.lines, lines, autojunk=False)
        for tag, first, last, new_first, new_last in matcher.get_opcodes():
            if tag == "equal":
                ops.append([first, last])
            elif tag in ("replace", "insert"):
                ops.append("".join(lines[new_first:new_last]))
        if len(json.dumps(ops)) * 2 > sum(map(len, lines)):
            return None
        return {"base": chain.entry, "ops": ops}

    def written(self, number: int, recorded: RecordedPrompt) -> None:
        """The turn entry holding `recorded` was committed as entry `number`: later turns name its shared
        parts, and the playbook's next turn is stored as edits of this one."""
        for item in recorded.items:
            if "head" in item:
                self._held.setdefault(item["part"], number)
        if recorded.chain is not None:
            key, lines, whole = recorded.chain
            since = 0 if whole else self._chains[key].since + 1
            self._chains[key] = _Chain(entry=number, lines=lines, since=since)


def _apply(lines: list[str], ops: Iterable[Any]) -> list[str]:
    """The lines a delta's `ops` make of the previous turn's `lines`."""
    text = "".join("".join(lines[op[0] : op[1]]) if isinstance(op, list) else str(op) for op in ops)
    return text.splitlines(keepends=True)


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
    """A recorded prompt names a part its thread does not hold (a thread document edited by hand, or an entry
    that is not there)."""


@dataclass(slots=True)
class _Reader:
    """Reads the entries a prompt names, each once."""

    entry: Entry
    read_entry: Callable[[int], Awaitable[Entry | None]]
    cache: dict[int, Entry | None] = field(default_factory=dict)

    async def item(self, number: int, what: str, matches: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        """The item of entry `number`'s prompt that `matches`."""
        if number not in self.cache:
            self.cache[number] = await self.read_entry(number)
        holder = self.cache[number]
        items = holder.payload.get("prompt") if holder is not None else None
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and matches(item):
                return item
        raise PromptMissing(
            f"entry {self.entry.number}: its prompt names {what} of entry {number}, which does not hold it"
        )

    async def head(self, item: dict[str, Any]) -> str:
        """A message's shared part: stored here, or named (its text in an earlier entry)."""
        if "head" in item:
            return str(item["head"])
        part = item.get("part")
        if part is None:
            return ""
        holder = await self.item(
            int(item.get("at", 0)),
            f"the shared part {part}",
            lambda found: found.get("part") == part and "head" in found,
        )
        return str(holder["head"])

    async def tail(self, item: dict[str, Any]) -> str:
        """A message's changing part: stored whole, or edits of the previous turn's (followed back to the
        turn that stored it whole, then applied forward)."""
        edits: list[list[Any]] = []
        while "delta" in item:
            if len(edits) > KEYFRAME_EVERY:
                raise PromptMissing(
                    f"entry {self.entry.number}: its prompt's edits do not lead to a whole copy"
                )
            delta = item["delta"]
            edits.append(list(delta.get("ops") or ()))
            item = await self.item(int(delta.get("base", 0)), "the previous turn's prompt", _chained)
        lines = str(item.get("tail", "")).splitlines(keepends=True)
        for ops in reversed(edits):
            lines = _apply(lines, ops)
        return "".join(lines)


def _chained(item: dict[str, Any]) -> bool:
    return bool(item.get("chain"))


async def read_prompt(
    entry: Entry, read_entry: Callable[[int], Awaitable[Entry | None]]
) -> list[PromptMessage] | None:
    """The prompt of a `turn` entry, the parts it names read through `read_entry(number)`; None for an entry
    written before prompts were recorded."""
    recorded = entry.payload.get("prompt")
    if not isinstance(recorded, list):
        return None
    reader = _Reader(entry, read_entry, {entry.number: entry})
    messages: list[PromptMessage] = []
    for item in recorded:
        head = await reader.head(item)
        tail = await reader.tail(item)
        messages.append(PromptMessage(role=str(item.get("role", "")), text=head + tail, shared=len(head)))
    return messages

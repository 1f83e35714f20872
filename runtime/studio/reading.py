"""What the studio's pages show, read from a store through its public reading API (runtime.store and
runtime.session.view): the threads with their counts, and a thread's log as a timeline.

Nothing here replays a run or writes to the store. A timeline is built from the log alone: each entry is one
item, and a rejected answer is grouped with the answers that retried it at the same place, so the page can
show them side by side.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from runtime.session.view import ThreadState, read_state
from runtime.store import Entry, Store, Thread, ThreadStatus
from runtime.store.records import EntryKind

LIST_SCAN = 500
"""Threads read per store call while filtering the list by program (the store filters by status only)."""
MAX_LIST_SCAN = 20_000
"""Threads a program filter looks through at most (then the page says the search stopped there)."""

_CODE = re.compile(r"^(?P<code>(?:V|R|PAL)\d+)\b\s*(?P<rest>.*)$", re.DOTALL)


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadRow:
    """One line of the threads page."""

    thread: Thread
    """The thread record."""
    kind: str
    """`program` or `calls`."""
    model: str | None
    """The model the thread was started with (its metadata), if recorded."""
    answers: int
    """Model answers (each a model call) the thread holds."""
    tokens: dict[str, int]
    """Their tokens, `{"prompt": N, "completion": M}` (empty when not known)."""
    waiting: str | None
    """The agent waiting for the user, if any."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadPage:
    """A page of the threads list."""

    rows: list[ThreadRow]
    """The threads of this page, most recently updated first."""
    offset: int
    """How many threads (of those matching) come before this page."""
    more: bool
    """Whether threads follow this page."""
    scanned_out: bool = False
    """The program filter stopped after MAX_LIST_SCAN threads (older ones were not searched)."""


async def list_page(
    store: Store,
    *,
    statuses: Sequence[str] = (),
    program: str = "",
    offset: int = 0,
    limit: int = 50,
) -> ThreadPage:
    """The threads with one of `statuses` (any when empty) whose program path contains `program`, most
    recently updated first, `limit` from `offset`."""
    wanted = list(statuses) or None
    needle = program.strip().lower()
    if not needle:
        threads = await store.list_threads(status=wanted, limit=limit + 1, offset=offset)
        chosen, more, scanned_out = threads[:limit], len(threads) > limit, False
    else:
        chosen, more, scanned_out = await _scan(store, wanted, needle, offset, limit)
    rows = [await _row(store, thread) for thread in chosen]
    return ThreadPage(rows=rows, offset=offset, more=more, scanned_out=scanned_out)


async def _scan(
    store: Store, statuses: list[str] | None, needle: str, offset: int, limit: int
) -> tuple[list[Thread], bool, bool]:
    matched: list[Thread] = []
    read = 0
    while read < MAX_LIST_SCAN:
        batch = await store.list_threads(status=statuses, limit=LIST_SCAN, offset=read)
        read += len(batch)
        matched += [thread for thread in batch if needle in thread.program.path.lower()]
        if len(matched) > offset + limit:
            return matched[offset : offset + limit], True, False
        if len(batch) < LIST_SCAN:
            return matched[offset : offset + limit], False, False
    return matched[offset : offset + limit], False, True


async def _row(store: Store, thread: Thread) -> ThreadRow:
    state = await read_state(store, thread.id)
    return ThreadRow(
        thread=state.thread,
        kind=state.kind,
        model=model_of(state.thread),
        answers=state.answers,
        tokens=dict(state.tokens),
        waiting=state.waiting,
    )


def model_of(thread: Thread) -> str | None:
    """The model named in the thread's metadata (`pal.model`), if any."""
    details = thread.metadata.get("pal")
    model = details.get("model") if isinstance(details, dict) else None
    return str(model) if model else None


# --- a thread's timeline -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Coded:
    """A repair or a rejection reason: its code (R.., V.., PAL...) and its text."""

    code: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class VariableChange:
    """A variable a turn set: its value before (if it had one) and after."""

    name: str
    before: Any
    after: Any
    new: bool
    """The variable did not exist before the turn (in the log's view)."""


@dataclass(slots=True, kw_only=True)
class Item:
    """One entry of the log, read for the page."""

    entry: Entry
    """The entry itself (number, kind, time, payload)."""
    agent: str = ""
    """The agent it concerns (its label in the log), if any."""
    changes: list[VariableChange] = field(default_factory=list)
    """For an accepted turn: the variables it set, with their values before."""
    repairs: list[Coded] = field(default_factory=list)
    """For an accepted turn: how its answer was repaired."""
    problems: list[Coded] = field(default_factory=list)
    """For a rejected answer: why it was rejected."""

    @property
    def number(self) -> int:
        return self.entry.number

    @property
    def payload(self) -> dict[str, Any]:
        return self.entry.payload

    @property
    def verdict(self) -> str | None:
        return self.payload.get("verdict") if self.entry.kind == EntryKind.TURN else None


@dataclass(slots=True, kw_only=True)
class Group:
    """Items shown together: one entry, or rejected answers with the answer that retried them at the same
    place (agent, playbook, line), side by side."""

    items: list[Item]

    @property
    def first(self) -> int:
        return self.items[0].number

    @property
    def last(self) -> int:
        return self.items[-1].number

    @property
    def open(self) -> bool:
        """Its last answer was rejected: a retry may still join it."""
        return self.items[-1].verdict == "rejected"


class Timeline:
    """Builds a thread's timeline entry by entry, keeping each agent's variables as the log sets them (for
    the before/after of each turn). Feed it the log in order, from the start or from a group's first entry
    (a rejected answer changes nothing, so an open group can be built again from its start)."""

    def __init__(self) -> None:
        self.variables: dict[str, dict[str, Any]] = {}
        """By agent label: the variables the log's turns have set so far."""
        self.steps: dict[tuple[str, str], dict[str, int]] = {}
        """By (agent class, playbook): how many times each line ran in accepted turns."""
        self.current: dict[tuple[str, str], str] = {}
        """By (agent class, playbook): the line its last accepted turn goes on at."""
        self.last_place: tuple[str, str] | None = None
        """(agent class, playbook) of the last accepted turn."""

    def groups(self, entries: Iterable[Entry]) -> list[Group]:
        """The entries as groups (a rejected answer with the answers that retried it)."""
        groups: list[Group] = []
        for entry in entries:
            item = self.item(entry)
            previous = groups[-1] if groups else None
            if previous is not None and previous.open and _same_place(previous.items[-1], item):
                previous.items.append(item)
            else:
                groups.append(Group(items=[item]))
        return groups

    def item(self, entry: Entry) -> Item:
        payload = entry.payload
        agent = str(payload.get("agent", "")) if isinstance(payload.get("agent"), str) else ""
        item = Item(entry=entry, agent=agent)
        if entry.kind != EntryKind.TURN:
            return item
        verdict = payload.get("verdict")
        if verdict == "rejected":
            item.problems = [coded(text) for text in payload.get("problems") or ()]
            return item
        if verdict != "accepted":
            return item
        changed = payload.get("changed") or {}
        known = self.variables.setdefault(agent, {})
        for name, value in (changed.get("vars") or {}).items():
            item.changes.append(
                VariableChange(name=name, before=known.get(name), after=value, new=name not in known)
            )
            known[name] = value
        item.repairs = [coded(text) for text in payload.get("repairs") or ()]
        playbook = payload.get("playbook")
        if isinstance(playbook, str):
            place = (agent.split("#")[0], playbook)
            counts = self.steps.setdefault(place, {})
            for line in changed.get("steps") or ():
                counts[str(line)] = counts.get(str(line), 0) + 1
            if changed.get("next"):
                self.current[place] = str(changed["next"])
            self.last_place = place
        return item


def _same_place(rejected: Item, item: Item) -> bool:
    if item.entry.kind != EntryKind.TURN:
        return False
    keys = ("agent", "playbook", "line", "request")
    return all(rejected.payload.get(key) == item.payload.get(key) for key in keys)


def coded(text: Any) -> Coded:
    """A repair or problem line split into its code and its text (`V03 answer line 4: ...`)."""
    shown = str(text)
    found = _CODE.match(shown)
    if found is None:
        return Coded(code="", text=shown)
    return Coded(code=found["code"], text=found["rest"])


@dataclass(frozen=True, slots=True, kw_only=True)
class Totals:
    """What a thread has used, from its state and its log."""

    entries: int
    answers: int
    """Model answers, each a model call (accepted, rejected, trigger checks)."""
    turns: int
    """Accepted playbook turns."""
    rejected: int
    """Rejected answers."""
    repaired: int
    """Accepted turns whose answer needed a repair."""
    tokens: dict[str, int]
    calls: int
    """Python and remote calls."""
    messages: int
    """Messages delivered between agents."""
    inputs: int
    """Answers the user gave."""
    started: datetime
    updated: datetime


def totals(state: ThreadState, entries: Sequence[Entry]) -> Totals:
    """The thread's totals (the log's entries in full: `entries`)."""
    counts = {"rejected": 0, "repaired": 0, "calls": 0, "messages": 0, "inputs": 0}
    for entry in entries:
        payload = entry.payload
        if entry.kind == EntryKind.TURN:
            if payload.get("verdict") == "rejected":
                counts["rejected"] += 1
            elif payload.get("repairs"):
                counts["repaired"] += 1
        elif entry.kind == EntryKind.CALL:
            counts["calls"] += 1
        elif entry.kind == EntryKind.MESSAGE:
            counts["messages"] += len(payload.get("messages") or ())
        elif entry.kind == EntryKind.INPUT and payload.get("input") == "user":
            counts["inputs"] += 1
    return Totals(
        entries=state.thread.last_entry,
        answers=state.answers,
        turns=state.turns,
        tokens=dict(state.tokens),
        started=state.thread.created,
        updated=state.thread.updated,
        **counts,
    )


STATUS_WORDS = {
    ThreadStatus.RUNNING: "running",
    ThreadStatus.WAITING_FOR_USER: "waiting for user",
    ThreadStatus.FINISHED: "finished",
    ThreadStatus.FAILED: "failed",
    ThreadStatus.INTERRUPTED: "interrupted",
}
"""How each status reads on the page."""

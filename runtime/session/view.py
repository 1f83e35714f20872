"""Reading a thread without running it: its state (the latest snapshot and the entries after it) and its
history (the verified turns), for `pal threads`, `pal history` and `Session` readers.

A thread that stopped (waiting for the user, finished, failed, a call that ended) has a snapshot at its last
entry, so its state is exact. While a run is live, the state is its latest snapshot with the turns after it
folded in (their variables, what they said, the user's input): what the log holds, no more.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from runtime.store import Entry, Store, Thread
from runtime.store.records import EntryKind

from .session import thread_kind


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadState:
    """A thread as its log shows it."""

    thread: Thread
    """The thread record (id, program, status, times)."""
    kind: str
    """`program` or `calls`."""
    at: int
    """The last entry this state includes."""
    agents: dict[str, dict[str, Any]] = field(default_factory=dict)
    """By agent label: `{"class", "id", "variables"}` (values as JSON, for reading)."""
    transcript: list[dict[str, str]] = field(default_factory=list)
    """What the user saw and said: `{"from": ..., "text": ...}` in order."""
    waiting: str | None = None
    """The agent waiting for the user, if the thread waits."""
    result: Any = None
    """The run's recorded outcome, or the last call's value."""
    turns: int = 0
    """Accepted model turns."""
    answers: int = 0
    """Model answers (accepted, rejected, trigger checks)."""
    tokens: dict[str, int] = field(default_factory=dict)
    """Tokens of those answers, `{"prompt": N, "completion": M}` (empty for a thread whose snapshots predate
    the count and that has no answers after them)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LoggedTurn:
    """One model answer of a thread's log."""

    number: int
    """Its entry number (`pal fork T --at N` starts a thread after it)."""
    created: datetime
    """When it was committed."""
    agent: str
    """The agent that asked."""
    request: str
    """`turn`, `triggers`, `raw` or `react`."""
    playbook: str | None
    line: str | None
    verdict: str | None
    """`accepted` or `rejected` for a playbook turn; None for other requests."""
    answer: str
    """The model's answer text."""
    changed: dict[str, Any] = field(default_factory=dict)
    """What an accepted turn changed: steps, vars, said, calls, next, yield, returned."""
    problems: tuple[str, ...] = ()
    """Why a rejected answer was rejected."""


async def read_state(store: Store, thread_id: str) -> ThreadState:
    """The thread's state from its latest snapshot and the entries after it (no replay)."""
    loaded = await store.load(thread_id)
    state = loaded.snapshot.state if loaded.snapshot is not None else {}
    agents = {label: dict(agent) for label, agent in (state.get("agents") or {}).items()}
    transcript = list(state.get("transcript") or [])
    waiting = state.get("waiting")
    result = state.get("result")
    turns = int(state.get("turns") or 0)
    answers = int(state.get("answers") or 0)
    tokens = dict(state.get("tokens") or {})
    for entry in loaded.entries:
        payload = entry.payload
        if entry.kind == EntryKind.TURN:
            answers += 1
            for kind, count in (payload.get("tokens") or {}).items():
                tokens[kind] = tokens.get(kind, 0) + int(count)
            if payload.get("verdict") != "accepted":
                continue
            turns += 1
            changed = payload.get("changed") or {}
            label = str(payload.get("agent"))
            agent = agents.setdefault(label, {"class": label.split("#")[0], "id": None, "variables": {}})
            agent["variables"] = {**(agent.get("variables") or {}), **(changed.get("vars") or {})}
            transcript += [{"from": agent["class"], "text": text} for text in changed.get("said") or ()]
        elif entry.kind == EntryKind.INPUT and payload.get("input") == "user":
            transcript.append({"from": "user", "text": str(payload.get("text", ""))})
            waiting = None
        elif entry.kind == EntryKind.WAIT:
            waiting = str(payload.get("agent"))
        elif entry.kind == "result":
            result = payload.get("value")
        elif entry.kind == EntryKind.STATUS:
            result = payload.get("result", result)
            waiting = None
    return ThreadState(
        thread=loaded.thread,
        kind=thread_kind(loaded.thread),
        at=loaded.last,
        agents=agents,
        transcript=transcript,
        waiting=waiting,
        result=result,
        turns=turns,
        answers=answers,
        tokens=tokens,
    )


async def read_history(
    store: Store, thread_id: str, *, rejected: bool = False, first: int = 1, last: int | None = None
) -> list[LoggedTurn]:
    """The thread's verified turns in order (with `rejected`, every model answer, each with its verdict)."""
    turns: list[LoggedTurn] = []
    for entry in await store.read_entries(thread_id, first=first, last=last):
        if entry.kind != EntryKind.TURN:
            continue
        if not rejected and entry.payload.get("verdict") not in ("accepted", None):
            continue
        turns.append(logged_turn(entry))
    return turns


async def user_inputs(store: Store, thread_id: str) -> list[str]:
    """What the user has answered in the thread, in order (empty for a thread that does not exist)."""
    if await store.find_thread(thread_id) is None:
        return []
    return [
        str(entry.payload.get("text", ""))
        for entry in await store.read_entries(thread_id)
        if entry.kind == EntryKind.INPUT and entry.payload.get("input") == "user"
    ]


def logged_turn(entry: Entry) -> LoggedTurn:
    """A `turn` entry read."""
    payload = entry.payload
    return LoggedTurn(
        number=entry.number,
        created=entry.created,
        agent=str(payload.get("agent", "")),
        request=str(payload.get("request", "turn")),
        playbook=payload.get("playbook"),
        line=payload.get("line"),
        verdict=payload.get("verdict"),
        answer=str(payload.get("answer", "")),
        changed=dict(payload.get("changed") or {}),
        problems=tuple(payload.get("problems") or ()),
    )


def describe_entry(entry: Entry) -> str:
    """One line for an entry of any kind (`pal history --all`)."""
    payload = entry.payload
    agent = payload.get("agent")
    if entry.kind == EntryKind.TURN:
        turn = logged_turn(entry)
        where = ":".join(part for part in (turn.agent, turn.playbook, turn.line) if part)
        if turn.verdict == "rejected":
            return f"{where} answer rejected: {'; '.join(turn.problems)[:200]}"
        if turn.verdict is None:
            return f"{where} {turn.request} answer: {turn.answer.strip()[:120]!r}"
        return f"{where} turn: {describe_changes(turn.changed)}"
    if entry.kind == EntryKind.CALL:
        if payload.get("error") is not None:
            outcome = f"failed: {payload['error']}"
        elif "result" in payload:
            outcome = f"-> {_value(payload['result'])}"
        else:
            outcome = f"-> {_value(payload.get('shown'))} (made again on resume)"
        return f"{agent} called {payload.get('playbook')}({_arguments(payload.get('arguments'))}) {outcome}"
    if entry.kind == EntryKind.WAIT:
        return f"{agent} waits for the user"
    if entry.kind == EntryKind.INPUT:
        if payload.get("input") == "call":
            return f"call {payload.get('playbook')}({_arguments(payload.get('arguments'))})"
        return f"the user to {agent}: {str(payload.get('text', ''))!r}"
    if entry.kind == EntryKind.MESSAGE:
        messages = payload.get("messages") or []
        shown = "; ".join(f"{m.get('class')}: {str(m.get('content'))[:60]!r}" for m in messages[:3])
        return f"{agent} read {len(messages)} message(s): {shown}"
    if entry.kind == "result":
        if payload.get("error"):
            return f"the call failed (rolled back): {payload['error']}"
        return f"the call returned {_value(payload.get('value'))}"
    if entry.kind == EntryKind.STATUS:
        return f"{payload.get('status')}: {payload.get('reason', '')}"
    return f"{entry.kind}: {_short(payload)}"


def describe_changes(changed: dict[str, Any]) -> str:
    """An accepted turn's changes in a line: steps, variables, what it said, calls, where it went."""
    parts: list[str] = []
    steps = changed.get("steps") or []
    if steps:
        parts.append("steps " + ", ".join(steps))
    variables = changed.get("vars") or {}
    if variables:
        parts.append(", ".join(f"${name} = {_value(value, 40)}" for name, value in variables.items()))
    for text in changed.get("said") or ():
        parts.append(f"said {_value(text, 60)}")
    calls = [call for call in changed.get("calls") or () if not call.startswith(("Say(", "SendMessage("))]
    if calls:
        parts.append("calls " + ", ".join(calls))
    if "returned" in changed:
        parts.append(f"returned {_value(changed['returned'], 40)}")
    if changed.get("yield"):
        parts.append(f"yld {changed['yield']}")
    return "; ".join(parts) or "no change"


def _arguments(arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return ""
    return ", ".join(f"{name}={_value(value, 30)}" for name, value in arguments.items())


def _value(value: Any, limit: int = 80) -> str:
    """A value as JSON text (strings quoted), cut to `limit` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return _short(text, limit)


def _short(value: Any, limit: int = 80) -> str:
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"

"""Live updates (server-sent events): a page follows a thread that another process, or the studio itself, is
running, by polling the store's record of the thread (one primary-key read: its last entry, status and time)
and reading only the entries that are new. A store has no notifications to wait on, so the poll backs off
while nothing changes (from `fastest` to `slowest` seconds) and comes back to `fastest` after a change; every
wait is bounded, and ends at once when the studio stops or the page goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from runtime.session.view import read_state
from runtime.store import Entry

from .reading import Timeline
from .timeline_html import groups_html

if TYPE_CHECKING:
    from .app import Studio


@dataclass(frozen=True, slots=True)
class PollSettings:
    """How often live updates read the store."""

    fastest: float = 0.25
    """Seconds between reads right after a change (and at the start)."""
    slowest: float = 2.0
    """Seconds between reads once nothing has changed for a while."""
    heartbeat: float = 15.0
    """Seconds between comments that keep an idle connection open through proxies."""


Event = tuple[str, dict[str, Any]]
"""(event name, data) of one server-sent event."""


async def thread_updates(
    studio: Studio, thread_id: str, *, after: int, open_from: int, request: Any = None
) -> AsyncIterator[Event | None]:
    """`update` events for a thread page that shows entries up to `after` (its last group, from `open_from`,
    still open: a rejected answer a retry may join); None now and then (a heartbeat is due)."""
    store = studio.store
    start = open_from if 0 < open_from <= after else after + 1
    timeline = Timeline()
    seen: list[Entry] = await store.read_entries(thread_id, last=after) if after else []
    timeline.groups(entry for entry in seen if entry.number < start)
    known: tuple[Any, ...] | None = None
    delay = studio.poll.fastest
    beat = time.monotonic()
    while not studio.stopping.is_set():
        thread = await store.get_thread(thread_id)
        now = (
            thread.last_entry,
            thread.status,
            studio.runs.running(thread_id),
            studio.runs.notices.get(thread_id),
        )
        if known is not None and now == known and thread.last_entry <= after:
            delay = min(delay * 2, studio.poll.slowest)
        else:
            new = (
                await store.read_entries(thread_id, first=after + 1, last=thread.last_entry)
                if thread.last_entry > after
                else []
            )
            seen += new
            redo = [entry for entry in seen if entry.number >= start]
            groups = timeline.groups(redo)
            state = await read_state(store, thread_id)
            open_group = groups[-1] if groups and groups[-1].open else None
            yield (
                "update",
                {
                    "from": start,
                    "html": groups_html(groups),
                    "summary": studio.summary(state, seen),
                    "last": thread.last_entry,
                    "open": open_group.first if open_group else 0,
                    "status": thread.status.value,
                },
            )
            after = thread.last_entry
            start = open_group.first if open_group else after + 1
            if open_group is not None:  # built again from its first entry next time (it changed nothing)
                timeline = _timeline_before(seen, start)
            known = now
            delay = studio.poll.fastest
        if time.monotonic() - beat >= studio.poll.heartbeat:
            beat = time.monotonic()
            yield None
        if request is not None and await request.is_disconnected():
            return
        await _pause(studio, delay)


def _timeline_before(entries: list[Entry], start: int) -> Timeline:
    timeline = Timeline()
    timeline.groups(entry for entry in entries if entry.number < start)
    return timeline


async def list_updates(studio: Studio, *, since: str, request: Any = None) -> AsyncIterator[Event | None]:
    """`changed` events when a thread of the store has changed since `since` (the newest `updated` time the
    page shows, ISO format): the page then reloads its table."""
    store = studio.store
    delay = studio.poll.fastest
    beat = time.monotonic()
    while not studio.stopping.is_set():
        newest = await store.list_threads(limit=1)
        latest = newest[0].updated.isoformat() if newest else ""
        if latest != since:
            since = latest
            delay = studio.poll.fastest
            yield ("changed", {"since": since})
        else:
            delay = min(delay * 2, studio.poll.slowest)
        if time.monotonic() - beat >= studio.poll.heartbeat:
            beat = time.monotonic()
            yield None
        if request is not None and await request.is_disconnected():
            return
        await _pause(studio, delay)


async def _pause(studio: Studio, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await studio.stopping.wait()


def event_stream(updates: AsyncIterator[Event | None]) -> Any:
    """A streaming response carrying `updates` as server-sent events."""
    from starlette.responses import StreamingResponse

    async def lines() -> AsyncIterator[str]:
        yield "retry: 2000\n\n"  # the browser reconnects after 2 s if the connection drops
        async for update in updates:
            if update is None:
                yield ": still here\n\n"
                continue
            name, data = update
            yield f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"

    return StreamingResponse(
        lines(),
        media_type="text/event-stream",
        headers={"cache-control": "no-store", "x-accel-buffering": "no"},
    )

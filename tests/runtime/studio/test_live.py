"""Live updates: a thread's page follows entries that another writer commits (here: another session on the
same store, and `answer_thread`, as another process would), by polling the store; the stream over HTTP is
server-sent events, and it ends when the page goes away or the studio stops."""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from typing import Any

import anyio
import pytest

from runtime.session import answer_thread
from runtime.store import open_store
from runtime.studio import Studio
from runtime.studio.live import PollSettings, list_updates, thread_updates
from tests.runtime.studio.threads import AUTH, TOKEN, desk_thread

pytestmark = pytest.mark.anyio

QUICK = PollSettings(fastest=0.01, slowest=0.05, heartbeat=60.0)


async def test_updates_carry_the_new_entries_and_a_retry_joins_its_group() -> None:
    async with open_store("memory://") as store:
        await desk_thread(store, "d1")
        studio = Studio(store, token=TOKEN)
        studio.poll = QUICK
        # A page that showed entries 1..6, the last group (the rejected answer at 6) still open.
        updates = thread_updates(studio, "d1", after=6, open_from=6)
        with anyio.fail_after(30):
            name, first = await anext(updates)
        assert name == "update" and (first["from"], first["last"], first["open"]) == (6, 8, 0)
        assert first["html"].startswith('<li class="group retry" data-first="6" data-last="7">')
        assert 'id="e8"' in first["html"] and 'id="e5"' not in first["html"]
        assert first["status"] == "waiting_for_user" and '<form id="answer"' in first["summary"]
        # Another writer answers the wait: the next update has entry 9 only.
        await answer_thread(store, "d1", "no, that is all")
        with anyio.fail_after(30):
            second = await anext(updates)
        assert second is not None
        name, data = second
        assert (data["from"], data["last"], data["status"]) == (9, 9, "running")
        assert 'id="e9"' in data["html"] and "<q>no, that is all</q>" in data["html"]
        assert '<form id="answer"' not in data["summary"]
        await updates.aclose()


async def test_the_list_says_when_a_thread_changed() -> None:
    async with open_store("memory://") as store:
        studio = Studio(store, token=TOKEN)
        studio.poll = QUICK
        updates = list_updates(studio, since="")
        await desk_thread(store, "d1")
        with anyio.fail_after(30):
            update = await anext(updates)
        assert update is not None and update[0] == "changed"
        since = update[1]["since"]
        assert since == (await store.get_thread("d1")).updated.isoformat()
        await updates.aclose()


async def test_the_event_stream_over_http_ends_when_the_studio_stops() -> None:
    async with open_store("memory://") as store:
        await desk_thread(store, "d1")
        studio = Studio(store, token=TOKEN)
        studio.poll = QUICK
        sent: asyncio.Queue[MutableMapping[str, Any]] = asyncio.Queue()
        disconnect = asyncio.Event()

        async def receive() -> MutableMapping[str, Any]:
            await disconnect.wait()
            return {"type": "http.disconnect"}

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "http",
            "path": "/api/events",
            "raw_path": b"/api/events",
            "query_string": b"id=d1&after=8&open=0",
            "root_path": "",
            "headers": [(b"host", b"127.0.0.1:8760"), *((k.encode(), v.encode()) for k, v in AUTH.items())],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8760),
        }
        serving = asyncio.create_task(studio.asgi(scope, receive, sent.put))
        with anyio.fail_after(30):
            start = await sent.get()
            assert start["status"] == 200
            headers = dict(start["headers"])
            assert headers[b"content-type"].startswith(b"text/event-stream")
            text = ""
            while "event: update" not in text or not text.endswith("\n\n"):
                text += (await sent.get())["body"].decode()
        data = json.loads(text.split("event: update\ndata: ", 1)[1].split("\n", 1)[0])
        assert (data["from"], data["last"], data["html"]) == (9, 8, "")
        await studio.close()  # the stream ends at once, the page's connection with it
        with anyio.fail_after(30):
            await serving
        disconnect.set()

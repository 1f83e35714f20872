"""Threads the studio's tests read: the order desk of tests/fixtures/studio, run in process with its scripted
answers (the third is rejected, the fourth needs a repair), and a client of a studio's app in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from runtime.models import ScriptedModel
from runtime.program_run import RunResult
from runtime.session import ProgramSession
from runtime.store import Store
from runtime.studio import Studio

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "studio"
DESK = FIXTURES / "desk.pal"
DESK_ANSWERS = FIXTURES / "desk-answers.jsonl"
TOKEN = "test-token-1234"
BASE = "http://127.0.0.1:8760"
AUTH = {"authorization": f"Bearer {TOKEN}"}


def desk_model() -> ScriptedModel:
    return ScriptedModel.from_jsonl(DESK_ANSWERS)


async def desk_thread(
    store: Store, thread: str = "d1", messages: tuple[str, ...] = ("order 1234",)
) -> RunResult:
    """Run the desk in `thread` until it waits for the user after telling where the order is (8 entries:
    turn, wait, input, turn, call, rejected answer, accepted retry, wait)."""
    async with await ProgramSession.open(DESK, store=store, thread=thread, model=desk_model()) as session:
        return await session.run(messages=list(messages))


@asynccontextmanager
async def client(studio: Studio, **headers: str) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the studio's app in memory (the gate included), as a browser on this machine would be."""
    transport = httpx.ASGITransport(app=studio.asgi)
    async with httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers) as http:
        yield http

"""A thread recorded with checkpoint payloads version 1 (tests/fixtures/session/thread-v1.json) stays
readable (history, state) and resumable to the end by this pal-bridge."""

from __future__ import annotations

import json

import anyio
import pytest

from runtime.api import run_program
from runtime.session.journal import PAYLOAD_VERSION
from runtime.session.view import read_history, read_state
from runtime.store import ThreadStatus, open_store, read_thread_file
from tests.runtime.session.processes import FIXTURES
from tests.runtime.session.programs import SHOP_PROGRAM, shop_model

pytestmark = pytest.mark.anyio

GOLDEN = FIXTURES / "thread-v1.json"


async def test_a_version_1_thread_reads_and_resumes() -> None:
    document = read_thread_file(GOLDEN)
    assert document.thread.metadata["pal"]["payloads"] == 1 <= PAYLOAD_VERSION
    async with open_store("memory://") as store:
        thread = await store.import_thread(json.loads(GOLDEN.read_text(encoding="utf-8")))
        assert thread.status is ThreadStatus.WAITING_FOR_USER

        history = await read_history(store, thread.id)
        assert [(turn.number, turn.line) for turn in history] == [(1, "01"), (4, "03"), (7, "05")]
        assert history[1].changed == {
            "steps": ["03", "04"],
            "next": "05",
            "vars": {"item": "tea"},
            "calls": ["Price(item=$item)"],
            "yield": "call",
        }
        state = await read_state(store, thread.id)
        assert state.waiting == "Shop" and state.agents["Shop"]["variables"] == {"item": "tea", "price": 3}
        assert [item["text"] for item in state.transcript] == [
            "What would you like?",
            "tea please",
            "Tea is 3. Confirm?",
        ]

        model = shop_model()
        with anyio.fail_after(20):
            result = await run_program(
                SHOP_PROGRAM, model=model, store=store, thread=thread.id, messages=["yes"]
            )
    assert result.status == "exit", result.reason
    assert model.calls == 1  # only the fifth answer: the four recorded ones are replayed
    assert result.messages_to_user == ["What would you like?", "Tea is 3. Confirm?", "Thank you!"]

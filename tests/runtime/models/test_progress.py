"""Progress listeners follow the caller's context into worker threads and tasks, and only there."""

from __future__ import annotations

import asyncio

import pytest

from runtime.models.progress import ModelProgress, listening_to_progress, progress_listener

pytestmark = pytest.mark.anyio


def _event(done: bool = False) -> ModelProgress:
    return ModelProgress(
        model="m",
        prompt_tokens=10,
        reused_tokens=0,
        evaluated_tokens=10,
        answer_tokens=1,
        seconds=0.1,
        done=done,
    )


async def test_the_listener_reaches_worker_threads_and_is_removed_after_the_block() -> None:
    heard: list[ModelProgress] = []

    def work() -> None:
        listener = progress_listener()
        assert listener is not None
        listener(_event(done=True))

    with listening_to_progress(heard.append):
        await asyncio.to_thread(work)
    assert [event.done for event in heard] == [True]
    assert progress_listener() is None


async def test_concurrent_runs_hear_only_their_own_calls() -> None:
    first: list[str] = []
    second: list[str] = []

    async def call(label: str) -> None:
        await asyncio.sleep(0)
        listener = progress_listener()
        assert listener is not None
        listener(
            ModelProgress(
                model=label, prompt_tokens=1, reused_tokens=0, evaluated_tokens=1, answer_tokens=0, seconds=0
            )
        )

    async def run(label: str, into: list[str]) -> None:
        with listening_to_progress(lambda event: into.append(event.model)):
            await asyncio.gather(call(label), call(label))

    await asyncio.gather(run("a", first), run("b", second))
    assert (first, second) == (["a", "a"], ["b", "b"])

"""Runs that survive `kill -9` (issue 17): a scripted-model program is killed with SIGKILL at random points
(in the middle of a model call, after an answer before it is committed, after a commit before its effect,
after a Python call returns, while the run waits for the user) at least 50 times, and resumed each time
with the same command. Every resumed thread ends with the same log, transcript and state as an
uninterrupted run; the model was asked for each committed answer exactly once (an answer in flight when
a process died is asked again, once); the Python call was made at least once, always with the same key.

The kill points are deterministic: the crash driver kills its own process at the n-th time it reaches a
named point (tests/runtime/session/crash_driver.py), chosen at random by a seeded generator."""

from __future__ import annotations

import asyncio
import random
import signal
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from runtime.session.view import ThreadState, read_state
from runtime.store import open_store
from tests.runtime.session.processes import (
    SHOP,
    SHOP_ANSWERS,
    SHOP_MESSAGES,
    Finished,
    environment,
    json_lines,
    pal,
    read_until,
    start,
)

pytestmark = pytest.mark.slow

KILLS = 50
SEED = 17


def shop_run(folder: Path, store: str, thread: str, messages: list[str], env: dict[str, str]) -> Finished:
    args = [
        "run",
        str(SHOP),
        "--model",
        f"logged:{SHOP_ANSWERS}",
        "--thread",
        thread,
        "--store",
        store,
        "--create-store",
    ]
    args += ["--no-input", "--quiet"]
    for message in messages:
        args += ["--message", message]
    return pal(folder, *args, env=env)


async def thread_log(store_url: str, thread: str) -> tuple[ThreadState, list[tuple[str, dict[str, Any]]]]:
    async with open_store(store_url) as store:
        state = await read_state(store, thread)
        entries = [(entry.kind, entry.payload) for entry in await store.read_entries(thread)]
    return state, entries


def test_runs_killed_at_random_points_resume_to_the_same_end(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    logs = tmp_path / "logs"
    logs.mkdir()

    # The uninterrupted run, and the points it reaches (what the kills choose from).
    points = logs / "reference-points.jsonl"
    env = environment(
        tmp_path, PAL_TEST_MODEL_LOG=str(logs / "reference-model.jsonl"), PAL_TEST_PROBE_LOG=str(points)
    )
    reference = shop_run(tmp_path, store, "reference", list(SHOP_MESSAGES), env)
    assert reference.code == 0, reference.err
    events = [str(line["point"]) for line in json_lines(points)]
    assert {"model.asking", "model.answered", "model.committed", "call.returned", "wait.committed"} <= set(
        events
    )
    expected_state, expected_log = asyncio.run(thread_log(store, "reference"))
    assert expected_state.thread.status.value == "finished"
    assert [item["text"] for item in expected_state.transcript] == [
        "What would you like?",
        "tea please",
        "Tea is 3. Confirm?",
        "yes",
        "Thank you!",
    ]

    chooser = random.Random(SEED)
    kills = 0
    killed_at: list[str] = []
    threads: list[tuple[str, set[int]]] = []
    while kills < KILLS:
        thread = f"crash-{len(threads)}"
        env = environment(
            tmp_path,
            PAL_TEST_MODEL_LOG=str(logs / f"{thread}-model.jsonl"),
            PAL_TEST_PROBE_LOG=str(logs / f"{thread}-points.jsonl"),
            PAL_TEST_CALL_LOG=str(logs / f"{thread}-calls.jsonl"),
        )
        killed: set[int] = set()
        for attempt in range(10):
            # A kill at a random point of what is left (a point a resumed process does not reach again
            # lets it finish); after a few kills the same command runs the thread to its end.
            kill = ""
            if attempt < 4:
                point = chooser.choice(events)
                kill = f"{point}:{chooser.randint(1, events.count(point))}"
            env["PAL_TEST_KILL"] = kill
            # The same command every time: the messages the thread already holds are not given again.
            finished = shop_run(tmp_path, store, thread, list(SHOP_MESSAGES), env)
            if finished.code == -signal.SIGKILL:
                killed.add(finished.pid)
                killed_at.append(kill)
                continue
            assert finished.code == 0, f"{thread} after {len(killed)} kill(s) ({kill}): {finished.err}"
            break
        else:  # pragma: no cover - the loop always ends with a run that finished
            pytest.fail(f"{thread} did not finish")
        kills += len(killed)
        threads.append((thread, killed))

    assert kills >= KILLS
    # Every kind of point was hit along the way (with this seed: 50 kills over 30 threads).
    assert {kill.split(":")[0] for kill in killed_at} == {
        "model.asking",
        "model.answered",
        "model.committed",
        "call.returned",
        "call.committed",
        "wait.committed",
        "input.committed",
    }
    for thread, killed in threads:
        state, log = asyncio.run(thread_log(store, thread))
        # The same end: the same entries (answers, verdicts, changes, the call's result, the user's input),
        # the same transcript and variables.
        assert log == expected_log, thread
        assert state.transcript == expected_state.transcript
        assert state.agents == expected_state.agents
        assert state.thread.status.value == "finished"
        check_model_calls(logs, thread, killed)
        check_python_calls(logs, thread, killed)


def check_model_calls(logs: Path, thread: str, killed: set[int]) -> None:
    """Each committed answer was asked exactly once; an answer in flight when its process died was asked
    again by the next process, once."""
    asked: dict[int, list[int]] = defaultdict(list)
    for line in json_lines(logs / f"{thread}-model.jsonl"):
        asked[int(line["answer"])].append(int(line["pid"]))
    committed: dict[int, list[int]] = defaultdict(list)
    for line in json_lines(logs / f"{thread}-points.jsonl"):
        if line["point"] == "model.committed":
            committed[int(line["answer"])].append(int(line["pid"]))
    assert sorted(asked) == [1, 2, 3, 4, 5], thread
    for answer, askers in asked.items():
        assert len(askers) <= 2, f"{thread}: answer {answer} was asked {len(askers)} times"
        assert len(committed[answer]) == 1, f"{thread}: answer {answer} committed {committed[answer]}"
        assert committed[answer][0] == askers[-1], f"{thread}: answer {answer} asked after its commit"
        for asker in askers[:-1]:  # asked again only because that process died before committing it
            assert asker in killed, f"{thread}: answer {answer} asked again though {asker} was not killed"


def check_python_calls(logs: Path, thread: str, killed: set[int]) -> None:
    """The Python call was made at least once (again only after a process died before committing its
    result), always with the same idempotency key."""
    calls = json_lines(logs / f"{thread}-calls.jsonl")
    assert calls, thread
    assert {call["key"] for call in calls} == {f"{thread}#Shop:1"}
    assert {call["item"] for call in calls} == {"tea"}
    for call in calls[:-1]:
        assert call["pid"] in killed


def test_a_thread_waiting_in_one_process_is_answered_by_another_after_it_is_killed(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    env = environment(tmp_path, PAL_TEST_MODEL_LOG=str(tmp_path / "model.jsonl"))
    run = [
        "run",
        str(SHOP),
        "--model",
        f"logged:{SHOP_ANSWERS}",
        "--thread",
        "order-7",
        "--store",
        store,
        "--create-store",
    ]
    # Process A asks the user at the console, and waits: it is killed while it waits.
    process_a = start(tmp_path, *run, env=env)
    try:
        read_until(process_a, b"[you -> Shop]")
        process_a.send_signal(signal.SIGKILL)
    finally:
        process_a.communicate(timeout=60)
    assert process_a.returncode == -signal.SIGKILL

    listed = pal(tmp_path, "threads", "--store", store, env=env)
    assert listed.code == 0 and "order-7" in listed.out and "waiting_for_user" in listed.out

    # Process B answers the wait from the log, replays what A did with no model call, and goes on.
    answer = ["resume", "order-7", "--store", store, "--model", f"logged:{SHOP_ANSWERS}", "--no-input"]
    first = pal(tmp_path, *answer, "--message", "tea please", env=env)
    assert first.code == 3, first.err  # it waits again: for the confirmation
    assert "Tea is 3. Confirm?" in first.out and "What would you like?" not in first.out
    second = pal(tmp_path, *answer, "--message", "yes", env=env)
    assert second.code == 0, second.err
    assert "Thank you!" in second.out

    state, _ = asyncio.run(thread_log(store, "order-7"))
    assert [item["text"] for item in state.transcript] == [
        "What would you like?",
        "tea please",
        "Tea is 3. Confirm?",
        "yes",
        "Thank you!",
    ]
    asked = [int(line["answer"]) for line in json_lines(tmp_path / "model.jsonl")]
    assert asked == [1, 2, 3, 4, 5]  # each answer once, across the three processes

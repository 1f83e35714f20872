"""Sessions in one process: program threads and threads of calls, resumed from their logs with no model
call for a committed answer and no Python call for a committed result; what a resumed run refuses (a
changed program, a log it cannot replay); forks; the rollback of a failed call; several agents in a
meeting, stopped after every delivery and resumed."""

from __future__ import annotations

import functools

import anyio
import pytest

from pal_core.messaging import MeetingTimeouts
from pal_core.parser import parse
from runtime.api import run_playbook, run_program
from runtime.errors import InputExhausted, PlaybookFailed
from runtime.models import ScriptedModel
from runtime.program_run import ProgramRun
from runtime.session import (
    PROBES,
    CallSession,
    ProgramChanged,
    ProgramSession,
    ReplayMismatch,
    ThreadStateError,
    answer_thread,
)
from runtime.session.view import read_history, read_state
from runtime.store import StoreUnavailable, ThreadStatus, open_store
from tests.runtime.session import sink
from tests.runtime.session.processes import SHOP
from tests.runtime.session.programs import COUNTER, SHOP_PROGRAM, DyingStore, shop_model
from tests.runtime.test_meeting_turns import ROUNDS

pytestmark = pytest.mark.anyio

TRANSCRIPT = ["What would you like?", "tea please", "Tea is 3. Confirm?", "yes", "Thank you!"]


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path):  # type: ignore[no-untyped-def]
    url = "memory://" if request.param == "memory" else f"sqlite:///{tmp_path / 'runs.db'}"
    async with open_store(url) as opened:
        yield opened


# --- program threads -----------------------------------------------------------------------------------


async def test_a_waiting_run_resumes_in_a_new_session_with_no_model_call_for_what_it_committed(store) -> None:
    first_model = shop_model()
    with anyio.fail_after(20):
        first = await run_program(SHOP_PROGRAM, model=first_model, store=store, thread="t1")
    assert first.status == "needs_input" and first.messages_to_user == ["What would you like?"]
    assert first_model.calls == 1
    thread = await store.get_thread("t1")
    assert thread.status is ThreadStatus.WAITING_FOR_USER

    second_model = shop_model()  # a new process would have a new model: it must not be asked answer 1
    with anyio.fail_after(20):
        second = await run_program(
            SHOP_PROGRAM, model=second_model, store=store, thread="t1", messages=["tea please", "yes"]
        )
    assert second.status == "exit", second.reason
    assert second.model_calls == 4 and second_model.calls == 4  # answers 2-5 (the third is rejected)
    assert second.messages_to_user == ["What would you like?", "Tea is 3. Confirm?", "Thank you!"]
    assert second.variables == {"Shop:1000": {"item": "tea", "price": 3}}

    state = await read_state(store, "t1")
    assert [item["text"] for item in state.transcript] == TRANSCRIPT
    assert state.thread.status is ThreadStatus.FINISHED and (state.turns, state.answers) == (4, 5)
    history = await read_history(store, "t1")
    assert [(turn.line, turn.changed["steps"]) for turn in history] == [
        ("01", ["01", "02"]),
        ("03", ["03", "04"]),
        ("05", ["05", "06"]),
        ("07", ["07", "07.01", "07.02"]),
    ]
    assert history[1].changed["vars"] == {"item": "tea"}
    rejected = await read_history(store, "t1", rejected=True)
    assert [turn.verdict for turn in rejected].count("rejected") == 1
    assert "V03" in rejected[2].problems[0]


async def test_a_finished_thread_is_not_run_again(store) -> None:
    model = shop_model()
    with anyio.fail_after(20):
        done = await run_program(
            SHOP_PROGRAM, model=model, store=store, thread="t", messages=["tea please", "yes"]
        )
        again = await run_program(SHOP_PROGRAM, model=ScriptedModel([]), store=store, thread="t")
    assert (done.status, again.status) == ("exit", "exit")
    assert again.messages_to_user == done.messages_to_user
    assert again.variables == done.variables and again.model_calls == 0


async def test_a_wait_is_answered_from_the_log(store) -> None:
    with anyio.fail_after(20):
        await run_program(SHOP_PROGRAM, model=shop_model(), store=store, thread="t")
        await answer_thread(store, "t", "tea please")  # as `pal resume t --message` does, from anywhere
        resumed = await run_program(SHOP_PROGRAM, model=shop_model(), store=store, thread="t")
    assert resumed.status == "needs_input"  # it asked to confirm
    assert resumed.messages_to_user[-1] == "Tea is 3. Confirm?"
    with pytest.raises(ThreadStateError, match="not waiting for the user"):
        await answer_thread(store, "t", "yes")
        await answer_thread(store, "t", "yes again")


async def test_a_changed_program_is_refused(store, tmp_path) -> None:
    program = tmp_path / "shop.pal"
    program.write_text(SHOP.read_text(encoding="utf-8"), encoding="utf-8")
    with anyio.fail_after(20):
        await run_program(program, model=shop_model(), store=store, thread="t")
    program.write_text(SHOP.read_text(encoding="utf-8").replace("cake", "pie"), encoding="utf-8")
    with pytest.raises(ProgramChanged, match="not that program"):
        await run_program(program, model=shop_model(), store=store, thread="t")


async def test_a_log_that_does_not_fit_the_program_is_a_mismatch_never_a_silent_divergence(store) -> None:
    with anyio.fail_after(20):
        await run_program(SHOP_PROGRAM, model=shop_model(), store=store, thread="t", messages=["tea please"])
    document = await store.export_thread("t")
    for entry in document["entries"]:
        if entry["kind"] == "turn" and entry["payload"]["line"] == "03":
            entry["payload"]["line"] = "05"  # as if the program had asked elsewhere when it recorded it
    document["thread"]["id"] = "edited"
    await store.import_thread(document)
    with anyio.fail_after(20):
        result = await run_program(SHOP_PROGRAM, model=shop_model(), store=store, thread="edited")
    assert result.status == "error" and isinstance(result.error, ReplayMismatch)
    assert "entry 4: the log recorded a turn answer for Shop at Main:05" in str(result.error)
    assert "asks the model a turn answer for Shop at Main:03" in str(result.error)
    # Nothing was written for a run that could not replay the thread.
    assert (await store.get_thread("edited")).last_entry == document["entries"][-1]["number"]


async def test_a_fork_starts_from_an_entry_and_leaves_the_original_alone(store) -> None:
    with anyio.fail_after(20):
        await run_program(SHOP_PROGRAM, model=shop_model(), store=store, thread="t", messages=["tea please"])
        before = await store.read_entries("t")
        fork = await store.fork_thread("t", at=5, new_thread_id="f")  # after the Price call
        model = shop_model()
        resumed = await run_program(SHOP_PROGRAM, model=model, store=store, thread="f", messages=["yes"])
    assert fork.status is ThreadStatus.INTERRUPTED
    assert resumed.status == "exit" and model.calls == 3  # answers 3-5
    assert await store.read_entries("t") == before
    assert [item["text"] for item in (await read_state(store, "f")).transcript] == TRANSCRIPT


async def test_a_meeting_of_three_agents_stopped_after_any_delivery_resumes_the_same() -> None:
    program = parse(ROUNDS)
    factory = functools.partial(
        ProgramRun, meeting_timeouts=MeetingTimeouts(turn=0.0, targeted=60, untargeted=60)
    )
    async with DyingStore() as store:
        with anyio.fail_after(20):
            reference = await ProgramSession.open(program, store=store, thread="ref", run_factory=factory)
            expected = await reference.run()
        deliveries = sum(entry.kind == "message" for entry in await store.read_entries("ref"))
        assert expected.status == "idle" and deliveries >= 10
        for stop_after in range(1, deliveries + 1):
            seen = 0

            def die(point: str, details: object, stop_after: int = stop_after) -> None:
                nonlocal seen
                if point == "delivery.committed":
                    seen += 1
                    store.dead = seen >= stop_after

            thread = f"stopped-{stop_after}"
            PROBES.append(die)
            try:
                with anyio.fail_after(20), pytest.raises(StoreUnavailable):
                    await (
                        await ProgramSession.open(program, store=store, thread=thread, run_factory=factory)
                    ).run()
            finally:
                PROBES.remove(die)
                store.dead = False
            assert (await store.get_thread(thread)).last_entry == stop_after
            with anyio.fail_after(20):
                resumed = await (
                    await ProgramSession.open(program, store=store, thread=thread, run_factory=factory)
                ).run()
            assert resumed.status == "idle", (stop_after, resumed.reason)
            said = resumed.variables["Chair:1000"]["said"]
            assert len(said) == 6 and said[1:] == [1, 1, 1, 1, 1], stop_after


# --- threads of calls ----------------------------------------------------------------------------------


async def test_the_agents_of_a_thread_of_calls_keep_their_state_across_calls_and_sessions(store) -> None:
    with anyio.fail_after(20):
        async with await CallSession.open(COUNTER, store=store, thread="c") as session:
            assert (await session.call("Reset")).value == 0
            assert (await session.call("Add", {"n": 2})).value == 2
            outcome = await session.call("Counter.Add", {"n": 3})
        assert (outcome.value, outcome.thread) == (5, "c")
        # Another session (another process): the thread's calls are replayed, and it goes on from 5.
        assert await run_playbook(COUNTER, "Add", 1, store=store, thread="c") == 6
    assert (await read_state(store, "c")).agents["Counter"]["variables"] == {"total": 6, "n": 1}


async def test_a_failed_call_is_rolled_back(store) -> None:
    with anyio.fail_after(20):
        async with await CallSession.open(COUNTER, store=store, thread="c") as session:
            await session.call("Reset")
            await session.call("Add", {"n": 5})
            with pytest.raises(PlaybookFailed, match="the fuse was lit"):
                await session.call("Boom")  # sets $total to 1000, then fails
            assert (await session.call("Add", {"n": 1})).value == 6
        assert await run_playbook(COUNTER, "Add", 1, store=store, thread="c") == 7
    thread = await store.get_thread("c")
    assert thread.status is ThreadStatus.FINISHED


async def test_a_committed_python_call_is_not_made_again_and_keeps_its_key(store) -> None:
    sink.CALLS.clear()
    with anyio.fail_after(20):
        assert await run_playbook(COUNTER, "Note", "a", store=store, thread="n") == "A"
        assert await run_playbook(COUNTER, "Note", "b", store=store, thread="n") == "B"
        assert await run_playbook(COUNTER, "Note", "c", store=store, thread="n") == "C"
    # Each run replayed the earlier calls from the log: Record ran once per call.
    assert sink.CALLS == [("a", "n#Counter:1"), ("b", "n#Counter:2"), ("c", "n#Counter:3")]


async def test_a_call_waiting_for_the_user_is_left_unfinished_and_resumed(store) -> None:
    with anyio.fail_after(20):
        async with await CallSession.open(COUNTER, store=store, thread="w") as session:
            with pytest.raises(InputExhausted):
                await session.call("Ask")
            assert (await store.get_thread("w")).status is ThreadStatus.WAITING_FOR_USER
            with pytest.raises(ThreadStateError, match="unfinished and waits for the user"):
                await session.call("Reset")
        await answer_thread(store, "w", "here I am")
        async with await CallSession.open(COUNTER, store=store, thread="w") as session:
            outcome = await session.resume()
            assert (outcome.value, outcome.said_to_user) == (1, ("noted",))
            assert (await session.call("Reset")).value == 0


async def test_python_results_that_json_cannot_hold_are_replayed_as_the_same_values(store) -> None:
    sink.CALLS.clear()
    program = parse(
        """# Kinds
```python
from tests.runtime.session import sink


@playbook
async def Values() -> dict:
    sink.CALLS.append(("Values", None))
    return {"pair": (1, 2), "tags": {"a"}, "raw": b"x", 3: "three", "inf": float("inf")}
```

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:EXE $v:dict = Values()
02:EXE $reply:list = WaitForMessage("human")
03:RET
""",
        file="kinds.pal",
    )
    with anyio.fail_after(20):
        first = await run_program(program, store=store, thread="k")
        second = await run_program(program, store=store, thread="k", messages=["go on"])
    assert (first.status, second.status) == ("needs_input", "idle")
    value = second.variables["Kinds:1000"]["v"]
    assert value == {"pair": (1, 2), "tags": {"a"}, "raw": b"x", 3: "three", "inf": float("inf")}
    assert len(sink.CALLS) == 1  # the resumed run took the result from the log
    [call] = [entry for entry in await store.read_entries("k") if entry.kind == "call"]
    assert call.payload["result"]["$dict"][0] == ["pair", {"$tuple": [1, 2]}]


async def test_an_agent_that_records_after_another_agents_failure_stops_with_that_failure() -> None:
    # A meeting's participant fails and ends the run while the owner is still going: the owner's next record
    # raises the run's own failure, so the caller sees what went wrong (not a stale-thread error).
    from runtime.session.journal import Journal, ThreadTakenOver

    async with open_store("memory://") as store:
        failure = PlaybookFailed("Python playbook Unsupported raised: a team inside a team is not imported")
        failed = Journal(store, "t1", [], last=0)
        failed.freeze("Inner failed", failure)
        with pytest.raises(PlaybookFailed) as raised:
            await failed.append("call", {"agent": "Outer"})
        assert raised.value is failure
        unexplained = Journal(store, "t2", [], last=0)
        unexplained.freeze("the run failed")
        with pytest.raises(ThreadTakenOver, match="records nothing more"):
            await unexplained.append("call", {"agent": "Outer"})

"""runtime.embedding: one playbook called many times, async and sync, with fresh state per call.

(The module is the runtime half of the exporters, so its tests live with theirs.)
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest

from pal_core.ir import Program
from runtime.embedding import EmbeddedPlaybook, resolve_playbook
from runtime.errors import CallError, PlaybookFailed
from runtime.inputs import InputError
from runtime.models import ModelCallLimitExceeded, ScriptedModel
from runtime.program_run import RunLimits
from runtime.trace import Tracer
from tests.exporters.conftest import SCORER

GREETING = '`Step["Greet:01:RET"]` `Return["Hello, Ann!"]` `Var[$__, "Greeted Ann."]`\nyld return'


# --- choosing the playbook -----------------------------------------------------------------------------


def test_resolve_playbook_by_name_qualified_name_and_agent(scorer: Program) -> None:
    assert resolve_playbook(scorer, None, "Double")[1].name == "Double"
    assert resolve_playbook(scorer, None, "Scorer.Visit")[1].name == "Visit"
    assert resolve_playbook(scorer, "Scorer", "Score")[1].name == "Score"
    # No name: no BGN playbook here, so the first public one.
    assert resolve_playbook(scorer, "Scorer", None)[1].name == "Score"


@pytest.mark.parametrize(
    ("agent", "playbook", "message"),
    [
        (None, "Missing", r"the program has no playbook Missing \(playbooks: Score, Peek"),
        ("Nobody", None, r"the program has no agent Nobody \(agents: Scorer\)"),
        ("Other", "Scorer.Score", r"playbook Scorer.Score is not in agent Other"),
    ],
)
def test_resolve_playbook_says_what_exists(
    scorer: Program, agent: str | None, playbook: str | None, message: str
) -> None:
    with pytest.raises(CallError, match=message):
        resolve_playbook(scorer, agent, playbook)


# --- async calls ---------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_python_and_fast_path_playbooks_run_with_no_model_call() -> None:
    model = ScriptedModel([])  # any model call would fail: it has no answers
    async with (
        EmbeddedPlaybook(SCORER, "Score", model=model) as score,
        EmbeddedPlaybook(SCORER, "Double", model=model) as double,
    ):
        with anyio.fail_after(10):
            assert (await score.call({"x": 2, "y": 5})).value == {"total": 7, "product": 10}
            assert (await double.call({"n": 21})).value == 42
            assert (await double.call({"n": 4.0})).value == 8  # converted to the declared int, losslessly
            # The door checks every caller's arguments (runtime.inputs): text is not a number.
            with pytest.raises(
                InputError, match=r'Double: invalid arguments: n must be an integer, got string "4"'
            ):
                await double.call({"n": "4"})
    assert model.calls == 0


@pytest.mark.anyio
async def test_variables_do_not_leak_from_one_call_to_the_next(scorer: Program) -> None:
    # Visit answers the $remembered of the call before (via Peek) and then sets it: a shared agent would
    # answer "first" on the second call.
    async with EmbeddedPlaybook(scorer, "Visit") as visit:
        with anyio.fail_after(10):
            assert (await visit.call({"mark": "first"})).value == [None, "first"]
            assert (await visit.call({"mark": "second"})).value == [None, "second"]


class Gate:
    """Lets waiters through once it is opened; says when `parties` waiters have arrived."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.arrived = 0
        self.all_arrived = asyncio.Event()
        self.opened = asyncio.Event()

    async def wait(self) -> None:
        self.arrived += 1
        if self.arrived == self.parties:
            self.all_arrived.set()
        await self.opened.wait()


@pytest.mark.anyio
async def test_concurrent_calls_each_get_their_own_agent_state(scorer: Program) -> None:
    # Hold sets $held, waits at the gate, then reads $held back: with one shared agent instance both calls
    # would read the value written last.
    gate = Gate(parties=2)
    async with EmbeddedPlaybook(scorer, "Hold") as hold:
        with anyio.fail_after(10):
            first = asyncio.create_task(hold.call({"value": "one", "gate": gate}))
            second = asyncio.create_task(hold.call({"value": "two", "gate": gate}))
            await gate.all_arrived.wait()
            gate.opened.set()
            assert [(await first).value, (await second).value] == ["one", "two"]


@pytest.mark.anyio
async def test_what_the_playbook_says_to_the_user_comes_back_with_the_call(scorer: Program) -> None:
    async with EmbeddedPlaybook(scorer, "Announce") as announce:
        with anyio.fail_after(10):
            first = await announce.call({"who": "Ann"})
            second = await announce.call({"who": "Bob"})
    assert (first.value, first.said_to_user) == (None, ("Ann", "is here"))
    assert second.said_to_user == ("Bob", "is here")


@pytest.mark.anyio
async def test_a_playbook_that_yields_exit_returns_none(scorer: Program) -> None:
    async with EmbeddedPlaybook(scorer, "Leave") as leave:
        with anyio.fail_after(10):
            assert (await leave.call({})).value is None
            assert (await leave.call({})).value is None


@pytest.mark.anyio
async def test_the_model_call_limit_applies_to_each_call(scorer: Program) -> None:
    model = ScriptedModel(lambda request: GREETING)
    limits = RunLimits(max_model_calls=1, max_retries=0)
    async with EmbeddedPlaybook(scorer, "Greet", model=model, limits=limits) as greet:
        with anyio.fail_after(10):
            # Three calls of one model call each: a budget for the whole run would refuse the second.
            for _ in range(3):
                assert (await greet.call({"name": "Ann"})).value == "Hello, Ann!"
    assert model.calls == 3


@pytest.mark.anyio
async def test_a_call_that_needs_more_model_calls_than_its_budget_fails(scorer: Program) -> None:
    model = ScriptedModel(lambda request: "not an answer in the contract")
    limits = RunLimits(max_model_calls=2, max_retries=5)
    async with EmbeddedPlaybook(scorer, "Greet", model=model, limits=limits) as greet:
        with anyio.fail_after(10), pytest.raises(ModelCallLimitExceeded):
            await greet.call({"name": "Ann"})
    assert model.calls == 2


@pytest.mark.anyio
async def test_errors_are_the_runtimes(scorer: Program) -> None:
    async with EmbeddedPlaybook(scorer, "Explode") as explode:
        with anyio.fail_after(10), pytest.raises(PlaybookFailed, match="ValueError: boom"):
            await explode.call({"reason": "boom"})
        with anyio.fail_after(10), pytest.raises(CallError, match="Explode"):
            await explode.call({"because": "boom"})
    async with EmbeddedPlaybook(scorer, "Double") as double:
        with (
            anyio.fail_after(10),
            pytest.raises(CallError, match=r"Double: invalid arguments: n is required"),
        ):
            await double.call({})
        # Checked at the door, before anything runs: a number that is not finite is refused wherever it is.
        with anyio.fail_after(10), pytest.raises(InputError, match=r"n must be a finite number, got nan"):
            await double.call({"n": float("nan")})


@pytest.mark.anyio
async def test_a_tracer_gets_every_calls_events(scorer: Program) -> None:
    tracer = Tracer()
    async with EmbeddedPlaybook(scorer, "Double", tracer=tracer) as double:
        with anyio.fail_after(10):
            await double.call({"n": 1})
            await double.call({"n": 2})
    calls = [event for event in tracer.events if event.event == "call" and event.playbook == "Double"]
    assert len(calls) == 2
    assert [event.changed for event in tracer.steps() if event.line == "01"] == [{"twice": 2}, {"twice": 4}]


@pytest.mark.anyio
async def test_a_closed_playbook_starts_a_new_run_on_the_next_call(scorer: Program) -> None:
    double = EmbeddedPlaybook(scorer, "Double")
    with anyio.fail_after(10):
        assert (await double.call({"n": 1})).value == 2
        await double.aclose()
        assert (await double.call({"n": 3})).value == 6
        await double.aclose()


# --- sync calls ----------------------------------------------------------------------------------------


def test_sync_calls_from_a_thread_without_a_loop(scorer: Program) -> None:
    with EmbeddedPlaybook(scorer, "Visit") as visit:
        assert visit.call_sync({"mark": "a"}).value == [None, "a"]
        assert visit.call_sync({"mark": "b"}).value == [None, "b"]


def test_sync_calls_from_many_threads_at_once(scorer: Program) -> None:
    with EmbeddedPlaybook(scorer, "Score") as score, ThreadPoolExecutor(max_workers=4) as pool:
        futures = [pool.submit(score.call_sync, {"x": n, "y": 1}) for n in range(40)]
        results = [future.result(timeout=30).value for future in futures]
    assert results == [{"total": n + 1, "product": n} for n in range(40)]


def test_sync_calls_from_threads_that_ended_and_after_close(scorer: Program) -> None:
    score = EmbeddedPlaybook(scorer, "Score")
    results: list[object] = []

    def call(n: int) -> None:
        results.append(score.call_sync({"x": n, "y": n}).value)

    for n in range(3):  # each thread makes a loop; the next one closes the loop of the thread that ended
        thread = threading.Thread(target=call, args=(n,))
        thread.start()
        thread.join(30)
    assert results == [{"total": 2 * n, "product": n * n} for n in range(3)]
    score.close()
    assert score.call_sync({"x": 1, "y": 1}).value == {"total": 2, "product": 1}
    score.close()


@pytest.mark.anyio
async def test_a_sync_call_from_inside_a_running_loop(scorer: Program) -> None:
    # The calling loop cannot run a second loop in its thread: the call runs in the runner thread.
    double = EmbeddedPlaybook(scorer, "Double")
    try:
        assert double.call_sync({"n": 5}).value == 10
        assert double.call_sync({"n": 6}).value == 12
        # The same playbook, awaited on this loop, has a run of its own here.
        with anyio.fail_after(10):
            assert (await double.call({"n": 7})).value == 14
    finally:
        with anyio.fail_after(30):
            await double.aclose()


def test_sync_errors_reach_the_caller(scorer: Program) -> None:
    with EmbeddedPlaybook(scorer, "Explode") as explode, pytest.raises(PlaybookFailed, match="boom"):
        explode.call_sync({"reason": "boom"})

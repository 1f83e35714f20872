"""CallLimiter: a run's call budget and per-call timeout, around any model."""

from __future__ import annotations

import asyncio
import math

import anyio
import pytest

from runtime.models import (
    CallLimiter,
    CallLimits,
    Model,
    ModelCallLimitExceeded,
    ModelError,
    ModelRequest,
    ModelTimeout,
    ScriptedModel,
    complete_within,
)
from tests.runtime.models.helpers import ask

pytestmark = pytest.mark.anyio


async def test_calls_within_the_limit_pass_and_the_next_is_refused() -> None:
    inner = ScriptedModel(["a", "b", "c"])
    limiter = CallLimiter(CallLimits(max_calls=2))
    model = limiter.wrap(inner)
    assert [(await model.complete(ask(str(n)))).text for n in range(2)] == ["a", "b"]
    assert limiter.remaining == 0
    with pytest.raises(ModelCallLimitExceeded) as caught:
        await model.complete(ask("one too many"))
    assert caught.value.limit == 2
    assert "limit of 2 model calls" in str(caught.value)
    assert "'scripted'" in str(caught.value)
    assert isinstance(caught.value, ModelError)
    assert inner.calls == 2  # the refused call never reached the model
    assert limiter.calls == 2


async def test_one_limiter_counts_every_model_of_the_run() -> None:
    limiter = CallLimiter(CallLimits(max_calls=3))
    host = limiter.wrap(ScriptedModel(["h1", "h2"], name="host"))
    guest = limiter.wrap(ScriptedModel(["g1", "g2"], name="guest"))
    await host.complete(ask("1"))
    await guest.complete(ask("2"))
    await host.complete(ask("3"))
    with pytest.raises(ModelCallLimitExceeded, match="'guest'"):
        await guest.complete(ask("4"))


async def test_concurrent_callers_cannot_overrun_the_limit() -> None:
    release = asyncio.Event()

    async def answer(request: ModelRequest) -> str:
        await release.wait()
        return "done"

    limiter = CallLimiter(CallLimits(max_calls=5))
    model = limiter.wrap(ScriptedModel(answer))
    outcomes: list[str] = []

    async def call(number: int) -> None:
        try:
            outcomes.append((await model.complete(ask(str(number)))).text)
        except ModelCallLimitExceeded:
            outcomes.append("refused")

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            for number in range(8):
                group.start_soon(call, number)
            await anyio.wait_all_tasks_blocked()
            release.set()
    assert sorted(outcomes) == ["done"] * 5 + ["refused"] * 3


async def test_failed_calls_count_against_the_budget() -> None:
    limiter = CallLimiter(CallLimits(max_calls=1))
    model = limiter.wrap(ScriptedModel([]))
    with pytest.raises(ModelError, match="ran out of answers"):
        await model.complete(ask("x"))
    with pytest.raises(ModelCallLimitExceeded):
        await model.complete(ask("y"))


async def test_zero_calls_allows_none_and_no_limit_allows_many() -> None:
    with pytest.raises(ModelCallLimitExceeded, match="limit of 0 model calls"):
        await CallLimiter(CallLimits(max_calls=0)).complete(ScriptedModel(["x"]), ask("x"))
    unlimited = CallLimiter()
    model = ScriptedModel(lambda request: "ok")
    for number in range(50):
        await unlimited.complete(model, ask(str(number)))
    assert unlimited.calls == 50
    assert unlimited.remaining is None


async def test_a_call_past_the_timeout_raises_model_timeout() -> None:
    never = asyncio.Event()

    async def stuck(request: ModelRequest) -> str:
        await never.wait()
        return "unreachable"

    limiter = CallLimiter(CallLimits(call_timeout=0.05))
    model = limiter.wrap(ScriptedModel(stuck, name="slow-model"))
    with anyio.fail_after(5), pytest.raises(ModelTimeout) as caught:
        await model.complete(ask("x"))
    assert caught.value.model == "slow-model"
    assert caught.value.seconds == 0.05
    assert "'slow-model' gave no answer within 0.05 s" in str(caught.value)


async def test_a_fast_call_is_not_affected_by_the_timeout() -> None:
    limiter = CallLimiter(CallLimits(call_timeout=5))
    assert (await limiter.complete(ScriptedModel(["quick"]), ask("x"))).text == "quick"


async def test_a_timeout_error_raised_by_the_model_itself_is_not_reported_as_ours() -> None:
    async def own_timeout(request: ModelRequest) -> str:
        raise TimeoutError("the model's own socket timed out")

    with pytest.raises(TimeoutError, match="own socket") as caught:
        await complete_within(ScriptedModel(own_timeout), ask("x"), 5)
    assert not isinstance(caught.value, ModelTimeout)


def test_the_wrapped_model_keeps_the_inner_name_and_is_a_model() -> None:
    wrapped = CallLimiter().wrap(ScriptedModel(["x"], name="inner-name"))
    assert wrapped.name == "inner-name"
    assert isinstance(wrapped, Model)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_calls": -1}, "max_calls must be a whole number"),
        ({"max_calls": 2.5}, "max_calls must be a whole number"),
        ({"max_calls": True}, "max_calls must be a whole number"),
        ({"call_timeout": 0}, "call_timeout must be a positive finite"),
        ({"call_timeout": -3}, "call_timeout must be a positive finite"),
        ({"call_timeout": math.inf}, "call_timeout must be a positive finite"),
        ({"call_timeout": "10"}, "call_timeout must be a number of seconds"),
    ],
)
def test_bad_limits_are_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CallLimits(**settings)  # type: ignore[arg-type]

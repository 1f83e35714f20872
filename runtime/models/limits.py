"""Limits on a run's model use: how many calls a run may make, and how long one call may take.

The runtime makes one `CallLimiter` per run and hands agents `limiter.wrap(model)`; every call then
counts against the run's budget and is cut off at the per-call timeout, whatever the model is.
"""

from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass

from runtime.models.base import (
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    WrappedModel,
    with_capabilities,
)


class ModelTimeout(ModelError):
    """A model call took longer than its timeout."""

    def __init__(self, *, model: str, seconds: float | None, source: str = "per-call timeout") -> None:
        self.model = model
        """The model string of the call that timed out."""
        self.seconds = seconds
        """The timeout that expired, in seconds; None when the provider's own timeout expired unstated."""
        within = f"within {seconds:g} s" if seconds is not None else "in time"
        super().__init__(f"model {model!r} gave no answer {within} ({source})")


class ModelCallLimitExceeded(ModelError):
    """A run asked for more model calls than its limit allows. Not worth retrying: the budget is spent."""

    def __init__(self, *, limit: int, model: str) -> None:
        self.limit = limit
        """The run's maximum number of model calls."""
        self.model = model
        """The model the refused call was for."""
        super().__init__(
            f"the run reached its limit of {limit} model call{'s' if limit != 1 else ''}; "
            f"refused one more call to {model!r}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class CallLimits:
    """The limits of one run's model use."""

    max_calls: int | None = None
    """How many model calls the run may make in all; None for no limit."""
    call_timeout: float | None = None
    """Seconds one call may take; None for no timeout."""

    def __post_init__(self) -> None:
        if self.max_calls is not None and (
            isinstance(self.max_calls, bool) or not isinstance(self.max_calls, int) or self.max_calls < 0
        ):
            raise ValueError(
                f"CallLimits.max_calls must be a whole number >= 0 or None, not {self.max_calls!r}"
            )
        if self.call_timeout is not None:
            check_timeout(self.call_timeout, "CallLimits.call_timeout")


def check_timeout(seconds: object, what: str) -> float:
    """`seconds` as a float if it is a positive finite number of seconds; ValueError naming `what` if not."""
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ValueError(f"{what} must be a number of seconds, not {seconds!r}")
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} must be a positive finite number of seconds, not {seconds!r}")
    return float(seconds)


async def complete_within(
    model: Model, request: ModelRequest, seconds: float | None, *, source: str = "per-call timeout"
) -> ModelResponse:
    """`model.complete(request)`, cut off after `seconds` (None: no limit) with ModelTimeout."""
    if seconds is None:
        return await model.complete(request)
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            return await model.complete(request)
    except TimeoutError as exc:
        # Only our own deadline becomes ModelTimeout; a TimeoutError the model raised itself is its own failure.
        if deadline.expired():
            raise ModelTimeout(model=model.name, seconds=seconds, source=source) from exc
        raise


class CallLimiter:
    """Counts a run's model calls against `limits.max_calls` and applies `limits.call_timeout` to each.

    A call counts when it starts (a failed or timed-out call still cost a request). One limiter per run,
    shared by every agent of the run.
    """

    def __init__(self, limits: CallLimits | None = None) -> None:
        self.limits = limits if limits is not None else CallLimits()
        """The limits applied."""
        self._calls = 0

    @property
    def calls(self) -> int:
        """Calls started so far (refused calls are not counted)."""
        return self._calls

    @property
    def remaining(self) -> int | None:
        """Calls still allowed; None when there is no limit."""
        if self.limits.max_calls is None:
            return None
        return max(self.limits.max_calls - self._calls, 0)

    async def complete(self, model: Model, request: ModelRequest) -> ModelResponse:
        """Ask `model`, within the limits. Raises ModelCallLimitExceeded or ModelTimeout."""
        limit = self.limits.max_calls
        if limit is not None and self._calls >= limit:
            raise ModelCallLimitExceeded(limit=limit, model=model.name)
        # Counted before the first await, so concurrent callers cannot overrun the limit together.
        self._calls += 1
        return await complete_within(model, request, self.limits.call_timeout)

    def wrap(self, model: Model) -> LimitedModel:
        """`model` as a Model whose every call goes through this limiter."""
        return LimitedModel(model, self)


class LimitedModel(WrappedModel):
    """A Model that answers through a CallLimiter; made by `CallLimiter.wrap`. Its capabilities are the
    inner model's."""

    def __init__(self, inner: Model, limiter: CallLimiter) -> None:
        self.inner = with_capabilities(inner)
        """The model that answers."""
        self.limiter = limiter
        """The limiter every call goes through."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Ask the inner model through the limiter."""
        return await self.limiter.complete(self.inner, request)

    def __repr__(self) -> str:
        return f"LimitedModel({self.inner!r}, limits={self.limiter.limits!r})"

"""What a run, or one served or embedded call, may spend: steps executed, wall-clock seconds and model
calls (RunLimits), and the turns a busy playbook gives the event loop.

A `pal run` has one budget for the whole run. A long-lived run that answers calls (an MCP server, an
embedded playbook) gives each call a budget of its own (`bound()` makes it current for the call's task
through a context variable), so one call cannot spend another's, and no call can spend the server's life.

The interpreter checks the budget before every step (`check`): past the step count or the deadline it
raises BudgetExceeded naming the budget, the playbook and line, and the option that raises it; and every
YIELD_INTERVAL seconds of uninterrupted work it asks the caller to give the event loop a turn, so a playbook
spinning on the fast path never starves other agents, other MCP calls, cancellation or signals. The
deadline is also enforced while the run awaits something that never ends (a Python playbook, a remote
tool): `bound()` cancels the work at the deadline. Time spent waiting for the user is not counted.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING

from runtime.errors import BudgetExceeded, RunStopped

if TYPE_CHECKING:
    from runtime.program_run import RunLimits
    from runtime.state import Frame

DEFAULT_MAX_STEPS = 100_000
"""Steps a run (or a served or embedded call) may execute by default: a program that loops without end
stops within seconds, while real programs (a few hundred steps with a model) never come near."""
DEFAULT_MAX_SECONDS = 3600.0
"""Wall-clock seconds a run (or a served or embedded call) may take by default, user waits not counted."""
YIELD_INTERVAL = 0.005
"""Seconds of uninterrupted fast-path work after which a playbook gives the event loop a turn."""

CLOCK_EVERY = 7
"""The clock is read every CLOCK_EVERY + 1 steps (a power of two, minus one): fast-path steps take
microseconds, and a step that takes longer awaits something, where the deadline is enforced anyway."""

_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("pal_budget", default=None)


class Budget:
    """The spending of one run or one call against its limits."""

    __slots__ = (
        "_next_yield",
        "_stop_reason",
        "_timeout",
        "_wait_started",
        "_waiting",
        "agent",
        "deadline",
        "frame",
        "limiter",
        "max_steps",
        "owner",
        "seconds",
        "started",
        "steps",
    )

    def __init__(self, limits: RunLimits, *, owner: object = None, clock: bool = True) -> None:
        # Here, not at the top: the CLI reads this module's defaults without loading the model layer.
        from runtime.models.limits import CallLimiter, CallLimits

        self.owner = owner
        """The run this budget belongs to (a budget is current only for its own run)."""
        self.max_steps = limits.max_steps
        """Steps allowed (None: no limit)."""
        self.seconds = limits.max_seconds if clock else None
        """Wall-clock seconds allowed from `bound()` (None: no limit)."""
        self.limiter = CallLimiter(
            CallLimits(max_calls=limits.max_model_calls, call_timeout=limits.model_timeout)
        )
        """The model calls: their count and the per-call timeout."""
        self.steps = 0
        """Steps executed so far (a model turn counts one)."""
        self.started = time.monotonic()
        self.deadline: float | None = None
        """When the time runs out (`time.monotonic()` seconds), once `bound()` started the clock."""
        self.agent: str | None = None
        """The agent of the last step checked: where the budget ran out."""
        self.frame: Frame | None = None
        """The frame of the last step checked."""
        self._next_yield = self.started + YIELD_INTERVAL
        self._timeout: asyncio.Timeout | None = None
        self._stop_reason: str | None = None
        self._waiting = 0
        self._wait_started = 0.0

    # --- per step ----------------------------------------------------------------------------------

    def check(self, agent: str, frame: Frame) -> bool:
        """Count a step about to run at `frame.line`; BudgetExceeded when the steps or the time are spent.
        True when the caller should give the event loop a turn (`await asyncio.sleep(0)`) first."""
        self.agent = agent
        self.frame = frame
        steps = self.steps
        if self.max_steps is not None and steps >= self.max_steps:
            raise self.exceeded("max_steps")
        self.steps = steps + 1
        if steps & CLOCK_EVERY:
            return False
        now = time.monotonic()
        if self.deadline is not None and now > self.deadline and not self._waiting:
            raise self.exceeded("max_seconds")
        if now >= self._next_yield:
            self._next_yield = now + YIELD_INTERVAL
            return True
        return False

    def exceeded(self, budget: str) -> BudgetExceeded:
        """The error for a spent budget, placed at the last step checked."""
        if budget == "max_steps":
            what = f"{self.steps} steps executed, and the next one would be over the budget"
            limit: float = self.max_steps or 0
        else:
            what = f"{time.monotonic() - self.started:.1f} s of wall-clock time spent"
            limit = self.seconds or 0.0
        frame = self.frame
        return BudgetExceeded(
            what,
            budget=budget,
            limit=limit,
            agent=self.agent,
            playbook=frame.playbook.name if frame is not None else None,
            line=frame.line if frame is not None else None,
        )

    # --- scope and clock ---------------------------------------------------------------------------

    @asynccontextmanager
    async def bound(self) -> AsyncIterator[Budget]:
        """Make this the current budget of the task (and the tasks it starts) and start its clock: when
        the time runs out, whatever the block awaits is cancelled and BudgetExceeded is raised; after
        `stop(reason)`, RunStopped."""
        if self._stop_reason is not None:
            raise RunStopped(self._stop_reason)
        token = _CURRENT.set(self)
        self.started = time.monotonic()
        self._next_yield = self.started + YIELD_INTERVAL
        self.deadline = self.started + self.seconds if self.seconds is not None else None
        timeout = asyncio.timeout_at(self.deadline)
        try:
            async with timeout:
                self._timeout = timeout
                yield self
        except TimeoutError:
            if not timeout.expired():
                raise
            if self._stop_reason is not None:
                raise RunStopped(
                    self._stop_reason,
                    agent=self.agent,
                    playbook=self.frame.playbook.name if self.frame is not None else None,
                    line=self.frame.line if self.frame is not None else None,
                ) from None
            raise self.exceeded("max_seconds") from None
        finally:
            self._timeout = None
            _CURRENT.reset(token)

    def stop(self, reason: str) -> None:
        """End the work under `bound()` now (a server shutting down): whatever it awaits is cancelled, and
        `bound()` raises RunStopped with `reason`."""
        self._stop_reason = reason
        if self._timeout is not None and not self._timeout.expired():
            self._timeout.reschedule(0)

    @contextmanager
    def waiting_for_user(self) -> Iterator[None]:
        """Stop the clock while the run waits for the user (a person thinking is not a runaway program)."""
        if self._waiting == 0:
            self._wait_started = time.monotonic()
            if self._timeout is not None and not self._timeout.expired() and self._stop_reason is None:
                self._timeout.reschedule(None)
        self._waiting += 1
        try:
            yield
        finally:
            self._waiting -= 1
            if self._waiting == 0 and self.deadline is not None:
                self.deadline += time.monotonic() - self._wait_started
                if self._timeout is not None and not self._timeout.expired() and self._stop_reason is None:
                    self._timeout.reschedule(self.deadline)


def current_budget(owner: object) -> Budget | None:
    """The budget made current by `bound()` for `owner`'s work in this task, if any."""
    budget = _CURRENT.get()
    return budget if budget is not None and budget.owner is owner else None

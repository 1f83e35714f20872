"""Runtime exceptions, split as in pydantic-ai: control flow (never an error for the user), user errors
(a program or a call that cannot run as written), and run failures (the run was tried and failed)."""

from __future__ import annotations

from pal_core.errors import PalError

# --- control flow ----------------------------------------------------------------------------------


class ControlFlow(Exception):
    """Base of exceptions that transfer control; caught by the runtime, never shown to users."""


class ProgramExit(ControlFlow):
    """A playbook yielded exit: the whole program ends."""

    def __init__(self, agent_id: str, reason: str = "exit") -> None:
        super().__init__(f"agent {agent_id}: {reason}")
        self.agent_id = agent_id
        self.reason = reason


class MeetingOver(ControlFlow):
    """The meeting an attendee is waiting in has ended: its meeting playbook returns."""

    def __init__(self, meeting_id: str) -> None:
        super().__init__(f"meeting {meeting_id} ended")
        self.meeting_id = meeting_id


# --- user errors -----------------------------------------------------------------------------------


class ProgramError(PalError):
    """A program that cannot run as written: a missing playbook, a Python block that fails to load, ..."""


class CallError(ProgramError):
    """A call that cannot be made: unknown callee, not public, wrong arguments."""


# --- run failures ----------------------------------------------------------------------------------


class RunError(PalError):
    """A run that was tried and failed: the model kept breaking the contract, a playbook raised, a limit was hit.

    `violations` holds the broken rules of the last rejected answer, `answer` that answer's text.
    """

    def __init__(
        self,
        message: str,
        *,
        agent: str | None = None,
        playbook: str | None = None,
        line: str | None = None,
        violations: tuple[str, ...] = (),
        answer: str | None = None,
    ) -> None:
        where = ":".join(part for part in (agent, playbook, line) if part)
        text = f"{where}: {message}" if where else message
        if answer is not None:
            quoted = "\n".join(f"    | {row}" for row in answer.splitlines()[:40])
            text = f"{text}\n  the last answer was:\n{quoted}"
        super().__init__(text)
        self.agent = agent
        self.playbook = playbook
        self.line = line
        self.violations = violations
        self.answer = answer


class InputExhausted(RunError):
    """The program waits for user input and none is left (non-interactive run)."""


class PlaybookFailed(RunError):
    """A Python or remote playbook raised."""


class RunStopped(RunError):
    """A run or call stopped from outside before it finished (a server shutting down)."""


CONFIGURABLE_BUDGETS = frozenset(
    {"max_steps", "max_seconds", "max_int_digits", "max_string_length", "max_items"}
)
"""The budgets a user sets (RunLimits fields, `--max-...` options); others are fixed (value nesting)."""


class BudgetExceeded(RunError):
    """A run or a call reached one of its budgets (`RunLimits`): steps executed, seconds of wall-clock time,
    or the size of a value. The message names the budget, where it ran out, and the option that raises it.

    Raised without a place by code that does not know one (the expression evaluator); the interpreter
    re-raises it with the agent, playbook and line of the step (`located`).
    """

    def __init__(
        self,
        what: str,
        *,
        budget: str,
        limit: float | int,
        agent: str | None = None,
        playbook: str | None = None,
        line: str | None = None,
    ) -> None:
        option = budget.replace("_", "-")
        shown = f"{limit:g}" if isinstance(limit, float) else str(limit)
        hint = (
            f"budget {budget}={shown}; raise it with --{option}"
            if budget in CONFIGURABLE_BUDGETS
            else f"a fixed limit of {shown}"
        )
        super().__init__(
            f"{what} ({hint})",
            agent=agent,
            playbook=playbook,
            line=line,
        )
        self.what = what
        """What went over the budget, in words."""
        self.budget = budget
        """The RunLimits field (`max_steps`, `max_seconds`, `max_int_digits`, `max_string_length`,
        `max_items`), or `max_nesting` for the fixed limit on how deep values nest."""
        self.limit = limit
        """The budget's value."""

    @property
    def option(self) -> str:
        """The command-line option that raises the budget (`--max-steps`)."""
        return "--" + self.budget.replace("_", "-")

    def located(self, *, agent: str | None, playbook: str | None, line: str | None) -> BudgetExceeded:
        """The same error placed at a step (unchanged when it already has a place)."""
        if self.playbook is not None:
            return self
        return type(self)(
            self.what, budget=self.budget, limit=self.limit, agent=agent, playbook=playbook, line=line
        )

"""What Python playbooks see: the `@playbook` decorator and the builtins (Say, SaveArtifact, ...).

Python blocks of a program get these names injected; a module the program names imports them:
`from runtime.python_api import playbook, Say`. The builtins act for the agent whose playbook is
running, found through a context variable the runtime sets around every Python playbook call.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from runtime.execution import Execution

current_execution: ContextVar[Execution | None] = ContextVar("pal_current_execution", default=None)


@dataclass(slots=True)
class CallInProgress:
    """The Python or remote playbook call running now in a durable run (runtime.session.journal)."""

    key: str
    """Its idempotency key: the same when a resumed run makes the call again."""
    touched: bool = False
    """Whether the call reached back into the run (a builtin, another playbook, the agent's state): a
    resumed run then runs it again instead of taking its result from the log."""


current_call: ContextVar[CallInProgress | None] = ContextVar("pal_current_call", default=None)


def idempotency_key() -> str | None:
    """The idempotency key of the Python or remote playbook call running now, in a durable run (None
    otherwise). A call whose result was not committed before a crash is made again when the run resumes,
    with the same key: a callee that remembers the keys it has served does its work once."""
    call = current_call.get()
    return call.key if call is not None else None


def touch_call() -> None:
    """Note that the call running now reached back into the run (see `CallInProgress.touched`)."""
    call = current_call.get()
    if call is not None:
        call.touched = True


class NoRunningPlaybook(RuntimeError):
    """A builtin was called outside a running playbook."""


def _execution() -> Execution:
    touch_call()
    execution = current_execution.get()
    if execution is None:
        raise NoRunningPlaybook(
            "Say, SaveArtifact and the other builtins work only inside a running playbook"
        )
    return execution


@dataclass(frozen=True, slots=True)
class PlaybookSpec:
    """What `@playbook(...)` recorded about a function."""

    triggers: tuple[str, ...] = ()
    public: bool = False
    options: dict[str, Any] = field(default_factory=dict)


class PlaybookFunction:
    """A function decorated with `@playbook`. Called from Python, it runs through the runtime (so the call
    is traced and sits on the call stack); the runtime itself calls `.function` directly."""

    def __init__(self, function: Callable[..., Any], spec: PlaybookSpec) -> None:
        self.function = function
        self.spec = spec
        self.name = function.__name__
        functools.update_wrapper(self, function)

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        execution = current_execution.get()
        if execution is None:
            return await call_function(self.function, args, kwargs)
        return await execution.call_playbook(self.name, list(args), kwargs)


async def call_function(function: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    """Call a sync or async function and return its result."""
    result = function(*args, **kwargs)
    if inspect.isawaitable(result):
        result = await result
    return result


def playbook(function: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Mark a function as a playbook: `@playbook` or `@playbook(triggers=[...], public=True)`."""

    def mark(target: Callable[..., Any]) -> PlaybookFunction:
        triggers = tuple(options.pop("triggers", ()) or ())
        public = bool(options.pop("public", False))
        return PlaybookFunction(target, PlaybookSpec(triggers=triggers, public=public, options=dict(options)))

    if function is not None:
        return mark(function)
    return mark


async def Say(target: str, message: Any = None) -> None:
    """Send a message: `Say("user", "Hi")`, `Say("meeting", ...)`, `Say("agent 1001", ...)`; one argument
    means the user."""
    if message is None:
        target, message = "user", target
    await _execution().say(str(target), str(message))


async def SaveArtifact(name: str, summary: str, content: str) -> str:
    """Save an artifact; returns its reference `Artifact[name]`."""
    return _execution().save_artifact(name, summary, content)


async def LoadArtifact(name: str) -> Any:
    """Load an artifact (it has `.name`, `.summary`, `.content`)."""
    return _execution().load_artifact(name)


async def WaitForMessage(source: str = "*", timeout: float | None = None) -> list[Any]:
    """Wait for messages from `source` (`human`, `agent 1001`, `meeting 7`, `*`)."""
    return await _execution().wait_for_message(source, timeout)


def current_agent() -> Any:
    """The agent whose playbook is running (its `.state.variables` are the `$variables`)."""
    return _execution().agent


BLOCK_GLOBALS: dict[str, Any] = {
    "playbook": playbook,
    "Say": Say,
    "SaveArtifact": SaveArtifact,
    "LoadArtifact": LoadArtifact,
    "WaitForMessage": WaitForMessage,
}
"""Names injected into every python block."""

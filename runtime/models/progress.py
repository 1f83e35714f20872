"""Progress of a model call while it runs, for whoever shows it (the console of `pal run`).

A model that can tell how far it is (the bundled local model: prompt tokens evaluated, answer tokens
written) calls `report_progress` while it works; a caller that wants to know wraps its work in
`listening_to_progress(listener)`. The listener is held in a context variable, so it follows the call
into worker threads (`asyncio.to_thread` copies the context) and concurrent runs do not see each
other's progress. Models that report nothing simply leave the listener unused.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelProgress:
    """Where one model call stands."""

    model: str
    """The model answering."""
    prompt_tokens: int
    """Tokens in the prompt."""
    reused_tokens: int
    """Prompt tokens taken from an earlier call's cache (not evaluated again)."""
    evaluated_tokens: int
    """Prompt tokens this call has evaluated so far (at most prompt_tokens - reused_tokens)."""
    answer_tokens: int
    """Answer tokens written so far."""
    seconds: float
    """Time since the call started."""
    threads: int = 0
    """CPU threads the call runs on (0: not a local model)."""
    done: bool = False
    """True for the last report of the call."""


ProgressListener = Callable[[ModelProgress], None]
"""Called from the thread the model works in; must be quick and thread-safe."""

_listener: ContextVar[ProgressListener | None] = ContextVar("pal_model_progress", default=None)


@contextmanager
def listening_to_progress(listener: ProgressListener | None) -> Iterator[None]:
    """Send the progress of model calls made inside the block (and the tasks it starts) to `listener`."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


def progress_listener() -> ProgressListener | None:
    """The listener of the current context, if any (a model reads it when a call starts)."""
    return _listener.get()

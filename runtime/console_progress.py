"""What the console shows while a model works, and the line that closes a run.

On a terminal, a model call shows one status line that updates as the model reads the prompt and
writes the answer (tokens so far, seconds, threads) and disappears when the answer is there, so the
conversation stays readable. Elsewhere (a log, a pipe) each call leaves one line with its figures.
"""

from __future__ import annotations

import threading
import time
from typing import TextIO

from runtime.models.progress import ModelProgress

_UPDATE_EVERY = 0.25
"""Seconds between two updates of the live line."""


class ProgressLine:
    """A `ProgressListener` that writes to a text stream (standard error for `pal run`)."""

    def __init__(self, out: TextIO, *, live: bool | None = None) -> None:
        self._out = out
        self._live = out.isatty() if live is None else live
        self._lock = threading.Lock()
        self._shown_at = 0.0
        self._showing = False

    def __call__(self, progress: ModelProgress) -> None:
        with self._lock:
            if self._live:
                self._update(progress)
            elif progress.done:
                self._out.write(f"  [{describe(progress)}]\n")
                self._out.flush()

    def _update(self, progress: ModelProgress) -> None:
        now = time.monotonic()
        if progress.done:
            if self._showing:
                self._out.write("\r\x1b[K")
                self._out.flush()
            self._showing = False
            return
        if self._showing and now - self._shown_at < _UPDATE_EVERY:
            return
        self._out.write(f"\r\x1b[K  … {describe(progress)}")
        self._out.flush()
        self._shown_at = now
        self._showing = True


def describe(progress: ModelProgress) -> str:
    """`model reading the prompt: 412/902 tokens (640 cached) · 6 s · 1 thread`, and the like."""
    to_read = progress.prompt_tokens - progress.reused_tokens
    cached = f" ({progress.reused_tokens:,} cached)" if progress.reused_tokens else ""
    threads = (
        f" · {progress.threads} thread{'s' if progress.threads != 1 else ''}" if progress.threads else ""
    )
    clock = f"{progress.seconds:.0f} s" if not progress.done else f"{progress.seconds:.1f} s"
    if progress.done:
        return (
            f"{progress.model}: {progress.prompt_tokens:,} prompt tokens{cached}, "
            f"{progress.answer_tokens:,} answer tokens, {clock}{threads}"
        )
    if progress.answer_tokens == 0:
        return (
            f"{progress.model} reading the prompt: {progress.evaluated_tokens:,}/{to_read:,} tokens{cached}"
            f" · {clock}{threads}"
        )
    return f"{progress.model} writing: {progress.answer_tokens:,} tokens · {clock}{threads}"


def closing_line(status: str, reason: str, model_calls: int, seconds: float) -> str:
    """The run's last line: it says plainly whether the program finished, stopped or failed."""
    calls = f"{model_calls} model call{'s' if model_calls != 1 else ''}"
    if status == "exit":
        head = f"finished: {reason}"
    elif status == "idle":
        head = f"finished: nothing left to do ({reason})"
    elif status == "needs_input":
        head = f"stopped: {reason}"
    else:
        head = "failed"
    return f"[{head}; {calls}, {seconds:.1f} s]"

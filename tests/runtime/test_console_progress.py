"""The console while a model works: a live line on a terminal, one line per call elsewhere; the closing line."""

from __future__ import annotations

import io

import pytest

from runtime.console_progress import ProgressLine, closing_line, describe
from runtime.models.progress import ModelProgress


def _progress(**fields: object) -> ModelProgress:
    values: dict = {
        "model": "local/smollm2",
        "prompt_tokens": 902,
        "reused_tokens": 640,
        "evaluated_tokens": 128,
        "answer_tokens": 0,
        "seconds": 3.2,
        "threads": 1,
    }
    values.update(fields)
    return ModelProgress(**values)


def test_the_description_says_what_the_model_is_doing() -> None:
    assert (
        describe(_progress())
        == "local/smollm2 reading the prompt: 128/262 tokens (640 cached) · 3 s · 1 thread"
    )
    assert describe(_progress(evaluated_tokens=262, answer_tokens=37, threads=2)) == (
        "local/smollm2 writing: 37 tokens · 3 s · 2 threads"
    )
    assert describe(_progress(evaluated_tokens=262, answer_tokens=120, seconds=9.25, done=True)) == (
        "local/smollm2: 902 prompt tokens (640 cached), 120 answer tokens, 9.2 s · 1 thread"
    )


def test_a_terminal_gets_one_line_that_updates_and_disappears() -> None:
    out = io.StringIO()
    line = ProgressLine(out, live=True)
    line(_progress())
    line(_progress(evaluated_tokens=192))  # within the update interval: not drawn
    line(_progress(answer_tokens=5, done=True))
    assert out.getvalue() == "\r\x1b[K  … " + describe(_progress()) + "\r\x1b[K"


def test_a_log_gets_one_line_per_call() -> None:
    out = io.StringIO()
    line = ProgressLine(out, live=False)
    line(_progress())
    line(_progress(answer_tokens=12, done=True))
    assert out.getvalue() == f"  [{describe(_progress(answer_tokens=12, done=True))}]\n"


@pytest.mark.parametrize(
    ("status", "reason", "expected"),
    [
        ("exit", "Main yielded exit", "[finished: Main yielded exit; 3 model calls, 12.3 s]"),
        (
            "idle",
            "every agent is waiting and no message is pending",
            "[finished: nothing left to do (every agent is waiting and no message is pending); 3 model calls, 12.3 s]",
        ),
        (
            "needs_input",
            "Main waits for the user",
            "[stopped: Main waits for the user; 3 model calls, 12.3 s]",
        ),
        ("error", "boom", "[failed; 3 model calls, 12.3 s]"),
    ],
)
def test_the_closing_line_says_how_the_run_ended(status: str, reason: str, expected: str) -> None:
    assert closing_line(status, reason, 3, 12.34) == expected
    assert closing_line("exit", "x", 1, 0.0).endswith("; 1 model call, 0.0 s]")

"""The run trace: one JSON object per event (every executed step, model call, message, rejected answer).

`pal run --trace t.jsonl` writes it; tests read `Tracer.events`. Values are made JSON-safe on the way out.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any


@dataclass(frozen=True, slots=True, kw_only=True)
class TraceEvent:
    """One thing that happened in a run."""

    event: str
    """`step`, `model_call`, `violation`, `call`, `return`, `yield`, `message`, `trigger`, `error`, `exit`."""
    agent: str
    """The agent class name."""
    agent_id: str
    """The agent instance id."""
    playbook: str | None = None
    """The running playbook."""
    line: str | None = None
    """The step's line number."""
    opcode: str | None = None
    """The step's opcode."""
    changed: dict[str, Any] = field(default_factory=dict)
    """Variables this event changed (name without `$` -> new value)."""
    model_call: int | None = None
    """The id (1, 2, ...) of the model call that produced the event; None on the fast path."""
    tokens: dict[str, int] | None = None
    """Token counts of a model call."""
    detail: str = ""
    """A short human-readable description."""
    time: float = 0.0
    """Seconds since the run started."""


class Tracer:
    """Collects events; optionally streams them to a JSONL file as they happen."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        listeners: tuple[Callable[[TraceEvent], None], ...] = (),
        keep: bool = True,
    ) -> None:
        self.keep = keep
        """Whether events are kept in `events` (a long-lived server passes False and only listens)."""
        self.events: list[TraceEvent] = []
        self.listeners = list(listeners)
        """Called with every event as it happens (progress reporting, live views); must not raise."""
        self._start = time.perf_counter()
        # Kept open for the whole run (closed by close()): events are streamed as they happen.
        self._file: IO[str] | None = Path(path).open("w", encoding="utf-8") if path else None  # noqa: SIM115

    def emit(self, **fields: Any) -> TraceEvent:
        event = TraceEvent(time=round(time.perf_counter() - self._start, 6), **fields)
        if self.keep:
            self.events.append(event)
        for listener in self.listeners:
            listener(event)
        if self._file is not None:
            self._file.write(json.dumps(asdict(event), default=_json_default, ensure_ascii=False) + "\n")
            self._file.flush()
        return event

    def steps(self) -> list[TraceEvent]:
        """The executed steps in order."""
        return [event for event in self.events if event.event == "step"]

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    return repr(value)

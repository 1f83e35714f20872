"""How a step or a model turn hands control back to the interpreter loop."""

from __future__ import annotations

from dataclasses import dataclass

from pal_core.ir import YieldKind


@dataclass(frozen=True, slots=True, kw_only=True)
class Control:
    """What to do after a step or turn: keep going, or yield somewhere."""

    yield_kind: YieldKind | None = None
    """None to continue at the frame's line; otherwise where control goes."""
    yield_name: str | None = None
    """The meeting id or agent for MEETING / AGENT."""
    model_call: int | None = None
    """The model call that produced this, if any."""


CONTINUE = Control()

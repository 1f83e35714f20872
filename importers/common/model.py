"""What the readers of several frameworks find alike, before any PAL is written."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class BoundTool:
    """A tool of an LLM agent that is a plain Python function: a Python playbook bound to it by import
    path, which the model calls like any other playbook."""

    name: str
    """The tool's name as the model calls it."""
    description: str
    """What it does, as the framework tells the model."""
    path: str
    """`module:qualname` of the function (`module:tool.func` for a function a decorator replaced)."""
    parameters: tuple[tuple[str, str | None], ...] = ()
    """(name, PAL type) of each argument the model fills in."""
    returns: str | None = None
    """The PAL type of its result, when declared."""


__all__ = ["BoundTool"]

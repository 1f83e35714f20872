"""Execution state of an agent: variables, artifacts, call stacks and the session log."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pal_core.flow import PlaybookFlow
from pal_core.ir import Playbook
from runtime.value_limits import DEFAULT_VALUE_LIMITS, ValueLimits, check_value


class Variables:
    """An agent's `$variables` (stored without the `$`), with the types the program declares.

    A declared type is remembered the first time a program says `$x:int`; later values are checked
    against it by the verifier and coerced where lossless.
    """

    __slots__ = ("_listeners", "_types", "_values", "limits")

    def __init__(self, limits: ValueLimits | None = DEFAULT_VALUE_LIMITS) -> None:
        self._values: dict[str, Any] = {}
        self._types: dict[str, str] = {}
        self._listeners: list[Any] = []
        self.limits = limits
        """How large a value may be (the run's value-size budgets); None: unchecked."""

    def __contains__(self, name: str) -> bool:
        return name.lstrip("$") in self._values

    def __getitem__(self, name: str) -> Any:
        return self._values[name.lstrip("$")]

    def __setitem__(self, name: str, value: Any) -> None:
        self.set(name.lstrip("$"), value)

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def get(self, name: str, default: Any = None) -> Any:
        return self._values.get(name.lstrip("$"), default)

    def set(self, name: str, value: Any, declared_type: str | None = None) -> bool:
        """Set a variable; return True when its value changed. ValueTooLarge (nothing set) when the value is
        over the size budgets: whoever wrote it (a step, a model's `Var` line, a call), it is refused here."""
        if self.limits is not None:
            check_value(value, self.limits, f"${name}")
        if declared_type:
            self._types.setdefault(name, declared_type)
        old = self._values.get(name, _UNSET)
        self._values[name] = value
        changed = old is _UNSET or old != value
        if changed:
            for listener in self._listeners:
                listener(name)
        return changed

    def declare(self, name: str, declared_type: str | None) -> None:
        """Remember a declared type without setting a value."""
        if declared_type:
            self._types.setdefault(name, declared_type)

    def type_of(self, name: str) -> str | None:
        return self._types.get(name)

    @property
    def types(self) -> dict[str, str]:
        return dict(self._types)

    def snapshot(self) -> dict[str, Any]:
        """A shallow copy of the values, for prompts and traces."""
        return dict(self._values)

    def on_change(self, listener: Any) -> None:
        """Call `listener(name)` whenever a variable changes (CND triggers watch this)."""
        self._listeners.append(listener)


_UNSET = object()


@dataclass(frozen=True, slots=True, kw_only=True)
class Artifact:
    """Content saved with SaveArtifact: a name, a one-line summary and the content."""

    name: str
    """The artifact name."""
    summary: str
    """One line describing it."""
    content: str
    """The content."""


@dataclass(slots=True, kw_only=True)
class Frame:
    """One playbook call on a call stack."""

    playbook: Playbook
    """The playbook being executed."""
    flow: PlaybookFlow | None = None
    """Its control flow (markdown playbooks)."""
    line: str = ""
    """The instruction pointer: the line to execute next."""
    last_line: str | None = None
    """The line that ended the previous turn (the model may restate it)."""
    meeting_id: str | None = None
    """The meeting this frame runs in, if any (inherited by nested calls, seed §7.5)."""
    queued: list[Any] = field(default_factory=list)
    """Calls queued by QUE steps, run at the next `yld call`."""
    return_value: Any = None
    """Set when the playbook returns."""
    turns: int = 0
    """Model turns taken in this frame."""

    @property
    def is_meeting(self) -> bool:
        return self.meeting_id is not None


class CallStack:
    """The frames of one execution context, innermost last."""

    __slots__ = ("frames",)

    def __init__(self) -> None:
        self.frames: list[Frame] = []

    def push(self, frame: Frame) -> None:
        self.frames.append(frame)

    def pop(self) -> Frame:
        return self.frames.pop()

    @property
    def top(self) -> Frame | None:
        return self.frames[-1] if self.frames else None

    def current_meeting(self) -> str | None:
        for frame in reversed(self.frames):
            if frame.meeting_id is not None:
                return frame.meeting_id
        return None

    def describe(self) -> list[str]:
        """`Playbook:line` for each frame, outermost first."""
        return [f"{frame.playbook.name}:{frame.line or '-'}" for frame in self.frames]


@dataclass(slots=True)
class SessionLog:
    """What happened, in order, as short lines for the prompt and for debugging."""

    entries: list[str] = field(default_factory=list)
    limit: int = 2000

    def add(self, entry: str) -> None:
        self.entries.append(entry)
        if len(self.entries) > self.limit:
            del self.entries[: len(self.entries) - self.limit]

    def tail(self, count: int) -> list[str]:
        return self.entries[-count:]


@dataclass(slots=True)
class AgentState:
    """Everything an agent instance remembers."""

    variables: Variables = field(default_factory=Variables)
    artifacts: dict[str, Artifact] = field(default_factory=dict)
    session_log: SessionLog = field(default_factory=SessionLog)
    joined_meetings: set[str] = field(default_factory=set)

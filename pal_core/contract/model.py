"""What a model's answer says, in the line contract of seeds 003/004, as plain data.

An answer is a sequence of actions in the order the model wrote them. The runtime verifies the whole
sequence (pal_core.contract.verify) before applying any of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pal_core.ir import Call, JsonValue, Span, YieldTarget


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRef:
    """`Playbook:Line:Code`, as in `Step["Main:03.01:QUE"]` or `Trigger["Main:T1:CND"]`."""

    playbook: str
    """The playbook name."""
    line: str
    """The line number (`03.01`) or, for triggers, the trigger id (`T1`)."""
    code: str
    """The opcode, or the trigger code; empty when the answer left it out (`Step["Main:01"]`): the
    repairs fill it from the program."""

    def __str__(self) -> str:
        return f"{self.playbook}:{self.line}:{self.code}"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepAction:
    """`Step["PB:Ln:Code"]`, with any inline calls written after it (until the next Step)."""

    ref: StepRef
    """The step the model says it executed."""
    calls: tuple[Call, ...] = ()
    """Inline calls attached to the step: `Say("user", "...")`, `$x = Func($y)`, in order."""
    note: str = ""
    """Free text the model wrote on the step's line(s) outside backticks (its reasoning)."""
    span: Span | None = field(default=None, compare=False)
    """Where in the answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class VarAction:
    """`Var[$name, value]`: a state change."""

    name: str
    """Variable name without `$` (`__` for the return summary)."""
    type: str | None = None
    """The type written with the name (`Var[$x:float, 1.0]`), if any."""
    value: JsonValue
    """The value: a JSON/Python literal when it is one, else the text as written."""
    raw: str
    """The value exactly as written."""
    literal: bool = True
    """False when the value was not a literal and `value` holds the raw text."""
    span: Span | None = field(default=None, compare=False)
    """Where in the answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ArtifactAction:
    """`SaveArtifact($name, "summary", "content")`."""

    name: str
    """Artifact name without `$`."""
    summary: str
    """One-line summary."""
    content: str
    """The content."""
    span: Span | None = field(default=None, compare=False)
    """Where in the answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TriggerAction:
    """`trig? no` (no triggers) or `trig? Trigger["PB:T1:CND"]` (one or more fired)."""

    fired: tuple[StepRef, ...] = ()
    """The triggers the model says fired; empty for `trig? no`."""
    calls: tuple[Call, ...] = ()
    """The calls the fired triggers make, written on the `trig?` line after them
    (`trig? Trigger["X:T1:CND"] X(num=$n)`, the original runtime's own convention)."""
    span: Span | None = field(default=None, compare=False)
    """Where in the answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReturnAction:
    """`Return[value]` or `Return[]`."""

    value: JsonValue = None
    """The returned value (a literal, or the raw text when not a literal); None for `Return[]`."""
    raw: str = ""
    """The value exactly as written; empty for `Return[]`."""
    span: Span | None = field(default=None, compare=False)
    """Where in the answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class YieldAction:
    """`yld user|call|return|exit|meeting [id]|agent <name>` (also `yld for user`): ends the turn."""

    target: YieldTarget
    """Where control goes."""
    span: Span | None = field(default=None, compare=False)
    """Where in the answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WhatAction:
    """`what? ...`: the model handling an unexpected situation."""

    text: str
    """What it says."""
    span: Span | None = field(default=None, compare=False)
    """Where in the answer."""


Action = StepAction | VarAction | ArtifactAction | TriggerAction | ReturnAction | YieldAction | WhatAction


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """A parsed model answer."""

    recap: str | None = None
    """The `recap – ...` line."""
    plan: str | None = None
    """The `plan – ...` line."""
    actions: tuple[Action, ...] = ()
    """Everything the model did, in order."""
    commentary: tuple[str, ...] = ()
    """Lines that carry no action (`yld? no, ...`, prose); kept for traces, never executed."""
    raw: str = ""
    """The answer text."""

    @property
    def steps(self) -> tuple[StepAction, ...]:
        """The executed steps in order."""
        return tuple(action for action in self.actions if isinstance(action, StepAction))

    @property
    def final_yield(self) -> YieldAction | None:
        """The yield that ends the turn, if any."""
        for action in reversed(self.actions):
            if isinstance(action, YieldAction):
                return action
        return None

"""Building numbered PAL steps with symbolic jump labels, and writing values as PAL literals (shared by the
importers)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

from pal_core.ir import Step


@dataclass(slots=True, eq=False)
class _Op:
    """A step before numbering (mutable while its body is built)."""

    opcode: str
    """The command code."""
    text: str = ""
    """The step text; for a JMP, filled in from `jump` when numbered."""
    jump: object | None = None
    """For a JMP: the label of its target."""
    children: list[_Op] = field(default_factory=list)
    """The body of a CND."""


class StepList:
    """Steps in order; a label names the next top-level step added, and JMPs name labels."""

    __slots__ = ("_label_at", "_ops", "_pending")

    def __init__(self) -> None:
        self._ops: list[_Op] = []
        self._pending: list[object] = []
        self._label_at: dict[object, _Op] = {}

    def label(self, name: object) -> None:
        """Name the next top-level step `name`."""
        self._pending.append(name)

    def has_label(self, name: object) -> bool:
        """Whether `name` names a step already (or the next one)."""
        return name in self._label_at or name in self._pending

    def add(self, opcode: str, text: str = "") -> None:
        """A top-level step."""
        self._place(_Op(opcode=opcode, text=text))

    def jump(self, label: object) -> None:
        """A top-level `JMP` to `label`."""
        self._place(_Op(opcode="JMP", jump=label))

    def has_steps(self) -> bool:
        """Whether any step was added."""
        return bool(self._ops)

    def extend(self, body: StepList) -> None:
        """The top-level steps of `body` (which must not define labels), added here in order."""
        if body._pending or body._label_at:
            raise ValueError("labels inside an added body are not supported")
        for op in body._ops:
            self._place(op)

    def branch(self, condition: str, body: StepList) -> None:
        """A `CND <condition>` step whose sub-steps are `body` (which must not define labels)."""
        if body._pending or body._label_at:
            raise ValueError("labels inside a CND body are not supported")
        self._place(_Op(opcode="CND", text=condition, children=body._ops))

    def _place(self, op: _Op) -> None:
        for name in self._pending:
            self._label_at[name] = op
        self._pending.clear()
        self._ops.append(op)

    def build(self) -> tuple[Step, ...]:
        """The numbered steps; raises ValueError for a jump to a label that names no step."""
        if self._pending:
            raise ValueError(f"labels {self._pending} name no step")
        numbers: dict[int, str] = {}
        for index, op in enumerate(self._ops, start=1):
            numbers[id(op)] = f"{index:02d}"
        targets = {name: numbers[id(op)] for name, op in self._label_at.items()}
        return tuple(self._build(op, numbers[id(op)], targets) for op in self._ops)

    def _build(self, op: _Op, line: str, targets: dict[object, str]) -> Step:
        text = op.text
        if op.jump is not None:
            if op.jump not in targets:
                raise ValueError(f"jump to unknown label {op.jump!r}")
            text = targets[op.jump]
        children = tuple(
            self._build(child, f"{line}.{index:02d}", targets)
            for index, child in enumerate(op.children, start=1)
        )
        return Step(line=line, opcode=op.opcode, text=text, children=children)


def literal(value: Any) -> str:
    """`value` as a Python literal that PAL reads back as the same JSON-compatible value."""
    if value is None:
        return "None"
    if value is True:
        return "True"
    if value is False:
        return "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{value!r} is not a JSON number")
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(literal(item) for item in value) + "]"
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise ValueError("dict keys must be strings")
        return "{" + ", ".join(f"{literal(key)}: {literal(item)}" for key, item in value.items()) + "}"
    raise ValueError(f"{type(value).__name__} is not JSON-compatible")

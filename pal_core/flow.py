"""Control flow of a markdown playbook: which line may follow which.

One definition shared by the verifier (is the model's path legal?), the `pal graph` drawing and the
grammar generator of the local model. Lines are addressed by their number (`03.01`); `END` stands for
leaving the playbook (return, exit, or falling off the last step).

PAL loops are written with an explicit back-edge (`05.04:JMP 05`); a `While`/`For` body that does not
end in JMP loops back to its CND implicitly, as a reader of the program would expect.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from pal_core.ir import ConditionKind, Playbook, Step, YieldKind

END = "END"
"""The pseudo-line after the playbook."""


class EdgeKind(StrEnum):
    """Why control may move from one line to another."""

    NEXT = "next"
    """Fall through to the next step."""
    ENTER = "enter"
    """A CND whose condition holds enters its body."""
    SKIP = "skip"
    """A CND whose condition fails skips its body."""
    LOOP = "loop"
    """The end of a While/For body returns to its CND."""
    JUMP = "jump"
    """A JMP to its target."""
    RETURN = "return"
    """RET leaves the playbook."""
    EXIT = "exit"
    """YLD exit ends the program."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Edge:
    """A possible transfer of control."""

    source: str
    """The line control leaves."""
    target: str
    """The line control reaches, or END."""
    kind: EdgeKind
    """Why."""


_LOOPS = frozenset({ConditionKind.WHILE, ConditionKind.FOR})


class PlaybookFlow:
    """The control-flow graph of one markdown playbook."""

    def __init__(self, playbook: Playbook) -> None:
        self.playbook = playbook
        self.order: list[Step] = list(playbook.all_steps())
        """Every step in program order."""
        self.by_line: dict[str, Step] = {}
        self.parent: dict[str, Step | None] = {}
        self.next_sibling: dict[str, Step | None] = {}
        for step in self.order:
            self.by_line.setdefault(step.line, step)
        self._index(playbook.steps, None)

    def _index(self, steps: tuple[Step, ...], parent: Step | None) -> None:
        for position, step in enumerate(steps):
            self.parent[step.line] = parent
            self.next_sibling[step.line] = steps[position + 1] if position + 1 < len(steps) else None
            self._index(step.children, step)

    @property
    def first(self) -> str:
        """The line a fresh call starts at (END for a playbook with no steps)."""
        return self.order[0].line if self.order else END

    def after(self, step: Step) -> tuple[str, EdgeKind]:
        """Where control goes when `step` and its body are done."""
        current: Step | None = step
        while current is not None:
            sibling = self.next_sibling.get(current.line)
            if sibling is not None:
                return sibling.line, EdgeKind.NEXT
            parent = self.parent.get(current.line)
            if parent is None:
                return END, EdgeKind.RETURN
            if parent.condition is not None and parent.condition.kind in _LOOPS:
                return parent.line, EdgeKind.LOOP
            current = parent
        return END, EdgeKind.RETURN

    def after_chain(self, step: Step) -> str:
        """Past an `If` step and the `Otherwise`/`Else if` steps chained after it."""
        last = step
        sibling = self.next_sibling.get(step.line)
        while (
            sibling is not None
            and sibling.opcode == "CND"
            and sibling.condition is not None
            and sibling.condition.kind in (ConditionKind.OTHERWISE, ConditionKind.ELSE_IF)
        ):
            last = sibling
            sibling = self.next_sibling.get(sibling.line)
        return self.after(last)[0]

    def edges_from(self, line: str) -> tuple[Edge, ...]:
        """Every legal transfer from `line` (empty for an unknown line)."""
        return self._edges.get(line, ())

    def successors(self, line: str) -> frozenset[str]:
        """The lines that may follow `line`."""
        return frozenset(edge.target for edge in self.edges_from(line))

    @cached_property
    def _edges(self) -> dict[str, tuple[Edge, ...]]:
        edges: dict[str, tuple[Edge, ...]] = {}
        for step in self.order:
            edges[step.line] = tuple(self._compute(step))
        return edges

    def _compute(self, step: Step) -> list[Edge]:
        line = step.line
        if step.opcode == "JMP":
            if step.jump_target is not None and step.jump_target in self.by_line:
                return [Edge(source=line, target=step.jump_target, kind=EdgeKind.JUMP)]
            return []
        if step.opcode == "RET":
            return [Edge(source=line, target=END, kind=EdgeKind.RETURN)]
        if step.opcode == "YLD" and step.yield_target is not None:
            if step.yield_target.kind is YieldKind.EXIT:
                return [Edge(source=line, target=END, kind=EdgeKind.EXIT)]
            if step.yield_target.kind is YieldKind.RETURN:
                return [Edge(source=line, target=END, kind=EdgeKind.RETURN)]
        result: list[Edge] = []
        if step.opcode == "CND" and step.children:
            result.append(Edge(source=line, target=step.children[0].line, kind=EdgeKind.ENTER))
            target, kind = self.after(step)
            result.append(
                Edge(source=line, target=target, kind=EdgeKind.SKIP if kind is EdgeKind.NEXT else kind)
            )
            return result
        target, kind = self.after(step)
        result.append(Edge(source=line, target=target, kind=kind))
        # The end of an `If` body may also leave the whole If/Otherwise chain.
        parent = self.parent.get(line)
        if (
            parent is not None
            and self.next_sibling.get(line) is None
            and parent.condition is not None
            and parent.condition.kind in (ConditionKind.IF, ConditionKind.ELSE_IF)
        ):
            chain_end = self.after_chain(parent)
            if chain_end != target:
                result.append(Edge(source=line, target=chain_end, kind=EdgeKind.NEXT))
        return result


def flow(playbook: Playbook) -> PlaybookFlow:
    """The control-flow graph of a playbook."""
    return PlaybookFlow(playbook)

"""Control flow of a markdown playbook: which line may follow which.

One definition shared by the verifier (is the model's path legal?), the fast path, the `pal graph`
drawing and the grammar generator of the local model. Lines are addressed by their number (`03.01`);
`END` stands for leaving the playbook (return, exit, or falling off the last step).

PAL loops are written with an explicit back-edge (`05.04:JMP 05`); a `While`/`For` body that does not
end in JMP loops back to its CND implicitly, as a reader of the program would expect.

An `If` / `Else if` / `Otherwise` run of sibling CND steps is one chain: a finished branch leaves the
whole chain, an `Else if` is reached only when the branches before it failed, and an `Otherwise` so
reached is always entered.

A conversation step (`Say(user, Ask ...); YLD for user; done when <condition>`) runs at least once and
repeats, with its yield, until its condition holds; when the step's own work settles it, its yield is
skipped (a decision, like a CND's).

CND and JMP lines do no work of their own: a real model often leaves them unwritten (false sibling conditions, an implied `Otherwise`, the loop head after a JMP).
`reachable` gives the lines that may be written next with such lines passed silently; any line that does
work (EXE, QUE, TNK, CHK, YLD, RET) is never passed silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property

from pal_core.ir import ConditionKind, Opcode, Playbook, Step, YieldKind
from pal_core.step_text import conversation_until

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
    """The end of a While/For body returns to its CND; a conversation step not yet done repeats."""
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
_CHAIN_STARTS = frozenset({ConditionKind.IF, ConditionKind.ELSE_IF})
_CHAIN_LINKS = frozenset({ConditionKind.ELSE_IF, ConditionKind.OTHERWISE})


class PlaybookFlow:
    """The control-flow graph of one markdown playbook."""

    def __init__(self, playbook: Playbook) -> None:
        self.playbook = playbook
        self.order: list[Step] = list(playbook.all_steps())
        """Every step in program order."""
        self.by_line: dict[str, Step] = {}
        self.parent: dict[str, Step | None] = {}
        self.next_sibling: dict[str, Step | None] = {}
        self.chained: set[str] = set()
        """`Else if` / `Otherwise` lines that continue the If chain of the sibling before them."""
        self.after_when: set[str] = set()
        """`Otherwise` lines after a run of `When` siblings (which are not exclusive, so not a chain)."""
        self.until: dict[str, str] = {}
        """Conversation steps: line -> the condition that ends the conversation."""
        for step in self.order:
            self.by_line.setdefault(step.line, step)
            if step.yield_target is not None and step.opcode != Opcode.YLD:
                condition = conversation_until(step.text)
                if condition is not None:
                    self.until[step.line] = condition
        self._index(playbook.steps, None)

    def _index(self, steps: tuple[Step, ...], parent: Step | None) -> None:
        # Iterative, so that deeply nested programs do not exhaust Python's stack.
        pending: list[tuple[tuple[Step, ...], Step | None]] = [(steps, parent)]
        while pending:
            siblings, owner = pending.pop()
            previous: Step | None = None
            for position, step in enumerate(siblings):
                self.parent[step.line] = owner
                self.next_sibling[step.line] = (
                    siblings[position + 1] if position + 1 < len(siblings) else None
                )
                if previous is not None and _links_chain(previous, step):
                    self.chained.add(step.line)
                elif previous is not None and _follows_when(previous, step):
                    self.after_when.add(step.line)
                previous = step
                if step.children:
                    pending.append((step.children, step))

    @property
    def first(self) -> str:
        """The line a fresh call starts at (END for a playbook with no steps)."""
        return self.order[0].line if self.order else END

    def is_decision(self, line: str) -> bool:
        """A CND, or a conversation step: the model decides where control goes."""
        step = self.by_line.get(line)
        return step is not None and (step.opcode == Opcode.CND or line in self.until)

    def is_silent(self, line: str) -> bool:
        """Whether an answer may leave the line unwritten: a CND or a JMP (a conversation step does work
        at least once: it may skip only its yield)."""
        step = self.by_line.get(line)
        return step is not None and step.opcode in (Opcode.CND, Opcode.JMP)

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
            # The parent's body is done: leave the parent and, for an If branch, the rest of its chain.
            current = self.chain_last(parent)
        return END, EdgeKind.RETURN

    def chain_last(self, step: Step) -> Step:
        """The last `Else if` / `Otherwise` chained after `step` (`step` itself when none follows)."""
        last = step
        sibling = self.next_sibling.get(step.line)
        while sibling is not None and sibling.line in self.chained:
            last = sibling
            sibling = self.next_sibling.get(sibling.line)
        return last

    def after_chain(self, step: Step) -> str:
        """Past an `If` step and the `Otherwise`/`Else if` steps chained after it."""
        return self.after(self.chain_last(step))[0]

    def edges_from(self, line: str) -> tuple[Edge, ...]:
        """Every legal transfer from `line` (empty for an unknown line)."""
        return self._edges.get(line, ())

    def successors(self, line: str) -> frozenset[str]:
        """The lines that may follow `line`."""
        return frozenset(edge.target for edge in self.edges_from(line))

    def reachable(self, line: str, *, entered: bool | None = None) -> dict[str, tuple[str, ...]]:
        """The lines an answer may write next after `line`: its successors, and what follows any of them
        that may stay unwritten (`is_silent`). Maps each line (or END) to the silent lines passed to reach
        it, fewest first. `entered` constrains a decision line's own outcome: True keeps only entering its
        body (or repeating a conversation step), False only the other ways out."""
        first = [edge for edge in self.edges_from(line) if _taken(edge, entered)]
        found: dict[str, tuple[str, ...]] = {}
        # (line, silent lines passed, whether it was reached by a back-edge taken from a silent line)
        queue: list[tuple[str, tuple[str, ...], bool]] = [(edge.target, (), False) for edge in first]
        position = 0
        while position < len(queue):
            target, implied, looped = queue[position]
            position += 1
            if target in found:
                continue
            found[target] = implied
            # Across a back-edge one of the two ends must be written (the JMP, or the loop head after
            # it): two silent lines there would let any order of a loop's steps pass as a legal path.
            if target != END and self.is_silent(target) and not looped:
                passed = (*implied, target)
                queue.extend(
                    (edge.target, passed, self._back_edge(edge))
                    for edge in self._silent_edges(target, line, implied)
                    if edge.target != target
                )
        return found

    def _silent_edges(self, line: str, start: str, implied: tuple[str, ...]) -> tuple[Edge, ...]:
        """The ways on from a line passed unwritten. An `Otherwise` after `When` branches is entered when
        none of those branches ran on the path (from `start`, through `implied`), else skipped."""
        edges = self.edges_from(line)
        if line not in self.after_when:
            return edges
        bodies = [sibling.line + "." for sibling in self._whens_before(line)]
        ran = any(passed.startswith(body) for passed in (start, *implied) for body in bodies)
        return tuple(edge for edge in edges if (edge.kind is EdgeKind.ENTER) is not ran)

    def _whens_before(self, line: str) -> list[Step]:
        parent = self.parent.get(line)
        siblings = parent.children if parent is not None else self.playbook.steps
        found: list[Step] = []
        for sibling in siblings:
            if sibling.line == line:
                break
            if (
                sibling.opcode == Opcode.CND
                and sibling.condition is not None
                and sibling.condition.kind is ConditionKind.WHEN
            ):
                found.append(sibling)
        return found

    def _back_edge(self, edge: Edge) -> bool:
        """A jump or loop edge back to a line at or before its source."""
        if edge.kind not in (EdgeKind.JUMP, EdgeKind.LOOP) or edge.target == END:
            return False
        return self._position[edge.target] <= self._position[edge.source]

    @cached_property
    def _position(self) -> dict[str, int]:
        return {step.line: index for index, step in enumerate(self.order)}

    def entries(self, line: str) -> dict[str, tuple[str, ...]]:
        """The lines a turn starting at `line` may write first: `line`, and, when it may stay unwritten,
        what follows it (with the silent lines passed, `line` included)."""
        found: dict[str, tuple[str, ...]] = {line: ()}
        if self.is_silent(line):
            for target, implied in self.reachable(line).items():
                found.setdefault(target, (line, *implied))
        return found

    @cached_property
    def _edges(self) -> dict[str, tuple[Edge, ...]]:
        edges: dict[str, tuple[Edge, ...]] = {}
        for step in self.order:
            edges[step.line] = tuple(self._compute(step))
        return edges

    def _compute(self, step: Step) -> list[Edge]:
        line = step.line
        if step.opcode == Opcode.JMP:
            if step.jump_target is not None and step.jump_target in self.by_line:
                return [Edge(source=line, target=step.jump_target, kind=EdgeKind.JUMP)]
            return []
        if step.opcode == Opcode.RET:
            return [Edge(source=line, target=END, kind=EdgeKind.RETURN)]
        if step.opcode == Opcode.YLD and step.yield_target is not None:
            if step.yield_target.kind is YieldKind.EXIT:
                return [Edge(source=line, target=END, kind=EdgeKind.EXIT)]
            if step.yield_target.kind is YieldKind.RETURN:
                return [Edge(source=line, target=END, kind=EdgeKind.RETURN)]
        if step.opcode == Opcode.CND and step.children:
            result = [Edge(source=line, target=step.children[0].line, kind=EdgeKind.ENTER)]
            always_entered = line in self.chained and (
                step.condition is not None and step.condition.kind is ConditionKind.OTHERWISE
            )
            if not always_entered:
                target, kind = self.after(step)
                result.append(
                    Edge(source=line, target=target, kind=EdgeKind.SKIP if kind is EdgeKind.NEXT else kind)
                )
            return result
        target, kind = self.after(step)
        result = [Edge(source=line, target=target, kind=kind)]
        if step.children:
            # A step with a body of its own (`01:QUE Say(Ask ...) unless no need` over `01.01:YLD user`,
            # `01.02:JMP 01`), as the original compiler writes "unless": after its work, the body may run.
            result.insert(0, Edge(source=line, target=step.children[0].line, kind=EdgeKind.ENTER))
        if line in self.until:
            result.append(Edge(source=line, target=line, kind=EdgeKind.LOOP))
        return result


def _links_chain(previous: Step, step: Step) -> bool:
    """Whether `step` (an `Else if` / `Otherwise`) continues the If chain that `previous` (an `If` or
    an `Else if`) starts or continues."""
    if step.opcode != Opcode.CND or step.condition is None or step.condition.kind not in _CHAIN_LINKS:
        return False
    return (
        previous.opcode == Opcode.CND
        and previous.condition is not None
        and previous.condition.kind in _CHAIN_STARTS
    )


def _follows_when(previous: Step, step: Step) -> bool:
    return (
        step.opcode == Opcode.CND
        and step.condition is not None
        and step.condition.kind is ConditionKind.OTHERWISE
        and previous.opcode == Opcode.CND
        and previous.condition is not None
        and previous.condition.kind is ConditionKind.WHEN
    )


def _taken(edge: Edge, entered: bool | None) -> bool:
    if entered is None:
        return True
    into = edge.kind is EdgeKind.ENTER or (edge.kind is EdgeKind.LOOP and edge.source == edge.target)
    return into if entered else not into


def flow(playbook: Playbook) -> PlaybookFlow:
    """The control-flow graph of a playbook."""
    return PlaybookFlow(playbook)

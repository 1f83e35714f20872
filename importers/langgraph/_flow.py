"""The graph's supersteps as a finite set of blocks, and how control moves between them.

LangGraph runs a graph in supersteps: every task triggered by the previous step runs on the same state,
and their writes are applied together. A block is one possible superstep: the tasks that run (a node
triggered by edges, or a node's `Send` tasks) and how far each waiting edge (join) has got. From START,
the blocks reachable through static edges, joins and the one route a node may take (a router, or its
`Command(goto=...)`) are enumerated; each block becomes a run of PAL steps and each way out a
fall-through, a JMP, or CND branches on the route. A cycle in the graph is a JMP back to a block.

A route that may name several destinations at once (Sends to several nodes, a router returning a list,
`Command(goto=[...])`) leads to one block per combination of destinations: those the code writes as
literal lists, else every combination of at most `MAX_PARALLEL_DESTINATIONS` (LG111 beyond: followed one
at a time). What does not fit is reported and leaves a failing `Unsupported` step in its place: routing
from a node that runs in parallel with others (LG106), two routes out of one node (LG107), or a graph
with more distinct supersteps than `MAX_BLOCKS` (LG115).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from importers.common.diagnostics import Findings
from importers.langgraph._diagnostics import (
    GRAPH_TOO_LARGE,
    PARALLEL_ROUTING,
    SEVERAL_DESTINATIONS,
    SEVERAL_ROUTES,
)
from importers.langgraph._model import END, START, Graph, Router

MAX_BLOCKS = 200
"""Distinct supersteps the layout enumerates before giving up on a graph (LG115)."""

MAX_PARALLEL_DESTINATIONS = 5
"""Destinations a route naming several at once may have: every combination is a superstep of its own
(31 for 5), so more are reported (LG111) and followed one at a time."""

END_BLOCK = -1
"""The block id of the end of the graph."""


@dataclass(frozen=True, slots=True, kw_only=True, order=True)
class Task:
    """One task of a superstep."""

    pushed: bool
    """True for the `Send` tasks of a node (they run after the others, taking the Send's argument)."""
    node: str
    """The node that runs."""


class ExitKind(StrEnum):
    """How control leaves a block."""

    STATIC = "static"
    """Edges and joins alone decide the next block."""
    ROUTER = "router"
    """A router's result decides."""
    COMMAND = "command"
    """The node's `Command(goto=...)` decides; no goto follows the edges."""
    UNSUPPORTED = "unsupported"
    """The importer cannot express the way out (a diagnostic says why)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Exit:
    """The way out of a block (or out of START)."""

    kind: ExitKind
    """Which kind."""
    node: str
    """The node the decision belongs to (START for START's own edges)."""
    following: int = END_BLOCK
    """STATIC: the next block. COMMAND: the block when the Command names no goto."""
    router: Router | None = None
    """ROUTER: the router."""
    choices: tuple[tuple[str | tuple[str, ...], int], ...] = ()
    """ROUTER and COMMAND: (destination, next block) in declaration order; END leads to END_BLOCK or on.
    With `several`, each destination is a tuple of nodes that run together (`()`: none, the end)."""
    several: bool = False
    """Whether the route names several destinations at once (a list of node names, compared whole)."""
    reason: str = ""
    """UNSUPPORTED: what is not expressed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Block:
    """One possible superstep."""

    id: int
    """Its index in `Flow.blocks`."""
    tasks: tuple[Task, ...]
    """The tasks, in the order LangGraph applies their writes: edge-triggered nodes by name, then Sends."""
    exit: Exit = field(compare=False)
    """The way out."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Flow:
    """All blocks reachable from START, and the layout order."""

    start: Exit
    """The way out of START (after the input is written)."""
    blocks: tuple[Block, ...]
    """Blocks by id."""
    order: tuple[int, ...]
    """Block ids in layout order: each block's first successor right after it where possible."""


_State = tuple[tuple[Task, ...], tuple[frozenset[str], ...]]


class _Builder:
    __slots__ = ("exits", "findings", "graph", "ids", "node_names", "overflow", "pending", "scope", "states")

    def __init__(self, graph: Graph, scope: str, findings: Findings) -> None:
        self.graph = graph
        self.scope = scope
        self.findings = findings
        self.node_names = tuple(graph.nodes)
        self.ids: dict[_State, int] = {}
        self.states: list[_State] = []
        self.exits: dict[int, Exit] = {}
        self.pending: list[int] = []
        self.overflow = False

    def block(self, tasks: Iterable[Task], joins: tuple[frozenset[str], ...]) -> int:
        ordered = tuple(sorted(set(tasks)))
        if not ordered:
            return END_BLOCK
        key = (ordered, joins)
        existing = self.ids.get(key)
        if existing is not None:
            return existing
        if len(self.states) >= MAX_BLOCKS:
            if not self.overflow:
                self.overflow = True
                self.findings.add(
                    GRAPH_TOO_LARGE,
                    f"graph {self.scope or self.graph.name!r}",
                    f"it has more than {MAX_BLOCKS} distinct supersteps; the rest of the graph is not laid out",
                )
            return END_BLOCK
        self.ids[key] = len(self.states)
        self.states.append(key)
        self.pending.append(self.ids[key])
        return self.ids[key]

    def targets_after(
        self, nodes: set[str], joins: tuple[frozenset[str], ...]
    ) -> tuple[list[Task], tuple[frozenset[str], ...]]:
        """Tasks that static edges and completed joins start after `nodes` ran, and the joins' new state."""
        tasks = [
            Task(pushed=False, node=target)
            for node in sorted(nodes)
            for target in self.graph.static_targets(node)
            if target != END
        ]
        progress: list[frozenset[str]] = []
        for (sources, target), arrived in zip(self.graph.joins, joins, strict=True):
            now = arrived | (nodes & set(sources))
            if now >= set(sources):
                if target != END:
                    tasks.append(Task(pushed=False, node=target))
                now = frozenset()
            progress.append(frozenset(now))
        return tasks, tuple(progress)

    def exit_for(self, nodes: set[str], single: bool, joins: tuple[frozenset[str], ...]) -> Exit:
        static, joins_after = self.targets_after(nodes, joins)
        decisions: list[tuple[str, Router | None]] = []
        for node in sorted(nodes):
            decisions.extend((node, router) for router in self.graph.routers.get(node, ()))
            if node != START and self.graph.nodes[node].command_ends:
                decisions.append((node, None))
        if not decisions:
            return Exit(kind=ExitKind.STATIC, node=_first(nodes), following=self.block(static, joins_after))
        deciding = decisions[0][0]
        subject = f"node {self.scope}{deciding!r}" if deciding != START else f"{self.scope}START"
        if len(decisions) > 1:
            reason = "it has more than one conditional edge or Command route; PAL follows one route per step"
            self.findings.add(SEVERAL_ROUTES, subject, reason)
            return Exit(kind=ExitKind.UNSUPPORTED, node=deciding, reason=reason)
        if not single:
            others = ", ".join(sorted(nodes - {deciding}))
            reason = f"it routes while running in parallel with {others}; PAL routes only after a node that runs alone"
            self.findings.add(PARALLEL_ROUTING, subject, reason)
            return Exit(kind=ExitKind.UNSUPPORTED, node=deciding, reason=reason)
        node, router = decisions[0]
        if (
            router is not None
            and router.state_key is None
            and (router.callee is None or router.callee.path is None)
        ):
            # Reported when the router was read (LG102); nothing can decide the route.
            return Exit(
                kind=ExitKind.UNSUPPORTED, node=node, reason="its router cannot be called by import path"
            )
        if router is not None:
            targets = router.targets(self.node_names)
            where = f"router after {self.scope}{node!r}" if node != START else f"router at {self.scope}START"
            if router.several and self.lays_out_together(targets, router.combinations, where, "router"):
                combined = [
                    (
                        combination,
                        self.block(
                            [*static, *(Task(pushed=router.may_send, node=n) for n in combination)],
                            joins_after,
                        ),
                    )
                    for combination in _combinations(targets, router.combinations)
                ]
                # No destination (an empty list of Sends, or END): the static edges alone.
                combined.append(((), self.block(static, joins_after)))
                return Exit(
                    kind=ExitKind.ROUTER, node=node, router=router, choices=tuple(combined), several=True
                )
            choices = tuple(
                (
                    target,
                    self.block(
                        [*static, *([] if target == END else [Task(pushed=router.may_send, node=target)])],
                        joins_after,
                    ),
                )
                for target in targets
            )
            return Exit(kind=ExitKind.ROUTER, node=node, router=router, choices=choices)
        command = self.graph.nodes[node]
        following = self.block(static, joins_after)
        if command.parallel_goto and self.lays_out_together(
            command.command_ends, command.goto_combinations, subject, "node"
        ):
            choices = tuple(
                (
                    combination,
                    self.block([*static, *(Task(pushed=False, node=n) for n in combination)], joins_after),
                )
                for combination in _combinations(command.command_ends, command.goto_combinations)
            )
            return Exit(kind=ExitKind.COMMAND, node=node, choices=choices, following=following, several=True)
        choices = tuple(
            (
                target,
                self.block(
                    [*static, *([] if target == END else [Task(pushed=False, node=target)])], joins_after
                ),
            )
            for target in command.command_ends
        )
        return Exit(kind=ExitKind.COMMAND, node=node, choices=choices, following=following)

    def lays_out_together(
        self,
        targets: tuple[str, ...],
        written: tuple[tuple[str, ...], ...] | None,
        subject: str,
        what: str,
    ) -> bool:
        """Whether the combinations of `targets` (END aside) a route may name are laid out: those its code
        writes, or every one when that is not known and there are few enough; LG111 otherwise."""
        nodes = [target for target in targets if target != END]
        if len(nodes) <= 1:
            return False  # one destination at a time is all there is
        if written is not None or len(nodes) <= MAX_PARALLEL_DESTINATIONS:
            return True
        where = "its router" if what == "router" else "its Command(goto=[...])"
        self.findings.add(
            SEVERAL_DESTINATIONS,
            subject,
            f"{where} may name several of its {len(nodes)} destinations at once; the imported program lays "
            f"out every combination of up to {MAX_PARALLEL_DESTINATIONS}, so here it follows one destination "
            "and stops with an error if it gets more; declare fewer destinations",
        )
        return False


def _combinations(
    targets: tuple[str, ...], written: tuple[tuple[str, ...], ...] | None
) -> list[tuple[str, ...]]:
    """The combinations of node targets (END aside) a route may name, in declaration order: each alone,
    then the ones its code writes (`written`), or every combination when that is not known (None)."""
    nodes = [target for target in targets if target != END]
    if written is None:
        sizes = range(1, len(nodes) + 1)
        return [combination for size in sizes for combination in itertools.combinations(nodes, size)]
    found = [(node,) for node in nodes]
    for names in written:
        combination = tuple(node for node in nodes if node in names)
        if len(combination) > 1 and combination not in found:
            found.append(combination)
    return found


def _first(nodes: set[str]) -> str:
    return sorted(nodes)[0] if nodes else START


def build_flow(graph: Graph, scope: str, findings: Findings) -> Flow:
    """Enumerate the supersteps of `graph` from START and lay them out."""
    builder = _Builder(graph, scope, findings)
    no_joins = tuple(frozenset() for _ in graph.joins)
    start = builder.exit_for({START}, single=True, joins=no_joins)
    while builder.pending:
        block_id = builder.pending.pop(0)
        tasks, joins = builder.states[block_id]
        # A block of Send tasks runs once per packet: parallel even when it names one node.
        single = len(tasks) == 1 and not tasks[0].pushed
        builder.exits[block_id] = builder.exit_for({task.node for task in tasks}, single=single, joins=joins)
    blocks = tuple(
        Block(id=index, tasks=tasks, exit=builder.exits[index])
        for index, (tasks, _) in enumerate(builder.states)
    )
    return Flow(start=start, blocks=blocks, order=_layout(start, blocks))


def _successors(exit_: Exit) -> list[int]:
    if exit_.kind is ExitKind.STATIC:
        return [exit_.following]
    if exit_.kind is ExitKind.UNSUPPORTED:
        return []
    found = [block for _, block in exit_.choices]
    if exit_.kind is ExitKind.COMMAND:
        found.append(exit_.following)
    return found


def _layout(start: Exit, blocks: tuple[Block, ...]) -> tuple[int, ...]:
    """Depth-first from START, first successor first, so a static successor directly follows its block."""
    order: list[int] = []
    seen: set[int] = set()
    stack = list(reversed(_successors(start)))
    while stack:
        block_id = stack.pop()
        if block_id == END_BLOCK or block_id in seen:
            continue
        seen.add(block_id)
        order.append(block_id)
        stack.extend(reversed(_successors(blocks[block_id].exit)))
    return tuple(order)

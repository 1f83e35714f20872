"""The flowchart of a playbook as SVG, drawn by the server from `pal_core.flow` (the graph the verifier, `pal
graph` and the local grammar share), with the steps a thread's turns executed and its current step marked.

Why the server draws it instead of the Mermaid package drawing `pal graph`'s text in the browser: Mermaid
comes from npm, which a user who installed pal-bridge with pip alone does not have, and a page that loads it
from a CDN does not work offline. A playbook's graph is simple to lay out: its steps in program order, one
row each, indented by nesting; edges to the next row run straight down, other forward edges (a CND's `no`,
an If chain's exit) in lanes on the right, back-edges (loops, jumps) in lanes on the left.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from html import escape

from pal_core.flow import END, EdgeKind, flow
from pal_core.ir import Playbook, PlaybookKind

ROW = 44
"""Pixels from one row's top to the next row's."""
BOX_HEIGHT = 28
INDENT = 22
"""Pixels a nested step is moved right per level."""
BOX_WIDTH = 330
LANE = 9
"""Pixels between two edge lanes."""
CHAR_WIDTH = 7
"""Pixels of one character of the labels' monospace font (11px), rounded up."""
LABEL_CHARS = (BOX_WIDTH - 50) // CHAR_WIDTH
"""Characters of a step's label shown in its box (its whole text is its tooltip): what fits beside the
count badge."""
MARGIN = 12

_EDGE_LABELS = {
    EdgeKind.ENTER: "yes",
    EdgeKind.SKIP: "no",
    EdgeKind.LOOP: "loop",
    EdgeKind.JUMP: "jump",
    EdgeKind.EXIT: "exit",
}
_DASHED = frozenset({EdgeKind.LOOP, EdgeKind.JUMP})


@dataclass(frozen=True, slots=True)
class _Box:
    key: str
    """The step's line, or `start` / `END`."""
    row: int
    x: int
    label: str
    title: str
    shape: str
    """`step`, `decision`, `yield`, `return` or `terminal`."""


def flowchart_svg(
    playbook: Playbook, *, taken: Mapping[str, int] | None = None, current: str | None = None
) -> str:
    """The playbook's flowchart as an `<svg>` element. `taken`: how many times each line ran in the thread's
    turns (those lines are marked, with the count); `current`: the line the thread stands at."""
    taken = taken or {}
    if playbook.kind is not PlaybookKind.MARKDOWN or not playbook.steps:
        return _bodyless(playbook)
    graph = flow(playbook)
    boxes: list[_Box] = [_Box("start", 0, MARGIN, playbook.name, playbook.name, "terminal")]
    rows: dict[str, int] = {"start": 0}
    for index, step in enumerate(graph.order, start=1):
        depth = step.line.count(".")
        text = " ".join(step.text.split())
        label = f"{step.line} {step.opcode} {text}"
        boxes.append(
            _Box(
                step.line,
                index,
                MARGIN + depth * INDENT,
                label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…",
                f"{step.line}:{step.opcode} {text}",
                _shape(step.opcode),
            )
        )
        rows[step.line] = index
    end_row = len(graph.order) + 1
    boxes.append(_Box(END, end_row, MARGIN, "end", "the playbook returns or ends", "terminal"))
    rows[END] = end_row
    by_key = {box.key: box for box in boxes}

    edges: list[tuple[_Box, _Box, EdgeKind]] = [(by_key["start"], by_key[graph.first], EdgeKind.NEXT)]
    for step in graph.order:
        for edge in graph.edges_from(step.line):
            edges.append((by_key[step.line], by_key[edge.target], edge.kind))

    right_lanes: list[list[tuple[int, int]]] = []
    left_lanes: list[list[tuple[int, int]]] = []
    width_right = max(box.x for box in boxes) + BOX_WIDTH
    paths: list[str] = []
    for source, target, kind in edges:
        paths.append(_edge(source, target, kind, right_lanes, left_lanes, width_right))
    left = MARGIN + LANE * (len(left_lanes) + 1)
    width = left + width_right + LANE * (len(right_lanes) + 2) + MARGIN
    height = ROW * (end_row + 1) + MARGIN
    nodes = [_node(box, taken.get(box.key, 0), box.key == current) for box in boxes]
    return (
        f'<svg class="flowchart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="flowchart of {escape(playbook.name)}">'
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z"/></marker></defs>'
        f'<g transform="translate({left},{MARGIN})">' + "".join(paths) + "".join(nodes) + "</g></svg>"
    )


def _shape(opcode: str) -> str:
    return {"CND": "decision", "YLD": "yield", "RET": "return"}.get(opcode, "step")


def _width(box: _Box) -> int:
    return BOX_WIDTH if box.shape != "terminal" else min(BOX_WIDTH, 24 + CHAR_WIDTH * len(box.label))


def _top(box: _Box) -> int:
    return box.row * ROW


def _middle(box: _Box) -> int:
    return box.row * ROW + BOX_HEIGHT // 2


def _free_lane(lanes: list[list[tuple[int, int]]], low: int, high: int) -> int:
    """The first lane whose edges do not overlap rows low..high (a new lane if none is free)."""
    for index, taken in enumerate(lanes):
        if all(high < start or low > stop for start, stop in taken):
            taken.append((low, high))
            return index
    lanes.append([(low, high)])
    return len(lanes) - 1


def _edge(
    source: _Box,
    target: _Box,
    kind: EdgeKind,
    right_lanes: list[list[tuple[int, int]]],
    left_lanes: list[list[tuple[int, int]]],
    width_right: int,
) -> str:
    label = _EDGE_LABELS.get(kind, "")
    css = f"edge {kind.value}" + (" dashed" if kind in _DASHED else "")
    if target.row == source.row + 1:
        # Straight down to the next row (with an elbow when the boxes are indented differently).
        x1, y1 = source.x + 18, _top(source) + BOX_HEIGHT
        x2, y2 = target.x + 18, _top(target)
        middle = (y1 + y2) // 2
        path = f"M{x1},{y1} V{middle} H{x2} V{y2}"
        where = (x1 + 4, y1 + 11)
    elif target.row > source.row:
        lane = _free_lane(right_lanes, source.row, target.row)
        x = width_right + LANE * (lane + 1)
        x1, y1 = source.x + _width(source), _middle(source)
        x2, y2 = target.x + _width(target), _middle(target)
        path = f"M{x1},{y1} H{x} V{y2} H{x2}"
        where = (x1 + 3, y1 - 3)
    else:
        lane = _free_lane(left_lanes, target.row, source.row)
        x = -LANE * (lane + 1)
        x1, y1 = source.x, _middle(source)
        x2, y2 = target.x, _middle(target)
        path = f"M{x1},{y1} H{x} V{y2} H{x2}"
        where = (x1 - 24, y1 - 3)
    text = f'<text class="edge-label" x="{where[0]}" y="{where[1]}">{label}</text>' if label else ""
    return (
        f'<g class="{css}" data-from="{escape(source.key)}" data-to="{escape(target.key)}">'
        f'<path d="{path}" marker-end="url(#arrow)"/>{text}</g>'
    )


def _node(box: _Box, count: int, current: bool) -> str:
    classes = ["node", box.shape]
    if count:
        classes.append("taken")
    if current:
        classes.append("current")
    x, y = box.x, _top(box)
    width = _width(box)
    badge = (
        f'<text class="count" x="{x + width - 8}" y="{y + 18}" text-anchor="end">×{count}</text>'
        if count
        else ""
    )
    return (
        f'<g class="{" ".join(classes)}" data-line="{escape(box.key)}"><title>{escape(box.title)}</title>'
        f"{_outline(box.shape, x, y, width)}"
        f'<text x="{x + 12}" y="{y + 18}">{escape(box.label)}</text>{badge}</g>'
    )


def _outline(shape: str, x: int, y: int, width: int) -> str:
    """A box's outline: a rectangle for a step, a hexagon for a decision, a parallelogram for a yield, a
    rounded one for a return and the ends."""
    height, slant = BOX_HEIGHT, 8
    if shape == "decision":
        points = [
            (x + slant, y),
            (x + width - slant, y),
            (x + width, y + height // 2),
            (x + width - slant, y + height),
            (x + slant, y + height),
            (x, y + height // 2),
        ]
    elif shape == "yield":
        points = [(x + slant, y), (x + width, y), (x + width - slant, y + height), (x, y + height)]
    else:
        radius = height // 2 if shape in ("terminal", "return") else 4
        return f'<rect class="shape" x="{x}" y="{y}" width="{width}" height="{height}" rx="{radius}"/>'
    return '<polygon class="shape" points="' + " ".join(f"{px},{py}" for px, py in points) + '"/>'


def _bodyless(playbook: Playbook) -> str:
    what = "Python" if playbook.kind is PlaybookKind.PYTHON else playbook.kind.value
    mode = playbook.metadata.execution_mode or what
    text = f"{playbook.name}: a {mode} playbook (no steps to draw)"
    width = 24 + CHAR_WIDTH * len(text)
    return (
        f'<svg class="flowchart" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} 40" width="{width}" '
        f'height="40" role="img"><g class="node terminal"><rect class="shape" x="2" y="6" width="{width - 4}" '
        f'height="28" rx="14"/><text x="12" y="24">{escape(text)}</text></g></svg>'
    )

"""A Mermaid flowchart of a playbook: steps, CND branches, JMP back-edges, loops and calls."""

from __future__ import annotations

import re

from pal_core.flow import END, EdgeKind, flow
from pal_core.ir import Opcode, Playbook, PlaybookKind, check_playbook_depth

# Mermaid entity codes for the characters that would end or re-interpret a quoted label (`#` starts a
# code itself); brackets, braces and bars are safe inside the quotes and are kept as written.
_ESCAPES = {"#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "`": "#96;"}
_ESCAPED = re.compile("|".join(re.escape(char) for char in _ESCAPES))
_MAX_LABEL = 60
_SHAPES = {Opcode.CND: ('{"', '"}'), Opcode.RET: ('(["', '"])'), Opcode.YLD: ('[/"', '"/]')}
_EDGE_STYLE = {
    EdgeKind.NEXT: "-->",
    EdgeKind.ENTER: "-->|yes|",
    EdgeKind.SKIP: "-->|no|",
    EdgeKind.LOOP: "-.->|loop|",
    EdgeKind.JUMP: "-.->|jump|",
    EdgeKind.RETURN: "-->",
    EdgeKind.EXIT: "-->|exit|",
}


def mermaid(playbook: Playbook) -> str:
    """The flowchart, as Mermaid text (`flowchart TD`)."""
    check_playbook_depth(playbook)
    lines = ["flowchart TD", f'    start(["{_label(playbook.name)}"])']
    if playbook.kind is not PlaybookKind.MARKDOWN or not playbook.steps:
        what = "python" if playbook.kind is PlaybookKind.PYTHON else playbook.kind.value
        mode = playbook.metadata.execution_mode or what
        lines.append(f'    body["{_label(mode)} playbook"]')
        lines.append("    start --> body --> finish")
        lines.append('    finish(["end"])')
        return "\n".join(lines) + "\n"
    graph = flow(playbook)
    for step in graph.order:
        opening, closing = _SHAPES.get(step.opcode, ('["', '"]'))
        lines.append(f"    {_node(step.line)}{opening}{step.line} {step.opcode} {_label(step.text)}{closing}")
    lines.append('    finish(["end"])')
    lines.append(f"    start --> {_node(graph.first)}")
    calls: dict[str, str] = {}
    for step in graph.order:
        for edge in graph.edges_from(step.line):
            lines.append(f"    {_node(edge.source)} {_EDGE_STYLE[edge.kind]} {_node(edge.target)}")
        if step.call is not None and step.call.name not in ("Say",):
            call_node = calls.setdefault(step.call.name, f"call_{len(calls)}")
            lines.append(f"    {_node(step.line)} -.- {call_node}")
    for name, node in calls.items():
        lines.append(f'    {node}[["{_label(name)}()"]]')
    return "\n".join(lines) + "\n"


def _node(line: str) -> str:
    return "finish" if line == END else "s" + line.replace(".", "_")


def _label(text: str) -> str:
    """The text as a quoted Mermaid label: one line, shortened, special characters as entity codes."""
    cleaned = " ".join(text.split())
    if len(cleaned) > _MAX_LABEL:
        cleaned = cleaned[: _MAX_LABEL - 1] + "…"
    return _ESCAPED.sub(lambda match: _ESCAPES[match.group(0)], cleaned)

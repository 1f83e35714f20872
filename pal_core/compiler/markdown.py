"""Reading Playbooks markdown (`.pb`) into a source tree: agents, playbooks, sections and nested list items.

The document's outline is `pal_core.outline`'s, read as markdown (`MARKDOWN`); this module reads what is
the compiler's own: the section lines as markdown lists. Nothing is interpreted beyond the document
structure; every piece keeps its line and column so later stages can point at the markdown. Problems are reported to the SourceReporter and reading goes on, so
one pass finds them all.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pal_core.codes import BAD_STEP, DUPLICATE, PLAIN_SECTION_LINE, TOO_DEEP
from pal_core.errors import SourceReporter
from pal_core.ir import MAX_STEP_DEPTH
from pal_core.metadata import MetadataSource
from pal_core.outline import (
    MARKDOWN,
    OutlineAgent,
    OutlinePlaybook,
    Section,
    public_json_of,
    read_outline,
)

_ITEM_RE = re.compile(r"(?P<indent>[ \t]*)(?P<bullet>[-*+]|\d{1,9}[.)])(?:[ \t]+(?P<text>.*?))?[ \t]*\Z")

__all__ = [
    "MetadataSource",
    "SourceAgent",
    "SourceBlock",
    "SourceDocument",
    "SourceItem",
    "SourcePlaybook",
    "read_markdown",
]


@dataclass(slots=True, kw_only=True)
class SourceItem:
    """One markdown list item (a step, trigger or note) with the items nested under it."""

    text: str
    """The item text without its bullet, continuation lines joined with single spaces."""
    line: int
    """1-based line of the bullet."""
    column: int
    """1-based column where the text starts."""
    indent: int = 0
    """Indentation of the bullet (tabs count 4), for nesting."""
    plain: bool = False
    """Written as a plain line, without a bullet (a loose form of triggers)."""
    children: list[SourceItem] = field(default_factory=list)
    """Items nested under this one."""


@dataclass(slots=True, kw_only=True)
class SourceBlock:
    """A fenced ```python or ```public.json block of an agent."""

    text: str
    """The lines between the fences, joined with newlines."""
    line: int
    """1-based line of the opening fence."""


@dataclass(slots=True, kw_only=True)
class SourcePlaybook:
    """A `## ...` section of the markdown."""

    title: str
    """The header text after `## `."""
    line: int
    """1-based line of the header."""
    column: int
    """1-based column where the title starts."""
    comments: tuple[str, ...] = ()
    """HTML comments written just before the header."""
    metadata: MetadataSource | None = None
    """The playbook's metadata block, if any."""
    description: list[str] = field(default_factory=list)
    """Description lines, right-stripped."""
    sections: dict[str, list[SourceItem]] = field(default_factory=dict)
    """`triggers`, `steps`, `notes` -> top-level items, in the order the sections were written."""
    section_lines: dict[str, int] = field(default_factory=dict)
    """The 1-based line of each section header."""


@dataclass(slots=True, kw_only=True)
class SourceAgent:
    """A `# ...` section of the markdown."""

    title: str
    """The header text after `# `."""
    line: int
    """1-based line of the header."""
    comments: tuple[str, ...] = ()
    """HTML comments written just before the header."""
    metadata: MetadataSource | None = None
    """The agent's metadata block, if any."""
    description: list[str] = field(default_factory=list)
    """Description lines, right-stripped."""
    python_blocks: list[SourceBlock] = field(default_factory=list)
    """```python blocks in order."""
    public_json: Any = None
    """The parsed ```public.json block."""
    public_json_line: int = 0
    """1-based line of the ```public.json fence; 0 when there is none."""
    playbooks: list[SourcePlaybook] = field(default_factory=list)
    """The `##` sections in order."""


@dataclass(slots=True, kw_only=True)
class SourceDocument:
    """A whole markdown file."""

    frontmatter: dict[str, Any] = field(default_factory=dict)
    """The `---` YAML block at the top, if any."""
    agents: list[SourceAgent] = field(default_factory=list)
    """The agents in order."""
    trailing_comments: list[str] = field(default_factory=list)
    """HTML comments after the last content."""


def read_markdown(text: str, reporter: SourceReporter) -> SourceDocument:
    """The source tree of a markdown file (`reporter` holds its text); problems go to `reporter`."""
    outline = read_outline(reporter, MARKDOWN)
    lists = _ListReader(reporter)
    return SourceDocument(
        frontmatter=outline.frontmatter,
        agents=[_agent(agent, lists, reporter) for agent in outline.agents],
        trailing_comments=list(outline.trailing_comments),
    )


def _agent(source: OutlineAgent, lists: _ListReader, reporter: SourceReporter) -> SourceAgent:
    agent = SourceAgent(
        title=source.title,
        line=source.line,
        comments=source.comments,
        metadata=source.metadata,
        description=source.description,
    )
    for block in source.blocks:
        if block.language == "python":
            agent.python_blocks.append(SourceBlock(text=block.text, line=block.line))
        elif agent.public_json_line:
            reporter.error(
                DUPLICATE,
                f"this agent already has a ```public.json block (line {agent.public_json_line})",
                block.line,
                1,
                14,
            )
        else:
            value, read = public_json_of(block, reporter)
            if read:
                agent.public_json = value
                agent.public_json_line = block.line
    agent.playbooks = [_playbook(playbook, lists, reporter) for playbook in source.playbooks]
    return agent


def _playbook(source: OutlinePlaybook, lists: _ListReader, reporter: SourceReporter) -> SourcePlaybook:
    playbook = SourcePlaybook(
        title=source.title,
        line=source.line,
        column=source.column,
        comments=source.comments,
        metadata=source.metadata,
        description=source.description,
    )
    for section in source.sections:
        if section.repeated:
            reporter.error(
                DUPLICATE,
                f"this playbook already has a '### {section.title}' section (line {section.repeated})",
                section.line,
                section.column,
                len(section.title),
            )
            continue
        playbook.sections[section.key] = lists.items(section)
        playbook.section_lines[section.key] = section.line
    return playbook


class _ListReader:
    """A section's lines as markdown list items: nesting by indentation, continuation lines joined."""

    def __init__(self, reporter: SourceReporter) -> None:
        self.reporter = reporter
        self.too_deep_reported = False
        """One error for lists nested too deep in a file: the tools walk the steps recursively."""

    def items(self, section: Section) -> list[SourceItem]:
        top: list[SourceItem] = []
        open_items: list[SourceItem] = []
        blank_since_item = False
        for number, line in section.lines:
            if not line.strip():
                blank_since_item = True
                continue
            match = _ITEM_RE.match(line)
            if match is not None:
                text = match.group("text") or ""
                if not text:
                    self.reporter.error(BAD_STEP, "empty list item", number, match.start("bullet") + 1, 1)
                    continue
                indent = len(match.group("indent").expandtabs(4))
                item = SourceItem(text=text, line=number, column=match.start("text") + 1, indent=indent)
                while open_items and open_items[-1].indent >= indent:
                    open_items.pop()
                if len(open_items) >= MAX_STEP_DEPTH:
                    self.too_deep(len(open_items) + 1, number, match.start("bullet") + 1)
                    continue
                (open_items[-1].children if open_items else top).append(item)
                open_items.append(item)
                blank_since_item = False
                continue
            indented = line[:1] in (" ", "\t")
            plain_trigger = section.key == "triggers" and not indented
            if plain_trigger and (not open_items or open_items[-1].plain or blank_since_item):
                # `At the beginning` without a bullet: one trigger per line, as some authors write them.
                text = line.strip()
                self.reporter.warn(
                    PLAIN_SECTION_LINE,
                    f"trigger {text!r} is not a list item; read as '- {text}'",
                    number,
                    1,
                    len(text),
                )
                item = SourceItem(text=text, line=number, column=1, plain=True)
                top.append(item)
                open_items = [item]
                blank_since_item = False
                continue
            if open_items and (indented or not blank_since_item):
                # A continuation line of the last item (indented, or a lazy continuation right under it).
                last = open_items[-1]
                last.text = f"{last.text} {line.strip()}"
                continue
            what = {"steps": "step", "triggers": "trigger", "notes": "note"}[section.key]
            self.reporter.error(
                BAD_STEP,
                f"expected a list item ('- ...') in the '### {section.key.capitalize()}' section, "
                f"one {what} per item",
                number,
                len(line) - len(line.lstrip()) + 1,
            )
        return top

    def too_deep(self, depth: int, number: int, column: int) -> None:
        if self.too_deep_reported:
            return
        self.reporter.error(
            TOO_DEEP,
            f"list item nested {depth} levels deep; steps nest at most {MAX_STEP_DEPTH} levels",
            number,
            column,
            1,
        )
        self.too_deep_reported = True

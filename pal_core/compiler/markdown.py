"""Reading Playbooks markdown (`.pb`) into a source tree: agents, playbooks, sections and nested list items.

Nothing is interpreted here beyond the document structure; every piece keeps its line and column so
later stages can point at the markdown. Problems are reported to the SourceReporter and reading goes on, so
one pass finds them all.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Any

from pal_core import yamlish
from pal_core.codes import (
    BAD_METADATA,
    BAD_PUBLIC_JSON,
    BAD_STEP,
    DUPLICATE,
    PLAIN_SECTION_LINE,
    SECTION_LEVEL,
    TOO_DEEP,
    UNKNOWN_SECTION,
    UNPLACEABLE,
    UNTERMINATED,
)
from pal_core.errors import SourceReporter
from pal_core.ir import MAX_STEP_DEPTH
from pal_core.outline import first_line_index, is_separator, unescaped

_HEADING_RE = re.compile(r"(?P<hashes>#{1,6})(?:[ \t]+(?P<title>.*?))?[ \t]*\Z")
_ITEM_RE = re.compile(r"(?P<indent>[ \t]*)(?P<bullet>[-*+]|\d{1,9}[.)])(?:[ \t]+(?P<text>.*?))?[ \t]*\Z")
_SECTION_NAMES = {
    "triggers": "triggers",
    "trigger": "triggers",
    "steps": "steps",
    "step": "steps",
    "notes": "notes",
    "note": "notes",
}
# Metadata keys recognised when written bare under a header (`meeting: true`), as older .pb files do.
BARE_METADATA_KEYS = frozenset(
    {
        "public",
        "meeting",
        "required_attendees",
        "optional_attendees",
        "startup_mode",
        "execution_mode",
        "python",
        "remote",
    }
)
_BARE_KEY_RE = re.compile(r"(?P<key>[a-z_]+):(?:[ \t]|\Z)")


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
class MetadataSource:
    """A metadata block as YAML data, with where it was written."""

    data: dict[str, Any]
    """The YAML mapping."""
    lines: list[tuple[int, str]]
    """The block's source lines, to place errors on the key they concern."""
    line: int
    """1-based line where the block starts."""


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


class _State(Enum):
    TOP = auto()
    AGENT_HEAD = auto()
    AGENT_DESCRIPTION = auto()
    PLAYBOOK_HEAD = auto()
    PLAYBOOK_DESCRIPTION = auto()
    SECTION = auto()
    SKIP = auto()
    """After a misplaced or unknown section: its lines are skipped so one mistake gives one error."""


def split_lines(text: str) -> list[str]:
    """Lines as the PAL parser counts them: only `\\n`, `\\r\\n` and `\\r` end a line (not U+2028)."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


def read_markdown(text: str, reporter: SourceReporter) -> SourceDocument:
    """The source tree of a markdown file; problems go to `reporter`."""
    return _Reader(text, reporter).run()


class _Reader:
    def __init__(self, text: str, reporter: SourceReporter) -> None:
        self.lines = split_lines(text)
        self.reporter = reporter
        self.document = SourceDocument()
        self.state = _State.TOP
        self.index = 0
        # Comments not yet placed: (text, source lines followed by the blank lines after them). The next
        # line decides: text keeps them in the description, a header takes them, the end of file too.
        self.pending_comments: list[tuple[str, list[str]]] = []
        self.section: list[SourceItem] = []
        self.section_name = ""
        self.open_items: list[SourceItem] = []
        self.blank_since_item = False
        self.too_deep_reported = False

    # --- driver ------------------------------------------------------------------------------------

    def run(self) -> SourceDocument:
        self.index = first_line_index(self.lines)
        if self.index < len(self.lines) and self.lines[self.index].strip() == "---":
            self.read_frontmatter()
        while self.index < len(self.lines):
            number = self.index + 1
            line = self.lines[self.index]
            self.index += 1
            if is_separator(self.lines, number - 1):
                continue  # `---` between agents or playbooks: markdown's rule, not text
            self.dispatch(number, line)
        self.document.trailing_comments.extend(text for text, _ in self.pending_comments)
        return self.document

    def dispatch(self, number: int, line: str) -> None:
        stripped = line.strip()
        if stripped.startswith("<!--"):
            self.read_comment(number, line)
            return
        if stripped.startswith("```"):
            self.read_fence(number, stripped[3:].strip())
            return
        heading = _HEADING_RE.match(line) if line.startswith("#") else None
        if heading is not None:
            level = len(heading.group("hashes"))
            title = heading.group("title") or ""
            column = heading.start("title") + 1 if heading.group("title") else level + 1
            if level == 1:
                self.start_agent(number, title)
                return
            if level == 2:
                if self.in_playbook() and title.lower().rstrip(":").strip() in _SECTION_NAMES:
                    # `## Steps` one level up, as some authors write it: a section, not a playbook.
                    self.reporter.warn(
                        SECTION_LEVEL,
                        f"'## {title}' inside playbook {self.document.agents[-1].playbooks[-1].title!r} is "
                        f"read as its '### {title}' section; write sections with '###'",
                        number,
                        1,
                        len(line.rstrip()),
                    )
                    self.start_section(number, title, column)
                    return
                self.start_playbook(number, title, column)
                return
            if level == 3:
                self.start_section(number, title, column)
                return
            self.read_minor_heading(number, line)
            return
        if not stripped:
            if self.pending_comments:
                self.pending_comments[-1][1].append("")
            elif self.state in (_State.AGENT_DESCRIPTION, _State.PLAYBOOK_DESCRIPTION):
                self.description().append("")
            self.blank_since_item = True
            return
        metadata_allowed = (
            self.state in (_State.AGENT_HEAD, _State.PLAYBOOK_HEAD) or self.metadata_may_follow()
        )
        if metadata_allowed and self.read_leading_metadata(number, line):
            return
        self.settle_comments()
        self.state = self.description_state()
        if self.state in (_State.AGENT_DESCRIPTION, _State.PLAYBOOK_DESCRIPTION):
            self.description().append(unescaped(line.rstrip()))
        elif self.state is _State.SECTION:
            self.read_item(number, line)
        elif self.state is _State.TOP:
            self.reporter.error(
                UNPLACEABLE, "text before the first agent header; start the file with '# Agent name'", number
            )
            self.state = _State.SKIP

    def read_minor_heading(self, number: int, line: str) -> None:
        """`####` and deeper: text of a description; nothing else can hold them."""
        self.settle_comments()
        self.state = self.description_state()
        if self.state in (_State.AGENT_DESCRIPTION, _State.PLAYBOOK_DESCRIPTION):
            self.description().append(line.rstrip())
        elif self.state is _State.SECTION:
            self.reporter.error(
                BAD_STEP, "a heading inside a list; only '#', '##' and '###' headers end a section", number, 1
            )
        elif self.state is _State.TOP:
            self.reporter.error(
                UNPLACEABLE, "text before the first agent header; start the file with '# Agent name'", number
            )
            self.state = _State.SKIP

    def description_state(self) -> _State:
        if self.state in (_State.AGENT_HEAD, _State.AGENT_DESCRIPTION):
            return _State.AGENT_DESCRIPTION
        if self.state in (_State.PLAYBOOK_HEAD, _State.PLAYBOOK_DESCRIPTION):
            return _State.PLAYBOOK_DESCRIPTION
        return self.state

    def description(self) -> list[str]:
        agent = self.document.agents[-1]
        if self.state is _State.PLAYBOOK_DESCRIPTION:
            return agent.playbooks[-1].description
        return agent.description

    def take_comments(self) -> tuple[str, ...]:
        comments = tuple(text for text, _ in self.pending_comments)
        self.pending_comments.clear()
        return comments

    def settle_comments(self) -> None:
        """Text follows the pending comments: in a description they are part of it; elsewhere (between
        list items, before metadata) they are notes to the author, which PAL has no place for."""
        if self.pending_comments and self.state in (
            _State.AGENT_HEAD,
            _State.PLAYBOOK_HEAD,
            _State.AGENT_DESCRIPTION,
            _State.PLAYBOOK_DESCRIPTION,
        ):
            self.state = self.description_state()
            for _, lines in self.pending_comments:
                self.description().extend(lines)
        self.pending_comments.clear()

    # --- headers -----------------------------------------------------------------------------------

    def start_agent(self, number: int, title: str) -> None:
        self.document.agents.append(SourceAgent(title=title, line=number, comments=self.take_comments()))
        self.state = _State.AGENT_HEAD

    def start_playbook(self, number: int, title: str, column: int) -> None:
        comments = self.take_comments()
        if not self.document.agents:
            self.reporter.error(
                UNPLACEABLE, "playbook header before the first agent header ('# Agent name')", number, 1, 2
            )
            # A stand-in agent keeps the rest of the file readable, so its problems are found too.
            self.document.agents.append(SourceAgent(title="", line=0))
        self.document.agents[-1].playbooks.append(
            SourcePlaybook(title=title, line=number, column=column, comments=comments)
        )
        self.state = _State.PLAYBOOK_HEAD

    def in_playbook(self) -> bool:
        """Whether the line being read is inside a playbook (its head, description or sections)."""
        return self.state in (
            _State.PLAYBOOK_HEAD,
            _State.PLAYBOOK_DESCRIPTION,
            _State.SECTION,
        ) or bool(self.state is _State.SKIP and self.document.agents and self.document.agents[-1].playbooks)

    def start_section(self, number: int, title: str, column: int) -> None:
        self.pending_comments.clear()
        if not self.in_playbook():
            self.reporter.error(
                UNPLACEABLE,
                f"'### {title}' outside a playbook; put it under a '## Playbook name' header",
                number,
                1,
                len(title) + 4,
            )
            self.state = _State.SKIP
            return
        key = _SECTION_NAMES.get(title.lower().rstrip(":"))
        if key is None:
            self.reporter.error(
                UNKNOWN_SECTION,
                f"unknown section '### {title}'; a playbook has '### Triggers', '### Steps' and '### Notes'",
                number,
                column,
                len(title),
            )
            self.state = _State.SKIP
            return
        playbook = self.document.agents[-1].playbooks[-1]
        if key in playbook.sections:
            self.reporter.error(
                DUPLICATE,
                f"this playbook already has a '### {title}' section (line {playbook.section_lines[key]})",
                number,
                column,
                len(title),
            )
            self.state = _State.SKIP
            return
        self.section = playbook.sections[key] = []
        playbook.section_lines[key] = number
        self.section_name = key
        self.open_items = []
        self.blank_since_item = False
        self.state = _State.SECTION

    # --- list items --------------------------------------------------------------------------------

    def read_item(self, number: int, line: str) -> None:
        match = _ITEM_RE.match(line)
        if match is not None:
            text = match.group("text") or ""
            if not text:
                self.reporter.error(BAD_STEP, "empty list item", number, match.start("bullet") + 1, 1)
                return
            indent = len(match.group("indent").expandtabs(4))
            item = SourceItem(text=text, line=number, column=match.start("text") + 1, indent=indent)
            while self.open_items and self.open_items[-1].indent >= indent:
                self.open_items.pop()
            if len(self.open_items) >= MAX_STEP_DEPTH:
                # Each list level becomes a level of steps; the tools walk steps recursively.
                if not self.too_deep_reported:
                    self.reporter.error(
                        TOO_DEEP,
                        f"list item nested {len(self.open_items) + 1} levels deep; steps nest at most "
                        f"{MAX_STEP_DEPTH} levels",
                        number,
                        match.start("bullet") + 1,
                        1,
                    )
                    self.too_deep_reported = True
                return
            if self.open_items:
                self.open_items[-1].children.append(item)
            else:
                self.section.append(item)
            self.open_items.append(item)
            self.blank_since_item = False
            return
        indented = line[:1] in (" ", "\t")
        plain_trigger = self.section_name == "triggers" and not indented
        if plain_trigger and (not self.open_items or self.open_items[-1].plain or self.blank_since_item):
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
            self.section.append(item)
            self.open_items = [item]
            self.blank_since_item = False
            return
        if self.open_items and (indented or not self.blank_since_item):
            # A continuation line of the last item (indented, or a lazy continuation right under it).
            last = self.open_items[-1]
            last.text = f"{last.text} {line.strip()}"
            return
        what = {"steps": "step", "triggers": "trigger", "notes": "note"}[self.section_name]
        self.reporter.error(
            BAD_STEP,
            f"expected a list item ('- ...') in the '### {self.section_name.capitalize()}' section, "
            f"one {what} per item",
            number,
            len(line) - len(line.lstrip()) + 1,
        )

    # --- blocks ------------------------------------------------------------------------------------

    def read_frontmatter(self) -> None:
        start = self.index + 1
        self.index = start
        body: list[tuple[int, str]] = []
        while self.index < len(self.lines):
            line = self.lines[self.index]
            self.index += 1
            if line.strip() == "---":
                data = self.load_yaml(body)
                self.document.frontmatter = data if data is not None else {}
                return
            body.append((self.index, line))
        self.reporter.error(UNTERMINATED, "front matter opened with '---' is never closed", start, 1, 3)
        self.index = len(self.lines)

    def metadata_may_follow(self) -> bool:
        """In a description without metadata yet, at the start of a paragraph: a metadata paragraph
        (`remote:` after an agent's description, as older .pb files write it) may start here."""
        if self.state not in (_State.AGENT_DESCRIPTION, _State.PLAYBOOK_DESCRIPTION):
            return False
        agent = self.document.agents[-1]
        owner = agent.playbooks[-1] if self.state is _State.PLAYBOOK_DESCRIPTION else agent
        lines = self.description()
        return owner.metadata is None and (not lines or not lines[-1].strip())

    def read_leading_metadata(self, number: int, line: str) -> bool:
        """A `metadata:` block, or bare known `key: value` lines, under a header or as a paragraph of
        its description."""
        if line.rstrip() == "metadata:":
            body = self.metadata_block_body()
        else:
            match = _BARE_KEY_RE.match(line)
            if match is None or match.group("key") not in BARE_METADATA_KEYS:
                return False
            body = [(number, line), *self.bare_metadata_body()]
        self.pending_comments.clear()
        data = self.load_yaml(body)
        source = MetadataSource(data=data or {}, lines=body, line=number)
        agent = self.document.agents[-1]
        if self.state in (_State.PLAYBOOK_HEAD, _State.PLAYBOOK_DESCRIPTION):
            agent.playbooks[-1].metadata = source
            self.state = _State.PLAYBOOK_DESCRIPTION
        else:
            agent.metadata = source
            self.state = _State.AGENT_DESCRIPTION
        return True

    def metadata_block_body(self) -> list[tuple[int, str]]:
        """The lines of a `metadata:` block: up to a `---` line if one comes before the next header,
        else the indented lines that follow."""
        for end in range(self.index, len(self.lines)):
            candidate = self.lines[end]
            if candidate.strip() == "---":
                body = [(number + 1, self.lines[number]) for number in range(self.index, end)]
                self.index = end + 1
                return body
            if not candidate.strip() or candidate.startswith("#") or candidate.strip().startswith("```"):
                break
        body = []
        while self.index < len(self.lines):
            candidate = self.lines[self.index]
            if candidate.strip() and candidate[:1] not in (" ", "\t"):
                break
            body.append((self.index + 1, candidate))
            self.index += 1
        return body

    def bare_metadata_body(self) -> list[tuple[int, str]]:
        """Lines continuing bare metadata: indented values, or more known keys; a blank line ends it."""
        body: list[tuple[int, str]] = []
        while self.index < len(self.lines):
            candidate = self.lines[self.index]
            if not candidate.strip():
                break
            key = _BARE_KEY_RE.match(candidate)
            known = key is not None and key.group("key") in BARE_METADATA_KEYS
            if candidate[:1] not in (" ", "\t") and not known:
                break
            body.append((self.index + 1, candidate))
            self.index += 1
        return body

    def load_yaml(self, body: list[tuple[int, str]]) -> dict[str, Any] | None:
        try:
            return yamlish.load(body)
        except yamlish.YamlError as error:
            self.reporter.error(BAD_METADATA, error.message, error.line, error.column)
            return None

    def read_comment(self, number: int, line: str) -> None:
        collected = [line.rstrip()]
        opening = line.find("<!--")
        tail = line[opening + 4 :]
        while "-->" not in tail:
            if self.index >= len(self.lines):
                self.reporter.error(
                    UNTERMINATED, "comment opened with '<!--' is never closed", number, opening + 1, 4
                )
                return
            tail = self.lines[self.index]
            collected.append(tail.rstrip())
            self.index += 1
        if tail[tail.find("-->") + 3 :].strip():
            self.reporter.error(
                UNPLACEABLE, "text after '-->' on the same line; put it on a line of its own", number
            )
            return
        self.pending_comments.append(("\n".join(collected).strip(), collected))

    def read_fence(self, number: int, language: str) -> None:
        body: list[str] = []
        while self.index < len(self.lines):
            current = self.lines[self.index]
            self.index += 1
            if current.strip() == "```":
                break
            body.append(current)
        else:
            self.reporter.error(
                UNTERMINATED, "fenced block opened here is never closed with ```", number, 1, 3
            )
            self.index = len(self.lines)  # everything after an open fence would be code anyway
            return
        if language in ("python", "public.json"):
            # Pending comments stay pending: code is written apart from the text, so the text after the
            # block decides where they go.
            if not self.document.agents or self.state is _State.TOP:
                self.reporter.error(
                    UNPLACEABLE, f"```{language} block before the first agent header", number, 1, 3
                )
                return
            agent = self.document.agents[-1]
            if language == "python":
                agent.python_blocks.append(SourceBlock(text="\n".join(body), line=number))
            else:
                self.read_public_json(agent, number, body)
            if self.state is _State.AGENT_HEAD:
                self.state = _State.AGENT_DESCRIPTION
            elif self.state is _State.PLAYBOOK_HEAD:
                self.state = _State.PLAYBOOK_DESCRIPTION
            return
        self.settle_comments()
        self.state = self.description_state()
        if self.state in (_State.AGENT_DESCRIPTION, _State.PLAYBOOK_DESCRIPTION):
            # Other fenced blocks are part of a description (a prompt may show an example).
            fence = "```" + language
            self.description().extend([fence, *(text.rstrip() for text in body), "```"])
            return
        if self.state is _State.SKIP:
            return
        self.reporter.error(
            UNPLACEABLE,
            f"a ```{language or ''} block can only be part of a description, or an agent's ```python or "
            "```public.json block",
            number,
            1,
            3 + len(language),
        )

    def read_public_json(self, agent: SourceAgent, number: int, body: list[str]) -> None:
        if agent.public_json_line:
            self.reporter.error(
                DUPLICATE,
                f"this agent already has a ```public.json block (line {agent.public_json_line})",
                number,
                1,
                14,
            )
            return
        try:
            agent.public_json = json.loads("\n".join(body)) if any(line.strip() for line in body) else None
        except RecursionError:
            self.reporter.error(BAD_PUBLIC_JSON, "public.json is nested too deeply to read", number + 1, 1)
            return
        except json.JSONDecodeError as error:
            self.reporter.error(
                BAD_PUBLIC_JSON,
                f"public.json is not valid JSON: {error.msg}",
                number + error.lineno,
                error.colno,
            )
            return
        agent.public_json_line = number

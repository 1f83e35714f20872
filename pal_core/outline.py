"""One reader of the document outline under both front-ends: the PAL parser and the markdown compiler.

Both read one shape: optional front matter, agents under `#` headers, playbooks under `##`, sections under
`###`, a `metadata:` block under a header, descriptions, ```python / ```public.json blocks that belong to
the agent, other fenced blocks and `<!-- -->` comments that belong to descriptions or to the next header.
`read_outline` reads that shape into an `Outline` and reports what cannot be placed; each front-end then
interprets only its own parts: the header titles, the metadata values, the code blocks and the lines of
each section (PAL step lines for the parser, markdown lists for the compiler).

Where the two genuinely differ, a `Dialect` says how: PAL is exact and loses no line (text where none
belongs is an error on every line, comments between section lines are errors); markdown is what authors
write (any heading level, `## Steps` one level up, bare `key: value` metadata, a misplaced part reported
once and skipped, comments between list items dropped as notes to the author).
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
    SECTION_LEVEL,
    UNKNOWN_SECTION,
    UNPLACEABLE,
    UNTERMINATED,
)
from pal_core.description_text import unescaped
from pal_core.errors import SourceReporter
from pal_core.metadata import MetadataSource

THEMATIC_BREAK_RE = re.compile(
    r"[ ]{0,3}(?:-[ \t]*){3,}\Z|[ ]{0,3}(?:\*[ \t]*){3,}\Z|[ ]{0,3}(?:_[ \t]*){3,}\Z"
)
"""A markdown thematic break (`---`, `***`, `___`), which authors write between agents and playbooks."""

_BREAK_CHARACTERS = frozenset("-*_")
_STRUCTURE_CHARACTERS = frozenset("<`#")
"""First characters (after indentation) of the lines that may be structure: comments, fences, headers."""
AGENT_BLOCKS = ("python", "public.json")
"""The languages of the fenced blocks that belong to the agent wherever they stand."""

_MARKDOWN_HEADING_RE = re.compile(r"(?P<hashes>#{1,6})(?:[ \t]+(?P<title>.*?))?[ \t]*\Z")
_SECTION_KEYS = {"triggers": "triggers", "steps": "steps", "notes": "notes"}
_LOOSE_SECTION_KEYS = {**_SECTION_KEYS, "trigger": "triggers", "step": "steps", "note": "notes"}
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


# --- the outline -----------------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class CodeBlock:
    """A ```python or ```public.json block of an agent."""

    language: str
    """`python` or `public.json`."""
    text: str
    """The lines between the fences, joined with newlines."""
    line: int
    """1-based line of the opening fence."""


@dataclass(slots=True, kw_only=True)
class Section:
    """A `### Triggers` / `### Steps` / `### Notes` section and its lines, for the front-end to read."""

    key: str
    """`triggers`, `steps` or `notes`."""
    title: str
    """The title as written."""
    line: int
    """1-based line of the section header."""
    column: int
    """1-based column where the title starts."""
    lines: list[tuple[int, str]] = field(default_factory=list)
    """(1-based line, text) of each line until the next header or agent block, blank lines included."""
    repeated: int = 0
    """The line of the playbook's earlier section of this kind; 0 when it is the first."""


@dataclass(slots=True, kw_only=True)
class OutlinePlaybook:
    """A `## ...` part: a playbook."""

    title: str
    """The header text after `##`."""
    header: str
    """The whole header line."""
    line: int
    """1-based line of the header."""
    column: int
    """1-based column where the title starts."""
    comments: tuple[str, ...] = ()
    """HTML comments written just before the header."""
    metadata: MetadataSource | None = None
    """The playbook's metadata block, if any."""
    description: list[str] = field(default_factory=list)
    """Description lines, right-stripped and unescaped."""
    sections: list[Section] = field(default_factory=list)
    """Its sections in the order written (a repeated one is there too, marked)."""


@dataclass(slots=True, kw_only=True)
class OutlineAgent:
    """A `# ...` part: an agent."""

    title: str
    """The header text after `#`."""
    line: int
    """1-based line of the header; 0 for the stand-in that holds playbooks written before any agent."""
    comments: tuple[str, ...] = ()
    """HTML comments written just before the header."""
    metadata: MetadataSource | None = None
    """The agent's metadata block, if any."""
    description: list[str] = field(default_factory=list)
    """Description lines, right-stripped and unescaped."""
    blocks: list[CodeBlock] = field(default_factory=list)
    """Its ```python and ```public.json blocks, in order."""
    playbooks: list[OutlinePlaybook] = field(default_factory=list)
    """Its `##` parts in order."""


@dataclass(slots=True, kw_only=True)
class Outline:
    """A whole document."""

    frontmatter: dict[str, Any] = field(default_factory=dict)
    """The `---` YAML block at the top, if any."""
    agents: list[OutlineAgent] = field(default_factory=list)
    """The agents in order."""
    trailing_comments: list[str] = field(default_factory=list)
    """HTML comments after the last content."""


# --- what differs between PAL and markdown ---------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Dialect:
    """How one front-end's document differs from the other's."""

    agent_hint: str
    """How an agent header is shown in messages."""
    markdown_headings: bool
    """Headings as markdown writes them (`#` to `######`, `####` and deeper are text), or PAL's exact `# `,
    `## ` and `### ` (anything else starting with `#` is text)."""
    loose_sections: bool
    """`### Step`, `### Steps:` and `## Steps` inside a playbook (warning PAL021) name sections too."""
    loose_metadata: bool
    """Bare `key: value` metadata, a `metadata:` block closed by its indentation, and a metadata paragraph
    after the description, as older .pb files write them."""
    exact: bool
    """PAL: no line is dropped (text where none belongs is an error on every line; a comment between
    section lines is an error; an agent block or unknown section ends a playbook's text) and separators
    count only between sections. Markdown: a misplaced part is reported once and skipped, comments between
    list items are dropped, and a `---` before any header separates."""


PAL = Dialect(
    agent_hint="'# AgentName'",
    markdown_headings=False,
    loose_sections=False,
    loose_metadata=False,
    exact=True,
)
"""The PAL text format (seeds 000/001 and the compiled programs of the original project)."""

MARKDOWN = Dialect(
    agent_hint="'# Agent name'", markdown_headings=True, loose_sections=True, loose_metadata=True, exact=False
)
"""Playbooks markdown (`.pb`) as its authors write it."""


def read_outline(reporter: SourceReporter, dialect: Dialect) -> Outline:
    """The outline of the document `reporter` holds; what cannot be placed goes to `reporter`."""
    return _OutlineReader(reporter, dialect).run()


def first_line_index(lines: list[str]) -> int:
    """Where the document starts: after a `#!` line (`#!/usr/bin/env pb`), which makes a file runnable and
    is not part of the program."""
    return 1 if lines and lines[0].startswith("#!") else 0


def is_separator(lines: list[str], index: int) -> bool:
    """Whether line `index` is a thematic break that only separates: the next line with text is a `#`
    header, or there is none."""
    if THEMATIC_BREAK_RE.match(lines[index]) is None:
        return False
    for following in lines[index + 1 :]:
        if following.strip():
            return following.startswith("#")
    return True


def section_key(title: str, dialect: Dialect) -> str | None:
    """`steps`, `triggers` or `notes` for a section title; None for another title."""
    if dialect.loose_sections:
        return _LOOSE_SECTION_KEYS.get(title.lower().rstrip(":").strip())
    return _SECTION_KEYS.get(title.lower())


class _State(Enum):
    TOP = auto()
    AGENT_HEAD = auto()
    AGENT_DESCRIPTION = auto()
    PLAYBOOK_HEAD = auto()
    PLAYBOOK_DESCRIPTION = auto()
    SECTION = auto()
    CLOSED = auto()
    """No text belongs here: after an agent block ending a playbook's text or an unknown section (PAL:
    each line an error), or after a misplaced part (markdown: skipped, one mistake one error)."""


_HEADS = (_State.AGENT_HEAD, _State.PLAYBOOK_HEAD)
_DESCRIPTIONS = (_State.AGENT_DESCRIPTION, _State.PLAYBOOK_DESCRIPTION)


@dataclass(frozen=True, slots=True)
class _Heading:
    level: int
    title: str
    column: int


class _OutlineReader:
    def __init__(self, reporter: SourceReporter, dialect: Dialect) -> None:
        self.reporter = reporter
        self.dialect = dialect
        self.lines = reporter.lines
        self.outline = Outline()
        self.state = _State.TOP
        self.index = 0
        self.section: Section | None = None
        self.metadata_read = False
        """Whether the current header already has its metadata block (PAL)."""
        # Comments not yet placed: (line, text, source lines followed by the blank lines after them). The next
        # line decides: text keeps them in the description, a header takes them, the end of the file too.
        self.pending: list[tuple[int, str, list[str]]] = []

    def error(self, code: str, message: str, line: int, column: int = 1, length: int = 0) -> None:
        self.reporter.error(code, message, line, column, length)

    # --- driver --------------------------------------------------------------------------------------

    def run(self) -> Outline:
        self.index = first_line_index(self.lines)
        if self.index < len(self.lines) and self.lines[self.index].strip() == "---":
            self.read_frontmatter()
        while self.index < len(self.lines):
            number = self.index + 1
            line = self.lines[self.index]
            self.index += 1
            first = line.lstrip()[:1]
            # A thematic break is its character repeated (spaces between): `- 01:QUE` is not one.
            if first in _BREAK_CHARACTERS and not line.strip(f"{first} \t") and self.separates(number - 1):
                continue  # `---` between agents or playbooks: markdown's rule, not text
            section = self.section
            if (
                section is not None
                and self.state is _State.SECTION
                and first
                and first not in _STRUCTURE_CHARACTERS
                and not self.pending
            ):
                # Most lines of a program are section lines: kept for the front-end with no more looking.
                section.lines.append((number, line))
                continue
            self.dispatch(number, line)
        self.outline.trailing_comments.extend(text for _, text, _ in self.pending)
        return self.outline

    def separates(self, index: int) -> bool:
        if self.dialect.exact and self.state not in (_State.SECTION, _State.CLOSED):
            return False  # in PAL a `---` in a description is text
        return is_separator(self.lines, index)

    def dispatch(self, number: int, line: str) -> None:
        stripped = line.strip()
        # One look at the first character spares most lines (steps) the structural checks below.
        head = stripped[:1]
        if head == "<" and stripped.startswith("<!--"):
            self.read_comment(number, line)
            return
        if head == "`" and stripped.startswith("```"):
            self.read_fence(number, line, stripped[3:].strip())
            return
        if line[:1] == "#":
            heading = self.heading(line)
            if heading is not None:
                self.start(number, line, heading)
                return
        if not stripped:
            if self.pending:
                self.pending[-1][2].append("")
            elif self.state in _DESCRIPTIONS:
                self.description().append("")
            if self.state is _State.SECTION and self.section is not None:
                self.section.lines.append((number, ""))  # a blank line ends a markdown list item
            return
        self.read_text(number, line, stripped)

    def heading(self, line: str) -> _Heading | None:
        if self.dialect.markdown_headings:
            match = _MARKDOWN_HEADING_RE.match(line)
            if match is None:
                return None
            level = len(match.group("hashes"))
            title = match.group("title") or ""
            return _Heading(level, title, match.start("title") + 1 if match.group("title") else level + 1)
        if line.startswith("# "):
            return _Heading(1, line[2:].strip(), 3)
        if line.startswith("## ") or line.strip() == "##":
            return _Heading(2, line[2:].strip(), 4)
        if line.startswith("### "):
            return _Heading(3, line[4:].strip(), 5)
        return None  # `#### x`, `#x`: text

    def start(self, number: int, line: str, heading: _Heading) -> None:
        if heading.level == 1:
            self.start_agent(number, heading.title)
        elif heading.level == 2:
            if (
                self.dialect.loose_sections
                and self.in_playbook()
                and section_key(heading.title, self.dialect)
            ):
                # `## Steps` one level up, as some authors write it: a section, not a playbook.
                self.reporter.warn(
                    SECTION_LEVEL,
                    f"'## {heading.title}' inside playbook {self.playbook().title!r} is read as its "
                    f"'### {heading.title}' section; write sections with '###'",
                    number,
                    1,
                    len(line.rstrip()),
                )
                self.start_section(number, line, heading)
            else:
                self.start_playbook(number, line, heading)
        elif heading.level == 3:
            self.start_section(number, line, heading)
        else:
            self.read_minor_heading(number, line)

    # --- text ----------------------------------------------------------------------------------------

    def read_text(self, number: int, line: str, stripped: str) -> None:
        if self.dialect.loose_metadata:
            if (self.state in _HEADS or self.metadata_may_follow()) and self.read_loose_metadata(
                number, line
            ):
                return
        elif self.state in _HEADS and stripped == "metadata:" and not self.metadata_read:
            if not self.pending:
                # The state stays HEAD: a comment right after the block behaves as after a bare header.
                self.read_metadata_block(number)
                self.metadata_read = True
                return
            self.error(UNPLACEABLE, "a comment cannot stand between a header and its metadata", number)
        self.settle_comments()
        if self.state in _HEADS:
            self.state = self.description_state()
        if self.state in _DESCRIPTIONS:
            self.description().append(unescaped(line.rstrip()))
        elif self.state is _State.SECTION and self.section is not None:
            self.section.lines.append((number, line))
        elif self.state is _State.TOP:
            hint = "expected" if self.dialect.exact else "start the file with"
            self.error(
                UNPLACEABLE, f"text before the first agent header; {hint} {self.dialect.agent_hint}", number
            )
            if not self.dialect.exact:
                self.state = _State.CLOSED
        elif self.dialect.exact:
            self.error(
                UNPLACEABLE,
                "text here cannot be placed: descriptions come before blocks and sections; expected '##', '###' "
                "or a fenced block",
                number,
                len(line) - len(line.lstrip()) + 1,
            )

    def read_minor_heading(self, number: int, line: str) -> None:
        """`####` and deeper in markdown: text of a description; nothing else can hold them."""
        self.settle_comments()
        self.state = self.description_state()
        if self.state in _DESCRIPTIONS:
            self.description().append(line.rstrip())
        elif self.state is _State.SECTION:
            self.error(
                BAD_STEP, "a heading inside a list; only '#', '##' and '###' headers end a section", number, 1
            )
        elif self.state is _State.TOP:
            self.error(
                UNPLACEABLE,
                f"text before the first agent header; start the file with {self.dialect.agent_hint}",
                number,
            )
            self.state = _State.CLOSED

    def description_state(self) -> _State:
        if self.state in (_State.AGENT_HEAD, _State.AGENT_DESCRIPTION):
            return _State.AGENT_DESCRIPTION
        if self.state in (_State.PLAYBOOK_HEAD, _State.PLAYBOOK_DESCRIPTION):
            return _State.PLAYBOOK_DESCRIPTION
        return self.state

    def description(self) -> list[str]:
        agent = self.outline.agents[-1]
        if self.state is _State.PLAYBOOK_DESCRIPTION:
            return agent.playbooks[-1].description
        return agent.description

    def playbook(self) -> OutlinePlaybook:
        return self.outline.agents[-1].playbooks[-1]

    def in_playbook(self) -> bool:
        """Whether the line being read is inside a playbook (its head, description or sections)."""
        if self.state in (_State.PLAYBOOK_HEAD, _State.PLAYBOOK_DESCRIPTION, _State.SECTION):
            return True
        return self.state is _State.CLOSED and bool(self.outline.agents and self.outline.agents[-1].playbooks)

    # --- comments ------------------------------------------------------------------------------------

    def read_comment(self, number: int, line: str) -> None:
        collected = [line.rstrip()]
        opening = line.find("<!--")
        tail = line[opening + 4 :]
        while "-->" not in tail:
            if self.index >= len(self.lines):
                self.error(UNTERMINATED, "comment opened with '<!--' is never closed", number, opening + 1, 4)
                return
            tail = self.lines[self.index]
            collected.append(tail.rstrip())
            self.index += 1
        if tail[tail.find("-->") + 3 :].strip():
            self.error(
                UNPLACEABLE,
                "text after '-->' on the same line"
                + ("" if self.dialect.exact else "; put it on a line of its own"),
                number + (len(collected) - 1 if self.dialect.exact else 0),
            )
            return
        # A comment after a header or inside a description is description text if more text follows, and
        # belongs to the next header (or the end of the file) otherwise; the next line decides.
        self.pending.append((number, "\n".join(collected).strip(), collected))

    def take_comments(self) -> tuple[str, ...]:
        comments = tuple(text for _, text, _ in self.pending)
        self.pending.clear()
        return comments

    def settle_comments(self) -> None:
        """Text follows the pending comments: in a description they are part of it; elsewhere (between
        section lines, before metadata) PAL has no place for them (an error each) and markdown drops them
        (notes to the author)."""
        if not self.pending:
            return
        if self.state in _HEADS or self.state in _DESCRIPTIONS:
            self.state = self.description_state()
            for _, _, lines in self.pending:
                self.description().extend(lines)
        elif self.dialect.exact:
            self.reject_comments()
        self.pending.clear()

    def reject_comments(self) -> None:
        for number, _, _ in self.pending:
            self.error(
                UNPLACEABLE,
                "a comment can only stand before a '#' or '##' header or at the end of the file",
                number,
                1,
                4,
            )
        self.pending.clear()

    # --- headers -------------------------------------------------------------------------------------

    def start_agent(self, number: int, title: str) -> None:
        self.outline.agents.append(OutlineAgent(title=title, line=number, comments=self.take_comments()))
        self.state = _State.AGENT_HEAD
        self.metadata_read = False
        self.section = None

    def start_playbook(self, number: int, line: str, heading: _Heading) -> None:
        comments = self.take_comments()
        if not self.outline.agents:
            self.error(
                UNPLACEABLE,
                f"playbook header before the first agent header ({self.dialect.agent_hint})",
                number,
                1,
                2,
            )
            # A stand-in agent keeps the rest of the file readable, so its problems are found too.
            self.outline.agents.append(OutlineAgent(title="", line=0))
        self.outline.agents[-1].playbooks.append(
            OutlinePlaybook(
                title=heading.title,
                header=line.rstrip(),
                line=number,
                column=heading.column,
                comments=comments,
            )
        )
        self.state = _State.PLAYBOOK_HEAD
        self.metadata_read = False
        self.section = None

    def start_section(self, number: int, line: str, heading: _Heading) -> None:
        title = heading.title
        if not self.dialect.exact:
            self.pending.clear()
        elif self.state in (_State.PLAYBOOK_HEAD, _State.PLAYBOOK_DESCRIPTION):
            self.settle_comments()  # the playbook's description ends with them
        else:
            self.reject_comments()
        if not self.in_playbook():
            if self.dialect.exact:
                self.error(
                    UNPLACEABLE, f"section '### {title}' outside a playbook", number, 1, len(line.rstrip())
                )
                return
            self.error(
                UNPLACEABLE,
                f"'### {title}' outside a playbook; put it under a '## Playbook name' header",
                number,
                1,
                len(title) + 4,
            )
            self.state = _State.CLOSED
            return
        key = section_key(title, self.dialect)
        if key is None:
            self.error(
                UNKNOWN_SECTION,
                f"unknown section '### {title}'; a playbook has '### Triggers', '### Steps' and '### Notes'",
                number,
                heading.column,
                len(title),
            )
            self.state = _State.CLOSED
            return
        playbook = self.playbook()
        earlier = next((section.line for section in playbook.sections if section.key == key), 0)
        self.section = Section(key=key, title=title, line=number, column=heading.column, repeated=earlier)
        playbook.sections.append(self.section)
        # Markdown skips a repeated section's lines (its error is the one problem); PAL reads them on.
        self.state = _State.CLOSED if earlier and not self.dialect.exact else _State.SECTION

    # --- blocks --------------------------------------------------------------------------------------

    def read_frontmatter(self) -> None:
        start = self.index + 1
        self.index = start
        body: list[tuple[int, str]] = []
        while self.index < len(self.lines):
            line = self.lines[self.index]
            self.index += 1
            if line.strip() == "---":
                data = self.load_yaml(body)
                self.outline.frontmatter = data if data is not None else {}
                return
            body.append((self.index, line))
        self.error(UNTERMINATED, "front matter opened with '---' is never closed", start, 1, 3)
        self.index = len(self.lines)

    def read_metadata_block(self, start: int) -> None:
        """PAL: a `metadata:` block right under a header, closed by `---`."""
        body: list[tuple[int, str]] = []
        while self.index < len(self.lines):
            line = self.lines[self.index]
            self.index += 1
            if line.strip() == "---":
                self.set_metadata(body, start)
                return
            if line.startswith("#"):
                self.index -= 1
                break
            body.append((self.index, line))
        self.error(UNTERMINATED, "metadata block is not closed by a '---' line", start)

    def metadata_may_follow(self) -> bool:
        """Markdown, in a description without metadata yet, at the start of a paragraph: a metadata paragraph
        (`remote:` after an agent's description, as older .pb files write it) may start here."""
        if self.state not in _DESCRIPTIONS:
            return False
        agent = self.outline.agents[-1]
        owner = agent.playbooks[-1] if self.state is _State.PLAYBOOK_DESCRIPTION else agent
        lines = self.description()
        return owner.metadata is None and (not lines or not lines[-1].strip())

    def read_loose_metadata(self, number: int, line: str) -> bool:
        """Markdown: a `metadata:` block, or bare known `key: value` lines, under a header or as a paragraph
        of its description."""
        if line.rstrip() == "metadata:":
            body = self.metadata_block_body()
        else:
            match = _BARE_KEY_RE.match(line)
            if match is None or match.group("key") not in BARE_METADATA_KEYS:
                return False
            body = [(number, line), *self.bare_metadata_body()]
        self.pending.clear()
        self.set_metadata(body, number)
        self.state = self.description_state()
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

    def set_metadata(self, body: list[tuple[int, str]], start: int) -> None:
        data = self.load_yaml(body)
        source = MetadataSource(data=data or {}, lines=body, line=start, readable=data is not None)
        agent = self.outline.agents[-1]
        if self.state in (_State.PLAYBOOK_HEAD, _State.PLAYBOOK_DESCRIPTION):
            agent.playbooks[-1].metadata = source
        else:
            agent.metadata = source

    def load_yaml(self, body: list[tuple[int, str]]) -> dict[str, Any] | None:
        try:
            return yamlish.load(body)
        except yamlish.YamlError as error:
            self.error(BAD_METADATA, error.message, error.line, error.column)
            return None

    def read_fence(self, number: int, line: str, language: str) -> None:
        body: list[str] = []
        closing = "```"
        while self.index < len(self.lines):
            current = self.lines[self.index]
            self.index += 1
            if current.strip() == "```":
                closing = current.rstrip()  # kept as written: a description holds it
                break
            body.append(current)
        else:
            self.error(UNTERMINATED, "fenced block opened here is never closed with ```", number, 1, 3)
            self.index = len(self.lines)  # everything after an open fence would be code anyway
            return
        if language in AGENT_BLOCKS:
            self.read_agent_block(number, language, body)
            return
        self.settle_comments()
        self.state = self.description_state()
        if self.state in _DESCRIPTIONS:
            # Other fenced blocks are part of a description (a prompt may show code).
            self.description().extend([line.rstrip(), *(text.rstrip() for text in body), closing])
            return
        if self.state is _State.CLOSED and not self.dialect.exact:
            return
        if self.dialect.exact:
            message = (
                f"a ```{language or 'plain'} block can only be part of a description; agent-level blocks are "
                "```python and ```public.json"
            )
        else:
            message = (
                f"a ```{language} block can only be part of a description, or an agent's ```python or "
                "```public.json block"
            )
        self.error(UNPLACEABLE, message, number, 1, 3 + len(language))

    def read_agent_block(self, number: int, language: str, body: list[str]) -> None:
        if self.dialect.exact:
            self.settle_comments()
        # Markdown: pending comments stay pending: code is written apart from the text, so the text after
        # the block decides where they go.
        if not self.outline.agents or self.state is _State.TOP:
            self.error(UNPLACEABLE, f"```{language} block before the first agent header", number, 1, 3)
            return
        self.outline.agents[-1].blocks.append(CodeBlock(language=language, text="\n".join(body), line=number))
        if self.dialect.exact:
            # An agent-level block ends the playbook's text: code is never part of a prompt.
            self.state = _State.CLOSED
        elif self.state in _HEADS:
            self.state = self.description_state()


def public_json_of(block: CodeBlock, reporter: SourceReporter) -> tuple[Any, bool]:
    """The value of a ```public.json block (None when empty) and whether it could be read."""
    body = block.text.split("\n")
    try:
        return (json.loads(block.text) if any(line.strip() for line in body) else None), True
    except RecursionError:
        reporter.error(BAD_PUBLIC_JSON, "public.json is nested too deeply to read", block.line + 1, 1)
    except json.JSONDecodeError as error:
        reporter.error(
            BAD_PUBLIC_JSON,
            f"public.json is not valid JSON: {error.msg}",
            block.line + error.lineno,
            error.colno,
        )
    return None, False


__all__ = [
    "AGENT_BLOCKS",
    "MARKDOWN",
    "PAL",
    "CodeBlock",
    "Dialect",
    "MetadataSource",
    "Outline",
    "OutlineAgent",
    "OutlinePlaybook",
    "Section",
    "first_line_index",
    "is_separator",
    "public_json_of",
    "read_outline",
    "section_key",
]

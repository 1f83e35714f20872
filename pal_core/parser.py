"""PAL text -> IR.

Reads the seed layout (seeds 000/001) and every form the original compiler wrote (the corpus):
bullet-prefixed steps, `metadata:` blocks closed by `---`, front matter, typed variables, ```python
and ```public.json blocks, `<!-- -->` comments. Nesting follows the line numbers, not the indentation.

Liberal in what it reads, as the original runtime was: compiled programs that left out a trigger's
`T<n>` id or an `@playbook` trigger's code, or that end with a line of model chatter, are read with a
warning each (PAL023-PAL027, `Program.warnings`); the writer then writes the canonical form.

No line is dropped silently: a line that cannot be placed is an error. Errors are collected for the whole
file and raised together as one PalSyntaxError.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import Enum, auto
from pathlib import Path
from typing import Any

from pal_core import yamlish
from pal_core.codes import (
    BAD_HEADER,
    BAD_METADATA,
    BAD_NOTE,
    BAD_PUBLIC_JSON,
    BAD_PYTHON,
    BAD_STEP,
    BAD_TRIGGER,
    DUPLICATE,
    PYTHON_TRIGGER_WITHOUT_CODE,
    TEXT_AFTER_STEPS,
    TOO_DEEP,
    TRIGGER_STRING,
    TRIGGER_WITHOUT_ID,
    UNKNOWN_SECTION,
    UNPLACEABLE,
    UNTERMINATED,
)
from pal_core.errors import SourceReporter
from pal_core.gc_pause import paused_cyclic_gc
from pal_core.ir import (
    EMPTY_METADATA,
    MAX_STEP_DEPTH,
    Agent,
    Metadata,
    Note,
    Parameter,
    Playbook,
    PlaybookKind,
    Program,
    Span,
    Step,
    Trigger,
)
from pal_core.metadata import metadata_from_yaml
from pal_core.outline import first_line_index, is_separator, unescaped
from pal_core.python_blocks import python_playbooks
from pal_core.step_text import split_top_level
from pal_core.triggers import number_python_triggers

_STEP_RE = re.compile(
    r"(?P<indent>[ \t]*)(?:[-*+][ \t]+)?(?P<line>\d+(?:\.\d+)*)[ \t]*:[ \t]*(?P<op>[A-Za-z]+)(?:[ \t]+(?P<text>.*?))?[ \t]*\Z"
)
_TRIGGER_RE = re.compile(
    r"[ \t]*(?:[-*+][ \t]+)?(?P<id>T\d+)[ \t]*:[ \t]*(?P<code>[A-Za-z]+)(?:[ \t]+(?P<text>.*?))?[ \t]*\Z"
)
_NOTE_RE = re.compile(r"[ \t]*(?:[-*+][ \t]+)?(?P<id>N\d+)(?:[ \t]*[:.])?(?:[ \t]+(?P<text>.*?))?[ \t]*\Z")
_PLAYBOOK_HEADER_RE = re.compile(
    r"##[ \t]+(?P<name>[^(\n]*?)[ \t]*(?:\((?P<params>.*)\))?[ \t]*(?:->[ \t]*(?P<returns>.*?))?[ \t]*\Z"
)
_PARAM_RE = re.compile(
    r"[ \t]*(?P<dollar>\$?)(?P<name>[A-Za-z_][A-Za-z0-9_]*)[ \t]*"
    r"(?::[ \t]*(?P<type>[^=]+?))?[ \t]*(?:=[ \t]*(?P<default>.+?))?[ \t]*\Z",
    re.DOTALL,
)
_SECTIONS = {"triggers": "triggers", "steps": "steps", "notes": "notes"}


_LOOSE_TRIGGER_RE = re.compile(
    r"[ \t]*(?:[-*+][ \t]+)?(?:(?P<number>\d+)[ \t]*:[ \t]*)?(?P<code>BGN|CND|EVT)\b[ \t]*:?"
    r"(?:[ \t]*(?P<text>.*?))?[ \t]*\Z"
)
"""A trigger line without its `T<n>` id, as some compiled programs write it: `01:BGN At the beginning`."""
_LIST_ITEM_START_RE = re.compile(r"[ \t]*(?:[-*+][ \t]|\d)")


class _State(Enum):
    TOP = auto()
    AGENT_HEAD = auto()
    AGENT_DESCRIPTION = auto()
    PLAYBOOK_HEAD = auto()
    PLAYBOOK_DESCRIPTION = auto()
    TRIGGERS = auto()
    STEPS = auto()
    NOTES = auto()
    AFTER_BLOCK = auto()


_SECTION_STATES = frozenset({_State.TRIGGERS, _State.STEPS, _State.NOTES, _State.AFTER_BLOCK})


@dataclass
class _FlatStep:
    line: str
    opcode: str
    text: str
    span: Span
    children: list[_FlatStep] = field(default_factory=list)


@dataclass
class _PlaybookDraft:
    name: str
    parameters: tuple[Parameter, ...]
    returns: str | None
    span: Span
    comments: tuple[str, ...]
    metadata: Metadata = EMPTY_METADATA
    description: list[str] = field(default_factory=list)
    triggers: list[Trigger] = field(default_factory=list)
    steps: list[_FlatStep] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    sections: set[str] = field(default_factory=set)


@dataclass
class _AgentDraft:
    name: str
    span: Span
    comments: tuple[str, ...]
    metadata: Metadata = EMPTY_METADATA
    description: list[str] = field(default_factory=list)
    python_blocks: list[str] = field(default_factory=list)
    python_playbooks: list[Playbook] = field(default_factory=list)
    playbooks: list[_PlaybookDraft] = field(default_factory=list)
    public_json: Any = None
    has_public_json: bool = False


def parse(text: str, *, file: str | None = None) -> Program:
    """Read PAL text into a Program; raise PalSyntaxError listing every problem in the text. A leading
    byte order mark is ignored."""
    with paused_cyclic_gc():
        return _Parser(text.removeprefix("\ufeff"), file).run()


def parse_file(path: str | Path) -> Program:
    """Read a .pal (or .pbasm) file (UTF-8; SourceEncodingError otherwise)."""
    from pal_core.sources import read_source

    return parse(read_source(path), file=str(path))


class _Parser:
    def __init__(self, text: str, file: str | None) -> None:
        self.file = file
        self.reporter = SourceReporter(text, file)
        self.lines = self.reporter.lines
        self.state = _State.TOP
        self.agents: list[_AgentDraft] = []
        self.pending_comments: list[tuple[int, str, list[str]]] = []
        self.frontmatter: dict[str, Any] = {}
        self.index = 0
        self.metadata_read = False
        self.trailing_from: int | None = None
        """The first line of the chatter at the end of the file, once looked for (see is_trailing_text)."""

    # --- diagnostics -----------------------------------------------------------------------------

    def error(self, code: str, message: str, line: int, column: int = 1, length: int = 0) -> None:
        self.reporter.error(code, message, line, column, length)

    # --- driver ----------------------------------------------------------------------------------

    def run(self) -> Program:
        self.index = first_line_index(self.lines)
        if self.index < len(self.lines) and self.lines[self.index].strip() == "---":
            self.read_frontmatter()
        while self.index < len(self.lines):
            number = self.index + 1
            line = self.lines[self.index]
            self.index += 1
            if self.state in _SECTION_STATES and is_separator(self.lines, number - 1):
                continue  # `---` after a playbook's sections, before the next header
            self.dispatch(number, line)
        agents = [self.finish_agent(draft) for draft in self.agents]
        self.reporter.raise_if_any()
        return Program(
            agents=tuple(agents),
            frontmatter=self.frontmatter,
            trailing_comments=tuple(text for _, text, _ in self.pending_comments),
            source=self.file,
            warnings=self.reporter.sorted_warnings(),
        )

    def dispatch(self, number: int, line: str) -> None:
        stripped = line.strip()
        in_description = self.state in (_State.AGENT_DESCRIPTION, _State.PLAYBOOK_DESCRIPTION)
        # One look at the first character spares most lines (steps) the structural checks below.
        head = stripped[:1]
        if head == "<" and stripped.startswith("<!--"):
            self.read_comment(number, line)
            return
        if head == "`" and stripped.startswith("```"):
            self.read_fence(number, line, stripped[3:].strip())
            return
        if line[:1] == "#":
            if line.startswith("# "):
                self.start_agent(number, line)
                return
            if line.startswith("## ") or stripped == "##":
                self.start_playbook(number, line)
                return
            if line.startswith("### "):
                self.start_section(number, line)
                return
        if not stripped:
            if self.pending_comments:
                self.pending_comments[-1][2].append("")
            elif in_description:
                self.description_lines().append("")
            return
        if self.pending_comments:
            if (
                self.state in (_State.AGENT_HEAD, _State.PLAYBOOK_HEAD)
                and stripped == "metadata:"
                and not self.metadata_read
            ):
                self.error(UNPLACEABLE, "a comment cannot stand between a header and its metadata", number)
            if self.flush_comments_into_description():
                in_description = True
            else:
                self.reject_pending_comments()
        if self.state in (_State.AGENT_HEAD, _State.PLAYBOOK_HEAD):
            if stripped == "metadata:" and not self.metadata_read:
                # The state stays HEAD: a comment right after the block behaves as after a bare header.
                self.read_metadata(number)
                self.metadata_read = True
                return
            self.state = (
                _State.AGENT_DESCRIPTION if self.state is _State.AGENT_HEAD else _State.PLAYBOOK_DESCRIPTION
            )
            in_description = True
        if in_description:
            self.description_lines().append(unescaped(line.rstrip()))
        elif self.state is _State.STEPS:
            self.read_step(number, line)
        elif self.state is _State.TRIGGERS:
            self.read_trigger(number, line)
        elif self.state is _State.NOTES:
            self.read_note(number, line)
        elif self.state is _State.TOP:
            self.error(UNPLACEABLE, "text before the first agent header; expected '# AgentName'", number)
        else:
            self.error(
                UNPLACEABLE,
                "text here cannot be placed: descriptions come before blocks and sections; expected '##', '###' "
                "or a fenced block",
                number,
                len(line) - len(line.lstrip()) + 1,
            )

    def description_lines(self) -> list[str]:
        agent = self.agents[-1]
        if self.state is _State.PLAYBOOK_DESCRIPTION:
            return agent.playbooks[-1].description
        return agent.description

    def take_comments(self) -> tuple[str, ...]:
        comments = tuple(text for _, text, _ in self.pending_comments)
        self.pending_comments.clear()
        return comments

    # --- blocks ----------------------------------------------------------------------------------

    def read_frontmatter(self) -> None:
        start = self.index + 1
        self.index = start
        body: list[tuple[int, str]] = []
        while self.index < len(self.lines):
            line = self.lines[self.index]
            self.index += 1
            if line.strip() == "---":
                self.frontmatter = self.load_yaml(body) or {}
                return
            body.append((self.index, line))
        self.error(UNTERMINATED, "front matter opened with '---' is never closed", start)

    def read_metadata(self, start: int) -> None:
        body: list[tuple[int, str]] = []
        while self.index < len(self.lines):
            line = self.lines[self.index]
            self.index += 1
            if line.strip() == "---":
                self.apply_metadata(self.load_yaml(body), body, start)
                return
            if line.startswith("#"):
                self.index -= 1
                break
            body.append((self.index, line))
        self.error(UNTERMINATED, "metadata block is not closed by a '---' line", start)

    def load_yaml(self, body: list[tuple[int, str]]) -> dict[str, Any] | None:
        try:
            return yamlish.load(body)
        except yamlish.YamlError as error:
            self.error(BAD_METADATA, error.message, error.line, error.column)
            return None

    def apply_metadata(self, data: dict[str, Any] | None, body: list[tuple[int, str]], start: int) -> None:
        if data is None:
            return
        metadata, problems = metadata_from_yaml(data)
        for key, message in problems:
            line, column = _key_position(body, key.split(".")[-1], start)
            self.error(BAD_METADATA, f"metadata '{key}' {message}", line, column, len(key.split(".")[-1]))
        agent = self.agents[-1]
        if self.state is _State.PLAYBOOK_HEAD:
            agent.playbooks[-1].metadata = metadata
        else:
            agent.metadata = metadata

    def read_comment(self, number: int, line: str) -> None:
        collected = [line.rstrip()]
        tail = line[line.find("<!--") + 4 :]
        while "-->" not in tail:
            if self.index >= len(self.lines):
                self.error(
                    UNTERMINATED,
                    "comment opened with '<!--' is never closed",
                    number,
                    line.find("<!--") + 1,
                    4,
                )
                return
            tail = self.lines[self.index]
            collected.append(tail.rstrip())
            self.index += 1
        if tail[tail.find("-->") + 3 :].strip():
            self.error(UNPLACEABLE, "text after '-->' on the same line", number + len(collected) - 1)
            return
        # A comment after a header or inside a description is description text if more text follows, and
        # belongs to the next header (or the end of the file) otherwise; the next line decides.
        self.pending_comments.append((number, "\n".join(collected).strip(), collected))

    def flush_comments_into_description(self) -> bool:
        """Move pending comments into the description being read, if one is; False otherwise."""
        if self.state in (_State.AGENT_HEAD, _State.PLAYBOOK_HEAD):
            self.state = (
                _State.AGENT_DESCRIPTION if self.state is _State.AGENT_HEAD else _State.PLAYBOOK_DESCRIPTION
            )
        if self.state not in (_State.AGENT_DESCRIPTION, _State.PLAYBOOK_DESCRIPTION):
            return False
        lines = self.description_lines()
        for _, _, raw_lines in self.pending_comments:
            lines.extend(raw_lines)
        self.pending_comments.clear()
        return True

    def reject_pending_comments(self) -> None:
        for number, _, _ in self.pending_comments:
            self.error(
                UNPLACEABLE,
                "a comment can only stand before a '#' or '##' header or at the end of the file",
                number,
                1,
                4,
            )
        self.pending_comments.clear()

    def read_fence(self, number: int, line: str, language: str) -> None:
        body: list[str] = []
        start_index = self.index
        closing = "```"
        while self.index < len(self.lines):
            current = self.lines[self.index]
            self.index += 1
            if current.strip() == "```":
                closing = current.rstrip()  # kept as written: a description holds it
                break
            body.append(current)
        else:
            self.index = start_index
            self.error(UNTERMINATED, "fenced block opened here is never closed with ```", number, 1, 3)
            # Skip the rest: everything after an unterminated fence would be code anyway.
            self.index = len(self.lines)
            return
        if language in ("python", "public.json"):
            if self.pending_comments and not self.flush_comments_into_description():
                self.reject_pending_comments()
            if not self.agents:
                self.error(UNPLACEABLE, f"```{language} block before the first agent header", number, 1, 3)
                return
            if language == "python":
                self.add_python_block(number, body)
            else:
                self.add_public_json(number, body)
            if self.state in (
                _State.TRIGGERS,
                _State.STEPS,
                _State.NOTES,
                _State.PLAYBOOK_HEAD,
                _State.PLAYBOOK_DESCRIPTION,
            ):
                # An agent-level block ends the playbook's text: code is never part of a prompt.
                self.state = _State.AFTER_BLOCK
            elif self.state in (_State.AGENT_HEAD, _State.AGENT_DESCRIPTION):
                self.state = _State.AFTER_BLOCK
            return
        if self.pending_comments and not self.flush_comments_into_description():
            self.reject_pending_comments()
        if self.state in (_State.AGENT_HEAD, _State.PLAYBOOK_HEAD):
            self.state = (
                _State.AGENT_DESCRIPTION if self.state is _State.AGENT_HEAD else _State.PLAYBOOK_DESCRIPTION
            )
        if self.state in (_State.AGENT_DESCRIPTION, _State.PLAYBOOK_DESCRIPTION):
            # Other fenced blocks are part of a description (a prompt may show code).
            self.description_lines().extend([line.rstrip(), *(text.rstrip() for text in body), closing])
            return
        self.error(
            UNPLACEABLE,
            f"a ```{language or 'plain'} block can only be part of a description; agent-level blocks are "
            "```python and ```public.json",
            number,
            1,
            3 + len(language),
        )

    def add_python_block(self, number: int, body: list[str]) -> None:
        agent = self.agents[-1]
        code, rewrites = number_python_triggers("\n".join(body))
        for rewrite in rewrites:
            if rewrite.lone_string:
                self.reporter.warn(
                    TRIGGER_STRING,
                    f"triggers={rewrite.text!r} is one string; read as the list {rewrite.written}",
                    number + rewrite.line,
                    rewrite.column,
                    len(rewrite.text) + 2,
                )
            else:
                self.reporter.warn(
                    PYTHON_TRIGGER_WITHOUT_CODE,
                    f"trigger {rewrite.text!r} has no 'T<n>:CODE' prefix; read as {rewrite.written}",
                    number + rewrite.line,
                    rewrite.column,
                    len(rewrite.text) + 2,
                )
        block_index = len(agent.python_blocks)
        agent.python_blocks.append(code)
        playbooks, problems = python_playbooks(code, block_index)
        for problem in problems:
            self.error(BAD_PYTHON, problem.message, number + problem.line, problem.column)
        agent.python_playbooks.extend(playbooks)

    def add_public_json(self, number: int, body: list[str]) -> None:
        agent = self.agents[-1]
        if agent.has_public_json:
            self.error(DUPLICATE, f"agent {agent.name} already has a ```public.json block", number, 1, 14)
            return
        try:
            agent.public_json = json.loads("\n".join(body)) if any(line.strip() for line in body) else None
        except RecursionError:
            self.error(BAD_PUBLIC_JSON, "public.json is nested too deeply to read", number + 1, 1)
            return
        except json.JSONDecodeError as error:
            self.error(
                BAD_PUBLIC_JSON,
                f"public.json is not valid JSON: {error.msg}",
                number + error.lineno,
                error.colno,
            )
            return
        agent.has_public_json = True

    # --- headers ---------------------------------------------------------------------------------

    def start_agent(self, number: int, line: str) -> None:
        name = line[2:].strip()
        if not name:
            self.error(BAD_HEADER, "agent header without a name", number, 1, 1)
        self.agents.append(
            _AgentDraft(
                name=name, span=Span(line=number, column=3, length=len(name)), comments=self.take_comments()
            )
        )
        self.state = _State.AGENT_HEAD
        self.metadata_read = False

    def start_playbook(self, number: int, line: str) -> None:
        comments = self.take_comments()
        if not self.agents:
            self.error(
                UNPLACEABLE, "playbook header before the first agent header ('# AgentName')", number, 1, 2
            )
            self.agents.append(_AgentDraft(name="", span=Span(line=number), comments=()))
        match = _PLAYBOOK_HEADER_RE.match(line.rstrip())
        name = ""
        parameters: tuple[Parameter, ...] = ()
        returns: str | None = None
        if match is None or not match.group("name"):
            self.error(
                BAD_HEADER, "playbook header must look like '## Name($param:type) -> ReturnType'", number, 1
            )
        else:
            name = match.group("name")
            returns = match.group("returns") or None
            if match.group("returns") is not None and not returns:
                self.error(
                    BAD_HEADER,
                    "'->' must be followed by a return type (or None)",
                    number,
                    match.end("returns"),
                )
            if match.group("params") is not None:
                parameters = self.parse_parameters(match.group("params"), number, match.start("params") + 1)
        self.agents[-1].playbooks.append(
            _PlaybookDraft(
                name=name,
                parameters=parameters,
                returns=returns,
                span=Span(line=number, column=4, length=len(name)),
                comments=comments,
            )
        )
        self.state = _State.PLAYBOOK_HEAD
        self.metadata_read = False

    def parse_parameters(self, text: str, number: int, column: int) -> tuple[Parameter, ...]:
        if not text.strip():
            return ()
        parameters: list[Parameter] = []
        offset = 0
        for piece in split_top_level(text, ","):
            match = _PARAM_RE.match(piece)
            if match is None:
                self.error(
                    BAD_HEADER,
                    f"parameter {piece.strip()!r} must look like '$name', '$name:type' or '$name:type=default'",
                    number,
                    column + offset + (len(piece) - len(piece.lstrip())),
                    len(piece.strip()),
                )
            else:
                parameters.append(
                    Parameter(
                        name=match.group("name"),
                        type=match.group("type").strip() if match.group("type") else None,
                        default=match.group("default"),
                    )
                )
            offset += len(piece) + 1
        return tuple(parameters)

    def start_section(self, number: int, line: str) -> None:
        title = line[4:].strip()
        key = _SECTIONS.get(title.lower())
        if self.pending_comments and (
            self.state not in (_State.PLAYBOOK_HEAD, _State.PLAYBOOK_DESCRIPTION)
            or not self.flush_comments_into_description()
        ):
            self.reject_pending_comments()
        if (
            self.state in (_State.TOP, _State.AGENT_HEAD, _State.AGENT_DESCRIPTION)
            or not self.agents[-1].playbooks
        ):
            self.error(
                UNPLACEABLE, f"section '### {title}' outside a playbook", number, 1, len(line.rstrip())
            )
            return
        if key is None:
            self.error(
                UNKNOWN_SECTION,
                f"unknown section '### {title}'; a playbook has '### Triggers', '### Steps' and '### Notes'",
                number,
                5,
                len(title),
            )
            self.state = _State.AFTER_BLOCK
            return
        playbook = self.agents[-1].playbooks[-1]
        if key in playbook.sections:
            self.error(
                DUPLICATE,
                f"playbook {playbook.name} already has a '### {title}' section",
                number,
                5,
                len(title),
            )
        playbook.sections.add(key)
        self.state = {"triggers": _State.TRIGGERS, "steps": _State.STEPS, "notes": _State.NOTES}[key]

    # --- section lines ---------------------------------------------------------------------------

    def read_step(self, number: int, line: str) -> None:
        match = _STEP_RE.match(line)
        if match is None and self.is_trailing_text(number, line):
            self.warn_trailing(number, line)
            return
        if match is None:
            indent = len(line) - len(line.lstrip())
            self.error(
                BAD_STEP,
                "step must look like '01:OPC text' (two-digit line numbers, dots for sub-steps)",
                number,
                indent + 1,
            )
            return
        self.agents[-1].playbooks[-1].steps.append(
            _FlatStep(
                line=match.group("line"),
                opcode=match.group("op"),
                text=(match.group("text") or "").strip(),
                span=Span(line=number, column=match.start("line") + 1, length=len(match.group("line"))),
            )
        )

    def read_trigger(self, number: int, line: str) -> None:
        match = _TRIGGER_RE.match(line)
        if match is None and self.read_loose_trigger(number, line):
            return
        if match is None:
            indent = len(line) - len(line.lstrip())
            self.error(BAD_TRIGGER, "trigger must look like 'T1:BGN At the beginning'", number, indent + 1)
            return
        self.agents[-1].playbooks[-1].triggers.append(
            Trigger(
                id=match.group("id"),
                code=match.group("code"),
                text=(match.group("text") or "").strip(),
                span=Span(line=number, column=match.start("id") + 1, length=len(match.group("id"))),
            )
        )

    def warn_trailing(self, number: int, line: str) -> None:
        self.reporter.warn(
            TEXT_AFTER_STEPS,
            f"text after the last step of playbook {self.agents[-1].playbooks[-1].name} is not a step; "
            f"left out: {line.strip()!r}",
            number,
            1,
            len(line.strip()),
        )

    def read_loose_trigger(self, number: int, line: str) -> bool:
        """`01:BGN At the beginning` or `BGN: At the beginning`: a trigger without its id, numbered by its
        place (a warning says so)."""
        match = _LOOSE_TRIGGER_RE.match(line)
        if match is None:
            return False
        triggers = self.agents[-1].playbooks[-1].triggers
        trigger_id = f"T{len(triggers) + 1}"
        text = (match.group("text") or "").strip()
        canonical = f"{trigger_id}:{match.group('code')} {text}".rstrip()
        self.reporter.warn(
            TRIGGER_WITHOUT_ID,
            f"trigger line without its 'T<n>' id; read as {canonical!r}",
            number,
            match.start("code") + 1 if match.group("number") is None else match.start("number") + 1,
        )
        triggers.append(
            Trigger(
                id=trigger_id,
                code=match.group("code"),
                text=text,
                span=Span(line=number, column=match.start("code") + 1, length=len(match.group("code"))),
            )
        )
        return True

    def is_trailing_text(self, number: int, line: str) -> bool:
        """Whether a line that is not a step is model chatter after the program's last step (a compiled
        program's `**End output**`): after a step, unindented, not a list item, and followed by nothing but
        blank lines to the end of the file. Such lines are left out with a warning quoting them."""
        if (
            line[:1] in (" ", "\t")
            or _LIST_ITEM_START_RE.match(line)
            or not self.agents[-1].playbooks[-1].steps
        ):
            return False
        if self.trailing_from is None:
            last = len(self.lines)
            while last > 0 and not self.lines[last - 1].strip():
                last -= 1
            first = last
            while first > 0 and _is_chatter(self.lines[first - 1]):
                first -= 1
            self.trailing_from = first + 1
        return number >= self.trailing_from

    def read_note(self, number: int, line: str) -> None:
        match = _NOTE_RE.match(line)
        if match is None:
            indent = len(line) - len(line.lstrip())
            self.error(BAD_NOTE, "note must look like 'N1 text'", number, indent + 1)
            return
        self.agents[-1].playbooks[-1].notes.append(
            Note(
                id=match.group("id"),
                text=(match.group("text") or "").strip(),
                span=Span(line=number, column=match.start("id") + 1, length=len(match.group("id"))),
            )
        )

    # --- building --------------------------------------------------------------------------------

    def finish_agent(self, draft: _AgentDraft) -> Agent:
        markdown = [self.finish_playbook(playbook) for playbook in draft.playbooks]
        return Agent(
            name=draft.name,
            description=_join_description(draft.description),
            metadata=draft.metadata,
            python_blocks=tuple(draft.python_blocks),
            playbooks=(*draft.python_playbooks, *markdown),
            public_json=draft.public_json,
            comments=draft.comments,
            span=draft.span,
        )

    def finish_playbook(self, draft: _PlaybookDraft) -> Playbook:
        kind = PlaybookKind.PYTHON if draft.metadata.python else PlaybookKind.MARKDOWN
        steps = draft.steps
        deep = [step for step in steps if step.line.count(".") >= MAX_STEP_DEPTH]
        if deep:
            first = deep[0]
            self.error(
                TOO_DEEP,
                f"step nested {first.line.count('.') + 1} levels deep in playbook {draft.name}; steps nest at "
                f"most {MAX_STEP_DEPTH} levels"
                + (f" ({len(deep) - 1} more steps are deeper)" if len(deep) > 1 else ""),
                first.span.line,
                first.span.column,
                first.span.length,
            )
            steps = [step for step in steps if step.line.count(".") < MAX_STEP_DEPTH]
        return Playbook(
            name=draft.name,
            kind=kind,
            parameters=draft.parameters,
            returns=draft.returns,
            description=_join_description(draft.description),
            metadata=draft.metadata,
            triggers=tuple(draft.triggers),
            steps=_nest(steps),
            notes=tuple(draft.notes),
            comments=draft.comments,
            span=draft.span,
        )


def _is_chatter(line: str) -> bool:
    """A line of text that is no step and no structure (see _Parser.is_trailing_text)."""
    stripped = line.strip()
    return bool(stripped) and _STEP_RE.match(line) is None and not stripped.startswith(("#", "```", "<!--"))


def _join_description(lines: list[str]) -> str:
    start = 0
    end = len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end])


def _nest(flat: list[_FlatStep]) -> tuple[Step, ...]:
    """Build the step tree from line numbers: a step goes under the nearest open step whose number is a
    prefix of its own (its parent, or a further ancestor when the parent is missing: the validator says so)."""
    roots: list[_FlatStep] = []
    stack: list[tuple[list[str], _FlatStep]] = []
    for step in flat:
        parts = step.line.split(".")
        while stack and not (len(stack[-1][0]) < len(parts) and parts[: len(stack[-1][0])] == stack[-1][0]):
            stack.pop()
        if stack:
            stack[-1][1].children.append(step)
        else:
            roots.append(step)
        stack.append((parts, step))
    return tuple(_freeze(step) for step in roots)


def _freeze(step: _FlatStep) -> Step:
    return Step(
        line=step.line,
        opcode=step.opcode,
        text=step.text,
        children=tuple(_freeze(child) for child in step.children),
        span=step.span,
    )


def _key_position(body: list[tuple[int, str]], key: str, fallback: int) -> tuple[int, int]:
    for number, text in body:
        stripped = text.lstrip()
        if stripped.startswith(f"{key}:") or stripped.startswith(f"- {key}:"):
            return number, len(text) - len(stripped) + 1 + (2 if stripped.startswith("- ") else 0)
    return fallback, 1

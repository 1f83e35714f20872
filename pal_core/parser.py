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

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pal_core.codes import (
    BAD_HEADER,
    BAD_NOTE,
    BAD_PYTHON,
    BAD_STEP,
    BAD_TRIGGER,
    DUPLICATE,
    PYTHON_TRIGGER_WITHOUT_CODE,
    TEXT_AFTER_STEPS,
    TOO_DEEP,
    TRIGGER_STRING,
    TRIGGER_WITHOUT_ID,
)
from pal_core.errors import SourceReporter
from pal_core.gc_pause import paused_cyclic_gc
from pal_core.ir import (
    MAX_STEP_DEPTH,
    Agent,
    Note,
    Parameter,
    Playbook,
    PlaybookKind,
    Program,
    Span,
    Step,
    Trigger,
)
from pal_core.metadata import metadata_of
from pal_core.outline import (
    PAL,
    CodeBlock,
    OutlineAgent,
    OutlinePlaybook,
    public_json_of,
    read_outline,
)
from pal_core.python_blocks import python_playbooks
from pal_core.step_text import split_top_level
from pal_core.triggers import canonical_python

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


_LOOSE_TRIGGER_RE = re.compile(
    r"[ \t]*(?:[-*+][ \t]+)?(?:(?P<number>\d+)[ \t]*:[ \t]*)?(?P<code>BGN|CND|EVT)\b[ \t]*:?"
    r"(?:[ \t]*(?P<text>.*?))?[ \t]*\Z"
)
"""A trigger line without its `T<n>` id, as some compiled programs write it: `01:BGN At the beginning`."""
_LIST_ITEM_START_RE = re.compile(r"[ \t]*(?:[-*+][ \t]|\d)")


@dataclass
class _FlatStep:
    line: str
    opcode: str
    text: str
    span: Span
    children: list[_FlatStep] = field(default_factory=list)


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
    """The PAL reading of an outline (`pal_core.outline`): headers, metadata, code blocks and section lines."""

    def __init__(self, text: str, file: str | None) -> None:
        self.file = file
        self.reporter = SourceReporter(text, file)
        self.lines = self.reporter.lines
        self.trailing_from: int | None = None
        """The first line of the chatter at the end of the file, once looked for (see is_trailing_text)."""

    def error(self, code: str, message: str, line: int, column: int = 1, length: int = 0) -> None:
        self.reporter.error(code, message, line, column, length)

    def run(self) -> Program:
        outline = read_outline(self.reporter, PAL)
        agents = [self.agent(source) for source in outline.agents]
        self.reporter.raise_if_any()
        return Program(
            agents=tuple(agents),
            frontmatter=outline.frontmatter,
            trailing_comments=tuple(outline.trailing_comments),
            source=self.file,
            warnings=self.reporter.sorted_warnings(),
        )

    # --- agents ----------------------------------------------------------------------------------

    def agent(self, source: OutlineAgent) -> Agent:
        if source.line and not source.title:
            self.error(BAD_HEADER, "agent header without a name", source.line, 1, 1)
        python_blocks: list[str] = []
        python: list[Playbook] = []
        public_json: Any = None
        public_json_read = False
        for block in source.blocks:
            if block.language == "python":
                code, module = self.python_code(block)
                found, problems = python_playbooks(code, len(python_blocks), module)
                for problem in problems:
                    self.error(BAD_PYTHON, problem.message, block.line + problem.line, problem.column)
                python_blocks.append(code)
                python.extend(found)
            elif public_json_read:
                self.error(
                    DUPLICATE, f"agent {source.title} already has a ```public.json block", block.line, 1, 14
                )
            else:
                public_json, public_json_read = public_json_of(block, self.reporter)
        markdown = [self.playbook(playbook) for playbook in source.playbooks]
        return Agent(
            name=source.title,
            description=_join_description(source.description),
            metadata=metadata_of(source.metadata, self.reporter),
            python_blocks=tuple(python_blocks),
            playbooks=(*python, *markdown),
            public_json=public_json,
            comments=source.comments,
            span=Span(line=source.line, column=3, length=len(source.title)),
        )

    def python_code(self, block: CodeBlock) -> tuple[str, ast.Module | None]:
        """The block's code with every `@playbook` trigger in its canonical form, each change a warning, and
        its syntax tree when it was read already."""
        canonical = canonical_python(block.text)
        for rewrite in canonical.rewrites:
            if rewrite.lone_string:
                code_name, message = (
                    TRIGGER_STRING,
                    f"triggers={rewrite.text!r} is one string; read as the list",
                )
            else:
                code_name = PYTHON_TRIGGER_WITHOUT_CODE
                message = f"trigger {rewrite.text!r} has no 'T<n>:CODE' prefix; read as"
            self.reporter.warn(
                code_name,
                f"{message} {rewrite.written}",
                block.line + rewrite.line,
                rewrite.column,
                len(rewrite.text) + 2,
            )
        return canonical.code, canonical.module

    # --- playbooks -------------------------------------------------------------------------------

    def playbook(self, source: OutlinePlaybook) -> Playbook:
        name, parameters, returns = self.header(source)
        metadata = metadata_of(source.metadata, self.reporter)
        steps: list[_FlatStep] = []
        triggers: list[Trigger] = []
        notes: list[Note] = []
        for section in source.sections:
            if section.repeated:
                self.error(
                    DUPLICATE,
                    f"playbook {name} already has a '### {section.title}' section",
                    section.line,
                    5,
                    len(section.title),
                )
            for number, line in section.lines:
                if not line.strip():
                    continue
                if section.key == "steps":
                    self.read_step(number, line, steps, name)
                elif section.key == "triggers":
                    self.read_trigger(number, line, triggers)
                else:
                    self.read_note(number, line, notes)
        return Playbook(
            name=name,
            kind=PlaybookKind.PYTHON if metadata.python else PlaybookKind.MARKDOWN,
            parameters=parameters,
            returns=returns,
            description=_join_description(source.description),
            metadata=metadata,
            triggers=tuple(triggers),
            steps=_nest(self.within_depth(steps, name)),
            notes=tuple(notes),
            comments=source.comments,
            span=Span(line=source.line, column=4, length=len(name)),
        )

    def header(self, source: OutlinePlaybook) -> tuple[str, tuple[Parameter, ...], str | None]:
        match = _PLAYBOOK_HEADER_RE.match(source.header)
        if match is None or not match.group("name"):
            self.error(
                BAD_HEADER,
                "playbook header must look like '## Name($param:type) -> ReturnType'",
                source.line,
                1,
            )
            return "", (), None
        returns = match.group("returns") or None
        if match.group("returns") is not None and not returns:
            self.error(
                BAD_HEADER,
                "'->' must be followed by a return type (or None)",
                source.line,
                match.end("returns"),
            )
        parameters: tuple[Parameter, ...] = ()
        if match.group("params") is not None:
            parameters = self.parse_parameters(match.group("params"), source.line, match.start("params") + 1)
        return match.group("name"), parameters, returns

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

    def within_depth(self, steps: list[_FlatStep], name: str) -> list[_FlatStep]:
        deep = [step for step in steps if step.line.count(".") >= MAX_STEP_DEPTH]
        if not deep:
            return steps
        first = deep[0]
        self.error(
            TOO_DEEP,
            f"step nested {first.line.count('.') + 1} levels deep in playbook {name}; steps nest at "
            f"most {MAX_STEP_DEPTH} levels"
            + (f" ({len(deep) - 1} more steps are deeper)" if len(deep) > 1 else ""),
            first.span.line,
            first.span.column,
            first.span.length,
        )
        return [step for step in steps if step.line.count(".") < MAX_STEP_DEPTH]

    # --- section lines ---------------------------------------------------------------------------

    def read_step(self, number: int, line: str, steps: list[_FlatStep], playbook: str) -> None:
        match = _STEP_RE.match(line)
        if match is None and steps and self.is_trailing_text(number, line):
            self.reporter.warn(
                TEXT_AFTER_STEPS,
                f"text after the last step of playbook {playbook} is not a step; left out: {line.strip()!r}",
                number,
                1,
                len(line.strip()),
            )
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
        steps.append(
            _FlatStep(
                line=match.group("line"),
                opcode=match.group("op"),
                text=(match.group("text") or "").strip(),
                span=Span(line=number, column=match.start("line") + 1, length=len(match.group("line"))),
            )
        )

    def is_trailing_text(self, number: int, line: str) -> bool:
        """Whether a line that is not a step is model chatter after the program's last step (a compiled
        program's `**End output**`): after a step, unindented, not a list item, and followed by nothing but
        blank lines to the end of the file. Such lines are left out with a warning quoting them."""
        if line[:1] in (" ", "\t") or _LIST_ITEM_START_RE.match(line):
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

    def read_trigger(self, number: int, line: str, triggers: list[Trigger]) -> None:
        match = _TRIGGER_RE.match(line)
        if match is not None:
            triggers.append(
                Trigger(
                    id=match.group("id"),
                    code=match.group("code"),
                    text=(match.group("text") or "").strip(),
                    span=Span(line=number, column=match.start("id") + 1, length=len(match.group("id"))),
                )
            )
            return
        loose = _LOOSE_TRIGGER_RE.match(line)
        if loose is None:
            indent = len(line) - len(line.lstrip())
            self.error(BAD_TRIGGER, "trigger must look like 'T1:BGN At the beginning'", number, indent + 1)
            return
        # `01:BGN At the beginning` or `BGN: At the beginning`: a trigger without its id, numbered by its place.
        trigger_id = f"T{len(triggers) + 1}"
        text = (loose.group("text") or "").strip()
        canonical = f"{trigger_id}:{loose.group('code')} {text}".rstrip()
        self.reporter.warn(
            TRIGGER_WITHOUT_ID,
            f"trigger line without its 'T<n>' id; read as {canonical!r}",
            number,
            loose.start("code") + 1 if loose.group("number") is None else loose.start("number") + 1,
        )
        triggers.append(
            Trigger(
                id=trigger_id,
                code=loose.group("code"),
                text=text,
                span=Span(line=number, column=loose.start("code") + 1, length=len(loose.group("code"))),
            )
        )

    def read_note(self, number: int, line: str, notes: list[Note]) -> None:
        match = _NOTE_RE.match(line)
        if match is None:
            indent = len(line) - len(line.lstrip())
            self.error(BAD_NOTE, "note must look like 'N1 text'", number, indent + 1)
            return
        notes.append(
            Note(
                id=match.group("id"),
                text=(match.group("text") or "").strip(),
                span=Span(line=number, column=match.start("id") + 1, length=len(match.group("id"))),
            )
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

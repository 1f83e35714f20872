"""The PAL intermediate representation: one canonical tree for every PAL program.

Every node is a frozen, slotted, keyword-only dataclass. Source positions (`span`) are carried for
diagnostics but never take part in equality, so two programs that say the same thing are equal
wherever their text came from. Step details (the call, the yield and jump targets, the condition)
are derived from the step text when the node is built: they can never disagree with the text.

Serialisation lives in `pal_core.jsonform`, never on these classes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from pal_core import step_text as _step_text
from pal_core.errors import Diagnostic, PalError
from pal_core.step_parts import OPCODES as OPCODES
from pal_core.step_parts import ArgKind as ArgKind
from pal_core.step_parts import Argument as Argument
from pal_core.step_parts import Assignment, Call, Condition, JsonValue, YieldTarget
from pal_core.step_parts import ConditionKind as ConditionKind
from pal_core.step_parts import Opcode as Opcode
from pal_core.step_parts import Variable as Variable
from pal_core.step_parts import YieldKind as YieldKind


class TriggerCode(StrEnum):
    """The three trigger codes of PAL (seed 000)."""

    BGN = "BGN"
    CND = "CND"
    EVT = "EVT"


TRIGGER_CODES = frozenset(code.value for code in TriggerCode)


class PlaybookKind(StrEnum):
    """Where a playbook's behaviour comes from."""

    MARKDOWN = "markdown"
    """Numbered PAL steps (or a raw/react prompt) executed by the LLM under verification."""
    PYTHON = "python"
    """A Python function: from an agent's python block, or bound to `module:qualname` by metadata."""
    REMOTE = "remote"
    """A tool of a remote agent (for example an MCP server), listed when the program starts."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Span:
    """A place in PAL source text, 1-based."""

    line: int
    """Line number, 1-based."""
    column: int = 1
    """Column of the first character, 1-based."""
    length: int = 0
    """Number of characters marked; 0 marks the rest of the line."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Step:
    """One numbered line of a playbook, with its nested steps."""

    line: str
    """The line number as written: `03`, `03.01`, `03.01.02`."""
    opcode: str
    """The command code; one of OPCODES in a valid program (the validator reports others)."""
    text: str = ""
    """Everything after `NN:OPC `, verbatim."""
    children: tuple[Step, ...] = ()
    """Nested steps (the body of a CND, for instance)."""
    span: Span | None = field(default=None, compare=False, repr=False)
    """Where the step was read from; never compared."""
    call: Call | None = field(init=False, default=None)
    """The call in the text, when the text is or starts with one (derived)."""
    assignment: Assignment | None = field(init=False, default=None)
    """The non-call assignment in the text, when there is one (derived)."""
    yield_target: YieldTarget | None = field(init=False, default=None)
    """For YLD, or an inline `; YLD for ...`: where control goes (derived)."""
    jump_target: str | None = field(init=False, default=None)
    """For JMP: the target line number (derived)."""
    condition: Condition | None = field(init=False, default=None)
    """For CND: the condition (derived)."""

    def __post_init__(self) -> None:
        details = _step_text.analyze(self.opcode, self.text)
        for name, value in details.items():
            object.__setattr__(self, name, value)

    @property
    def path(self) -> tuple[int, ...]:
        """The line number as integers, e.g. (3, 1); empty if the number is malformed."""
        try:
            return tuple(int(part) for part in self.line.split("."))
        except ValueError:
            return ()

    def walk(self) -> Iterator[Step]:
        """This step and all nested steps, in program order (iteratively: any depth)."""
        pending = [self]
        while pending:
            step = pending.pop()
            yield step
            pending.extend(reversed(step.children))


MAX_STEP_DEPTH = 100
"""How deep steps may nest (`01` is depth 1, `01.01` depth 2, ...). The tools walk the step tree
recursively; the parser, the markdown compiler and the JSON reader refuse deeper nesting with a positioned
diagnostic (PAL012), and the other tools refuse a deeper tree built in code."""


def too_deep(steps: Iterable[Step]) -> tuple[Step, int] | None:
    """The first step (in program order) nested deeper than MAX_STEP_DEPTH, with its depth; None when
    every step is within it. Iterative, so any depth is measured."""
    pending = [(step, 1) for step in reversed(tuple(steps))]
    while pending:
        step, depth = pending.pop()
        if depth > MAX_STEP_DEPTH:
            return step, depth
        pending.extend((child, depth + 1) for child in reversed(step.children))
    return None


def check_depth(program: Program) -> None:
    """PalError (placed at the step) when a playbook's steps nest deeper than MAX_STEP_DEPTH: for the tools
    that walk the tree recursively, given a program that did not come from text (built in code)."""
    for agent in program.agents:
        for playbook in agent.playbooks:
            check_playbook_depth(playbook, owner=agent.name, source=program.source)


def check_playbook_depth(playbook: Playbook, *, owner: str | None = None, source: str | None = None) -> None:
    """`check_depth` for one playbook (of agent `owner`, read from `source`)."""
    found = too_deep(playbook.steps)
    if found is None:
        return
    step, depth = found
    where = f"{source or '<program>'}:{step.span.line}:{step.span.column}: " if step.span else ""
    name = f"{owner}.{playbook.name}" if owner else playbook.name
    raise PalError(
        f"{where}{name}: steps nested {depth} levels deep (at step {_short_line(step.line)}); at most "
        f"{MAX_STEP_DEPTH} levels are allowed"
    )


def _short_line(line: str) -> str:
    return line if len(line) <= 24 else f"{line[:11]}…{line[-11:]}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Trigger:
    """A playbook trigger such as `T1:BGN At the beginning`."""

    id: str
    """The trigger id, `T1`, `T2`, ..."""
    code: str
    """BGN, CND or EVT in a valid program."""
    text: str = ""
    """The trigger condition in words."""
    span: Span | None = field(default=None, compare=False, repr=False)
    """Where the trigger was read from; never compared."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Note:
    """A playbook note such as `N1 Be polite and professional`."""

    id: str
    """The note id, `N1`, `N2`, ..."""
    text: str = ""
    """The note."""
    span: Span | None = field(default=None, compare=False, repr=False)
    """Where the note was read from; never compared."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Parameter:
    """A playbook parameter such as `$num:int=10`."""

    name: str
    """The name without the `$`."""
    type: str | None = None
    """The declared type; None when untyped."""
    default: str | None = None
    """The default value as written (Python syntax); None when required."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RemoteSpec:
    """How to reach a remote agent (`metadata: remote: {...}`)."""

    type: str
    """The protocol, e.g. `mcp`."""
    transport: str | None = None
    """`stdio`, `http`, `sse`, `memory`, ..."""
    url: str | None = None
    """The server URL for network transports."""
    command: str | None = None
    """The executable for stdio."""
    args: tuple[str, ...] = ()
    """Arguments of the stdio command."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Environment variables for the stdio command."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """HTTP headers (authentication, for instance)."""
    timeout: float | None = None
    """Per-call timeout in seconds."""
    extra: Mapping[str, JsonValue] = field(default_factory=dict)
    """Keys this version does not know, kept in order."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Metadata:
    """A `metadata:` block (agent or playbook). Keys this version does not know go to `extra`."""

    public: bool | None = None
    """Whether other agents and MCP clients may call the playbook."""
    meeting: bool | None = None
    """Whether the playbook is a meeting."""
    model_callable: bool | None = None
    """False: a model may call the playbook only at a step that names it (helpers for steps only)."""
    requires_approval: bool | None = None
    """True: a call the model makes on its own waits for a human's approval (refused without one)."""
    required_attendees: tuple[str, ...] = ()
    """Agents that must join a meeting before it starts."""
    optional_attendees: tuple[str, ...] = ()
    """Agents invited to a meeting that may decline."""
    startup_mode: str | None = None
    """Agent start-up: `default` (instance at start) or `standby` (created on demand)."""
    execution_mode: str | None = None
    """Playbook execution: `playbook` (steps), `react` or `raw` (a prompt without steps)."""
    python: str | None = None
    """For a Python playbook bound by import path: `module:qualname`."""
    returns_schema: Mapping[str, JsonValue] | None = None
    """The JSON Schema the playbook's value must fit, beyond its return type (a structured reply: an
    imported agent's response format); a react round's value is checked against it and constrained by it."""
    remote: RemoteSpec | None = None
    """For a remote agent: how to reach it."""
    extra: Mapping[str, JsonValue] = field(default_factory=dict)
    """Keys this version does not know, kept in order."""

    def is_empty(self) -> bool:
        """True when the block carries nothing."""
        return self == EMPTY_METADATA


EMPTY_METADATA = Metadata()


@dataclass(frozen=True, slots=True, kw_only=True)
class Playbook:
    """A playbook: markdown (steps or a prompt), Python, or remote."""

    name: str
    """The playbook name (CamelCase for markdown playbooks)."""
    kind: PlaybookKind = PlaybookKind.MARKDOWN
    """Where the behaviour comes from."""
    parameters: tuple[Parameter, ...] = ()
    """Parameters in order."""
    returns: str | None = None
    """The declared return type as written (`None`, `str`, ...); None when the header has no `->`."""
    description: str = ""
    """The text between the header (and metadata) and the first section; the prompt of a raw playbook."""
    metadata: Metadata = EMPTY_METADATA
    """The playbook's metadata block."""
    triggers: tuple[Trigger, ...] = ()
    """The `### Triggers` section."""
    steps: tuple[Step, ...] = ()
    """The `### Steps` section: top-level steps, each with its nested steps."""
    notes: tuple[Note, ...] = ()
    """The `### Notes` section."""
    code_block: int | None = None
    """For a Python playbook defined in code: the index of the agent's python block that defines it."""
    comments: tuple[str, ...] = ()
    """HTML comments (`<!-- ... -->`) written just before the playbook header."""
    span: Span | None = field(default=None, compare=False, repr=False)
    """Where the header was read from; never compared."""

    @property
    def public(self) -> bool:
        """Whether the playbook is public."""
        return bool(self.metadata.public)

    def all_steps(self) -> Iterator[Step]:
        """Every step, nested ones included, in program order."""
        for step in self.steps:
            yield from step.walk()

    def step(self, line: str) -> Step | None:
        """The step with this line number, or None."""
        for candidate in self.all_steps():
            if candidate.line == line:
                return candidate
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Agent:
    """An agent: a `# Name` section with its playbooks."""

    name: str
    """The agent class name (CamelCase)."""
    description: str = ""
    """The text under the header."""
    metadata: Metadata = EMPTY_METADATA
    """The agent's metadata block (startup mode, remote spec, custom keys)."""
    python_blocks: tuple[str, ...] = ()
    """The source of each ```python block, in order."""
    playbooks: tuple[Playbook, ...] = ()
    """Python playbooks from the code blocks first, then the `##` playbooks in text order."""
    public_json: JsonValue = None
    """The parsed ```public.json block, or None when absent."""
    comments: tuple[str, ...] = ()
    """HTML comments written just before the agent header."""
    span: Span | None = field(default=None, compare=False, repr=False)
    """Where the header was read from; never compared."""

    def playbook(self, name: str) -> Playbook | None:
        """The playbook with this name, or None."""
        for candidate in self.playbooks:
            if candidate.name == name:
                return candidate
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Program:
    """A whole PAL file: optional front matter and one or more agents."""

    agents: tuple[Agent, ...] = ()
    """The agents in text order."""
    frontmatter: Mapping[str, JsonValue] = field(default_factory=dict)
    """The `---` YAML block at the top of the file, if any."""
    trailing_comments: tuple[str, ...] = ()
    """HTML comments after the last agent's content."""
    source: str | None = field(default=None, compare=False)
    """The file the program was read from, for diagnostics; never compared."""
    warnings: tuple[Diagnostic, ...] = field(default=(), compare=False)
    """Loose forms the reader accepted and read as their canonical ones (codes PAL021 and up), in source
    order; `pal_core.validate.validate` reports them with its own findings. Never compared."""

    def agent(self, name: str) -> Agent | None:
        """The agent with this name, or None."""
        for candidate in self.agents:
            if candidate.name == name:
                return candidate
        return None

"""What a step's text holds, as the IR carries it: its opcode, the variables, calls and arguments it names,
an assignment, where a yield hands control, the form of a condition.

These are the parts pal_core.step_text derives from a step's text; pal_core.ir builds its Step from them
(and re-exports them: `from pal_core.ir import Call` keeps working). They live apart from the tree so that
the step-text reader needs nothing of the tree, and the tree imports the reader without a cycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

JsonValue = Any
"""A JSON-compatible value: None, bool, int, float, str, list or dict with str keys."""


class Opcode(StrEnum):
    """The eight command codes of PAL (seed 000)."""

    EXE = "EXE"
    QUE = "QUE"
    TNK = "TNK"
    CND = "CND"
    CHK = "CHK"
    RET = "RET"
    JMP = "JMP"
    YLD = "YLD"


OPCODES = frozenset(op.value for op in Opcode)


class ArgKind(StrEnum):
    """How an argument of a call was written."""

    VARIABLE = "variable"
    """A `$name` reference."""
    LITERAL = "literal"
    """A Python literal whose value is JSON-compatible: string, number, bool, None, list, dict."""
    EXPRESSION = "expression"
    """Valid Python (after `$name` -> `name`) that is neither a variable nor a literal."""
    TEXT = "text"
    """Natural language, as in `Say(user, Greet the user)`."""


class YieldKind(StrEnum):
    """Where a YLD step hands control (seed 000 and the corpus)."""

    USER = "user"
    CALL = "call"
    RETURN = "return"
    EXIT = "exit"
    MEETING = "meeting"
    AGENT = "agent"
    UNKNOWN = "unknown"
    """Anything else; the validator reports it."""


class ConditionKind(StrEnum):
    """The form of a CND step."""

    IF = "if"
    ELSE_IF = "else_if"
    OTHERWISE = "otherwise"
    WHILE = "while"
    FOR = "for"
    WHEN = "when"
    OTHER = "other"


@dataclass(frozen=True, slots=True, kw_only=True)
class Variable:
    """A `$name` with an optional declared type, as in `$x:int`."""

    name: str
    """The name without the `$`."""
    type: str | None = None
    """The declared type, such as `str`, `int`, `list`; None when undeclared."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Argument:
    """One argument of a call in a step."""

    text: str
    """The argument exactly as written (without the `name=` prefix)."""
    kind: ArgKind
    """How the argument was written."""
    name: str | None = None
    """The keyword when written as `name=value` (a leading `$` is dropped); None for positional."""
    value: JsonValue = None
    """The literal value for LITERAL, the variable name (without `$`) for VARIABLE, else None."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Call:
    """A call written in a step, such as `Say(user, ...)` or `$x:str = Agent.Func($a, key=$b)`."""

    name: str
    """The callee: `Say`, `magic_operator`, or `Agent.Playbook` for another agent's playbook."""
    arguments: tuple[Argument, ...] = ()
    """The arguments in order."""
    result: Variable | None = None
    """The variable the result is assigned to, if any."""
    natural: bool = False
    """True when the arguments are natural language, not Python (split at the first comma)."""

    @property
    def agent(self) -> str | None:
        """The agent part of `Agent.Playbook`, or None for a local call."""
        head, dot, _ = self.name.rpartition(".")
        return head if dot else None

    @property
    def playbook(self) -> str:
        """The playbook part of the callee name."""
        return self.name.rpartition(".")[2]


@dataclass(frozen=True, slots=True, kw_only=True)
class Assignment:
    """An assignment that is not a call, such as `$x:int = 10` or `$x = $x * 2`."""

    target: Variable
    """The assigned variable."""
    expression: str
    """The right-hand side as written."""


@dataclass(frozen=True, slots=True, kw_only=True)
class YieldTarget:
    """Where a YLD step (or an inline `; YLD for ...`) hands control."""

    kind: YieldKind
    """The target class."""
    name: str | None = None
    """The agent name or id for AGENT, the meeting id for MEETING when given, the raw word for UNKNOWN."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Condition:
    """The condition of a CND step."""

    kind: ConditionKind
    """if, else-if, otherwise, while, for, when, or other."""
    expression: str
    """The condition text after its keyword (empty for `Otherwise`)."""

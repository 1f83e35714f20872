"""Reading the details out of a step's text: the call, the assignment, yield and jump targets, the condition.

Step text is half Python, half natural language (`Say(user, Tell user about Canada's $secret)`), so
nothing here may assume balanced quotes. Every function is total: odd text gives fewer details, never
an exception.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable, Iterator
from typing import Any

from pal_core.pysource import literal_eval, parse_python
from pal_core.step_parts import (
    ArgKind,
    Argument,
    Assignment,
    Call,
    Condition,
    ConditionKind,
    Opcode,
    Variable,
    YieldKind,
    YieldTarget,
)

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
TYPED_VARIABLE_RE = re.compile(rf"\$({_IDENT})(?::({_IDENT}(?:\[[^\]]*\])?))?")
"""`$name` or `$name:type` (`$items:list[str]`): group 1 the name, group 2 the type. The one pattern of a
variable in step text, for every reader of it (the parser's step details, the compiler, the turn, prompts)."""
_ASSIGN_RE = re.compile(rf"\$({_IDENT})(?:\s*:\s*({_IDENT}(?:\[[^\]]*\])?))?\s*=(?!=)\s*")
_CALLEE_RE = re.compile(rf"({_IDENT}(?:\.{_IDENT})*)\(")
_KEYWORD_ARG_RE = re.compile(rf"\$?({_IDENT})\s*=(?!=)\s*")
_JUMP_RE = re.compile(r"(?:to\s+)?(?:step\s+|line\s+)?(\d+(?:\.\d+)*)\b", re.IGNORECASE)
_INLINE_YIELD_RE = re.compile(r"\bYLD\b\s*(.*)\Z", re.DOTALL)
_TWO_WORDS_RE = re.compile(rf"({_IDENT})\s+({_IDENT})")
_STRING_RE = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'')
_IDENT_ONLY_RE = re.compile(rf"{_IDENT}\Z")
_LITERAL_WORDS = frozenset({"True", "False", "None", "true", "false", "null"})
_SIMPLE_STRING_RE = re.compile(r'"[^"\\\n]*"\Z|\'[^\'\\\n]*\'\Z')
_INT_RE = re.compile(r"-?[1-9][0-9]{0,15}\Z|0\Z")
_PY_WORDS = frozenset(keyword.kwlist) | {"match", "case", "type"}

_STEPS_WITH_CALLS = frozenset({Opcode.EXE, Opcode.QUE, Opcode.TNK, Opcode.CHK})

_CONDITION_PREFIXES: tuple[tuple[str, ConditionKind], ...] = (
    ("else if ", ConditionKind.ELSE_IF),
    ("otherwise if ", ConditionKind.ELSE_IF),
    ("otherwise, if ", ConditionKind.ELSE_IF),
    ("elif ", ConditionKind.ELSE_IF),
    ("if ", ConditionKind.IF),
    ("while ", ConditionKind.WHILE),
    ("for each ", ConditionKind.FOR),
    ("for every ", ConditionKind.FOR),
    ("for ", ConditionKind.FOR),
    ("when ", ConditionKind.WHEN),
    ("until ", ConditionKind.WHILE),
)


def analyze(opcode: str, text: str) -> dict[str, Any]:
    """The derived fields of a step: only the ones that apply, keyed by Step field name."""
    details: dict[str, Any] = {}
    if opcode == Opcode.YLD:
        details["yield_target"] = parse_yield_target(text)
        return details
    if opcode == Opcode.JMP:
        match = _JUMP_RE.match(text.strip())
        if match:
            details["jump_target"] = match.group(1)
        return details
    if opcode == Opcode.CND:
        details["condition"] = parse_condition(text)
        return details
    if opcode not in _STEPS_WITH_CALLS:
        return details
    segments = split_top_level(text, ";")
    head = segments[0].strip()
    call, assignment = parse_statement(head)
    if call is not None:
        details["call"] = call
    elif assignment is not None:
        details["assignment"] = assignment
    for segment in segments[1:]:
        inline = _INLINE_YIELD_RE.match(segment.strip())
        if inline:
            details["yield_target"] = parse_yield_target(inline.group(1))
            break
    return details


_UNTIL_RE = re.compile(
    r"(?:done|finished|complete|stop)\s+(?:when|once|if)\s+(.+)|until\s+(.+)", re.IGNORECASE | re.DOTALL
)


def conversation_until(text: str) -> str | None:
    """The condition of a conversation step, `Say(user, Ask ...); YLD for user; done when <condition>`:
    the step and its yield repeat until the condition holds (possibly at once). None for other steps."""
    segments = split_top_level(text, ";")
    yielded = False
    for segment in segments[1:]:
        stripped = segment.strip()
        if _INLINE_YIELD_RE.match(stripped):
            yielded = True
            continue
        found = _UNTIL_RE.match(stripped)
        if yielded and found:
            return (found.group(1) or found.group(2)).strip()
    return None


def parse_yield_target(text: str) -> YieldTarget:
    """`user`, `for user`, `for meeting 100`, `agent Host`, ... -> a YieldTarget."""
    words = text.strip().split()
    if words and words[0].lower() in ("for", "to"):
        words = words[1:]
    if not words:
        return YieldTarget(kind=YieldKind.UNKNOWN, name="")
    head = words[0].lower().rstrip(".,;")
    rest = " ".join(words[1:]) or None
    if head in ("user", "human"):
        return YieldTarget(kind=YieldKind.USER)
    if head in ("call", "return", "exit"):
        return YieldTarget(kind=YieldKind(head))
    if head == "meeting":
        return YieldTarget(kind=YieldKind.MEETING, name=rest)
    if head == "agent":
        # `YLD for agent` with no name: wait for whichever agent answers.
        return YieldTarget(kind=YieldKind.AGENT, name=rest)
    return YieldTarget(kind=YieldKind.UNKNOWN, name=text.strip())


def parse_condition(text: str) -> Condition:
    """`If $x > 1` -> Condition(IF, "$x > 1"); `Otherwise` -> Condition(OTHERWISE, "")."""
    stripped = text.strip()
    lowered = stripped.lower()
    for prefix, kind in _CONDITION_PREFIXES:
        if lowered.startswith(prefix):
            return Condition(kind=kind, expression=stripped[len(prefix) :].strip())
    if lowered.rstrip(":,. ") in ("otherwise", "else"):
        return Condition(kind=ConditionKind.OTHERWISE, expression="")
    if lowered.startswith(("otherwise", "else")):
        word = stripped.split(None, 1)
        return Condition(
            kind=ConditionKind.OTHERWISE, expression=word[1].strip(" ,") if len(word) > 1 else ""
        )
    return Condition(kind=ConditionKind.OTHER, expression=stripped)


def parse_statement(text: str) -> tuple[Call | None, Assignment | None]:
    """Read `[$x[:type] = ]Callee(args)` or `$x[:type] = expression` from the start of a step."""
    rest = text
    target: Variable | None = None
    assign = _ASSIGN_RE.match(rest)
    if assign:
        target = Variable(name=assign.group(1), type=assign.group(2))
        rest = rest[assign.end() :]
    # Inline calls are often wrapped in backticks by models and compilers alike.
    inner = rest.strip()
    if len(inner) > 2 and inner[0] == "`" and inner[-1] == "`":
        inner = inner[1:-1].strip()
    callee = _CALLEE_RE.match(inner)
    if callee:
        scanned = _scan_call(inner, callee.end() - 1)
        if scanned is not None and not inner[scanned[0] + 1 :].strip():
            close, commas = scanned
            start = callee.end()
            bounds = [start - 1, *commas, close]
            pieces = [inner[bounds[i] + 1 : bounds[i + 1]] for i in range(len(bounds) - 1)]
            arguments, natural = _arguments(inner[start:close], pieces)
            return Call(name=callee.group(1), arguments=arguments, result=target, natural=natural), None
    if target is not None and rest.strip():
        return None, Assignment(target=target, expression=rest.strip())
    return None, None


def parse_arguments(text: str) -> tuple[tuple[Argument, ...], bool]:
    """Split an argument list; natural-language arguments become one TEXT argument after the first."""
    return _arguments(text, split_top_level(text, ","))


def _arguments(text: str, pieces: list[str]) -> tuple[tuple[Argument, ...], bool]:
    if not text.strip():
        return (), False
    first = classify_argument(pieces[0])
    if first.kind is ArgKind.TEXT:
        return (Argument(text=text.strip(), kind=ArgKind.TEXT),), True
    arguments = [first]
    for piece in pieces[1:]:
        argument = classify_argument(piece)
        if argument.kind is ArgKind.TEXT:
            # Natural language: keep the first argument (the Say target, usually) and the rest as one text.
            message = text[len(pieces[0]) + 1 :].strip()
            return (first, Argument(text=message, kind=ArgKind.TEXT)), True
        arguments.append(argument)
    return tuple(arguments), False


def classify_argument(piece: str) -> Argument:
    """One argument: `$x`, `name=$x`, a literal, a Python expression, or natural language."""
    text = piece.strip()
    name: str | None = None
    keyword_match = _KEYWORD_ARG_RE.match(text)
    if keyword_match:
        name = keyword_match.group(1)
        text = text[keyword_match.end() :].strip()
    variable = TYPED_VARIABLE_RE.fullmatch(text)
    if variable:
        return Argument(text=text, kind=ArgKind.VARIABLE, name=name, value=variable.group(1))
    if _IDENT_ONLY_RE.match(text) and text not in _LITERAL_WORDS:
        return Argument(text=text, kind=ArgKind.EXPRESSION, name=name)
    literal, ok = literal_value(text)
    if ok:
        return Argument(text=text, kind=ArgKind.LITERAL, name=name, value=literal)
    if is_python_expression(text):
        return Argument(text=text, kind=ArgKind.EXPRESSION, name=name)
    if name is not None:
        # `key=some words` is not a keyword argument in Python; keep the whole piece as text.
        return Argument(text=piece.strip(), kind=ArgKind.TEXT)
    return Argument(text=text, kind=ArgKind.TEXT)


def literal_value(text: str) -> tuple[Any, bool]:
    """The JSON-compatible value of a Python literal, and whether `text` is one."""
    if not text or text[0] not in "\"'-+0123456789.[{(TFNtfn":
        return None, False
    # Fast paths for the common simple literals; ast.literal_eval handles everything else.
    if _SIMPLE_STRING_RE.match(text):
        return text[1:-1], True
    if _INT_RE.match(text):
        return int(text), True
    if text in ("true", "false", "null"):
        return {"true": True, "false": False, "null": None}[text], True
    try:
        value = literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None, False
    if not _json_compatible(value):
        return None, False
    return value, True


def _json_compatible(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, float):
        return value == value and value not in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return all(_json_compatible(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _json_compatible(item) for key, item in value.items())
    return False


def is_python_expression(text: str) -> bool:
    """Whether `text` (with `$name` read as `name`) is a Python expression."""
    if not text:
        return False
    if "'" not in text and '"' not in text:
        # No strings: two plain words side by side anywhere make it natural language (the common case).
        for match in _TWO_WORDS_RE.finditer(text):
            if match.group(1) not in _PY_WORDS and match.group(2) not in _PY_WORDS:
                return False
    source = TYPED_VARIABLE_RE.sub(lambda m: m.group(1), text)
    for match in _TWO_WORDS_RE.finditer(_STRING_RE.sub('""', source)):
        # Two plain words side by side are natural language unless one is a Python keyword.
        if match.group(1) not in _PY_WORDS and match.group(2) not in _PY_WORDS:
            return False
    try:
        parse_python(source, mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False
    return True


def python_source(text: str) -> str:
    """`text` with `$name` (and `$name:type`) replaced by `name`, for handing to `ast`."""
    return TYPED_VARIABLE_RE.sub(lambda m: m.group(1), text)


_SPECIAL_RE = re.compile(r"[()\[\]{}\"'\\,;]")
_SPECIAL_BY_SEPARATOR: dict[str, re.Pattern[str]] = {",": _SPECIAL_RE, ";": _SPECIAL_RE}


def _specials(separator: str) -> re.Pattern[str]:
    """The scanning pattern for a separator (brackets, quotes, backslash and the separator itself)."""
    pattern = _SPECIAL_BY_SEPARATOR.get(separator)
    if pattern is None:
        pattern = re.compile(r"[()\[\]{}\"'\\" + re.escape(separator) + "]")
        _SPECIAL_BY_SEPARATOR[separator] = pattern
    return pattern


class _QuoteState:
    """Whether a scan ended inside a quote (an unbalanced quote: natural language such as `Canada's`)."""

    __slots__ = ("open",)

    def __init__(self) -> None:
        self.open = False


def _structure(
    text: str, start: int, pattern: re.Pattern[str], respect_quotes: bool, state: _QuoteState
) -> Iterator[tuple[int, str]]:
    """The brackets and separators of `text` from `start` that stand outside quoted strings (quotes are
    ignored when `respect_quotes` is False); `state.open` says afterwards whether a quote never closed."""
    quote = ""
    skip_until = -1
    for match in pattern.finditer(text, start):
        index = match.start()
        if index < skip_until:
            continue
        char = match.group()
        if quote:
            if char == "\\":
                skip_until = index + 2
            elif char == quote:
                quote = ""
        elif char in "\"'":
            if respect_quotes:
                quote = char
        elif char != "\\":
            yield index, char
    state.open = bool(quote)


def _scan_call(text: str, open_index: int) -> tuple[int, list[int]] | None:
    """The `)` matching `text[open_index]` and the top-level commas before it, in one pass (respecting quotes
    when they balance); None when the parenthesis never closes."""
    for respect_quotes in (True, False):
        depth = 0
        commas: list[int] = []
        for index, char in _structure(text, open_index, _SPECIAL_RE, respect_quotes, _QuoteState()):
            if char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
                if depth == 0:
                    if char == ")":
                        return index, commas
                    break
            elif char == "," and depth == 1:
                commas.append(index)
    return None


def find_closing_paren(text: str, open_index: int) -> int | None:
    """The index of the `)` matching `text[open_index]`, respecting quotes when they balance."""
    for respect_quotes in (True, False):
        depth = 0
        for index, char in _structure(text, open_index, _SPECIAL_RE, respect_quotes, _QuoteState()):
            if char in "([{":
                depth += 1
            elif char in ")]}":
                depth -= 1
                if depth == 0:
                    if char == ")":
                        return index
                    break
    return None


def split_top_level(text: str, separator: str) -> list[str]:
    """Split at `separator` outside brackets and (balanced) quotes; unbalanced quotes are ignored."""
    if separator not in text:
        return [text]
    parts = _split(text, separator, respect_quotes=True)
    return parts if parts is not None else _split(text, separator, respect_quotes=False) or [text]


def _split(text: str, separator: str, respect_quotes: bool) -> list[str] | None:
    parts: list[str] = []
    depth = 0
    start = 0
    state = _QuoteState()
    for index, char in _structure(text, 0, _specials(separator), respect_quotes, state):
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char == separator and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    if state.open:
        return None
    parts.append(text[start:])
    return parts


def declared_variables(texts: Iterable[str]) -> dict[str, str | None]:
    """Every `$name` written in the texts, in order, with the first type declared for it (`$n:int`), or
    None: the one collector of the variables a program names."""
    found: dict[str, str | None] = {}
    for text in texts:
        for match in TYPED_VARIABLE_RE.finditer(text):
            name, declared = match.group(1), match.group(2)
            if found.get(name) is None:
                found[name] = declared
    return found

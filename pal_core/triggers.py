"""Trigger texts: the `T<n>:CODE text` form, the code a plain trigger text means, and `@playbook(triggers=...)`
strings made canonical.

The markdown compiler numbers the plain trigger texts authors write; the PAL parser does the same for the
compiled programs that left the `T<n>:CODE` out (the original runtime ran them). Both say what they changed.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import cast

from pal_core.ir import TriggerCode
from pal_core.pysource import parse_python

TRIGGER_RE = re.compile(r"\s*(?P<id>T\d+)\s*:\s*(?P<code>[A-Za-z]+)\b\s?(?P<text>.*)\Z", re.DOTALL)
"""A canonical trigger string, `T1:CND When the user asks`."""

# --- what a trigger text means ---------------------------------------------------------------------

_EXPLICIT_TRIGGER_RE = re.compile(
    r"(?:T\d+[ \t]*:[ \t]*)?(?P<code>BGN|CND|EVT)\b[ \t]*:?[ \t]*(?P<text>.*)\Z", re.DOTALL
)
_BEGINNING_RES = (
    re.compile(r"^(?:at|on|upon|in)\s+(?:the\s+)?(?:very\s+)?(?:beginning|start|startup|outset|launch)\b"),
    re.compile(
        r"\b(?:program|conversation|session|agent|application|app|execution|run|chat|system)\s+"
        r"(?:starts|begins|launches|is\s+started|is\s+launched|starts\s+up|start|begin)\b"
    ),
    re.compile(r"^(?:the\s+)?(?:beginning|start|startup)\b"),
    re.compile(r"^(?:on|at|upon)\s+(?:program|session|conversation)\s+start"),
)
_EVENT_WORDS = frozenset(
    {"event", "events", "webhook", "webhooks", "notification", "notifications", "signal", "signals"}
    | {"callback", "callbacks"}
)
_MESSAGE_WORDS = frozenset({"message", "messages", "email", "emails", "request", "requests", "ping"})
_ARRIVAL_WORDS = frozenset(
    {
        "receive",
        "received",
        "receives",
        "receiving",
        "arrive",
        "arrives",
        "arrived",
        "arrival",
        "comes",
        "sends",
    }
    | {"sent", "incoming", "gets"}
)


def trigger_code(text: str) -> tuple[str, str]:
    """The trigger code and the trigger text; an explicit `BGN`/`CND`/`EVT` prefix is honoured and removed."""
    explicit = _EXPLICIT_TRIGGER_RE.match(text.strip())
    if explicit is not None and explicit.group("text").strip():
        return explicit.group("code"), explicit.group("text").strip()
    lowered = " ".join(text.lower().split())
    if any(pattern.search(lowered) for pattern in _BEGINNING_RES):
        return TriggerCode.BGN.value, text.strip()
    words = set(re.findall(r"[a-z]+", lowered))
    if words & _EVENT_WORDS or (words & _MESSAGE_WORDS and words & _ARRIVAL_WORDS):
        return TriggerCode.EVT.value, text.strip()
    return TriggerCode.CND.value, text.strip()


@dataclass(frozen=True, slots=True, kw_only=True)
class TriggerRewrite:
    """One `@playbook` trigger string made canonical, for a warning at its place."""

    line: int
    """1-based line within the code."""
    column: int
    """1-based column of the literal."""
    text: str
    """The string as written."""
    written: str
    """What it became: `T1:CND ...`, or `["T1:CND ..."]` for a lone string."""
    lone_string: bool
    """`triggers="..."`: one string where a list is meant."""


@dataclass(frozen=True, slots=True)
class CanonicalPython:
    """A code block with its triggers made canonical."""

    code: str
    """The code, rewritten where a trigger was not canonical."""
    rewrites: list[TriggerRewrite]
    """What was rewritten."""
    module: ast.Module | None
    """The syntax tree of `code` when nothing was rewritten (reading it again is not needed); else None."""


def canonical_python(code: str) -> CanonicalPython:
    """`code` with every `@playbook` trigger written `T<n>:<CODE> text` (a lone string `triggers="..."`
    becomes a list of one), what was rewritten, and the syntax tree when nothing was (so the block is parsed
    once). Only those literals change; the rest of the code is kept byte for byte. Code that does not parse
    is returned unchanged (reading it reports the error)."""
    if "triggers" not in code:
        return CanonicalPython(code, [], None)
    try:
        module = cast(ast.Module, parse_python(code))  # mode "exec" gives a Module
    except (SyntaxError, ValueError):
        return CanonicalPython(code, [], None)
    lines = code.split("\n")
    replacements: list[tuple[int, int, str]] = []
    rewrites: list[TriggerRewrite] = []
    for node in module.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            for element, position, lone in _trigger_strings(decorator):
                if not lone and TRIGGER_RE.match(element.value):
                    continue
                canonical = element.value.strip()
                if TRIGGER_RE.match(canonical) is None:
                    code_name, text = trigger_code(element.value)
                    canonical = f"T{position}:{code_name} {text}"
                start = _offset(lines, element.lineno, element.col_offset)
                end = _offset(lines, element.end_lineno or element.lineno, element.end_col_offset or 0)
                literal = _literal(canonical, code[start:end])
                written = f"[{literal}]" if lone else literal
                replacements.append((start, end, written))
                rewrites.append(
                    TriggerRewrite(
                        line=element.lineno,
                        column=element.col_offset + 1,
                        text=element.value,
                        written=written,
                        lone_string=lone,
                    )
                )
    if not replacements:
        return CanonicalPython(code, [], module)
    for start, end, literal in sorted(replacements, reverse=True):
        code = code[:start] + literal + code[end:]
    return CanonicalPython(code, rewrites, None)


def _trigger_strings(decorator: ast.expr) -> list[tuple[ast.Constant, int, bool]]:
    """The string constants of `triggers=[...]` (or a lone `triggers="..."`) in a `@playbook(...)` decorator,
    with 1-based positions and whether the string stands alone."""
    if not isinstance(decorator, ast.Call):
        return []
    target = decorator.func
    named = (isinstance(target, ast.Name) and target.id == "playbook") or (
        isinstance(target, ast.Attribute) and target.attr == "playbook"
    )
    if not named:
        return []
    found: list[tuple[ast.Constant, int, bool]] = []
    for keyword in decorator.keywords:
        if keyword.arg != "triggers":
            continue
        value = keyword.value
        if isinstance(value, ast.Constant) and isinstance(value.value, str) and value.value.strip():
            found.append((value, 1, True))
            continue
        if not isinstance(value, (ast.List, ast.Tuple)):
            continue
        for position, element in enumerate(value.elts, 1):
            if isinstance(element, ast.Constant) and isinstance(element.value, str) and element.value.strip():
                found.append((element, position, False))
    return found


def _offset(lines: list[str], line: int, byte_column: int) -> int:
    """The string index of (1-based line, UTF-8 byte column), as `ast` reports positions."""
    before = sum(len(text) + 1 for text in lines[: line - 1])
    return before + len(lines[line - 1].encode("utf-8")[:byte_column].decode("utf-8", errors="replace"))


def _literal(value: str, original: str) -> str:
    """A Python string literal for `value`, quoted like the literal it replaces where that is simple."""
    if original.startswith("'"):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)

"""Writing GBNF text: quoting, character classes, and a rule set with unique names.

Only the dialect llama.cpp reads: rule names of letters, digits and dashes; escapes `\\x..`, `\\t`,
`\\n`, `\\r`, `\\\\`, `\\"`, `\\[`, `\\]` (nothing else, so every other awkward character is written as
`\\xHH` or `\\uHHHH`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_SAFE_IN_LITERAL = re.compile(r"[^\\\"\x00-\x1f\x7f]")
_NAME_PART = re.compile(r"[^a-z0-9]+")


def _escape_char(char: str, in_class: bool) -> str:
    point = ord(char)
    if char == "\n":
        return "\\n"
    if char == "\t":
        return "\\t"
    if char == "\r":
        return "\\r"
    if char in '\\"':
        return "\\" + char
    if in_class and not char.isalnum():
        # Inside [...] `-`, `^`, `]` and `[` have meanings; hex is always read as the character.
        return f"\\x{point:02X}" if point < 0x100 else f"\\u{point:04X}"
    if point < 0x20 or point == 0x7F:
        return f"\\x{point:02X}"
    return char


def literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    return (
        '"'
        + "".join(char if _SAFE_IN_LITERAL.fullmatch(char) else _escape_char(char, False) for char in text)
        + '"'
    )


def char_class(chars: str = "", ranges: Iterable[tuple[str, str]] = (), negated: bool = False) -> str:
    """A `[...]` class of single characters and inclusive ranges; `negated` writes `[^...]`."""
    parts = [_escape_char(char, True) for char in chars]
    parts += [f"{_escape_char(low, True)}-{_escape_char(high, True)}" for low, high in ranges]
    return "[" + ("^" if negated else "") + "".join(parts) + "]"


def rule_name(*parts: str) -> str:
    """A valid rule name from free parts: `rule_name("st", "03.01", "7")` -> `st-03-01-7`."""
    cleaned = [_NAME_PART.sub("-", part.lower()).strip("-") for part in parts]
    return "-".join(part for part in cleaned if part) or "rule"


def alternatives(options: Iterable[str]) -> str:
    """`( a | b )` for several options, the option itself for one, `""` for none."""
    unique = list(dict.fromkeys(options))
    if not unique:
        return '""'
    if len(unique) == 1:
        return unique[0]
    return "( " + " | ".join(unique) + " )"


class RuleSet:
    """Rules in definition order, each name defined once; `root` first."""

    def __init__(self) -> None:
        self._rules: dict[str, str] = {}

    def __contains__(self, name: str) -> bool:
        return name in self._rules

    def __len__(self) -> int:
        return len(self._rules)

    def define(self, name: str, body: str) -> str:
        """Define `name ::= body` (once; a second definition must be identical) and return the name."""
        known = self._rules.get(name)
        if known is not None and known != body:
            raise ValueError(f"rule {name} defined twice with different bodies")
        self._rules[name] = body
        return name

    def text(self) -> str:
        """The grammar, `root` first."""
        names = sorted(self._rules, key=lambda name: name != "root")
        return "".join(f"{name} ::= {self._rules[name]}\n" for name in names)

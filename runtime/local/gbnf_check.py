"""A GBNF reader and recognizer in pure Python: does a grammar admit a string?

The local model is constrained by llama.cpp's grammar sampler; the grammar generator's tests need to
ask the same question (does this grammar accept this answer?) without loading a model. This module
reads the GBNF dialect llama.cpp reads (rules `name ::= ...`, "literals", [classes] with ranges and
`^`, `.`, groups, `*` `+` `?` `{m}` `{m,}` `{m,n}`, `#` comments, newlines inside parentheses and
after `|`) and decides membership exactly, as a set of end positions per element.

It refuses what llama.cpp refuses: undefined rules, a missing `root`, unknown escapes, left
recursion. `tests/runtime/local/test_llama_grammar.py` checks it against llama.cpp itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from pal_core.errors import PalError


class GbnfError(PalError):
    """A grammar that llama.cpp would not load (syntax, undefined rule, left recursion)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Literal:
    """A quoted string: its characters in order."""

    text: str
    """The characters (escapes resolved)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CharClass:
    """`[...]` or `[^...]`: one character in (or not in) a set of ranges; `.` is the empty negated class."""

    ranges: tuple[tuple[int, int], ...]
    """Inclusive code point ranges."""
    negated: bool = False
    """True for `[^...]` and `.`."""

    def matches(self, char: str) -> bool:
        """Whether one character is admitted."""
        point = ord(char)
        inside = any(low <= point <= high for low, high in self.ranges)
        return inside != self.negated


@dataclass(frozen=True, slots=True, kw_only=True)
class RuleRef:
    """A reference to a rule by name."""

    name: str
    """The rule name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Repeat:
    """An element repeated between `minimum` and `maximum` times (None: no upper bound)."""

    element: Element
    """What repeats."""
    minimum: int
    """At least this many times."""
    maximum: int | None
    """At most this many times; None for `*`, `+` and `{m,}`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Alternatives:
    """`a b | c d`: one of several sequences (a group in parentheses, or a rule's body)."""

    options: tuple[tuple[Element, ...], ...]
    """Each option is a sequence of elements; an empty sequence matches the empty string."""


Element = Literal | CharClass | RuleRef | Repeat | Alternatives


@dataclass(frozen=True, slots=True, kw_only=True)
class Grammar:
    """A parsed GBNF grammar."""

    rules: dict[str, Alternatives] = field(default_factory=dict)
    """Every rule by name, in definition order."""
    root: str = "root"
    """The start rule."""

    def accepts(self, text: str) -> bool:
        """Whether the whole of `text` is a sentence of the grammar."""
        return len(text) in _Matcher(self, text).ends(RuleRef(name=self.root), 0)

    def accepts_prefix(self, text: str) -> bool:
        """Whether `text` can be continued into a sentence (the sampler's view, character by character)."""
        return _Matcher(self, text, prefix=True).prefix_ok()


def parse_gbnf(source: str, root: str = "root") -> Grammar:
    """Read a GBNF grammar; raises GbnfError saying where and why."""
    reader = _Reader(source)
    rules = reader.read()
    if root not in rules:
        raise GbnfError(f"the grammar has no `{root}` rule")
    for name, body in rules.items():
        for missing in _undefined(body, rules):
            raise GbnfError(f"rule `{name}` refers to undefined rule `{missing}`")
    _check_left_recursion(rules)
    return Grammar(rules=rules, root=root)


# Reading ------------------------------------------------------------------------------------------

_ESCAPES = {"t": "\t", "r": "\r", "n": "\n", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def _is_name_char(char: str) -> bool:
    # llama.cpp: letters, digits and dashes (no underscore).
    return char.isascii() and (char.isalnum() or char == "-")


class _Reader:
    def __init__(self, source: str) -> None:
        self.text = source
        self.pos = 0

    def error(self, message: str) -> GbnfError:
        line = self.text.count("\n", 0, self.pos) + 1
        column = self.pos - (self.text.rfind("\n", 0, self.pos) + 1) + 1
        return GbnfError(f"GBNF {line}:{column}: {message}")

    def skip(self, newlines: bool) -> None:
        """Skip blanks and comments (and newlines when inside parentheses or between rules)."""
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char == "#":
                end = text.find("\n", self.pos)
                self.pos = len(text) if end < 0 else end
            elif char in " \t" or (newlines and char in "\r\n"):
                self.pos += 1
            else:
                return

    def read(self) -> dict[str, Alternatives]:
        rules: dict[str, Alternatives] = {}
        self.skip(newlines=True)
        while self.pos < len(self.text):
            name = self.name()
            self.skip(newlines=False)
            if not self.text.startswith("::=", self.pos):
                raise self.error("expected `::=` after the rule name")
            self.pos += 3
            self.skip(newlines=True)
            body = self.alternatives(nested=False)
            if name in rules:
                raise self.error(f"rule `{name}` is defined twice")
            rules[name] = body
            if self.pos < len(self.text) and self.text[self.pos] not in "\r\n":
                raise self.error("expected a newline after the rule")
            self.skip(newlines=True)
        return rules

    def name(self) -> str:
        start = self.pos
        while self.pos < len(self.text) and _is_name_char(self.text[self.pos]):
            self.pos += 1
        if self.pos == start:
            raise self.error("expected a rule name")
        return self.text[start : self.pos]

    def alternatives(self, nested: bool) -> Alternatives:
        options = [self.sequence(nested)]
        while self.pos < len(self.text) and self.text[self.pos] == "|":
            self.pos += 1
            self.skip(newlines=True)
            options.append(self.sequence(nested))
        return Alternatives(options=tuple(options))

    def sequence(self, nested: bool) -> tuple[Element, ...]:
        items: list[Element] = []
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                items.append(Literal(text=self.literal()))
            elif char == "[":
                self.pos += 1
                items.append(self.char_class())
            elif char == ".":
                self.pos += 1
                items.append(CharClass(ranges=(), negated=True))
            elif char == "(":
                self.pos += 1
                self.skip(newlines=True)
                group = self.alternatives(nested=True)
                if self.pos >= len(text) or text[self.pos] != ")":
                    raise self.error("expected `)`")
                self.pos += 1
                items.append(group)
            elif _is_name_char(char):
                items.append(RuleRef(name=self.name()))
            elif char in "*+?{":
                if not items:
                    raise self.error(f"`{char}` must follow an element")
                items[-1] = self.repetition(items[-1])
            else:
                break
            self.skip(newlines=nested)
        return tuple(items)

    def repetition(self, element: Element) -> Repeat:
        char = self.text[self.pos]
        self.pos += 1
        if char == "*":
            return Repeat(element=element, minimum=0, maximum=None)
        if char == "+":
            return Repeat(element=element, minimum=1, maximum=None)
        if char == "?":
            return Repeat(element=element, minimum=0, maximum=1)
        self.skip(newlines=False)
        minimum = self.integer()
        self.skip(newlines=False)
        maximum: int | None = minimum
        if self.text.startswith(",", self.pos):
            self.pos += 1
            self.skip(newlines=False)
            maximum = None if self.text.startswith("}", self.pos) else self.integer()
            self.skip(newlines=False)
        if not self.text.startswith("}", self.pos):
            raise self.error("expected `}`")
        self.pos += 1
        if maximum is not None and maximum < minimum:
            raise self.error(f"repetition {{{minimum},{maximum}}} has its maximum below its minimum")
        return Repeat(element=element, minimum=minimum, maximum=maximum)

    def integer(self) -> int:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos].isdigit():
            self.pos += 1
        if self.pos == start:
            raise self.error("expected a number")
        return int(self.text[start : self.pos])

    def char(self) -> str:
        """One character of a literal or class, escapes resolved."""
        text = self.text
        if self.pos >= len(text):
            raise self.error("unexpected end of grammar")
        char = text[self.pos]
        if char != "\\":
            self.pos += 1
            return char
        if self.pos + 1 >= len(text):
            raise self.error("unexpected end of grammar after `\\`")
        kind = text[self.pos + 1]
        if kind in _ESCAPES:
            self.pos += 2
            return _ESCAPES[kind]
        if kind in _HEX_ESCAPES:
            digits = text[self.pos + 2 : self.pos + 2 + _HEX_ESCAPES[kind]]
            if len(digits) != _HEX_ESCAPES[kind] or any(d not in "0123456789abcdefABCDEF" for d in digits):
                raise self.error(f"bad `\\{kind}` escape")
            self.pos += 2 + len(digits)
            return chr(int(digits, 16))
        raise self.error(f"unknown escape `\\{kind}`")

    def literal(self) -> str:
        chars: list[str] = []
        while True:
            if self.pos >= len(self.text):
                raise self.error("a string never closes")
            if self.text[self.pos] == '"':
                self.pos += 1
                return "".join(chars)
            if self.text[self.pos] in "\r\n":
                raise self.error("a string never closes on its line")
            chars.append(self.char())

    def char_class(self) -> CharClass:
        negated = self.text.startswith("^", self.pos)
        if negated:
            self.pos += 1
        ranges: list[tuple[int, int]] = []
        while True:
            if self.pos >= len(self.text):
                raise self.error("a character class never closes")
            if self.text[self.pos] == "]":
                self.pos += 1
                return CharClass(ranges=tuple(ranges), negated=negated)
            low = ord(self.char())
            high = low
            if self.text.startswith("-", self.pos) and not self.text.startswith("-]", self.pos):
                self.pos += 1
                high = ord(self.char())
            ranges.append((low, high))


def _references(element: Element) -> Iterable[str]:
    if isinstance(element, RuleRef):
        yield element.name
    elif isinstance(element, Repeat):
        yield from _references(element.element)
    elif isinstance(element, Alternatives):
        for option in element.options:
            for item in option:
                yield from _references(item)


def _undefined(body: Alternatives, rules: dict[str, Alternatives]) -> list[str]:
    return [name for name in _references(body) if name not in rules]


def _nullable_rules(rules: dict[str, Alternatives]) -> set[str]:
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, body in rules.items():
            if name not in nullable and _nullable(body, nullable):
                nullable.add(name)
                changed = True
    return nullable


def _nullable(element: Element, nullable: set[str]) -> bool:
    if isinstance(element, Literal):
        return not element.text
    if isinstance(element, CharClass):
        return False
    if isinstance(element, RuleRef):
        return element.name in nullable
    if isinstance(element, Repeat):
        return element.minimum == 0 or _nullable(element.element, nullable)
    return any(all(_nullable(item, nullable) for item in option) for option in element.options)


def _leftmost(element: Element, nullable: set[str]) -> Iterable[str]:
    """Rules that may be entered before any character is read."""
    if isinstance(element, RuleRef):
        yield element.name
    elif isinstance(element, Repeat):
        yield from _leftmost(element.element, nullable)
    elif isinstance(element, Alternatives):
        for option in element.options:
            for item in option:
                yield from _leftmost(item, nullable)
                if not _nullable(item, nullable):
                    break


def _check_left_recursion(rules: dict[str, Alternatives]) -> None:
    nullable = _nullable_rules(rules)
    edges = {name: set(_leftmost(body, nullable)) for name, body in rules.items()}
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    for start in rules:
        if state.get(start):
            continue
        stack: list[tuple[str, Iterator[str]]] = [(start, iter(edges[start]))]
        state[start] = 1
        while stack:
            name, pending = stack[-1]
            following = next(pending, None)
            if following is None:
                state[name] = 2
                stack.pop()
                continue
            if state.get(following) == 1:
                raise GbnfError(f"left recursion through rule `{following}`")
            if not state.get(following):
                state[following] = 1
                stack.append((following, iter(edges[following])))


# Matching -----------------------------------------------------------------------------------------


class _Matcher:
    """All the places each element can end when it starts at a position (memoised per rule)."""

    def __init__(self, grammar: Grammar, text: str, prefix: bool = False) -> None:
        self.grammar = grammar
        self.text = text
        self.prefix = prefix
        """When True, reaching the end of the text inside an element counts as a match (`len+1`)."""
        self.past_end = len(text) + 1
        """The position standing for "the text ran out inside an element" in prefix mode."""
        self.memo: dict[tuple[str, int], frozenset[int]] = {}

    def prefix_ok(self) -> bool:
        ends = self.ends(RuleRef(name=self.grammar.root), 0)
        return len(self.text) in ends or self.past_end in ends

    def ends(self, element: Element, start: int) -> frozenset[int]:
        text = self.text
        past = self.past_end
        if start == past:
            return frozenset({past})
        if isinstance(element, Literal):
            chars = element.text
            if text.startswith(chars, start):
                return frozenset({start + len(chars)})
            if self.prefix and chars.startswith(text[start:]):
                return frozenset({past})
            return frozenset()
        if isinstance(element, CharClass):
            if start < len(text):
                return frozenset({start + 1}) if element.matches(text[start]) else frozenset()
            return frozenset({past}) if self.prefix else frozenset()
        if isinstance(element, RuleRef):
            key = (element.name, start)
            found = self.memo.get(key)
            if found is None:
                found = self.ends(self.grammar.rules[element.name], start)
                self.memo[key] = found
            return found
        if isinstance(element, Repeat):
            return self._repeat(element, start)
        result: set[int] = set()
        for option in element.options:
            positions = {start}
            for item in option:
                positions = {end for position in positions for end in self.ends(item, position)}
                if not positions:
                    break
            result |= positions
        return frozenset(result)

    def _repeat(self, element: Repeat, start: int) -> frozenset[int]:
        result: set[int] = set()
        frontier = {start}
        seen: set[int] = set()
        count = 0
        while frontier:
            if count >= element.minimum:
                result |= frontier
            if element.maximum is not None and count >= element.maximum:
                break
            frontier = {end for position in frontier for end in self.ends(element.element, position)}
            count += 1
            if count > element.minimum:
                # Past the minimum, a position already reached adds nothing new.
                frontier -= seen
                seen |= frontier
        return frozenset(result)

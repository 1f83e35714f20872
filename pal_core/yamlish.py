"""The YAML subset used by PAL metadata blocks and front matter, read and written without PyYAML.

Supported: block mappings and sequences (a sequence may sit at its key's indentation), flow
sequences and mappings, plain/single/double-quoted scalars, `|` and `>` block scalars, comments.
Values are JSON-compatible; keys are always strings. Plain scalars resolve as YAML 1.2's core
schema does (null, true/false, ints, floats), everything else is a string. `dump` writes text that
`load` reads back to an equal value. Values nest at most MAX_NESTING levels (the reader is recursive).
"""

from __future__ import annotations

import json
import re
from typing import Any

_INT_RE = re.compile(r"[-+]?[0-9]+\Z")
_FLOAT_RE = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?\Z")
_PLAIN_KEY_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-/ ]*\Z")
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUES = frozenset({"true", "True", "TRUE"})
_FALSES = frozenset({"false", "False", "FALSE"})
_INDICATORS = frozenset("-?:,[]{}#&*!|>'\"%@`")
# Plain scalars that YAML 1.1 readers (PyYAML) would not read as strings: quote them when writing.
_YAML11_SPECIAL_RE = re.compile(
    r"(?i:y|n|yes|no|on|off)\Z|\d{4}-\d\d?-\d\d?|[-+]?\.(?i:inf|nan)\Z|0[xo]|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+"
)


MAX_NESTING = 50
"""How deep mappings and sequences may nest in metadata or front matter; deeper is a YamlError."""


class YamlError(ValueError):
    """A metadata or front-matter block that is not the supported YAML subset."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


Line = tuple[int, str]
"""A source line: (1-based line number, text without the newline)."""


def load(lines: list[Line]) -> dict[str, Any]:
    """Read a block of `key: value` lines into a dict."""
    content = [(number, text.rstrip()) for number, text in lines if not _is_blank_or_comment(text)]
    if not content:
        return {}
    reader = _Reader(content)
    indent = _indent(content[0][1])
    value = reader.mapping(indent)
    if reader.index < len(content):
        number, text = content[reader.index]
        raise YamlError("unexpected indentation", number, _indent(text) + 1)
    return value


def _is_blank_or_comment(text: str) -> bool:
    stripped = text.strip()
    return not stripped or stripped.startswith("#")


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


class _Reader:
    def __init__(self, lines: list[Line]) -> None:
        self.lines = lines
        self.index = 0
        self.depth = 0

    def enter(self, number: int, column: int) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise YamlError(f"values nest more than {MAX_NESTING} levels deep", number, column)

    def peek(self) -> Line | None:
        return self.lines[self.index] if self.index < len(self.lines) else None

    def mapping(self, indent: int) -> dict[str, Any]:
        start = self.peek()
        self.enter(start[0] if start else 0, indent + 1)
        try:
            return self._mapping(indent)
        finally:
            self.depth -= 1

    def _mapping(self, indent: int) -> dict[str, Any]:
        result: dict[str, Any] = {}
        while (line := self.peek()) is not None:
            number, text = line
            current = _indent(text)
            if current < indent:
                break
            if current > indent:
                raise YamlError("unexpected indentation", number, current + 1)
            if "\t" in text[:current]:
                raise YamlError("tabs are not allowed for indentation", number, 1)
            body = text[current:]
            if body.startswith("- ") or body == "-":
                raise YamlError("a list item where a 'key: value' was expected", number, current + 1)
            key, rest, rest_column = _split_key(body, number, current)
            if key in result:
                raise YamlError(f"duplicate key {key!r}", number, current + 1)
            self.index += 1
            result[key] = self.value_after_key(rest, number, current + rest_column, indent)
        return result

    def value_after_key(self, rest: str, number: int, column: int, indent: int) -> Any:
        rest = _strip_comment(rest)
        if rest in ("|", "|-", "|+", ">", ">-", ">+"):
            return self.block_scalar(rest, indent)
        if rest:
            return _scalar_or_flow(rest, number, column + 1)
        following = self.peek()
        if following is None:
            return None
        next_indent = _indent(following[1])
        body = following[1][next_indent:]
        is_item = body.startswith("- ") or body == "-"
        if next_indent > indent:
            return self.sequence(next_indent) if is_item else self.mapping(next_indent)
        if next_indent == indent and is_item:
            return self.sequence(indent)
        return None

    def sequence(self, indent: int) -> list[Any]:
        start = self.peek()
        self.enter(start[0] if start else 0, indent + 1)
        try:
            return self._sequence(indent)
        finally:
            self.depth -= 1

    def _sequence(self, indent: int) -> list[Any]:
        items: list[Any] = []
        while (line := self.peek()) is not None:
            number, text = line
            current = _indent(text)
            body = text[current:]
            if current != indent or not (body.startswith("- ") or body == "-"):
                if current > indent:
                    raise YamlError("unexpected indentation", number, current + 1)
                break
            self.index += 1
            item = _strip_comment(body[1:].strip())
            item_column = current + 3
            if not item:
                following = self.peek()
                if following is not None and _indent(following[1]) > indent:
                    sub_indent = _indent(following[1])
                    sub_body = following[1][sub_indent:]
                    if sub_body.startswith("- ") or sub_body == "-":
                        items.append(self.sequence(sub_indent))
                    else:
                        items.append(self.mapping(sub_indent))
                else:
                    items.append(None)
            elif _starts_mapping(item, number, item_column):
                # `- key: value` starts a mapping item whose other keys are indented under the first.
                inner_indent = current + 2
                self.lines[self.index - 1] = (number, " " * inner_indent + item)
                self.index -= 1
                items.append(self.mapping(inner_indent))
            else:
                items.append(_scalar_or_flow(item, number, item_column))
        return items

    def block_scalar(self, style: str, indent: int) -> str:
        collected: list[str] = []
        block_indent: int | None = None
        while (line := self.peek()) is not None:
            number, text = line
            current = _indent(text)
            if current <= indent:
                break
            if block_indent is None:
                block_indent = current
            if current < block_indent:
                raise YamlError("block text is less indented than its first line", number, current + 1)
            collected.append(text[block_indent:])
            self.index += 1
        joined = "\n".join(collected) if style[0] == "|" else " ".join(collected)
        if style.endswith("-"):
            return joined
        return joined + "\n"


def _split_key(body: str, number: int, indent: int) -> tuple[str, str, int]:
    if body[0] in "\"'":
        key, end = _quoted(body, 0, number, indent + 1)
        rest = body[end:]
        if not rest.lstrip().startswith(":"):
            raise YamlError("expected ':' after the key", number, indent + end + 1)
        colon = end + rest.index(":")
        return key, body[colon + 1 :].strip(), _value_start(body, colon)
    colon = _find_key_colon(body)
    if colon is None:
        raise YamlError("expected 'key: value'", number, indent + 1)
    key = body[:colon].strip()
    return key, body[colon + 1 :].strip(), _value_start(body, colon)


def _value_start(body: str, colon: int) -> int:
    """The 0-based index of the value's first character after `key:`."""
    rest = body[colon + 1 :]
    return colon + 1 + len(rest) - len(rest.lstrip())


def _starts_mapping(item: str, number: int, column: int) -> bool:
    """Whether a sequence item is `key: value` (a mapping) rather than a scalar."""
    if item[0] in "[{":
        return False
    if item[0] in "\"'":
        try:
            _, end = _quoted(item, 0, number, column)
        except YamlError:
            return False
        rest = item[end:].lstrip()
        return rest.startswith(":") and (len(rest) == 1 or rest[1] == " ")
    return _find_key_colon(item) is not None


def _find_key_colon(text: str) -> int | None:
    """The index of the `:` that ends a plain key (followed by a space or the end)."""
    index = text.find(":")
    while index != -1:
        if index + 1 == len(text) or text[index + 1] == " ":
            return index if index > 0 else None
        index = text.find(":", index + 1)
    return None


def _strip_comment(text: str) -> str:
    if not text or text[0] in "\"'[{":
        return text
    position = text.find(" #")
    return text[:position].rstrip() if position != -1 else text


def _quoted(text: str, start: int, number: int, column: int) -> tuple[str, int]:
    """Read a quoted scalar starting at `text[start]`; return (value, index after the closing quote)."""
    quote = text[start]
    index = start + 1
    if quote == "'":
        parts: list[str] = []
        while True:
            end = text.find("'", index)
            if end == -1:
                raise YamlError("unterminated single-quoted string", number, column + start)
            parts.append(text[index:end])
            if text.startswith("''", end):
                parts.append("'")
                index = end + 2
                continue
            return "".join(parts), end + 1
    while index < len(text):
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char == '"':
            try:
                return json.loads(text[start : index + 1]), index + 1
            except json.JSONDecodeError as error:
                raise YamlError(
                    f"bad escape in double-quoted string: {error.msg}", number, column + start
                ) from None
        index += 1
    raise YamlError("unterminated double-quoted string", number, column + start)


def _scalar_or_flow(text: str, number: int, column: int) -> Any:
    if text[0] in "[{":
        parser = _FlowParser(text, number, column)
        value = parser.value()
        parser.skip_spaces()
        if parser.index != len(text):
            raise YamlError("unexpected text after the closing bracket", number, column + parser.index)
        return value
    if text[0] in "\"'":
        value, end = _quoted(text, 0, number, column)
        if text[end:].strip():
            raise YamlError("unexpected text after the quoted string", number, column + end)
        return value
    return resolve_plain(text)


def resolve_plain(text: str) -> Any:
    """The value of a plain (unquoted) scalar."""
    if text in _NULLS:
        return None
    if text in _TRUES:
        return True
    if text in _FALSES:
        return False
    if _INT_RE.match(text):
        return int(text)
    if _FLOAT_RE.match(text) and any(ch.isdigit() for ch in text):
        return float(text)
    return text


class _FlowParser:
    def __init__(self, text: str, number: int, column: int) -> None:
        self.text = text
        self.number = number
        self.column = column
        self.index = 0
        self.depth = 0

    def error(self, message: str) -> YamlError:
        return YamlError(message, self.number, self.column + self.index)

    def skip_spaces(self) -> None:
        while self.index < len(self.text) and self.text[self.index] == " ":
            self.index += 1

    def value(self, *, key: bool = False) -> Any:
        self.skip_spaces()
        if self.index >= len(self.text):
            raise self.error("expected a value")
        char = self.text[self.index]
        if char in "[{":
            self.depth += 1
            if self.depth > MAX_NESTING:
                raise self.error(f"values nest more than {MAX_NESTING} levels deep")
            try:
                return self.sequence() if char == "[" else self.mapping()
            finally:
                self.depth -= 1
        if char in "\"'":
            value, end = _quoted(self.text, self.index, self.number, self.column)
            self.index = end
            return value
        start = self.index
        while self.index < len(self.text) and self.text[self.index] not in ",]}":
            if self.text[self.index] == ":" and (
                self.index + 1 == len(self.text) or self.text[self.index + 1] in " ,]}"
            ):
                break
            self.index += 1
        plain = self.text[start : self.index].strip()
        # Keys are always strings: `{00: x}` has the key "00", not 0.
        return plain if key else resolve_plain(plain)

    def sequence(self) -> list[Any]:
        self.index += 1
        items: list[Any] = []
        self.skip_spaces()
        if self.text.startswith("]", self.index):
            self.index += 1
            return items
        while True:
            items.append(self.value())
            self.skip_spaces()
            if self.text.startswith(",", self.index):
                self.index += 1
                continue
            if self.text.startswith("]", self.index):
                self.index += 1
                return items
            raise self.error("expected ',' or ']'")

    def mapping(self) -> dict[str, Any]:
        self.index += 1
        result: dict[str, Any] = {}
        self.skip_spaces()
        if self.text.startswith("}", self.index):
            self.index += 1
            return result
        while True:
            key = self.value(key=True)
            self.skip_spaces()
            if not self.text.startswith(":", self.index):
                raise self.error("expected ':' in a flow mapping")
            self.index += 1
            result[str(key) if not isinstance(key, str) else key] = self.value()
            self.skip_spaces()
            if self.text.startswith(",", self.index):
                self.index += 1
                continue
            if self.text.startswith("}", self.index):
                self.index += 1
                return result
            raise self.error("expected ',' or '}'")


# --- writing -------------------------------------------------------------------------------------


def dump(mapping: dict[str, Any], indent: int = 0) -> list[str]:
    """Write a mapping as block YAML lines that `load` reads back equal."""
    pad = " " * indent
    lines: list[str] = []
    for key, value in mapping.items():
        head = f"{pad}{_key(key)}:"
        if isinstance(value, dict) and value:
            lines.append(head)
            lines.extend(dump(value, indent + 2))
        elif isinstance(value, list) and value and not _fits_flow(value):
            lines.append(head)
            lines.extend(_dump_sequence(value, indent + 2))
        else:
            lines.append(f"{head} {_flow(value)}")
    return lines


def _dump_sequence(items: list[Any], indent: int) -> list[str]:
    pad = " " * indent
    lines: list[str] = []
    for item in items:
        if isinstance(item, dict) and item:
            nested = dump(item, indent + 2)
            lines.append(f"{pad}- {nested[0].lstrip()}")
            lines.extend(nested[1:])
        else:
            lines.append(f"{pad}- {_flow(item)}")
    return lines


def _fits_flow(items: list[Any]) -> bool:
    return all(not isinstance(item, (dict, list)) for item in items) and len(_flow(items)) <= 80


def _key(key: str) -> str:
    if _PLAIN_KEY_RE.match(key) and not key.endswith(" "):
        return key
    return json.dumps(key, ensure_ascii=False)


def _flow(value: Any, in_flow: bool = False) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        return text if _FLOAT_RE.match(text) else json.dumps(text)
    if isinstance(value, str):
        return _string(value, in_flow)
    if isinstance(value, list):
        return "[" + ", ".join(_flow(item, True) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(k)}: {_flow(v, True)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot write {type(value).__name__} as YAML metadata")


def _string(value: str, in_flow: bool) -> str:
    plain = (
        value
        and value == value.strip()
        and value[0] not in _INDICATORS
        and "\n" not in value
        and "\t" not in value
        and ": " not in value
        and " #" not in value
        and not value.endswith(":")
        and isinstance(resolve_plain(value), str)
        and not _YAML11_SPECIAL_RE.match(value)
        and not (in_flow and any(ch in value for ch in ",[]{}"))
        and value.isprintable()
    )
    return value if plain else json.dumps(value, ensure_ascii=False)

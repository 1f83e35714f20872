"""Where things close in a model answer: brackets, with the strings inside them.

Model text is half Python, half prose. A double-quoted string may span lines (models put real
newlines in `Say` messages); a single quote opens a string only where a Python string could start,
so the apostrophe of `user's` stays prose; a single-quoted string ends at the end of its line.
The scanners jump between interesting characters with compiled patterns, so a long `Say` message
costs one regex search, not a Python loop over its characters. They never raise.
"""

from __future__ import annotations

import re
from typing import NamedTuple

DOUBLE_QUOTED = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
"""A double-quoted string with backslash escapes; may hold real newlines."""
SINGLE_QUOTED = re.compile(r"'[^'\\\n]*(?:\\.[^'\\\n]*)*'")
"""A single-quoted string with backslash escapes, on one line."""

_STRUCTURE = re.compile(r"[\[\](){}\"']")
_BRACKETS = re.compile(r"[\[\](){}]")
_OPENERS = {")": "(", "]": "[", "}": "{"}
# The common case in one regex call: no nested brackets, no single quotes, strings on one line.
_FLAT_BODY = re.compile(r'[^\[\](){}"\'\n]*(?:"[^"\\\n]*(?:\\.[^"\\\n]*)*"[^\[\](){}"\'\n]*)*[\])}]')


class BracketMatch(NamedTuple):
    """The result of matching one opening bracket."""

    close: int | None
    """Index of the matching closing bracket; None when there is none."""
    string_spans_lines: bool = False
    """Whether a string between the brackets holds a real newline."""
    unterminated_string: int | None = None
    """When `close` is None because a string never ends: the index of its opening quote."""


def match_bracket(text: str, open_index: int) -> BracketMatch:
    """Match the bracket at `text[open_index]`, skipping strings; may cross lines."""
    flat = _FLAT_BODY.match(text, open_index + 1)
    if flat is not None:
        close = flat.end() - 1
        if _OPENERS[text[close]] == text[open_index]:
            return BracketMatch(close, False, None)
    stack = [open_index]
    position = open_index + 1
    spans_lines = False
    while True:
        found = _STRUCTURE.search(text, position)
        if found is None:
            return BracketMatch(close=None)
        char = found.group()
        index = found.start()
        if char == '"':
            string = DOUBLE_QUOTED.match(text, index)
            if string is None:
                return BracketMatch(close=None, unterminated_string=index)
            if not spans_lines and text.find("\n", index, string.end()) >= 0:
                spans_lines = True
            position = string.end()
        elif char == "'":
            if not starts_string(text, index):
                position = index + 1
                continue
            string = SINGLE_QUOTED.match(text, index)
            if string is None:
                return BracketMatch(close=None, unterminated_string=index)
            position = string.end()
        elif char in "([{":
            stack.append(index)
            position = index + 1
        else:
            if text[stack[-1]] != _OPENERS[char]:
                return BracketMatch(close=None)
            stack.pop()
            if not stack:
                return BracketMatch(close=index, string_spans_lines=spans_lines)
            position = index + 1


def is_balanced(text: str, start: int, stop: int) -> bool:
    """Whether every bracket and string in `text[start:stop]` closes inside it."""
    stack: list[str] = []
    position = start
    while True:
        found = _STRUCTURE.search(text, position, stop)
        if found is None:
            return not stack
        char = found.group()
        index = found.start()
        if char == '"' or (char == "'" and starts_string(text, index)):
            string = (DOUBLE_QUOTED if char == '"' else SINGLE_QUOTED).match(text, index, stop)
            if string is None:
                return False
            position = string.end()
            continue
        position = index + 1
        if char == "'":  # an apostrophe
            continue
        if char in "([{":
            stack.append(char)
        elif not stack or stack.pop() != _OPENERS[char]:
            return False


def match_bracket_ignoring_quotes(text: str, open_index: int, stop: int) -> int | None:
    """Match the bracket at `text[open_index]` within `text[:stop]`, reading quotes as plain text.

    The fallback for prose inside brackets with an odd number of quotes (`Var[$__, the 5" screen]`).
    """
    depth = 0
    for found in _BRACKETS.finditer(text, open_index, stop):
        if found.group() in "([{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return found.start()
    return None


def starts_string(text: str, index: int) -> bool:
    """Whether the quote at `text[index]` can open a Python string (not an apostrophe inside a word)."""
    if index == 0:
        return True
    before = text[index - 1]
    if before.isalnum() or before == "_":
        # A string prefix (r'', b'', f'', ...) is a word of at most two letters before the quote.
        start = index - 1
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
            start -= 1
        return index - start <= 2 and text[start:index].lower() in _STRING_PREFIXES
    return True


_STRING_PREFIXES = frozenset({"r", "u", "b", "f", "br", "rb", "fr", "rf"})


def skip_blanks(text: str, position: int, stop: int) -> int:
    """The first index at or after `position` (before `stop`) that is not a space or tab."""
    while position < stop and text[position] in " \t":
        position += 1
    return position


def line_end(text: str, position: int) -> int:
    """The index of the newline ending the line that holds `position`, or len(text)."""
    end = text.find("\n", position)
    return len(text) if end < 0 else end

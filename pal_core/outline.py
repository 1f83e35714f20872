"""What the PAL parser and the markdown compiler read alike: the document's outline, line by line.

Both read one document shape (front matter, agents under `#`, playbooks under `##`, sections under `###`,
fenced blocks, `<!-- -->` comments); each interprets only its own section lines. The forms here are the
ones where the two must agree.
"""

from __future__ import annotations

import re

THEMATIC_BREAK_RE = re.compile(
    r"[ ]{0,3}(?:-[ \t]*){3,}\Z|[ ]{0,3}(?:\*[ \t]*){3,}\Z|[ ]{0,3}(?:_[ \t]*){3,}\Z"
)
"""A markdown thematic break (`---`, `***`, `___`), which authors write between agents and playbooks."""


def first_line_index(lines: list[str]) -> int:
    """Where the document starts: after a `#!` line (`#!/usr/bin/env pb`), which makes a file runnable and
    is not part of the program."""
    return 1 if lines and lines[0].startswith("#!") else 0


def is_separator(lines: list[str], index: int) -> bool:
    """Whether line `index` is a thematic break that only separates: the next line with text is a `#`
    header, or there is none."""
    if THEMATIC_BREAK_RE.match(lines[index]) is None:
        return False
    for following in lines[index + 1 :]:
        if following.strip():
            return following.startswith("#")
    return True


# --- description text that looks like structure -------------------------------------------------------
#
# A description (an instruction, a prompt) may hold any text. A line that would read as structure (a
# header, a fence, a comment, `metadata:` right under a header) is written with a backslash before its first
# character, as markdown escapes it: `\## Not a playbook`, `\```python`. Reading drops that one backslash.
# A line that already starts with a backslash before such a character gets one more, so it reads back as
# written: `\# literally` is written `\\# literally`.

_ESCAPABLE_STARTS = ("#", "```", "<!--", "metadata:")


def is_escapable(text: str) -> bool:
    """Whether `text`, written after a backslash, is an escaped description line."""
    while text.startswith("\\"):
        text = text[1:]
    return text.startswith(_ESCAPABLE_STARTS)


def escaped(line: str) -> str:
    """`line` with a backslash before its first character (after its indentation)."""
    body = line.lstrip()
    return f"{line[: len(line) - len(body)]}\\{body}"


def unescaped(line: str) -> str:
    """A description line as its author meant it: one leading backslash before structure dropped."""
    body = line.lstrip()
    if body.startswith("\\") and is_escapable(body[1:]):
        return line[: len(line) - len(body)] + body[1:]
    return line

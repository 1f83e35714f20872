"""Description text that looks like structure, escaped so that any text round-trips.

A description (an instruction, a prompt) may hold any text. A line that would read as structure (a header,
a fence, a comment, `metadata:` right under a header) is written with a backslash before its first
character, as markdown escapes it: `\\## Not a playbook`, `\\```python`. Reading drops that one backslash. A
line that already starts with a backslash before such a character gets one more, so it reads back as
written. The writer decides which lines need it (`pal_core.writer`); both readers undo it
(`pal_core.outline`). docs/pal-format.md shows the forms.
"""

from __future__ import annotations

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

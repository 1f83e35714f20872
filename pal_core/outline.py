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

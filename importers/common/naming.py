"""PAL names for the names of other frameworks, unique within their scope, and text that reads back as a
PAL description."""

from __future__ import annotations

import keyword
import re
from collections.abc import Container, Iterable

_WORD_RE = re.compile(r"[A-Za-z0-9]+")
_CAMEL_SPLIT_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def camel_case(name: str) -> str:
    """A PAL playbook or agent name for a framework's name: `route_after_a` -> `RouteAfterA`."""
    words: list[str] = []
    for word in _WORD_RE.findall(name):
        words.extend(_CAMEL_SPLIT_RE.split(word))
    text = "".join(word[:1].upper() + word[1:] for word in words if word)
    if not text:
        return "Node"
    if text[0].isdigit():
        text = f"Node{text}"
    if keyword.iskeyword(text):
        text = f"{text}Node"
    return text


RESERVED_AGENT_NAMES = frozenset({"Human", "User"})
"""Agent names the runtime reads as the program's user (a meeting attendee `User`, `Say("user", ...)`): an
imported agent never takes them (an AutoGen `UserProxyAgent(name="user")` becomes `UserAgent`)."""


class Namer:
    """Unique names: `base`, else `base + hint`, else `base + hint + 2`, ... (with no hint: `base`,
    `base2`, `base3`, ...)."""

    __slots__ = ("_taken",)

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._taken = set(reserved)

    def take(self, base: str, hint: str = "") -> str:
        candidates = [base, f"{base}{hint}"] if not base.endswith(hint) else [base]
        for candidate in candidates:
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate
        number = 2
        while f"{base}{hint}{number}" in self._taken:
            number += 1
        self._taken.add(f"{base}{hint}{number}")
        return f"{base}{hint}{number}"


def target_name(target: str, generic: Container[str], *, ignore_case: bool = False) -> str:
    """A name for the object an import target (`module:attribute`) names: the attribute's own name, or
    `<module>_<attribute>` when that is a word in `generic` that would name every import alike
    (`myapp.plans:graph` -> `plans_graph`)."""
    module, _, attribute = target.partition(":")
    last = attribute.rpartition(".")[2]
    word = last.lower() if ignore_case else last
    return f"{module.rpartition('.')[2]}_{last}" if word in generic else last


def first_paragraph(text: str) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join(text.split("\n\n", 1)[0].split())


def safe_description(text: str) -> str:
    """A framework's prompt as a playbook description: its lines as written, without trailing spaces or
    blank lines around it. Lines that would read as structure (`# Role`, a fence) need nothing here: the
    writer escapes them and the readers undo it (pal_core.description_text)."""
    lines = [line.rstrip() for line in text.strip().splitlines()]
    return "\n".join(lines).strip("\n")


__all__ = ["Namer", "camel_case", "first_paragraph", "safe_description", "target_name"]

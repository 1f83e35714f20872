"""PAL names for the tools of remote agents (MCP servers name tools `get-sum`, `files.read`, `3d-render`).

A PAL call is `Agent.Name(arg=...)`, where the name and the argument names are identifiers: in
`Everything.get-sum(a=1, b=2)` the `-` is a minus. So each remote tool (and each of its arguments) gets a
PAL name, and the original is kept for the call:

- a name that is already an identifier (`echo`, `get_current_time`) is kept as it is;
- otherwise every character other than an ASCII letter, digit or `_` becomes `_` (`get-sum` -> `get_sum`,
  `files.read` -> `files_read`), a leading digit gets `tool_` in front (`3d-render` -> `tool_3d_render`),
  and a Python keyword gets `_` after it (`import` -> `import_`);
- when two tools would share a PAL name, the names already legal keep theirs, and the others get `_2`,
  `_3`, ... in the order the server lists them.
"""

from __future__ import annotations

import keyword
import re
from collections.abc import Iterable

_NOT_NAME = re.compile(r"[^A-Za-z0-9_]")


def is_pal_name(name: str) -> bool:
    """Whether `name` can be written in a PAL call as it is."""
    return name.isidentifier() and name.isascii() and not keyword.iskeyword(name)


def pal_name(name: str) -> str:
    """The PAL name of one remote tool or argument name (without collision handling)."""
    if is_pal_name(name):
        return name
    text = _NOT_NAME.sub("_", name) or "_"
    if text[0].isdigit():
        text = f"tool_{text}"
    if keyword.iskeyword(text):
        text = f"{text}_"
    return text


def pal_names(names: Iterable[str]) -> dict[str, str]:
    """{PAL name: original name} for names in the order given, every PAL name distinct."""
    listed = list(dict.fromkeys(names))
    taken = {name for name in listed if is_pal_name(name)}
    mapping: dict[str, str] = {}
    for name in listed:
        if is_pal_name(name):
            mapping[name] = name
            continue
        candidate = base = pal_name(name)
        number = 2
        while candidate in taken:
            candidate = f"{base}_{number}"
            number += 1
        taken.add(candidate)
        mapping[candidate] = name
    return mapping


__all__ = ["is_pal_name", "pal_name", "pal_names"]

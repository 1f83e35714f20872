"""Facts derived from IR nodes, computed once per node.

A model turn asks the same questions of its program every time (which variables the agent's playbooks
name, which the program sets, the playbook's text for the prompt); the answers depend only on the nodes,
which are frozen. IR nodes hold dicts (metadata), so they cannot be dict keys; the cache keys them by
identity and keeps a reference to each node, so an id is never reused while its entry lives.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")

MAX_ENTRIES = 4096
"""Entries kept per function; past it the cache starts again (programs are few, their nodes long-lived)."""


def per_node(function: Callable[..., R]) -> Callable[..., R]:
    """`function(*nodes)` computed once per tuple of node identities. The result is shared: callers must
    not change it (return immutable values, or copy before changing)."""
    entries: dict[tuple[int, ...], tuple[tuple[Any, ...], R]] = {}

    @functools.wraps(function)
    def cached(*nodes: Any) -> R:
        key = tuple(id(node) for node in nodes)
        entry = entries.get(key)
        if entry is not None and all(kept is node for kept, node in zip(entry[0], nodes, strict=True)):
            return entry[1]
        result = function(*nodes)
        if len(entries) >= MAX_ENTRIES:
            entries.clear()
        entries[key] = (nodes, result)
        return result

    cached.cache_clear = entries.clear  # type: ignore[attr-defined]
    return cached


__all__ = ["per_node"]

"""Named registries of pluggable parts (importers and exporters by framework name): built-ins are listed by
import path and loaded on first use, so naming a framework never imports the others."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Generic, TypeVar

from pal_core.errors import PalError

T = TypeVar("T")


class NamedRegistry(Generic[T]):
    """Parts of one kind by name: the built-ins (`name -> "module:attribute"`) and those registered in code."""

    def __init__(
        self,
        kind: str,
        builtin: Mapping[str, str],
        *,
        unknown: type[PalError],
        accepts: Callable[[object], bool],
        expected: str,
    ) -> None:
        self.kind = kind
        self._builtin = dict(builtin)
        self._unknown = unknown
        self._accepts = accepts
        self._expected = expected
        self._registered: dict[str, T] = {}

    def register(self, name: str, part: T, *, replace: bool = False) -> None:
        """Make `part` available under `name`; an existing name needs `replace=True`."""
        if not name or not name.replace("-", "_").isidentifier():
            raise ValueError(f"{self.kind} name {name!r} must be a word such as 'langgraph'")
        if not self._accepts(part):
            raise TypeError(f"{self.kind} {name!r} must be {self._expected}, got {type(part).__name__}")
        if not replace and (name in self._registered or name in self._builtin):
            raise ValueError(
                f"an {self.kind} named {name!r} is already registered; pass replace=True to replace it"
            )
        self._registered[name] = part

    def get(self, name: str) -> T:
        """The part registered as `name` (loading a built-in on first use); `unknown` error listing the names."""
        part = self._registered.get(name)
        if part is not None:
            return part
        path = self._builtin.get(name)
        if path is None:
            known = ", ".join(self.names()) or "none"
            raise self._unknown(f"no {self.kind} for {name!r}; known {self.kind}s: {known}")
        module_name, _, attribute = path.partition(":")
        loaded: T = getattr(importlib.import_module(module_name), attribute)
        self._registered[name] = loaded
        return loaded

    def names(self) -> tuple[str, ...]:
        """Every name, sorted."""
        return tuple(sorted({*self._builtin, *self._registered}))

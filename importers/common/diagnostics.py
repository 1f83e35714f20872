"""Diagnostic codes and the findings of one import, for every importer.

An importer declares each of its codes once, as a `Code` (number, name, summary), and lists them in a
`CodeTable` that names the page documenting them: each code is a row `| CODE | `name` | ...` of that page
(tests check every table against its page). A code is never reused for another meaning. The reader and
the writer of one import add to one `Findings`, which makes the `ImportResult`, failing a strict import.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from importers import ImportDiagnostic, ImportResult, check_strict
from pal_core.ir import Program


@dataclass(frozen=True, slots=True, kw_only=True)
class Code:
    """One kind of finding."""

    code: str
    """The stable code: the importer's prefix and a number (`LG101`, `ADK101`, `AG101`)."""
    name: str
    """A short kebab-case name."""
    summary: str
    """What it means, in a few words."""


class CodeTable(Mapping[str, Code]):
    """An importer's codes by number, in the order declared; each is documented in `docs`."""

    __slots__ = ("_codes", "docs", "prefix")

    def __init__(self, *, prefix: str, docs: str, codes: Iterable[Code]) -> None:
        self.prefix = prefix
        """What every code starts with (`LG1`)."""
        self.docs = docs
        """The page that documents the codes, from the repository's root (`docs/langgraph.md`)."""
        self._codes: dict[str, Code] = {}
        names: set[str] = set()
        for code in codes:
            if not code.code.startswith(prefix):
                raise ValueError(f"code {code.code} does not start with {prefix}")
            if code.code in self._codes or code.name in names:
                raise ValueError(f"code {code.code} ({code.name}) is declared twice")
            self._codes[code.code] = code
            names.add(code.name)

    def __getitem__(self, code: str) -> Code:
        return self._codes[code]

    def __iter__(self) -> Iterator[str]:
        return iter(self._codes)

    def __len__(self) -> int:
        return len(self._codes)

    def undocumented(self, page: str) -> list[Code]:
        """The codes without their row (`| CODE | `name` |`) in the text of the documenting page."""
        return [code for code in self._codes.values() if f"| {code.code} | `{code.name}` |" not in page]


class Findings:
    """Diagnostics in the order found, each (code, subject, message) reported once."""

    __slots__ = ("_items", "_seen")

    def __init__(self) -> None:
        self._items: list[ImportDiagnostic] = []
        self._seen: set[tuple[str, str, str]] = set()

    def add(self, code: Code, subject: str, message: str) -> None:
        key = (code.code, subject, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self._items.append(ImportDiagnostic(code=code.code, subject=subject, message=message))

    def all(self) -> tuple[ImportDiagnostic, ...]:
        return tuple(self._items)

    def result(self, program: Program, *, target: str, strict: bool) -> ImportResult:
        """The import's result: `program` and every finding; with `strict`, ImportFailed naming `target`
        when there is any."""
        return check_strict(target, ImportResult(program=program, diagnostics=self.all()), strict)


__all__ = ["Code", "CodeTable", "Findings"]

"""Collecting diagnostics: positions from the nodes' spans, marked source lines, a stable order."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pal_core.errors import Diagnostic
from pal_core.ir import Span
from pal_core.validate.rules import Rule

_DEF_RE = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]+([A-Za-z_][A-Za-z0-9_]*)")
_DECORATOR_LOOKBACK = 40
"""How many lines above a `def` to search for a trigger written in its @playbook decorator."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PythonDef:
    """Where a Python playbook is: its `def` line, looked up in the source text only when reported.

    Python playbooks are read from code blocks and carry no span of their own.
    """

    name: str
    """The function name."""
    agent: Span | None
    """The agent's header: the `def` is searched after it, and this is the answer when it is not found."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PythonDecorator:
    """Text in the `@playbook(...)` decorator of a Python playbook (a trigger), looked up when reported."""

    function: PythonDef
    """The decorated function."""
    text: str
    """What to find in the decorator lines, such as `T1:CND`."""


Location = Span | PythonDef | PythonDecorator | None
"""Where a finding is: a span, a Python playbook to be looked up, or unknown (line 0)."""


class FindingReporter:
    """Collects the findings of one validation run and hands them out sorted."""

    __slots__ = ("_defs", "_file", "_findings", "_lines", "_source_text")

    def __init__(self, file: str | None, source_text: str | None) -> None:
        self._file = file
        self._source_text = source_text
        self._lines: list[str] | None = None
        self._findings: list[Diagnostic] = []
        self._defs: dict[str, list[Span]] | None = None

    def add(self, rule: Rule, message: str, where: Location, token: str | None = None) -> None:
        """Record a finding at `where`; with `token`, mark that text when it is found on the line after
        the span (so a JMP target is not confused with the step's own number).

        A node without a location (built in code rather than read from text) is reported at line 0.
        """
        span = self.resolve(where)
        line, column, length = (span.line, span.column, span.length) if span is not None else (0, 1, 0)
        if token and span is not None:
            found = self._find(span.line, token, span.column + span.length)
            if found is not None:
                column, length = found, len(token)
        self._findings.append(
            Diagnostic(
                code=rule.code,
                message=message,
                severity=rule.severity,
                file=self._file,
                line=line,
                column=column,
                length=length,
                source_line=self._source_line(line),
            )
        )

    def sorted(self) -> list[Diagnostic]:
        """The findings by position, then code, then message: the same program gives the same list."""
        return sorted(
            self._findings, key=lambda item: (item.line, item.column, item.code, item.message, item.length)
        )

    def resolve(self, where: Location) -> Span | None:
        """The span of a location; Python playbooks are looked up in the source text when it is known."""
        if where is None or isinstance(where, Span):
            return where
        if isinstance(where, PythonDef):
            return self._python_def(where) or where.agent
        function = self._python_def(where.function)
        if function is None:
            return where.function.agent
        return self._decorator_text(function.line, where.text) or function

    def _python_def(self, function: PythonDef) -> Span | None:
        if function.agent is None or self._split() is None:
            return None
        if self._defs is None:
            self._defs = self._index_defs()
        for span in self._defs.get(function.name, ()):
            if span.line > function.agent.line:
                return span
        return None

    def _decorator_text(self, def_line: int, text: str) -> Span | None:
        lines = self._split() or []
        for number in range(def_line - 1, max(def_line - _DECORATOR_LOOKBACK, 0), -1):
            line = lines[number - 1]
            index = line.find(text)
            if index >= 0:
                return Span(line=number, column=index + 1, length=len(text))
            if _DEF_RE.match(line):
                break  # the previous function: the decorator is behind us
        return None

    def _index_defs(self) -> dict[str, list[Span]]:
        # One pass over the text, done at most once, so locating any number of functions stays linear.
        defs: dict[str, list[Span]] = {}
        for number, text in enumerate(self._split() or (), start=1):
            if "def" not in text:
                continue
            match = _DEF_RE.match(text)
            if match is not None:
                name = match.group(1)
                defs.setdefault(name, []).append(
                    Span(line=number, column=match.start(1) + 1, length=len(name))
                )
        return defs

    def _source_line(self, line: int) -> str | None:
        lines = self._split()
        if lines is None or not 0 < line <= len(lines):
            return None
        return lines[line - 1]

    def _find(self, line: int, token: str, column: int) -> int | None:
        """The 1-based column of `token` on `line` at or after `column`, or anywhere on the line."""
        text = self._source_line(line)
        if text is None:
            return None
        index = text.find(token, max(column - 1, 0))
        if index < 0:
            index = text.find(token)
        return index + 1 if index >= 0 else None

    def _split(self) -> list[str] | None:
        # Split lazily: a program without findings never pays for it.
        if self._lines is None and self._source_text is not None:
            self._lines = self._source_text.splitlines()
        return self._lines

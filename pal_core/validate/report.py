"""Collecting diagnostics: positions from the nodes' spans, marked source lines, a stable order."""

from __future__ import annotations

from pal_core.errors import Diagnostic
from pal_core.ir import Span
from pal_core.validate.rules import Rule


class Reporter:
    """Collects the findings of one validation run and hands them out sorted."""

    __slots__ = ("_file", "_findings", "_lines", "_source_text")

    def __init__(self, file: str | None, source_text: str | None) -> None:
        self._file = file
        self._source_text = source_text
        self._lines: list[str] | None = None
        self._findings: list[Diagnostic] = []

    def add(self, rule: Rule, message: str, span: Span | None, token: str | None = None) -> None:
        """Record a finding at `span`; with `token`, mark that text when it is found on the span's line
        after the span (so a JMP target is not confused with the step's own number).

        A node without a span (built in code rather than read from text) is reported at line 0.
        """
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

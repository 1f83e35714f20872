"""Errors and diagnostics of pal_core.

Three families, as in pydantic-ai: user errors (bad PAL text, an IR the writer cannot express),
diagnostics (validator findings, which are data, not exceptions), and nothing else: pal_core never
raises on a program's behalf at run time.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class PalError(Exception):
    """Base class of every error pal-bridge raises on purpose."""


class Severity(StrEnum):
    """How serious a diagnostic is."""

    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnostic:
    """One finding about PAL text: where, how serious, which stable code, and why."""

    code: str
    """A stable code such as `PAL000` (syntax) or `PAL101`; documented in docs/diagnostics.md."""
    message: str
    """What is wrong, in one sentence."""
    severity: Severity = Severity.ERROR
    """Errors make `pal validate` fail; warnings do not."""
    file: str | None = None
    """The file the text came from, if known."""
    line: int = 0
    """1-based line; 0 when unknown."""
    column: int = 1
    """1-based column."""
    length: int = 0
    """Characters to mark from `column`; 0 marks to the end of the line."""
    source_line: str | None = None
    """The text of the line, for showing the mark."""

    def location(self) -> str:
        """`file:line:col`, leaving out the parts that are unknown."""
        file = self.file or "<string>"
        return f"{file}:{self.line}:{self.column}" if self.line else file

    def format(self, show_source: bool = True) -> str:
        """`file:line:col: CODE message`, then the line with the bad part marked."""
        head = f"{self.location()}: {self.code} {self.message}"
        if self.severity is Severity.WARNING:
            head = f"{self.location()}: {self.code} warning: {self.message}"
        if not show_source or self.source_line is None:
            return head
        return f"{head}\n{mark(self.source_line, self.column, self.length)}"


def mark(source_line: str, column: int, length: int = 0) -> str:
    """The source line and a caret line under columns [column, column + length)."""
    expanded = source_line.replace("\t", " ")
    start = max(column - 1, 0)
    width = length if length > 0 else max(len(expanded.rstrip()) - start, 1)
    return f"    {expanded}\n    {' ' * start}{'^' * width}"


class PalSyntaxError(PalError):
    """PAL text that cannot be read. Carries every problem found in the file, not only the first.

    `file`, `line`, `column` and `source_line` describe the first problem; `errors` lists all of them.
    """

    def __init__(self, errors: list[Diagnostic]) -> None:
        if not errors:
            raise ValueError("PalSyntaxError needs at least one diagnostic")
        self.errors = tuple(errors)
        first = self.errors[0]
        self.file = first.file
        self.line = first.line
        self.column = first.column
        self.source_line = first.source_line
        self.message = first.message
        super().__init__(self.render())

    def render(self) -> str:
        """All problems, each with its location and marked source line."""
        parts = [error.format() for error in self.errors]
        if len(parts) > 1:
            parts.append(f"{len(parts)} errors")
        return "\n".join(parts)


class PalWriteError(PalError):
    """An IR that cannot be written as PAL text (a description line that would read as a header, ...)."""


def source_lines(text: str) -> list[str]:
    """The lines of a source text. Only \\n, \\r\\n and \\r end a line: str.splitlines() would also split at
    U+2028 and other characters that may stand inside a line of text."""
    return text.replace("\r\n", "\n").replace("\r", "\n").split("\n")


class SourceReporter:
    """Gathers every problem found in one source text, each with its place and the marked line, so a reader
    (the PAL parser, the markdown compiler) reports them all at once."""

    def __init__(self, text: str, file: str | None) -> None:
        self.file = file
        self.lines = source_lines(text)
        self.errors: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []

    def error(self, code: str, message: str, line: int, column: int = 1, length: int = 0) -> None:
        """Record one problem at a 1-based line and column (length 0 marks to the end of the line)."""
        self.errors.append(self._diagnostic(code, message, line, column, length, Severity.ERROR))

    def warn(self, code: str, message: str, line: int, column: int = 1, length: int = 0) -> None:
        """Record a loose form that was read as its canonical one (reading goes on, nothing is lost)."""
        self.warnings.append(self._diagnostic(code, message, line, column, length, Severity.WARNING))

    def _diagnostic(
        self, code: str, message: str, line: int, column: int, length: int, severity: Severity
    ) -> Diagnostic:
        source = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        return Diagnostic(
            code=code,
            message=message,
            severity=severity,
            file=self.file,
            line=line,
            column=column,
            length=length,
            source_line=source,
        )

    def sorted_warnings(self) -> tuple[Diagnostic, ...]:
        """The warnings in source order."""
        return tuple(sorted(self.warnings, key=lambda warning: (warning.line, warning.column, warning.code)))

    def raise_if_any(self) -> None:
        """Raise PalSyntaxError with all problems in source order, if there are any."""
        if self.errors:
            raise PalSyntaxError(sorted(self.errors, key=lambda error: (error.line, error.column)))

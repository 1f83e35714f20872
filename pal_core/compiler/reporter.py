"""Collecting compile errors for the whole markdown file, raised together as one PalSyntaxError."""

from __future__ import annotations

from pal_core.errors import Diagnostic, PalSyntaxError

# Codes shared with the PAL parser where the problem is the same kind; PAL020 is the compiler's own.
from pal_core.parser import (
    BAD_HEADER,
    BAD_METADATA,
    BAD_PUBLIC_JSON,
    BAD_PYTHON,
    BAD_STEP,
    DUPLICATE,
    UNKNOWN_SECTION,
    UNPLACEABLE,
    UNTERMINATED,
)

BAD_JUMP = "PAL020"
"""A `go back` / `try again` step whose target cannot be found."""

__all__ = [
    "BAD_HEADER",
    "BAD_JUMP",
    "BAD_METADATA",
    "BAD_PUBLIC_JSON",
    "BAD_PYTHON",
    "BAD_STEP",
    "DUPLICATE",
    "UNKNOWN_SECTION",
    "UNPLACEABLE",
    "UNTERMINATED",
    "Reporter",
]


class Reporter:
    """Gathers every problem in one markdown source, each with its line and the marked source line."""

    def __init__(self, text: str, file: str | None) -> None:
        self.file = file
        # Only \n (and \r\n, \r) end a line, as in the PAL parser.
        self.lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self.errors: list[Diagnostic] = []

    def error(self, code: str, message: str, line: int, column: int = 1, length: int = 0) -> None:
        """Record one problem at a 1-based line and column (length 0 marks to the end of the line)."""
        source = self.lines[line - 1] if 0 < line <= len(self.lines) else None
        self.errors.append(
            Diagnostic(
                code=code,
                message=message,
                file=self.file,
                line=line,
                column=column,
                length=length,
                source_line=source,
            )
        )

    def raise_if_any(self) -> None:
        """Raise PalSyntaxError with all problems in source order, if there are any."""
        if self.errors:
            raise PalSyntaxError(sorted(self.errors, key=lambda error: (error.line, error.column)))

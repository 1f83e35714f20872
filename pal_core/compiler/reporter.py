"""Collecting compile errors for the whole markdown file, raised together as one PalSyntaxError."""

from __future__ import annotations

from pal_core.errors import SourceReporter

# Codes shared with the PAL parser where the problem is the same kind; PAL020 is the compiler's own.
from pal_core.parser import (
    BAD_HEADER,
    BAD_METADATA,
    BAD_PUBLIC_JSON,
    BAD_PYTHON,
    BAD_STEP,
    DUPLICATE,
    TOO_DEEP,
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
    "TOO_DEEP",
    "UNKNOWN_SECTION",
    "UNPLACEABLE",
    "UNTERMINATED",
    "Reporter",
]


Reporter = SourceReporter
"""The compiler's error collector is the parser's: one way to report a source's problems."""

"""Stable codes of what reading a source finds: the PAL parser's and the markdown compiler's, in one table.

Errors (PAL001-PAL012, PAL020) stop the reading; warnings (PAL021 and up) name a loose form that was read
as its canonical one (the original Playbooks tools accepted it, so we do too, and say so). A code keeps
its meaning and severity forever; every code is documented in docs/diagnostics.md (a test checks). The
validator's codes (PAL100 and up) are in `pal_core.validate.rules`, the answer parser's (PAL200 and up)
in `pal_core.contract.errors`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pal_core.errors import Severity


@dataclass(frozen=True, slots=True, kw_only=True)
class ReadingCode:
    """One kind of problem found while reading PAL text or markdown."""

    code: str
    """The stable code, `PAL0xx`."""
    name: str
    """A short kebab-case name."""
    severity: Severity
    """Always the same for a given code."""
    summary: str
    """What it finds, in a few words (docs/diagnostics.md gives the full story)."""


_E = Severity.ERROR
_W = Severity.WARNING

# --- errors: the text cannot be read ----------------------------------------------------------------
UNPLACEABLE = "PAL001"
BAD_HEADER = "PAL002"
BAD_STEP = "PAL003"
BAD_TRIGGER = "PAL004"
BAD_NOTE = "PAL005"
BAD_METADATA = "PAL006"
UNTERMINATED = "PAL007"
BAD_PYTHON = "PAL008"
BAD_PUBLIC_JSON = "PAL009"
UNKNOWN_SECTION = "PAL010"
DUPLICATE = "PAL011"
TOO_DEEP = "PAL012"
BAD_JUMP = "PAL020"
"""From the markdown compiler: a `go back` / `try again` step whose target cannot be found."""

# --- warnings: a loose form, read as the canonical one ----------------------------------------------
SECTION_LEVEL = "PAL021"
"""Markdown: `## Steps` (or Triggers, Notes) inside a playbook, read as `### Steps`."""
PLAIN_SECTION_LINE = "PAL022"
"""Markdown: a trigger or note written as a plain line rather than a list item."""
TRIGGER_STRING = "PAL023"
"""`@playbook(triggers="...")`: one string where a list is meant."""
STEP_BY_WORDS = "PAL024"
"""Markdown: a jump names its target step by words that match no step's start; the best match is taken."""
TRIGGER_WITHOUT_ID = "PAL025"
"""PAL: a trigger line without its `T<n>` id (`01:BGN At the beginning`, `BGN At the beginning`)."""
PYTHON_TRIGGER_WITHOUT_CODE = "PAL026"
"""PAL: an `@playbook` trigger without its `T<n>:CODE` prefix (`"When the user asks for a refund"`)."""
TEXT_AFTER_STEPS = "PAL027"
"""PAL: a line that is not a step after a playbook's last step (model chatter such as `**End output**`)."""

READING_CODES: Mapping[str, ReadingCode] = MappingProxyType(
    {
        entry.code: entry
        for entry in (
            ReadingCode(
                code=UNPLACEABLE, name="unplaceable-line", severity=_E, summary="a line belongs nowhere"
            ),
            ReadingCode(
                code=BAD_HEADER, name="bad-header", severity=_E, summary="an agent or playbook header"
            ),
            ReadingCode(code=BAD_STEP, name="bad-step", severity=_E, summary="a step line cannot be read"),
            ReadingCode(code=BAD_TRIGGER, name="bad-trigger", severity=_E, summary="a trigger line"),
            ReadingCode(code=BAD_NOTE, name="bad-note", severity=_E, summary="a note line"),
            ReadingCode(
                code=BAD_METADATA, name="bad-metadata", severity=_E, summary="metadata or front matter"
            ),
            ReadingCode(code=UNTERMINATED, name="unterminated", severity=_E, summary="a block never closed"),
            ReadingCode(code=BAD_PYTHON, name="bad-python", severity=_E, summary="a ```python block"),
            ReadingCode(code=BAD_PUBLIC_JSON, name="bad-public-json", severity=_E, summary="public.json"),
            ReadingCode(code=UNKNOWN_SECTION, name="unknown-section", severity=_E, summary="a ### section"),
            ReadingCode(code=DUPLICATE, name="duplicate-section", severity=_E, summary="a section twice"),
            ReadingCode(code=TOO_DEEP, name="too-deep", severity=_E, summary="steps nested over 100 levels"),
            ReadingCode(
                code=BAD_JUMP,
                name="jump-target-not-found",
                severity=_E,
                summary="a jump's target is not found",
            ),
            ReadingCode(
                code=SECTION_LEVEL, name="section-heading-level", severity=_W, summary="## Steps read as ###"
            ),
            ReadingCode(
                code=PLAIN_SECTION_LINE,
                name="plain-section-line",
                severity=_W,
                summary="a trigger or note that is not a list item",
            ),
            ReadingCode(
                code=TRIGGER_STRING,
                name="trigger-string",
                severity=_W,
                summary="triggers= one string, not a list",
            ),
            ReadingCode(
                code=STEP_BY_WORDS,
                name="step-reference-by-words",
                severity=_W,
                summary="a jump's target found by its best-matching words",
            ),
            ReadingCode(
                code=TRIGGER_WITHOUT_ID,
                name="trigger-without-id",
                severity=_W,
                summary="a trigger line without T<n>",
            ),
            ReadingCode(
                code=PYTHON_TRIGGER_WITHOUT_CODE,
                name="python-trigger-without-code",
                severity=_W,
                summary="an @playbook trigger without T<n>:CODE",
            ),
            ReadingCode(
                code=TEXT_AFTER_STEPS,
                name="text-after-steps",
                severity=_W,
                summary="a line that is not a step after the last step, ignored",
            ),
        )
    }
)
"""Every reading code, by code."""

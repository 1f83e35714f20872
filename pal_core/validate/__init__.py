"""The PAL validator: lint-style checks of a parsed program, each finding with a stable code.

`validate(program)` returns diagnostics (data, never exceptions), sorted by position. Errors are real
mistakes a runtime would trip over; warnings are likely mistakes that still run. Every code is listed
in `RULES` and documented in docs/diagnostics.md. Syntax errors (PAL001-PAL012) come from the parser;
`validate_text` returns those and the validator's findings through one call.
"""

from __future__ import annotations

from pal_core.errors import Diagnostic, PalSyntaxError
from pal_core.gc_pause import paused_cyclic_gc
from pal_core.ir import Program
from pal_core.parser import parse
from pal_core.validate.builtin_playbooks import BUILTIN_PLAYBOOKS, PYTHON_BUILTIN_FUNCTIONS, is_builtin
from pal_core.validate.program import EXECUTION_MODES, STARTUP_MODES, check_program, is_identifier
from pal_core.validate.report import FindingReporter
from pal_core.validate.rules import RULES, Rule

__all__ = [
    "BUILTIN_PLAYBOOKS",
    "EXECUTION_MODES",
    "PYTHON_BUILTIN_FUNCTIONS",
    "RULES",
    "STARTUP_MODES",
    "Rule",
    "is_builtin",
    "is_identifier",
    "validate",
    "validate_text",
]


def validate(program: Program, *, source_text: str | None = None) -> list[Diagnostic]:
    """Every problem the validator finds in `program`, sorted by line, column and code.

    Positions come from the nodes' spans and the file from `program.source`; with `source_text` (the
    text the program was parsed from) each diagnostic also carries its source line for display. The
    warnings of reading (`program.warnings`: loose forms read as canonical ones) come with them.
    """
    with paused_cyclic_gc():
        report = FindingReporter(program.source, source_text)
        check_program(program, report)
        findings = report.sorted()
    if not program.warnings:
        return findings
    return sorted(
        [*program.warnings, *findings],
        key=lambda item: (item.line, item.column, item.code, item.message, item.length),
    )


def validate_text(text: str, file: str | None = None) -> list[Diagnostic]:
    """Parse and validate PAL text: the syntax errors when it cannot be read, else the validator's findings."""
    try:
        program = parse(text, file=file)
    except PalSyntaxError as error:
        return sorted(error.errors, key=lambda item: (item.line, item.column, item.code, item.message))
    return validate(program, source_text=text)

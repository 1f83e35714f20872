"""The error raised when a model answer cannot be read, and its stable codes.

A model answer that breaks the line contract is a user error of the model, not of the program: the
runtime shows the error to the model and asks again, so the message must say where and why.
"""

from __future__ import annotations

from pal_core.errors import Diagnostic, PalError

# Stable codes of answer syntax errors (the PAL parser uses PAL001-PAL011, the validator PAL1xx).
NO_ACTION = "PAL200"
"""The answer holds no Step, Var, Return, SaveArtifact, trig? or yld."""
UNTERMINATED = "PAL201"
"""A `Step[`, `Var[`, `Return[`, `Trigger[`, call, backtick span or string that never closes."""
BAD_REFERENCE = "PAL202"
"""A Step or Trigger reference that is not `Playbook:Line:Code`."""
BAD_VARIABLE = "PAL203"
"""A `Var[...]` whose name is not `$identifier` or that has no value."""
BAD_CALL = "PAL204"
"""An inline call that does not parse as a Python call."""
BAD_TRIGGER_CHECK = "PAL205"
"""A `trig?` line that says neither `no` nor `Trigger["..."]`."""
BAD_ARTIFACT = "PAL206"
"""A `SaveArtifact(...)` that is not `($name, "summary", "content")`."""
TRAILING_TEXT = "PAL207"
"""Text after a construct inside the same backticks, as in `` `Step["A:01:QUE"] Say("hi")` ``."""

ANSWER_FILE = "<answer>"
"""What diagnostics name as the file of a model answer."""


class ContractSyntaxError(PalError):
    """A model answer that cannot be read: where (line, column, the line marked) and why."""

    def __init__(self, diagnostic: Diagnostic) -> None:
        self.diagnostic = diagnostic
        self.code = diagnostic.code
        self.message = diagnostic.message
        self.line = diagnostic.line
        self.column = diagnostic.column
        self.length = diagnostic.length
        self.source_line = diagnostic.source_line
        super().__init__(diagnostic.format())


def answer_error(text: str, offset: int, code: str, message: str, length: int = 0) -> ContractSyntaxError:
    """The error for `text[offset:offset + length]` (0: to the end of the line), with line and column."""
    offset = max(0, min(offset, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    line_end = text.find("\n", offset)
    if line_end < 0:
        line_end = len(text)
    if length and offset + length > line_end:
        length = 0
    return ContractSyntaxError(
        Diagnostic(
            code=code,
            message=message,
            file=ANSWER_FILE,
            line=text.count("\n", 0, offset) + 1,
            column=offset - line_start + 1,
            length=length,
            source_line=text[line_start:line_end],
        )
    )

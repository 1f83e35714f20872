"""Reading Python source with `ast` quietly: program text is data, and CPython's SyntaxWarning and
DeprecationWarning about it (`1abc`, `"\\d"`) must not reach users or fail test runs that treat warnings
as errors. Nothing here evaluates code."""

from __future__ import annotations

import ast
import warnings
from typing import Any, Literal


def parse_python(source: str, mode: Literal["exec", "eval"] = "exec") -> ast.AST:
    """`ast.parse` with compile-time warnings silenced; raises SyntaxError (or ValueError for NUL bytes).
    Source nested too deeply for CPython's parser (which then raises MemoryError or RecursionError) is a
    SyntaxError too: it is data that cannot be read, not an out-of-memory process."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return ast.parse(source, mode=mode)
        except (MemoryError, RecursionError):
            raise SyntaxError("the code is nested too deeply to read") from None


def literal_eval(source: str | ast.AST) -> Any:
    """`ast.literal_eval` with compile-time warnings silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.literal_eval(source)

"""Reading a program from a file, whatever its form: PAL text (.pal, .pbasm) or Playbooks markdown (.pb, .md)."""

from __future__ import annotations

from pathlib import Path

from pal_core.errors import PalError
from pal_core.ir import Program

PAL_SUFFIXES = frozenset({".pal", ".pbasm"})
MARKDOWN_SUFFIXES = frozenset({".pb", ".md"})


class UnknownSourceError(PalError):
    """A file whose suffix names no program form."""


def is_markdown(path: str | Path) -> bool:
    """Whether the file is Playbooks markdown (compiled before use) rather than PAL."""
    return Path(path).suffix.lower() in MARKDOWN_SUFFIXES


def program_from_text(text: str, *, file: str, markdown: bool) -> Program:
    """Parse PAL text, or compile markdown; PalSyntaxError on bad input."""
    if markdown:
        from pal_core.compiler import compile_markdown

        return compile_markdown(text, file=file)
    from pal_core.parser import parse

    return parse(text, file=file)


def load_program(path: str | Path) -> Program:
    """Read a .pal/.pbasm file, or compile a .pb/.md file."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in PAL_SUFFIXES | MARKDOWN_SUFFIXES:
        raise UnknownSourceError(
            f"{path}: unknown program file type {suffix or '(none)'!r}; expected .pal, .pbasm, .pb or .md"
        )
    return program_from_text(
        path.read_text(encoding="utf-8"), file=str(path), markdown=suffix in MARKDOWN_SUFFIXES
    )

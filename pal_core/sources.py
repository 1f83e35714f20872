"""Reading a program from a file, whatever its form: PAL text (.pal, .pbasm) or Playbooks markdown (.pb, .md)."""

from __future__ import annotations

from pathlib import Path

from pal_core.errors import PalError
from pal_core.ir import Program

PAL_SUFFIXES = frozenset({".pal", ".pbasm"})
MARKDOWN_SUFFIXES = frozenset({".pb", ".md"})


class UnknownSourceError(PalError):
    """A file whose suffix names no program form."""


class SourceEncodingError(PalError):
    """A program file that is not UTF-8 text."""


BOM = "\ufeff"
"""The byte order mark some editors (Windows ones) put at the start of a UTF-8 file."""


def read_source(path: str | Path) -> str:
    """The text of a program file: UTF-8, a leading byte order mark dropped. SourceEncodingError
    (`file: not UTF-8 at byte N ...`) for anything else; OSError when it cannot be read."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise SourceEncodingError(
            f"{path}: not UTF-8 at byte {error.start} (line {line}: byte 0x{data[error.start]:02x}); "
            "save the file as UTF-8"
        ) from None
    return text.removeprefix(BOM)


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
    return program_from_text(read_source(path), file=str(path), markdown=suffix in MARKDOWN_SUFFIXES)

"""Reading a program from a file, whatever its form: PAL text (.pal, .pbasm), Playbooks markdown (.pb, .md)
or the JSON form `pal json` writes (.json)."""

from __future__ import annotations

import dataclasses
from enum import StrEnum
from pathlib import Path

from pal_core.errors import PalError
from pal_core.ir import Program

PAL_SUFFIXES = frozenset({".pal", ".pbasm"})
MARKDOWN_SUFFIXES = frozenset({".pb", ".md"})
JSON_SUFFIXES = frozenset({".json"})


class SourceForm(StrEnum):
    """The forms a program file comes in."""

    PAL = "pal"
    """PAL text, parsed."""
    MARKDOWN = "markdown"
    """Playbooks markdown, compiled."""
    JSON = "json"
    """The JSON form of the IR (`pal json`), read back."""


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


def source_form(path: str | Path) -> SourceForm:
    """The form of a program file, by its suffix; UnknownSourceError for any other suffix."""
    suffix = Path(path).suffix.lower()
    if suffix in PAL_SUFFIXES:
        return SourceForm.PAL
    if suffix in MARKDOWN_SUFFIXES:
        return SourceForm.MARKDOWN
    if suffix in JSON_SUFFIXES:
        return SourceForm.JSON
    raise UnknownSourceError(
        f"{path}: unknown program file type {suffix or '(none)'!r}; expected .pal, .pbasm, .pb, .md or .json"
    )


def is_markdown(path: str | Path) -> bool:
    """Whether the file is Playbooks markdown (compiled before use) rather than PAL."""
    return Path(path).suffix.lower() in MARKDOWN_SUFFIXES


def program_from_text(
    text: str, *, file: str, form: SourceForm | str = SourceForm.PAL, check: bool = True
) -> Program:
    """Parse PAL text, compile markdown (validated unless `check=False`), or read the JSON form;
    PalSyntaxError (PalJsonError for JSON) on bad input."""
    form = SourceForm(form)
    if form is SourceForm.MARKDOWN:
        from pal_core.compiler import compile_markdown

        return compile_markdown(text, file=file, check=check)
    if form is SourceForm.JSON:
        from pal_core.jsonform import loads

        return dataclasses.replace(loads(text, file=file), source=file)
    from pal_core.parser import parse

    return parse(text, file=file)


def load_program(path: str | Path) -> Program:
    """Read a .pal/.pbasm file, compile a .pb/.md file, or read a .json file `pal json` wrote."""
    path = Path(path)
    form = source_form(path)
    return program_from_text(read_source(path), file=str(path), form=form)

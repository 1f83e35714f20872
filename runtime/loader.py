"""Loading programs: .pal/.pbasm parsed, .pb/.md compiled on the fly and cached by content hash.

The cache lives in `$PAL_CACHE_DIR` (default `~/.cache/pal-bridge/compiled`): the compiled PAL text of
each markdown source, named by the SHA-256 of the source and the compiler version, so an edit
recompiles and an unchanged file is read back as PAL. A cache that cannot be written is skipped.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pal_core.errors import Diagnostic, Severity
from pal_core.ir import Program
from pal_core.parser import parse
from pal_core.sources import MARKDOWN_SUFFIXES, load_program, read_source
from pal_core.writer import write
from runtime.errors import ProgramError

COMPILER_CACHE_VERSION = "1"


def cache_dir() -> Path:
    configured = os.environ.get("PAL_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "pal-bridge" / "compiled"


def load(path: str | Path) -> Program:
    """The program in a file; markdown is compiled through the content-hash cache."""
    path = Path(path)
    if path.suffix.lower() not in MARKDOWN_SUFFIXES:
        return load_program(path)
    source = read_source(path)
    digest = hashlib.sha256(f"{COMPILER_CACHE_VERSION}\n{source}".encode()).hexdigest()
    cached = cache_dir() / f"{digest}.pal"
    if cached.is_file():
        return parse(cached.read_text(encoding="utf-8"), file=str(path))
    from pal_core.compiler import compile_markdown

    program = compile_markdown(source, file=str(path))
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        temporary = cached.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(write(program), encoding="utf-8")
        temporary.replace(cached)
    except OSError:
        pass  # a read-only home must not stop a run
    return program


class InvalidProgram(ProgramError):
    """A program the validator finds errors in: running it would fail. Carries every diagnostic."""

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        errors = [d for d in diagnostics if d.severity is Severity.ERROR]
        lines = "\n".join(d.format(show_source=False) for d in errors)
        super().__init__(f"{lines}\nthe program has {len(errors)} error(s); fix them before running")


def load_valid(path: str | Path) -> tuple[Program, list[Diagnostic]]:
    """Load a program and validate it: (program, warnings), or InvalidProgram when it has errors."""
    from pal_core.validate import validate

    program = load(path)
    diagnostics = validate(program)
    if any(d.severity is Severity.ERROR for d in diagnostics):
        raise InvalidProgram(diagnostics)
    return program, diagnostics

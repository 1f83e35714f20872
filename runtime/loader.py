"""Loading programs: .pal/.pbasm parsed, .pb/.md compiled on the fly and cached by content hash.

The cache lives in `$PAL_CACHE_DIR` (default `~/.cache/pal-bridge/compiled`): the compiled PAL text of
each markdown source, named by the SHA-256 of the source and the compiler version, so an edit
recompiles and an unchanged file is read back as PAL. A cache that cannot be written is skipped.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pal_core.ir import Program
from pal_core.parser import parse
from pal_core.sources import MARKDOWN_SUFFIXES, load_program
from pal_core.writer import write

COMPILER_CACHE_VERSION = "1"


def cache_dir() -> Path:
    configured = os.environ.get("PAL_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "pal-bridge" / "compiled"


def load(path: str | Path) -> Program:
    """The program in a file; markdown is compiled through the content-hash cache."""
    path = Path(path)
    if path.suffix.lower() not in MARKDOWN_SUFFIXES:
        return load_program(path)
    source = path.read_text(encoding="utf-8")
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

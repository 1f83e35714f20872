"""Evaluated prompt prefixes kept on disk, so that the first turn of a new process reuses them too.

Most of a turn's prompt is the same in every turn of a playbook and in every run of it: the system prompt,
the agent, the playbook, what it can call, the example answers. The prompt builder marks where that part
ends (`ChatMessage.stable_chars`); the engine evaluates a prompt in fixed chunks and, once it has evaluated
the whole chunks of that part, saves the KV state of its sequence here. A later process whose prompt starts
with the same tokens loads the file instead of evaluating them.

Why the answers stay the same: a chunk's KV entries depend only on its tokens and on the entries before it,
and the chunks are the same whether or not a file is used, so a loaded state holds exactly the numbers the
process would have computed (tests/runtime/local/test_prefix_cache.py compares answers with and without).

A file's name is a hash of everything its numbers depend on: the model file (path, size, modification time),
llama-cpp-python's version, the chunk size, the context size, and the prefix's tokens. The file also holds
those tokens (llama.cpp's own state-file format), and a file whose tokens differ is not used. Files are
written to a temporary name and renamed, so another process never reads half a file; the oldest files
(by last use) are deleted when the folder grows past its budget. Deleting the folder only costs time.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import logging
import os
import tempfile
import time
from array import array
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.paths import cache_folder

logger = logging.getLogger("runtime.local")

CACHE_ENV = "PAL_LOCAL_PREFIX_CACHE"
"""The folder for evaluated prompt prefixes, or `off`; default `prefix-cache` in pal-bridge's cache folder."""

DEFAULT_BUDGET_BYTES = 512 * 1024 * 1024
"""How large the folder may grow before the least recently used files are deleted."""

SUFFIX = ".kv"
STALE_WRITE_SECONDS = 3600
"""A half-written file older than this was left by a process that died; it is deleted."""
FORMAT = 1
"""Bumped when what a file's name covers changes, so older files are simply never found again."""


def default_prefix_cache_folder() -> Path | None:
    """The folder `PAL_LOCAL_PREFIX_CACHE` names (None for `off`), else `<cache folder>/prefix-cache`."""
    text = os.environ.get(CACHE_ENV, "").strip()
    if text.lower() in ("off", "0", "no", "false"):
        return None
    if text:
        return Path(text).expanduser()
    return cache_folder() / "prefix-cache"


@dataclass(frozen=True, slots=True, kw_only=True)
class PrefixFile:
    """Where one prefix's state lives and what it must hold."""

    path: Path
    """The file."""
    tokens: tuple[int, ...]
    """The prefix's tokens (the file must hold exactly these)."""


class PrefixCache:
    """A folder of evaluated prompt prefixes for one model file and one way of evaluating it."""

    def __init__(self, folder: Path, *, identity: str, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        self.folder = folder
        """Where the files are."""
        self.identity = identity
        """Everything besides the tokens that a prefix's numbers depend on (see `engine_identity`)."""
        self.budget_bytes = budget_bytes
        """The folder's size limit; the least recently used files go first."""
        self.problems: deque[str] = deque(maxlen=50)
        """The latest reasons files could not be read or written (a cache that fails only costs time; the
        first is also logged as a warning)."""

    def entry(self, tokens: list[int]) -> PrefixFile:
        """The file for the prefix `tokens`."""
        digest = hashlib.sha256(f"{FORMAT}\n{self.identity}\n".encode())
        digest.update(array("i", tokens).tobytes())
        return PrefixFile(path=self.folder / f"{digest.hexdigest()[:40]}{SUFFIX}", tokens=tuple(tokens))

    def load(self, llama: Any, entry: PrefixFile) -> bool:
        """Put the state of `entry` into sequence 0 of `llama`'s context, in place of whatever the context
        held; False, with the context empty, when the file is missing or does not hold exactly the prefix's
        tokens."""
        import llama_cpp

        memory = llama_cpp.llama_get_memory(llama.ctx)
        llama_cpp.llama_memory_clear(memory, False)
        capacity = len(entry.tokens)
        found = (llama_cpp.llama_token * capacity)()
        count = ctypes.c_size_t(0)
        read = llama_cpp.llama_state_seq_load_file(
            llama.ctx, os.fsencode(entry.path), 0, found, capacity, ctypes.byref(count)
        )
        if read == 0 or count.value != capacity or tuple(found) != entry.tokens:
            llama_cpp.llama_memory_clear(memory, False)
            self._problem(f"{entry.path}: not a saved state of this prefix; evaluating it instead")
            with contextlib.suppress(OSError):  # so that the evaluated prefix is saved in its place
                entry.path.unlink()
            return False
        with contextlib.suppress(OSError):  # another process may have deleted it meanwhile
            os.utime(entry.path)  # its last use, for the budget
        return True

    def save(self, llama: Any, entry: PrefixFile) -> bool:
        """Write the state of sequence 0 (which must hold exactly `entry.tokens`) under `entry`'s name."""
        import llama_cpp

        try:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            handle, temporary = tempfile.mkstemp(prefix=".writing-", suffix=SUFFIX, dir=self.folder)
            os.close(handle)
        except OSError as error:
            self._problem(f"{self.folder}: cannot write the prefix cache: {error}")
            return False
        try:
            tokens = (llama_cpp.llama_token * len(entry.tokens))(*entry.tokens)
            written = llama_cpp.llama_state_seq_save_file(
                llama.ctx, os.fsencode(temporary), 0, tokens, len(entry.tokens)
            )
            if written == 0:
                self._problem(f"{entry.path}: llama.cpp could not save the state")
                return False
            os.replace(temporary, entry.path)  # whole or not at all, for every process reading the folder
        except OSError as error:
            self._problem(f"{entry.path}: cannot write the prefix cache: {error}")
            return False
        finally:
            if os.path.exists(temporary):
                os.unlink(temporary)
        self.trim()
        return True

    def _problem(self, text: str) -> None:
        if not self.problems:
            logger.warning("prompt prefix cache: %s (it only saves time; PAL_LOCAL_PREFIX_CACHE=off)", text)
        self.problems.append(text)

    def trim(self) -> None:
        """Delete the least recently used files until the folder is within its budget, and half-written
        files that a process which died left behind."""
        files: list[tuple[float, int, Path]] = []
        now = time.time()
        for path in self.folder.glob(f"*{SUFFIX}"):
            try:
                status = path.stat()
                if path.name.startswith(".writing-"):
                    if now - status.st_mtime > STALE_WRITE_SECONDS:  # left by a process that died
                        path.unlink()
                    continue
            except OSError:
                continue  # another process deleted it
            files.append((status.st_mtime, status.st_size, path))
        total = sum(size for _, size, _ in files)
        for _, size, path in sorted(files):  # least recently used first
            if total <= self.budget_bytes:
                break
            try:
                path.unlink()
            except OSError:
                continue
            total -= size


def engine_identity(model_path: Path, *, chunk_tokens: int, n_ctx: int) -> str:
    """What a prefix's KV numbers depend on besides its tokens."""
    import llama_cpp

    status = model_path.stat()
    return "\n".join(
        (
            f"model={model_path.resolve()}",
            f"size={status.st_size}",
            f"mtime_ns={status.st_mtime_ns}",
            f"llama_cpp={llama_cpp.__version__}",
            f"chunk_tokens={chunk_tokens}",
            f"n_ctx={n_ctx}",
        )
    )


__all__ = [
    "CACHE_ENV",
    "DEFAULT_BUDGET_BYTES",
    "PrefixCache",
    "PrefixFile",
    "default_prefix_cache_folder",
    "engine_identity",
]

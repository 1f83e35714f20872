"""Loading the Python a program brings: its ```python blocks, and functions bound by `python: module:qualname`.

Each agent instance gets its own module per block (the code may keep state), loaded through the import
system from the program's own text, so tracebacks name the program file and block. Before the code
runs, the module is given the builtins (Say, ...), an `agent` object, and a callable for every other
playbook the agent can reach, so `await FormatSummary(data)` in Python runs the markdown playbook.
Only program code is loaded here; model output never reaches this module.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import linecache
from collections.abc import Callable
from types import CodeType, ModuleType
from typing import Any

from runtime.errors import ProgramError
from runtime.module_path import import_module, use_module_folders
from runtime.python_api import BLOCK_GLOBALS, PlaybookFunction
from runtime.support_modules import is_support_binding, support_helper

_COMPILED: dict[tuple[str, str], CodeType] = {}
"""Compiled python blocks by (file name, source): every instance of an agent (a run per MCP tool call, a
standby agent created again) would otherwise compile the same text anew, which costs more than running it."""
_COMPILED_LIMIT = 256


class _BlockLoader(importlib.abc.SourceLoader):
    """Serves one python block's text to the import system."""

    def __init__(self, source: str, filename: str) -> None:
        self._source = source
        self._filename = filename

    def get_filename(self, fullname: str) -> str:
        return self._filename

    def get_data(self, path: str) -> bytes:
        return self._source.encode("utf-8")

    def get_code(self, fullname: str) -> CodeType | None:
        key = (self._filename, self._source)
        code = _COMPILED.get(key)
        if code is None:
            code = super().get_code(fullname)
            if code is None:  # pragma: no cover - a source loader always returns code or raises
                return None
            if len(_COMPILED) >= _COMPILED_LIMIT:
                _COMPILED.pop(next(iter(_COMPILED)))
            _COMPILED[key] = code
        return code


def load_block(
    code: str, *, module_name: str, filename: str, namespace: dict[str, Any]
) -> dict[str, PlaybookFunction]:
    """Run one python block in a fresh module seeded with `namespace`; return its `@playbook` functions."""
    loader = _BlockLoader(code, filename)
    spec = importlib.util.spec_from_loader(module_name, loader, origin=filename)
    if spec is None:  # pragma: no cover - spec_from_loader always returns a spec for a loader
        raise ProgramError(f"{filename}: cannot create a module for this python block")
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(BLOCK_GLOBALS)
    module.__dict__.update(namespace)
    # Tracebacks and inspect read source lines through linecache.
    lines = [line + "\n" for line in code.split("\n")]
    linecache.cache[filename] = (len(code), None, lines, filename)
    try:
        loader.exec_module(module)
    except SyntaxError as error:
        raise ProgramError(f"{filename}:{error.lineno}: Python syntax error: {error.msg}") from None
    except Exception as error:
        raise ProgramError(
            f"{filename}: the python block failed to load: {type(error).__name__}: {error}"
        ) from error
    return _playbooks_of(module)


def _playbooks_of(module: ModuleType) -> dict[str, PlaybookFunction]:
    found: dict[str, PlaybookFunction] = {}
    for value in vars(module).values():
        if isinstance(value, PlaybookFunction) and value.function.__module__ == module.__name__:
            found[value.name] = value
    return found


def load_module_playbooks(
    module_path: str, *, program_file: str | None = None
) -> dict[str, PlaybookFunction]:
    """The `@playbook` functions of an importable module the program names (looked up as
    runtime.module_path says: the program's folder, the current directory, then Python's path)."""
    try:
        module = import_module(module_path, program_file=program_file)
    except ImportError as error:
        raise ProgramError(f"cannot import Python module {module_path!r}: {error}") from None
    return {value.name: value for value in vars(module).values() if isinstance(value, PlaybookFunction)}


def resolve_import_path(path: str, *, program_file: str | None = None) -> Callable[..., Any]:
    """`package.module:qualname` -> the callable it names (ProgramError with the reason when it does not);
    the module is looked up as runtime.module_path says, a support helper (`pal.langgraph:apply_update`)
    as runtime.support_modules says."""
    if is_support_binding(path):
        # A support helper loads the program's own modules (the graph, the agent tree) by import path:
        # they are looked up as every bound module is, from the program's folder first.
        use_module_folders(program_file)
        return support_helper(path, program_file=program_file)
    module_name, colon, qualname = path.partition(":")
    if not colon or not module_name or not qualname:
        raise ProgramError(f"python binding {path!r} must look like 'package.module:function'")
    try:
        target: Any = import_module(module_name, program_file=program_file)
    except ImportError as error:
        raise ProgramError(f"python binding {path!r}: cannot import {module_name!r}: {error}") from None
    for part in qualname.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ProgramError(
                f"python binding {path!r}: {module_name} has no attribute {qualname!r}"
            ) from None
    if isinstance(target, PlaybookFunction):
        return target.function
    if not callable(target):
        raise ProgramError(f"python binding {path!r} names {type(target).__name__}, not a function")
    return target

"""Where the Python modules a program binds are looked up: one rule for every command and API.

A program names Python by import path: `python: module:function` playbooks, `python_modules`, and in
programs imported from other frameworks the nodes, routers, reducers and state classes of the original
program (`pal import`). Those modules are looked up, in this order:

1. the folder of the program file (when the program was read from a file);
2. the current working directory;
3. Python's own path (`PYTHONPATH`, then the installed packages).

The first two are put at the front of `sys.path` the first time a program binds Python, and stay there
for the rest of the process, as `python prog.py` puts the script's folder and `python -m` the current
directory: a module the bound code imports later (a helper of the node function) is found the same way.
So `pal import langgraph plan:graph -o plan.pal` and then `pal run plan.pal`, `pal mcp serve plan.pal`,
`run_program("plan.pal")` or `as_langgraph_node("plan.pal")` all find `plan.py` beside the program or
in the current directory, without setting PYTHONPATH.

Importers (LangGraph, ADK, AutoGen) call `import_module` / `resolve` with no program file: the target
`module:attribute` is looked up in the current directory first, as with `python -m`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

_LOCK = threading.Lock()


def module_folders(program_file: str | Path | None = None) -> tuple[Path, ...]:
    """The folders searched before Python's own path, in order: the program file's folder (when
    `program_file` names an existing file), then the current directory; without duplicates."""
    folders: list[Path] = []
    if program_file:
        path = Path(program_file)
        if path.is_file():
            folders.append(path.resolve().parent)
    with contextlib.suppress(OSError):  # a deleted current directory has nothing to look in
        folders.append(Path.cwd().resolve())
    return tuple(dict.fromkeys(folders))


def use_module_folders(program_file: str | Path | None = None) -> tuple[Path, ...]:
    """Put `module_folders(program_file)` at the front of `sys.path` in that order (those already on it
    are moved to the front), and return them. Idempotent."""
    folders = module_folders(program_file)
    entries = [str(folder) for folder in folders]
    with _LOCK:
        if sys.path[: len(entries)] != entries:
            # `''` (the current directory, as `python -m` and `python -c` put it) counts as the cwd.
            kept = [item for item in sys.path if _normal(item) not in entries]
            sys.path[:] = [*entries, *kept]
            importlib.invalidate_caches()
    return folders


def _normal(entry: str) -> str:
    try:
        return str(Path(entry or os.curdir).resolve())
    except OSError:
        return entry


class ModuleLoadError(ImportError):
    """A module was found but failed while loading: its own code raised (a missing API key, a syntax
    error, a package it imports that is not installed). The message is one line naming the module, its
    file and the exception; the exception itself is the `__cause__`."""


def import_module(name: str, *, program_file: str | Path | None = None) -> ModuleType:
    """Import `name` the way programs bind modules (see the module docstring). ImportError says where
    it looked when the module is not found; ModuleLoadError (an ImportError) names the module, its file
    and the exception when the module's own code fails while loading."""
    folders = use_module_folders(program_file)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        missing = error.name or name
        if name == missing or name.startswith(f"{missing}."):
            raise ModuleNotFoundError(f"{error} ({where_looked(folders)})", name=error.name) from None
        raise _load_error(name, error) from error  # found; something it imports is missing
    except ModuleLoadError:
        raise
    except Exception as error:  # the module's own code failed while loading; SyntaxError included
        raise _load_error(name, error) from error


def _load_error(name: str, error: BaseException) -> ModuleLoadError:
    text = str(error).strip().splitlines()
    detail = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    if isinstance(error, SyntaxError) and error.filename:
        where = f"{error.filename}:{error.lineno}" if error.lineno else error.filename
        return ModuleLoadError(f"module {name} ({where}) has a syntax error: {error.msg}", name=name)
    return ModuleLoadError(f"module {name} ({_module_file(name)}) raised {detail} while loading", name=name)


def _module_file(name: str) -> str:
    """The file `name` loads from, for messages (`?` when it cannot be found): looked up part by part on
    the path, never importing anything (the package itself may be what fails to load)."""
    from importlib.machinery import PathFinder

    spec = None
    locations: list[str] | None = None
    for part in name.split("."):
        spec = PathFinder.find_spec(part, locations)
        if spec is None:
            return "?"
        locations = list(spec.submodule_search_locations or [])
    origin = getattr(spec, "origin", None)
    return str(origin) if origin else "?"


def where_looked(folders: tuple[Path, ...]) -> str:
    """`looked in /p, /c and Python's path`: the folders of `module_folders`, for error messages."""
    labels = [str(folder) for folder in folders]
    return f"looked in {', '.join(labels)} and Python's path" if labels else "looked in Python's path"


def resolve(path: str, *, program_file: str | Path | None = None) -> Any:
    """The object at `module:qualname` (`package.module:Class.method`); ImportError, AttributeError or
    ValueError (a path without `:`) when it cannot be found."""
    module_name, colon, qualname = path.partition(":")
    if not colon or not module_name or not qualname:
        raise ValueError(f"{path!r} is not an import path such as 'package.module:function'")
    value: Any = import_module(module_name, program_file=program_file)
    for part in qualname.split("."):
        value = getattr(value, part)
    return value


__all__ = [
    "ModuleLoadError",
    "import_module",
    "module_folders",
    "resolve",
    "use_module_folders",
    "where_looked",
]

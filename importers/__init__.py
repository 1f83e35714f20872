"""Importers: programs written for other agent frameworks, turned into PAL programs.

Each framework has one importer, found by name (`get_importer("langgraph")`). An importer takes a
target such as `package.module:graph` (a Python object by import path) and returns an `ImportResult`:
the PAL program and the diagnostics for whatever the program could not express, each naming the
node, state key or tool it is about. Nothing is dropped silently: with `strict=True` any diagnostic
makes the import fail with `ImportFailed`.

Framework packages are imported only when their importer runs; importing this package loads none.
Other importers register here with `register_importer(name, function)`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from pal_core.errors import PalError, Severity
from pal_core.ir import Program
from runtime.module_path import import_module
from runtime.plugins import NamedRegistry


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportDiagnostic:
    """Something in the imported program that PAL could not express, or expresses only in part."""

    code: str
    """A stable code such as `LG101`, documented with the importer (docs/langgraph.md for LangGraph)."""
    subject: str
    """What it is about, as the framework names it: `node 'a'`, `state key 'items'`, `tool 'search'`."""
    message: str
    """What was not expressed and why, in one or two sentences, with what to do about it."""
    severity: Severity = Severity.WARNING
    """WARNING normally; an import with `strict=True` fails on any diagnostic."""

    def format(self) -> str:
        """`CODE subject: message`."""
        return f"{self.code} {self.subject}: {self.message}"


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportResult:
    """What an importer produced."""

    program: Program
    """The PAL program; it validates with `pal_core.validate` without errors."""
    diagnostics: tuple[ImportDiagnostic, ...] = ()
    """Everything the program does not express, in the order found."""


class ImportTargetError(PalError):
    """The thing to import cannot be found or is not something the importer reads (a user error)."""


class ImportFailed(PalError):
    """A strict import found parts it cannot express; `diagnostics` lists them all."""

    def __init__(self, target: str, diagnostics: tuple[ImportDiagnostic, ...]) -> None:
        self.target = target
        self.diagnostics = diagnostics
        lines = [f"cannot import {target} exactly ({len(diagnostics)} problem(s)):"]
        lines.extend(f"  {diagnostic.format()}" for diagnostic in diagnostics)
        super().__init__("\n".join(lines))


class UnknownImporter(PalError):
    """No importer is registered under the name asked for."""


class Importer(Protocol):
    """An importer: a target (`module:attribute`) in, a PAL program and its diagnostics out."""

    def __call__(self, target: str, *, strict: bool = False) -> ImportResult: ...


_IMPORTERS: NamedRegistry[Importer] = NamedRegistry(
    "importer",
    {
        "langgraph": "importers.langgraph:import_target",
        "adk": "importers.adk:import_target",
        "autogen": "importers.autogen:import_target",
    },
    unknown=UnknownImporter,
    accepts=callable,
    expected="callable",
)
"""Importers shipped with pal-bridge are loaded on first use by import path."""


def register_importer(name: str, importer: Importer, *, replace: bool = False) -> None:
    """Make `importer` available as `get_importer(name)`; an existing name needs `replace=True`."""
    _IMPORTERS.register(name, importer, replace=replace)


def get_importer(name: str) -> Importer:
    """The importer registered as `name`; raises UnknownImporter listing the known names."""
    return _IMPORTERS.get(name)


def importer_names() -> tuple[str, ...]:
    """Every importer name, sorted."""
    return _IMPORTERS.names()


def load_target(target: str) -> Any:
    """The object a `package.module:attribute.path` target names; ImportTargetError says why not."""
    module_name, colon, attribute_path = target.partition(":")
    if not colon or not module_name or not attribute_path:
        raise ImportTargetError(
            f"target {target!r} must be written module:attribute, such as myapp.graphs:graph"
        )
    try:
        # Looked up as bound modules are (runtime.module_path): the current directory first.
        value: Any = import_module(module_name)
    except ImportError as error:
        raise ImportTargetError(
            f"target {target!r}: cannot import module {module_name!r}: {error}"
        ) from error
    except Exception as error:  # the user's module failed while loading: report it as theirs, not ours
        raise ImportTargetError(
            f"target {target!r}: importing module {module_name!r} raised {type(error).__name__}: {error}"
        ) from error
    walked = module_name
    for part in attribute_path.split("."):
        try:
            value = getattr(value, part)
        except AttributeError:
            raise ImportTargetError(f"target {target!r}: {walked} has no attribute {part!r}") from None
        walked = f"{walked}.{part}"
    return value


def check_strict(target: str, result: ImportResult, strict: bool) -> ImportResult:
    """`result`, or ImportFailed when `strict` and there are diagnostics; for importers to share."""
    if strict and result.diagnostics:
        raise ImportFailed(target, result.diagnostics)
    return result


ImporterFunction = Callable[..., ImportResult]
"""The plain-function form of `Importer`, for type hints."""

__all__ = [
    "ImportDiagnostic",
    "ImportFailed",
    "ImportResult",
    "ImportTargetError",
    "Importer",
    "ImporterFunction",
    "UnknownImporter",
    "check_strict",
    "get_importer",
    "importer_names",
    "load_target",
    "register_importer",
]

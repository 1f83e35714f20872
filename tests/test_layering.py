"""Imports only go down the layers of ARCHITECTURE.md: pal_core <- runtime <- importers/exporters/mcp_bridge."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {
    "pal_core": {"pal_core"},
    "runtime": {"pal_core", "runtime"},
    "importers": {"pal_core", "runtime", "importers"},
    "exporters": {"pal_core", "runtime", "exporters"},
    "mcp_bridge": {"pal_core", "runtime", "mcp_bridge"},
}
PROJECT = set(ALLOWED)


def imported_packages(path: Path) -> set[tuple[str, int]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add((alias.name.split(".")[0], node.lineno))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add((node.module.split(".")[0], node.lineno))
    return found


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_no_upward_or_sideways_imports(package: str) -> None:
    wrong = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for name, line in imported_packages(path):
            if name in PROJECT and name not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    assert not wrong, "\n".join(wrong)


# Programs bind Python by import path. A program the importers wrote binds their run-time helpers by the
# support module's stable name (`pal.langgraph:apply_update`), which the runtime resolves through the entry
# points of pyproject.toml: a binding into the project's own packages by module path would make the runtime
# import a layer above it at run time, out of sight of the import check above, and would make an internal
# path public API.
_BINDING = re.compile(r"^\s*python:\s*(?P<path>[\w.]+:[\w.]+)\s*$", re.MULTILINE)
LEGACY_FIXTURES = {"tests/fixtures/langgraph/legacy_binding.pal"}
"""A program written before the stable names, kept to prove old paths still load (with a warning)."""


def _program_files() -> list[Path]:
    return sorted(
        path
        for folder in (ROOT / "tests" / "fixtures", ROOT / "examples")
        for pattern in ("*.pal", "*.pbasm")
        for path in folder.rglob(pattern)
    )


def test_programs_bind_no_module_of_the_project_by_path() -> None:
    wrong = []
    for path in _program_files():
        relative = str(path.relative_to(ROOT))
        for found in _BINDING.finditer(path.read_text(encoding="utf-8")):
            package = found["path"].split(".")[0].split(":")[0]
            if package in PROJECT and relative not in LEGACY_FIXTURES:
                line = path.read_text(encoding="utf-8").count("\n", 0, found.start("path")) + 1
                wrong.append(f"{relative}:{line} binds {found['path']}")
    assert not wrong, "\n".join(wrong)


def test_every_support_binding_in_the_programs_resolves_to_a_helper() -> None:
    import warnings

    from runtime.support_modules import DeprecatedBinding, is_support_binding, support_helper

    bindings = {
        found["path"]
        for path in _program_files()
        for found in _BINDING.finditer(path.read_text(encoding="utf-8"))
        if is_support_binding(found["path"])
    }
    assert len(bindings) > 20  # the imported fixtures bind many helpers
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecatedBinding)
        for binding in sorted(bindings):
            assert callable(support_helper(binding)), binding

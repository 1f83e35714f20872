"""Imports only go down the layers of ARCHITECTURE.md: pal_core <- runtime <- importers/exporters/mcp_bridge."""

from __future__ import annotations

import ast
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

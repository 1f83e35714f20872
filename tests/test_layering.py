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


# --- no import cycle at module level ------------------------------------------------------------------


def _project_modules() -> dict[str, Path]:
    modules = {}
    for package in PROJECT:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(parts)] = path
    return modules


def _module_level_imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules `name` imports when it is loaded: its top-level imports (inside `if` and `try`
    too), not those under `if TYPE_CHECKING:` nor inside functions, which run later."""
    found: set[str] = set()
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                test = node.test
                if (
                    getattr(test, "id", None) == "TYPE_CHECKING"
                    or getattr(test, "attr", None) == "TYPE_CHECKING"
                ):
                    visit(node.orelse)
                else:
                    visit(node.body)
                    visit(node.orelse)
            elif isinstance(node, ast.Try):
                for part in (
                    node.body,
                    node.orelse,
                    node.finalbody,
                    *(handler.body for handler in node.handlers),
                ):
                    visit(part)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, node.module] if node.module else base)
                for alias in node.names:  # `from pkg import sub` imports the submodule
                    found.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in modules else module)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return found & set(modules)


def test_no_import_cycle_at_module_level() -> None:
    """A cycle makes the import order matter (a name missing half-way through a load); ARCHITECTURE.md
    promises none. Each cycle is reported with its modules."""
    modules = _project_modules()
    graph = {name: _module_level_imports(name, path, modules) for name, path in modules.items()}
    cycles = []
    done: set[str] = set()
    for start in sorted(graph):
        # Every module reachable from `start` that reaches `start` back is in a cycle with it.
        reach = _reachable(graph, start)
        if start in reach and start not in done:
            cycle = sorted(name for name in reach if name == start or start in _reachable(graph, name))
            done.update(cycle)
            cycles.append(cycle)
    assert not cycles, f"module-level import cycles: {cycles}"


def _reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    reach, frontier = set(), [start]
    while frontier:
        for target in graph[frontier.pop()]:
            if target not in reach:
                reach.add(target)
                frontier.append(target)
    return reach

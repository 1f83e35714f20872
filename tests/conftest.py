"""Shared test configuration."""

from __future__ import annotations

from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = FIXTURES / "corpus"


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio, the loop the runtime uses."""
    return "asyncio"


@pytest.fixture(autouse=True, scope="session")
def _runs_stay_out_of_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`pal run` keeps every run in the default store (~/.local/share/pal-bridge/runs.db): in tests, in a
    temporary folder instead (PAL_HOME, inherited by the `pal` processes the tests start)."""
    import os

    os.environ.pop("PAL_STORE", None)
    os.environ["PAL_HOME"] = str(tmp_path_factory.mktemp("pal-home"))


def pytest_sessionstart(session: pytest.Session) -> None:
    """Stop at once, saying what to run, when the installed entry points are not the ones pyproject.toml
    declares (an editable install made before a new plugin group was added): plugins found by entry point
    (support modules, remote types, commands) would otherwise fail deep inside unrelated tests."""
    import tomllib
    from importlib.metadata import entry_points

    declared = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    for group, entries in declared["project"].get("entry-points", {}).items():
        installed = {entry.name: entry.value for entry in entry_points(group=group)}
        if any(installed.get(name) != value for name, value in entries.items()):
            pytest.exit(
                f"the installed entry points of {group!r} are not those of pyproject.toml: reinstall the "
                "project (pip install -e . --no-deps, or make test)",
                returncode=4,
            )

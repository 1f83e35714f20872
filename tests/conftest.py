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

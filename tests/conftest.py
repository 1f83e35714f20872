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

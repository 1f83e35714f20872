"""Shared fixtures of the exporter tests: the scorer program."""

from __future__ import annotations

import pytest

from pal_core.ir import Program
from pal_core.parser import parse_file
from tests.conftest import FIXTURES

SCORER = FIXTURES / "exporters" / "scorer.pal"


@pytest.fixture(scope="session")
def scorer() -> Program:
    """The scorer program: Python playbooks (Score, Peek, Hold, Explode) and markdown ones (Visit, Double,
    Announce, Leave on the fast path; Greet needs a model)."""
    return parse_file(SCORER)

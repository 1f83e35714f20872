"""The shipped conformance suite tests a store added through the registry (issue 22): a store of another
package (tests/runtime/store/outside_store.py, registered as `shelf://`) passes every conformance test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from runtime.store import STORES, open_store

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_a_store_registered_from_outside_passes_the_shipped_conformance_suite() -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PAL_TEST_")}
    env["PAL_TEST_STORE_PLUGINS"] = "tests.runtime.store.outside_store"
    env["PAL_TEST_STORE_URLS"] = "shelf://conformance"
    env["PYTHONPATH"] = str(REPO)
    suite = sorted(str(path) for path in Path(__file__).parent.glob("test_conformance_*.py"))
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", *suite, "-q", "-p", "no:cacheprovider", "-W", "error"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    summary = ran.stdout.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "skipped" not in summary, summary
    assert int(summary.split()[0]) > 50, summary


@pytest.mark.anyio
async def test_the_registered_store_opens_by_its_url() -> None:
    import tests.runtime.store.outside_store  # noqa: F401 - registers shelf://

    assert "shelf" in STORES.names()
    async with open_store("shelf://by-url") as store:
        assert store.url == "shelf://by-url"

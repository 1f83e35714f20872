"""A served PAL agent called from Node by the A2A JS SDK (`@a2a-js/sdk` from npm, which `make peers`
installs into .venvs/a2a-js, as it installs the MCP Inspector): a client nobody here wrote reads the card,
sends a data part, streams text, gets and lists tasks (issue 26, "Done when"). Skipped, saying why, where
npm or the package is missing."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import anyio
import pytest

from exporters.a2a.server import A2AServer, serving_a2a
from tests.exporters.a2a.helpers import A2A_FIXTURES, desk

pytestmark = pytest.mark.anyio

REPO = Path(__file__).resolve().parents[3]
JS_SDK_PACKAGE = "@a2a-js/sdk@1.3.0"
"""What the Makefile's `peers` target installs into .venvs/a2a-js."""
WORKING, COMPLETED, SUBMITTED = 2, 3, 1
"""TaskState numbers, as the JS SDK gives them."""


def js_sdk_client() -> Path | None:
    """The JS SDK's client module: $PAL_TEST_A2A_JS_SDK, else the one `make peers` installs."""
    configured = os.environ.get("PAL_TEST_A2A_JS_SDK")
    if configured:
        return Path(configured)
    local = REPO / ".venvs" / "a2a-js" / "node_modules" / "@a2a-js" / "sdk" / "dist" / "client" / "index.js"
    return local if local.is_file() else None


async def test_the_js_sdk_calls_a_served_pal_agent_from_node() -> None:
    node = shutil.which("node")
    client = js_sdk_client()
    if node is None:
        pytest.skip("node is not installed: the A2A JS SDK test needs Node.js 20+ and npm (make peers)")
    if client is None:
        pytest.skip(f"{JS_SDK_PACKAGE} is not installed: run `make peers` (it needs npm)")
    async with A2AServer(desk()) as served, serving_a2a(served, port=0) as endpoint:
        with anyio.fail_after(120):
            done = await anyio.run_process(
                [node, str(A2A_FIXTURES / "js_client.mjs"), endpoint.url],
                env={**os.environ, "A2A_JS_SDK": str(client)},
                check=False,
            )
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout.decode())
    assert seen["added"]["state"] == COMPLETED and seen["added"]["result"] == 42
    assert [event["kind"] for event in seen["streamed"]] == [
        "task", "statusUpdate", "statusUpdate", "artifactUpdate", "statusUpdate",
    ]  # fmt: skip
    assert [event.get("state") for event in seen["streamed"]] == [
        SUBMITTED,
        WORKING,
        WORKING,
        None,
        COMPLETED,
    ]
    assert seen["streamed"][2]["text"] == "Hello Node"
    assert seen["streamed"][3]["artifact"] == "greeted Node"
    assert seen["got"] == {"state": COMPLETED, "history": 1}
    assert seen["listed"] == 2

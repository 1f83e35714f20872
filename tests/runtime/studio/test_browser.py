"""The studio in a real headless browser: Debian's chromium, driven by Playwright (never Playwright's own
browser download), against `pal studio` and `pal run` started here as the separate processes users run.
Skipped, saying why, where chromium or Playwright is absent (`.ci/run` installs chromium as root). On a
failure, the page's screenshot is written to the test's temporary folder.

The story: a run (`pal run`, another process) is in the middle of a Python call; the page shows its thread
so far, with the flowchart and the timeline, and updates in place when the run goes on and stops to ask the
user; the user answers on the page, and the thread finishes; then a fork at an entry opens the new thread.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.runtime.session.processes import REPO, environment, read_until
from tests.runtime.studio.threads import DESK, DESK_ANSWERS

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CHROMIUM = Path(os.environ.get("PAL_TEST_CHROMIUM", "/usr/bin/chromium"))
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
"""Chromium's flags: no sandbox (CI runs as root), nothing reaching the network behind the test's back."""
WAIT_MS = 90_000
"""How long the browser waits for something to appear (a shared 2-core machine; it takes a second)."""
PROCESS_WAIT = 120
"""Seconds a process may take to start or end."""


def _skip_reason() -> str | None:
    if not CHROMIUM.is_file() and shutil.which("chromium") is None:
        return f"Debian's chromium is not installed ({CHROMIUM} missing; `.ci/run` installs it as root)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[dev]')"
    return None


if _skip_reason() is not None:
    pytest.skip(_skip_reason() or "", allow_module_level=True)


def _pal(*args: str) -> list[str]:
    return [sys.executable, "-m", "runtime.cli", *args]


@contextmanager
def _process(command: list[str], folder: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    """A process this test started, stopped by its pid at the end (SIGTERM, then SIGKILL)."""
    process = subprocess.Popen(
        command, cwd=folder, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=PROCESS_WAIT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=PROCESS_WAIT)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


@asynccontextmanager
async def _browser(folder: Path) -> AsyncIterator[Any]:
    """A page of a fresh headless chromium (its own user-data-dir), with what went wrong in it collected."""
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        context = await playwright.chromium.launch_persistent_context(
            str(folder / "chromium-profile"),
            executable_path=str(CHROMIUM if CHROMIUM.is_file() else shutil.which("chromium")),
            headless=True,
            args=list(FLAGS),
            viewport={"width": 1400, "height": 1000},
        )
        try:
            page = context.pages[0] if context.pages else await context.new_page()
            page.set_default_timeout(WAIT_MS)
            page.problems = []
            page.on("pageerror", lambda error: page.problems.append(f"page error: {error}"))
            page.on(
                "console",
                lambda message: (
                    page.problems.append(f"console: {message.text}") if message.type == "error" else None
                ),
            )
            yield page
        finally:
            await context.close()


@asynccontextmanager
async def _screenshot_on_failure(page: Any, folder: Path) -> AsyncIterator[None]:
    try:
        yield
    except BaseException:
        shot = folder / "failure.png"
        try:
            await page.screenshot(path=str(shot), full_page=True)
        except Exception as error:  # the browser itself died: say so beside the failure
            print(f"no screenshot: {error}")
        else:
            print(f"screenshot of the page: {shot}")
        raise


async def test_watch_answer_and_fork_a_run_in_the_browser(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    gate = tmp_path / "gate"
    env = environment(tmp_path, PAL_TEST_STUDIO_GATE=str(gate), PAL_STUDIO_TOKEN="browser-test-token")
    model = f"scripted:{DESK_ANSWERS}"
    run_command = _pal("run", str(DESK), "--thread", "live-1", "--no-input", "--message", "order 1234")
    studio_command = _pal("studio", "--store", store, "--port", "0", "--model", model)
    with (
        _process([*run_command, "--model", model, "--store", store, "--create-store"], tmp_path, env) as run,
        _process(studio_command, tmp_path, env) as studio,
    ):
        printed = read_until(studio, b"\n", timeout=PROCESS_WAIT).decode()
        assert printed.startswith("pal studio: http://127.0.0.1:"), printed
        url = printed.split("pal studio: ", 1)[1].strip()
        assert url.endswith("/?token=browser-test-token")
        async with _browser(tmp_path) as page, _screenshot_on_failure(page, tmp_path):
            # The threads page: the run appears (live) while it waits in its Python call.
            await page.goto(url)
            assert page.url.endswith("/") and "token" not in page.url
            await page.wait_for_selector('tr[data-thread="live-1"]')
            await page.click('tr[data-thread="live-1"] a')
            # The thread: its timeline so far, and the flowchart with the steps its turns ran.
            await page.wait_for_selector("#e4")
            assert await page.locator("#summary .badge").first.inner_text() == "running"
            assert await page.locator("#e5").count() == 0  # the run is in Lookup until the gate opens
            assert await page.locator('svg.flowchart g.node.taken[data-line="03"]').count() == 1
            assert "Lookup(order=$order)" in await page.locator("#e4").inner_text()
            # The run goes on (another process): the page updates in place, to the wait for the user.
            gate.write_text("open", encoding="utf-8")
            await page.wait_for_selector("#e8")
            await page.wait_for_selector("#summary .badge.waiting_for_user")
            retry = page.locator("li.group.retry")
            assert await retry.locator("article.rejected").count() == 1
            assert "V03" in await retry.locator(".problems").inner_text()
            assert "R01" in await retry.locator(".repairs").inner_text()
            assert run.wait(timeout=PROCESS_WAIT) == 3  # `pal run` stopped: the program asks the user
            # A turn's prompt, read when opened.
            await page.click("#e7 details.prompt summary")
            await page.wait_for_selector("#e7 .prompt-body pre")
            assert "You are the CPU of a PAL runtime" in await page.locator("#e7 .prompt-body").inner_text()
            # Answer as the user: the studio commits the answer and resumes the thread to its end.
            await page.fill("#answer textarea", "no, that is all")
            await page.click("#answer button")
            await page.wait_for_selector("#summary .badge.finished")
            await page.wait_for_selector("#e9")
            assert "no, that is all" in await page.locator("#e9").inner_text()
            assert "Goodbye!" in await page.locator("#e10").inner_text()
            # Fork at entry 5: the new thread opens, with entries 1 to 5; the original is untouched.
            await page.click("#e5 button.fork")
            await page.wait_for_selector("p.forked")
            assert "forked from live-1 at entry 5" in await page.locator("p.forked").inner_text()
            assert await page.locator("#groups article").count() == 5
            assert await page.locator("#resume").count() == 1
            await page.goto(url.split("/?")[0] + "/thread?id=live-1")
            assert await page.locator("#groups article").count() == 11
            assert page.problems == []
        assert studio.poll() is None  # still serving
    assert REPO.is_dir()

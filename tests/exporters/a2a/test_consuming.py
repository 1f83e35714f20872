"""Any A2A agent as a PAL agent (issue 26 item 3): `remote: {type: a2a, url, token_env}` makes an agent whose
skills are playbooks. Here the remote is a served PAL agent over loopback HTTP: results come back typed,
what it says on the way is said to the run's user, its INPUT_REQUIRED is a question on PAL's user channel
(durable: a thread that waits resumes on the answer, and the user is never asked twice), and a remote that
fails, refuses, or goes away is a clear call error, never a hang."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager

import anyio
import pytest

from exporters.a2a.server import A2AServer, serving_a2a
from pal_core.parser import parse
from runtime.api import run_program
from tests.exporters.a2a.helpers import A2A_FIXTURES, desk

pytestmark = pytest.mark.anyio

WAIT = 60
FRONT = A2A_FIXTURES / "front.pal"


@contextmanager
def desk_url(monkeypatch: pytest.MonkeyPatch, url: str) -> Iterator[None]:
    monkeypatch.setenv("PAL_TEST_DESK_URL", url)
    yield


@asynccontextmanager
async def served_desk(token: str | None = None) -> AsyncIterator[tuple[A2AServer, str]]:
    async with A2AServer(desk(), token=token) as served, serving_a2a(served, port=0) as endpoint:
        yield served, endpoint.url


async def test_skills_are_playbooks_and_the_remote_talks_to_the_user(monkeypatch: pytest.MonkeyPatch) -> None:
    async with served_desk() as (_, url):
        monkeypatch.setenv("PAL_TEST_DESK_URL", url)
        with anyio.fail_after(WAIT):
            result = await run_program(FRONT, messages=["Zed"])
    assert result.status in ("exit", "idle"), result.reason
    variables = result.variables["Front:1001"]
    assert variables == {"sum": 42, "mean": 1.5, "hello": "greeted Ann", "name": "Hi Zed"}
    assert isinstance(variables["sum"], int)
    # The desk's own lines (streamed as it said them), its question once, then the front's line.
    assert result.messages_to_user == ["Hello Ann", "What is your name?", "Hi Zed"]


async def test_a_durable_run_waits_on_the_remotes_question_and_resumes_on_the_answer(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    async with served_desk() as (served, url):
        monkeypatch.setenv("PAL_TEST_DESK_URL", url)
        with anyio.fail_after(WAIT):
            waiting = await run_program(FRONT, store=store, thread="front-1")
            answered = await run_program(FRONT, store=store, thread="front-1", messages=["Zed"])
            again = await run_program(FRONT, store=store, thread="front-1")
        remote_tasks = await served.handler.on_list_tasks(
            __import__("a2a.types.a2a_pb2", fromlist=["ListTasksRequest"]).ListTasksRequest(),
            None,  # type: ignore[arg-type]
        )
    assert waiting.status == "needs_input", waiting.reason
    assert answered.status in ("exit", "idle"), answered.reason
    assert answered.variables["Front:1001"]["name"] == "Hi Zed"
    assert again.variables == answered.variables  # finished: the recorded result, nothing asked again
    # Add, Mean and Greet were committed before the wait and never called again; AskName, which asked the
    # user, was made again on resume (a new remote task), its answer read from the log.
    by_skill: dict[str, int] = {}
    for task in remote_tasks.tasks:
        skill = task.metadata["pal"]["skill"]
        by_skill[skill] = by_skill.get(skill, 0) + 1
    assert by_skill == {"Add": 1, "Mean": 1, "Greet": 1, "AskName": 2}


FAILING = """# Desk
metadata:
  remote:
    type: a2a
    url: ${PAL_TEST_DESK_URL}
    timeout: 60
    idle_timeout: 2
---
The help desk.

# Front
Calls one skill of the desk.

## Main() -> None
### Triggers
- T1:BGN
### Steps
01:EXE $x = Desk.SKILL
02:RET
"""


def _calling(call: str) -> str:
    return FAILING.replace("SKILL", call)


async def test_a_remote_failure_is_a_call_error_with_its_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    async with served_desk() as (_, url):
        monkeypatch.setenv("PAL_TEST_DESK_URL", url)
        with anyio.fail_after(WAIT):
            result = await run_program(parse(_calling('Explode(reason="the fuse was lit")')))
            refused = await run_program(parse(_calling('Add(a="two", b=1)')))
    assert result.status == "error"
    assert "the task of skill Explode on the A2A agent at" in result.reason
    assert (
        "failed: Explode failed: Desk:Explode: Python playbook Explode raised ValueError: the fuse was lit"
        in (result.reason)
    )
    assert refused.status == "error"
    assert (
        'refused the call: Add: invalid arguments: a must be an integer, got string "two"' in refused.reason
    )


async def test_a_silent_remote_is_an_error_within_its_idle_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    async with served_desk() as (_, url):
        monkeypatch.setenv("PAL_TEST_DESK_URL", url)
        with anyio.fail_after(WAIT):
            result = await run_program(parse(_calling('Hold(label="forever")')))
    assert result.status == "error"
    assert "said nothing for 2 s (remote.idle_timeout)" in result.reason


async def test_a_remote_that_goes_away_mid_call_is_an_error_not_a_hang(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with anyio.create_task_group() as group:
        server = A2AServer(desk())
        await server.open()
        ready = anyio.Event()
        endpoint_url: list[str] = []

        async def serve() -> None:
            async with serving_a2a(server, port=0) as endpoint:
                endpoint_url.append(endpoint.url)
                ready.set()
                await server.stopped()
            await server.close()

        group.start_soon(serve)
        await ready.wait()
        monkeypatch.setenv("PAL_TEST_DESK_URL", endpoint_url[0])
        program = parse(
            _calling('Hold(label="until the server stops")').replace("idle_timeout: 2", "idle_timeout: 120")
        )
        outcome: list[object] = []

        async def call() -> None:
            outcome.append(await run_program(program))

        reached = anyio.Event()
        handler = server.handler
        started = handler._started
        handler._started = lambda run: (started(run), reached.set())  # type: ignore[method-assign]
        with anyio.fail_after(WAIT):
            group.start_soon(call)
            await reached.wait()  # the call reached the remote
            server.request_stop("the desk is shutting down")
    [result] = outcome
    assert result.status == "error"  # type: ignore[attr-defined]
    assert result.reason.startswith(  # type: ignore[attr-defined]
        f"Desk:Hold: the A2A agent at {endpoint_url[0]} stopped answering before the task ended (its last word: "
        "the desk is shutting down; the task goes on when a server sharing its store takes it over"
    )


async def test_an_unreachable_agent_or_a_missing_token_fails_at_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PAL_TEST_DESK_URL", "http://127.0.0.1:9/")  # the discard port: nothing listens
    with anyio.fail_after(WAIT):
        unreachable = await run_program(parse(_calling("Add(a=1, b=2)")))
    assert unreachable.status == "error"
    assert "cannot read the agent card of the A2A agent at http://127.0.0.1:9/" in unreachable.reason
    async with served_desk(token="s3cret") as (_, url):
        monkeypatch.setenv("PAL_TEST_DESK_URL", url)
        with_env = parse(
            _calling("Add(a=1, b=2)").replace("    idle_timeout: 2", "    token_env: PAL_TEST_DESK_TOKEN")
        )
        monkeypatch.delenv("PAL_TEST_DESK_TOKEN", raising=False)
        with anyio.fail_after(WAIT):
            missing = await run_program(with_env)
            monkeypatch.setenv("PAL_TEST_DESK_TOKEN", "wrong")
            wrong = await run_program(with_env)
            monkeypatch.setenv("PAL_TEST_DESK_TOKEN", "s3cret")
            right = await run_program(with_env)
    assert missing.status == "error"
    assert "`token_env` names PAL_TEST_DESK_TOKEN, and that environment variable is not set" in missing.reason
    assert wrong.status == "error"
    assert (
        "refused the call: HTTP 401: the agent refused this client's credentials (check `token_env`"
        in wrong.reason
    )
    assert right.status in ("exit", "idle"), right.reason


async def test_an_agent_that_does_not_stream_is_polled_until_its_task_ends() -> None:
    """A remote whose card offers no streaming, answering a send at once with the task still working (a
    polling client's view): the call reads the task until it ends, bounded by idle_timeout."""
    from exporters.a2a.client import A2AConnection, endpoint_for
    from pal_core.ir import RemoteSpec

    async with served_desk() as (_, url):
        connection = A2AConnection(endpoint_for(RemoteSpec(type="a2a", url=url), "Desk"))
        with anyio.fail_after(WAIT):
            await connection.open()
            try:
                connection.card.capabilities.streaming = False  # the card the SDK's client decides by
                connection._client._config.polling = True  # type: ignore[attr-defined]
                assert await connection.call_tool("Greet", {"name": "Poll"}) == "greeted Poll"
                assert await connection.call_tool("Add", {"a": 1, "b": 2}) == 3
            finally:
                await connection.close()

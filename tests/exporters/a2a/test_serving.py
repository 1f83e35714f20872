"""A PAL agent served over A2A, driven by the SDK's own client in process (issue 26, "Done when"): send,
stream, get, list, cancel and subscribe; a playbook that asks the user goes INPUT_REQUIRED and completes on
the answer; wrong arguments and unknown skills are JSON-RPC errors naming what is wrong; the card carries
the skills and their schemas."""

from __future__ import annotations

import anyio
import httpx
import pytest
from a2a.types import a2a_pb2 as pb
from a2a.utils.errors import A2AError

from exporters.a2a.card import SKILL_SCHEMAS_URI, skill_schemas
from exporters.a2a.server import A2AServer, a2a_app
from runtime.errors import ProgramError
from tests.exporters.a2a.helpers import (
    IN_PROCESS_URL,
    artifact_value,
    collect,
    data,
    desk,
    in_process,
    said,
    skill,
    states,
    text,
)

pytestmark = pytest.mark.anyio

WAIT = 60


async def test_the_card_lists_the_public_playbooks_as_skills_with_their_schemas() -> None:
    async with A2AServer(desk()) as served:
        card = served.card(IN_PROCESS_URL)
    assert card.name == "Desk"
    assert [item.id for item in card.skills] == ["Add", "Mean", "Explode", "AskName", "Hold", "Greet", "Note"]
    add = card.skills[0]
    assert add.name == "Desk.Add"
    assert add.description == "Adds two integers. Arguments: a (integer), b (integer). Returns: integer."
    assert set(add.input_modes) == {"text/plain", "application/json"}
    schemas = skill_schemas(card)
    assert schemas["Add"]["input_schema"]["required"] == ["a", "b"]
    assert schemas["Add"]["output_schema"]["properties"]["result"] == {"type": "integer"}
    assert schemas["Mean"]["input_schema"]["properties"]["values"] == {
        "type": "array",
        "items": {"type": "number"},
    }
    assert [extension.uri for extension in card.capabilities.extensions] == [SKILL_SCHEMAS_URI]
    assert card.capabilities.streaming and not card.capabilities.push_notifications
    assert [(item.protocol_binding, item.protocol_version) for item in card.supported_interfaces] == [
        ("JSONRPC", "1.0"),
        ("JSONRPC", "0.3"),
    ]
    assert not card.security_requirements


async def test_the_card_over_http_has_the_0_3_fields_and_the_bearer_scheme() -> None:
    async with A2AServer(desk(), token="secret") as served:
        app = a2a_app(served, url=IN_PROCESS_URL, token="secret")
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=IN_PROCESS_URL) as http:
            with anyio.fail_after(WAIT):
                card = (await http.get("/.well-known/agent-card.json")).json()  # no token needed for the card
                older = await http.get("/.well-known/agent.json")
                refused = await http.post(
                    "/", json={"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}
                )
    assert older.status_code == 200 and older.json()["name"] == "Desk"
    assert card["url"] == IN_PROCESS_URL and card["protocolVersion"] == "0.3"
    assert card["preferredTransport"] == "JSONRPC"
    assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert card["securityRequirements"] == [{"schemes": {"bearer": {}}}]
    assert card["security"] == [{"bearer": []}]  # the 0.3 field
    assert refused.status_code == 401
    assert "Authorization: Bearer" in refused.json()["error"]["message"]


async def test_a_data_part_calls_a_skill_and_the_result_is_the_artifact() -> None:
    async with A2AServer(desk()) as served, in_process(served, streaming=False) as client:
        with anyio.fail_after(WAIT):
            [event] = await collect(client, skill("Add", a=2, b=40))
    task = event.task
    assert pb.TaskState.Name(task.status.state) == "TASK_STATE_COMPLETED"
    assert artifact_value(task) == 42
    assert task.metadata["pal"]["skill"] == "Add"
    [first] = task.history
    assert first.role == pb.Role.ROLE_USER and first.message_id == "m"


async def test_text_goes_to_the_entry_skill_and_what_it_says_streams() -> None:
    async with A2AServer(desk()) as served, in_process(served) as client:
        with anyio.fail_after(WAIT):
            events = await collect(client, text("Ann"))
    assert states(events) == [
        "TASK_STATE_SUBMITTED",
        "TASK_STATE_WORKING",
        "TASK_STATE_WORKING",
        "TASK_STATE_COMPLETED",
    ]
    assert said(events) == ["Hello Ann"]
    [artifact] = [event.artifact_update for event in events if event.HasField("artifact_update")]
    assert artifact.artifact.parts[0].text == "greeted Ann" and artifact.last_chunk


async def test_a_playbook_that_returns_nothing_gives_what_it_said() -> None:
    async with A2AServer(desk()) as served, in_process(served, streaming=False) as client:
        with anyio.fail_after(WAIT):
            [event] = await collect(client, skill("Note"))
    assert artifact_value(event.task) == "noted"


async def test_a_playbook_that_asks_the_user_is_input_required_and_completes_on_the_answer() -> None:
    async with A2AServer(desk()) as served, in_process(served) as client:
        with anyio.fail_after(WAIT):
            asked = await collect(client, skill("AskName"))
            task_id = asked[0].task.id
            waiting = asked[-1].status_update.status
            answered = await collect(client, text("Bob", task_id=task_id, message_id="m2"))
            got = await client.get_task(pb.GetTaskRequest(id=task_id))
            with pytest.raises(A2AError, match="TASK_STATE_COMPLETED and takes no more messages"):
                await collect(client, text("again", task_id=task_id))
    assert pb.TaskState.Name(waiting.state) == "TASK_STATE_INPUT_REQUIRED"
    assert waiting.message.parts[0].text == "What is your name?"
    assert states(answered)[-1] == "TASK_STATE_COMPLETED"
    assert artifact_value(got) == "Hi Bob"
    assert [
        (pb.Role.Name(message.role), message.parts[0].WhichOneof("content")) for message in got.history
    ] == [
        ("ROLE_USER", "data"),
        ("ROLE_AGENT", "text"),
        ("ROLE_USER", "text"),
    ]
    assert [message.parts[0].text for message in got.history[1:]] == ["What is your name?", "Bob"]


async def test_wrong_arguments_and_unknown_skills_are_errors_and_make_no_task() -> None:
    async with A2AServer(desk()) as served, in_process(served, streaming=False) as client:
        with anyio.fail_after(WAIT):
            with pytest.raises(
                A2AError, match=r'Add: invalid arguments: a must be an integer, got string "two"'
            ):
                await collect(client, skill("Add", a="two", b=1))
            with pytest.raises(A2AError, match=r"Add: invalid arguments: b is required"):
                await collect(client, skill("Add", a=1))
            with pytest.raises(
                A2AError, match=r"no skill 'Nope' \(skills: Add, AskName, Explode, Greet, Hold, Mean, Note\)"
            ):
                await collect(client, skill("Nope"))
            with pytest.raises(A2AError, match=r"a data part must be an object such as"):
                await collect(client, data(["Add", 1, 2]))
            listed = await client.list_tasks(pb.ListTasksRequest())
    assert listed.total_size == 0


async def test_nan_sent_on_the_wire_is_refused_at_the_door() -> None:
    # JSON has no NaN, but Python's json reads one; the SDK's client never sends it, a hand-made one may.
    body = (
        '{"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": {"messageId": "m", '
        '"role": "ROLE_USER", "parts": [{"data": {"skill": "Mean", "arguments": {"values": [1, NaN]}}}]}}}'
    )
    async with A2AServer(desk()) as served:
        app = a2a_app(served, url=IN_PROCESS_URL)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=IN_PROCESS_URL) as http:
            with anyio.fail_after(WAIT):
                answer = await http.post(
                    "/", content=body, headers={"content-type": "application/json", "A2A-Version": "1.0"}
                )
    error = answer.json()["error"]
    assert error["code"] == -32602
    assert error["message"] == "Mean: invalid arguments: values[1] must be a finite number, got nan"


async def test_a_failing_playbook_makes_a_failed_task_with_the_reason() -> None:
    async with A2AServer(desk()) as served, in_process(served, streaming=False) as client:
        with anyio.fail_after(WAIT):
            [event] = await collect(client, skill("Explode", reason="the fuse was lit"))
    status = event.task.status
    assert pb.TaskState.Name(status.state) == "TASK_STATE_FAILED"
    assert "Python playbook Explode raised ValueError: the fuse was lit" in status.message.parts[0].text


async def test_get_list_and_cancel() -> None:
    async with A2AServer(desk()) as served, in_process(served, streaming=False) as client:
        with anyio.fail_after(WAIT):
            [done] = await collect(client, skill("Add", a=1, b=2))
            [held] = await collect(client, skill("Hold", label="h1"), return_immediately=True)
            held_id = held.task.id
            canceled = await client.cancel_task(pb.CancelTaskRequest(id=held_id))
            with pytest.raises(A2AError, match="cannot be canceled"):
                await client.cancel_task(pb.CancelTaskRequest(id=held_id))
            got = await client.get_task(pb.GetTaskRequest(id=held_id, history_length=1))
            everything = await client.list_tasks(pb.ListTasksRequest())
            completed = await client.list_tasks(pb.ListTasksRequest(status=pb.TaskState.TASK_STATE_COMPLETED))
            by_context = await client.list_tasks(pb.ListTasksRequest(context_id=done.task.context_id))
            paged = await client.list_tasks(pb.ListTasksRequest(page_size=1))
            second = await client.list_tasks(
                pb.ListTasksRequest(page_size=1, page_token=paged.next_page_token)
            )
            with pytest.raises(A2AError, match="not found"):
                await client.get_task(pb.GetTaskRequest(id="no-such-task"))
    assert pb.TaskState.Name(canceled.status.state) == "TASK_STATE_CANCELED"
    assert "the client canceled the task" in canceled.status.message.parts[0].text
    assert pb.TaskState.Name(got.status.state) == "TASK_STATE_CANCELED"
    assert len(got.history) <= 1
    assert {task.id for task in everything.tasks} == {held_id, done.task.id} and everything.total_size == 2
    assert [task.id for task in completed.tasks] == [done.task.id]
    assert [task.id for task in by_context.tasks] == [done.task.id]
    assert len(paged.tasks) == 1 and len(second.tasks) == 1 and paged.tasks[0].id != second.tasks[0].id
    assert not second.next_page_token


async def test_the_0_3_method_names_answer_too() -> None:
    async with A2AServer(desk()) as served:
        app = a2a_app(served, url=IN_PROCESS_URL)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=IN_PROCESS_URL) as http:
            with anyio.fail_after(WAIT):
                sent = await http.post(
                    "/",
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "message/send",
                        "params": {
                            "message": {
                                "kind": "message",
                                "messageId": "m1",
                                "role": "user",
                                "parts": [
                                    {
                                        "kind": "data",
                                        "data": {"skill": "Add", "arguments": {"a": 20, "b": 22}},
                                    }
                                ],
                            }
                        },
                    },
                )
                task = sent.json()["result"]
                got = await http.post(
                    "/", json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task["id"]}}
                )
    assert task["kind"] == "task" and task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["kind"] == "data"
    assert got.json()["result"]["status"]["state"] == "completed"


async def test_an_agent_to_serve_must_be_named_when_several_have_skills(tmp_path) -> None:  # type: ignore[no-untyped-def]
    two = tmp_path / "two.pal"
    two.write_text(
        "# A\nFirst.\n\n## One() -> int\nmetadata:\n  public: true\n---\n### Steps\n01:RET 1\n\n"
        "# B\nSecond.\n\n## Two() -> int\nmetadata:\n  public: true\n---\n### Steps\n01:RET 2\n",
        encoding="utf-8",
    )
    from pal_core.parser import parse_file

    program = parse_file(two)
    with pytest.raises(ProgramError, match=r"several agents have public playbooks \(A, B\); pick the one"):
        async with A2AServer(program):
            pass
    async with A2AServer(program, agent="B") as served:
        assert list(served.skills) == ["Two"]

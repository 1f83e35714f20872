"""The run-time helpers of imported ADK programs, one rule at a time (importers/adk/support.py, bound as pal.adk)."""

from __future__ import annotations

import pytest

from importers.adk import support
from importers.adk.support import AgentStepError, SessionError, record_event


def _session(state: dict | None = None, *events: dict) -> dict:
    session = support.start_session("hi", state or {})
    return support.append_events(session, list(events))


def test_a_session_starts_without_temp_keys_and_with_the_users_message() -> None:
    session = support.start_session("hello", {"temp:x": 1, "user:name": "Ada", "n": 1})
    assert session == {
        "message": "hello",
        "state": {"user:name": "Ada", "n": 1},
        "events": [{"author": "user", "text": "hello"}],
    }
    with pytest.raises(SessionError, match="must be a dict"):
        support.start_session("hello", ["not", "a", "dict"])  # type: ignore[arg-type]
    with pytest.raises(SessionError, match="'message', 'state' and 'events'"):
        support.event_count({"state": {}})


def test_the_final_state_drops_temp_keys_and_puts_app_then_user_keys_last() -> None:
    session = _session(
        {"user:name": "Ada", "b": 1}, record_event("a", state_delta={"app:n": 1, "temp:t": 2, "c": 3})
    )
    assert support.finish_session(session) == {
        "state": {"b": 1, "c": 3, "app:n": 1, "user:name": "Ada"},
        "reply": None,
    }
    with_reply = support.append_events(session, [record_event("a", text="done"), record_event("b")])
    assert support.finish_session(with_reply)["reply"] == "done"


def test_an_escalation_after_the_mark_counts_one_before_it_does_not() -> None:
    session = _session({}, record_event("a", escalate=True))
    mark = support.event_count(session)
    assert not support.escalated(session, mark)
    assert support.escalated(support.append_events(session, [record_event("b", escalate=True)]), mark)


def test_parallel_branches_merge_event_by_event_and_stop_at_a_direct_escalation() -> None:
    base = _session({"n": 0})
    left = support.append_events(
        base, [record_event("left", state_delta={"n": 1}), record_event("left", state_delta={"last": "left"})]
    )
    right = support.append_events(base, [record_event("right", state_delta={"n": 2})])
    merged = support.merge_branches(base, [left, right], ["left", "right"])
    assert [event["author"] for event in merged["events"][1:]] == ["left", "right", "left"]
    assert merged["state"] == {"n": 2, "last": "left"}
    stopping = support.append_events(base, [record_event("right", state_delta={"n": 2}, escalate=True)])
    stopped = support.merge_branches(base, [left, stopping], ["left", "right"])
    assert [event["author"] for event in stopped["events"][1:]] == ["left", "right"]
    with pytest.raises(AgentStepError, match=r"branch 'right' .* did not continue"):
        support.merge_branches(base, [left, support.start_session("another message")], ["left", "right"])


def test_a_reply_writes_its_event_and_output_key_unless_a_tool_ended_the_turn() -> None:
    session = _session({})
    mark = support.event_count(session)
    replied = support.agent_reply(session, "writer", "Done.", output_key="draft", since=mark)
    assert replied["state"] == {"draft": "Done."} and replied["events"][-1] == {
        "author": "writer",
        "text": "Done.",
        "state_delta": {"draft": "Done."},
    }
    ended = support.append_events(session, [record_event("writer", skip_summarization=True, escalate=True)])
    assert support.agent_reply(ended, "writer", "ignored", output_key="draft", since=mark) == ended


def test_a_transfer_is_allowed_only_to_the_agents_adk_allows() -> None:
    assert support.transfer_target("billing", ["billing", "support"]) == "billing"
    with pytest.raises(AgentStepError, match=r"cannot transfer to agent 'sales': .* billing, support"):
        support.transfer_target("sales", ["billing", "support"])


def test_an_agent_tool_runs_in_a_session_of_its_own_and_forwards_its_state_changes() -> None:
    caller = _session({"n": 1}, record_event("a", state_delta={"temp:x": 5}))
    child = support.tool_session(caller, {"b": 2, "a": 1})
    assert child["message"] == '{"a": 1, "b": 2}' and child["state"] == {"n": 1}
    done = support.append_events(child, [record_event("helper", text="answer", state_delta={"m": 2})])
    result = support.tool_result(caller, done, "caller", skip_summarization=True)
    assert result["result"] == "answer"
    assert result["session"]["state"] == {"n": 1, "temp:x": 5, "m": 2}
    assert result["session"]["events"][-1]["skip_summarization"] is True


def test_a_route_picks_its_edge_the_default_edge_or_none() -> None:
    routes = [[["big"], "handle_big"], [["small", "tiny"], "handle_small"], [["__DEFAULT__"], "fallback"]]
    assert support.destination("big", "classify", routes) == "handle_big"
    assert support.destination(["tiny"], "classify", routes) == "handle_small"
    assert support.destination("huge", "classify", routes) == "fallback"
    assert support.destination("huge", "classify", routes[:2]) == ""
    with pytest.raises(AgentStepError, match=r"leads to .* at once"):
        support.destination(["big", "small"], "classify", routes)


def test_an_llm_node_sees_its_input_as_a_turn_and_answers_its_reply_as_output() -> None:
    session = _session({})
    turn = support.agent_input(session, {"topic": "cats"})
    assert turn["events"][-1] == {"author": "user", "text": '{"topic": "cats"}'}
    answered = support.append_events(turn, [record_event("writer", text="Cats.", state_delta={"k": 1})])
    result = support.agent_output(session, answered, "writer")
    assert result["output"] == "Cats." and result["session"]["state"] == {"k": 1}
    assert [event["author"] for event in result["session"]["events"]] == ["user", "writer"]


def test_the_conversation_is_every_event_with_text_or_only_the_message() -> None:
    session = _session({}, record_event("a", text="one"), record_event("b"))
    assert support.conversation(session) == ["user: hi", "a: one"]
    assert support.conversation(session, include_contents="none") == ["user: hi"]


def test_an_unsupported_part_fails_with_the_reason() -> None:
    with pytest.raises(
        AgentStepError, match="tool 'search' of agent 'x': no search here; the import reported"
    ):
        support.unsupported("tool 'search' of agent 'x'", "no search here")

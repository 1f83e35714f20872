"""Messages: immutability, validation, extensible types, and the dict round trip."""

from __future__ import annotations

import copy
import pickle
from dataclasses import FrozenInstanceError
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pal_core.errors import PalError
from pal_core.messaging import InvalidMessage, Message, MessageType, MessagingError


def test_defaults_give_each_message_its_own_id_and_an_aware_time() -> None:
    first = Message(sender_id="1000", sender_klass="Host", content="hello")
    second = Message(sender_id="1000", sender_klass="Host", content="hello")
    assert first.id != second.id
    assert first.created_at.utcoffset() == timedelta(0)
    assert first.message_type is MessageType.DIRECT
    assert first.target_agent_ids == ()


def test_messages_are_immutable() -> None:
    message = Message(sender_id="1000", sender_klass="Host", content="hello")
    with pytest.raises(FrozenInstanceError):
        message.content = "changed"  # type: ignore[misc]


def test_target_ids_given_as_a_list_are_stored_as_a_tuple() -> None:
    message = Message(
        sender_id="1000",
        sender_klass="Host",
        content="@1001 your turn",
        message_type=MessageType.MEETING_BROADCAST,
        meeting_id="7",
        target_agent_ids=["1001", "1002"],  # type: ignore[arg-type]
    )
    assert message.target_agent_ids == ("1001", "1002")


@pytest.mark.parametrize(
    ("fields", "complaint"),
    [
        ({"sender_id": ""}, "sender_id must be a non-empty string"),
        ({"content": 5}, "content must be a string"),
        ({"message_type": "direct"}, "message_type must be a MessageType"),
        ({"message_type": MessageType.MEETING_BROADCAST}, "needs a meeting_id"),
        ({"target_agent_ids": "1001"}, "target_agent_ids must be a sequence"),
        ({"target_agent_ids": ("1001", "")}, "target_agent_ids item"),
        ({"created_at": datetime(2024, 1, 1)}, "timezone-aware"),
        ({"meeting_id": ""}, "meeting_id must be a non-empty string or None"),
    ],
)
def test_bad_fields_are_refused_with_the_field_named(fields: dict[str, object], complaint: str) -> None:
    arguments: dict[str, object] = {"sender_id": "1000", "sender_klass": "Host", "content": "x", **fields}
    with pytest.raises(InvalidMessage, match=complaint):
        Message(**arguments)  # type: ignore[arg-type]


def test_errors_belong_to_the_pal_error_family() -> None:
    assert issubclass(InvalidMessage, MessagingError)
    assert issubclass(MessagingError, PalError)


def test_predefined_types_look_up_like_an_enum() -> None:
    assert MessageType("meeting_broadcast") is MessageType.MEETING_BROADCAST
    assert MessageType.MEETING_ENDED.name == "MEETING_ENDED"
    assert str(MessageType.DIRECT) == "direct"
    assert repr(MessageType.DIRECT) == "MessageType.DIRECT"
    with pytest.raises(InvalidMessage, match=r"unknown message type 'nope'.*MessageType.define\('nope'\)"):
        MessageType("nope")


def test_users_define_new_types_without_editing_the_module() -> None:
    status = MessageType.define("test_suite.agent_status_update")
    assert MessageType.define("test_suite.agent_status_update") is status
    assert MessageType("test_suite.agent_status_update") is status
    assert status in MessageType.defined()
    assert not status.is_meeting_type
    message = Message(sender_id="1000", sender_klass="Host", content="busy", message_type=status)
    assert Message.from_dict(message.to_dict()) == message


@pytest.mark.parametrize("value", ["", "Upper", "has space", "1starts_with_digit", "trailing.", 7])
def test_bad_type_values_are_refused(value: object) -> None:
    with pytest.raises(InvalidMessage, match="is not valid"):
        MessageType.define(value)  # type: ignore[arg-type]


def test_types_are_immutable_and_survive_pickle_and_copy() -> None:
    with pytest.raises(AttributeError):
        MessageType.DIRECT.value = "other"  # type: ignore[misc]
    message = Message(
        sender_id="1000",
        sender_klass="Host",
        content="x",
        meeting_id="7",
        message_type=MessageType.MEETING_INVITATION,
    )
    assert pickle.loads(pickle.dumps(message)) == message
    assert copy.deepcopy(message).message_type is MessageType.MEETING_INVITATION


def test_to_dict_is_json_shaped() -> None:
    created = datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    message = Message(
        id="abc",
        created_at=created,
        sender_id="1000",
        sender_klass="Host",
        recipient_id="1001",
        recipient_klass="Guest",
        content="hello",
        message_type=MessageType.MEETING_INVITATION,
        meeting_id="7",
        target_agent_ids=("1001",),
        stream_id="s1",
    )
    assert message.to_dict() == {
        "id": "abc",
        "created_at": "2024-05-06T07:08:09.123456+00:00",
        "sender_id": "1000",
        "sender_klass": "Host",
        "recipient_id": "1001",
        "recipient_klass": "Guest",
        "content": "hello",
        "message_type": "meeting_invitation",
        "meeting_id": "7",
        "target_agent_ids": ["1001"],
        "stream_id": "s1",
    }


ids = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


@given(
    sender_id=ids,
    sender_klass=st.text(max_size=10),
    content=st.text(),
    recipient_id=st.none() | ids,
    meeting_id=st.none() | ids,
    targets=st.lists(ids, max_size=4),
    stream_id=st.none() | ids,
    message_type=st.sampled_from(
        [MessageType.DIRECT, MessageType.MEETING_BROADCAST, MessageType.MEETING_ENDED]
    ),
    when=st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=-5, minutes=-30))])),
)
def test_dict_round_trip_gives_an_equal_message(
    sender_id: str,
    sender_klass: str,
    content: str,
    recipient_id: str | None,
    meeting_id: str | None,
    targets: list[str],
    stream_id: str | None,
    message_type: MessageType,
    when: datetime,
) -> None:
    if message_type.is_meeting_type and meeting_id is None:
        meeting_id = "7"
    message = Message(
        sender_id=sender_id,
        sender_klass=sender_klass,
        content=content,
        recipient_id=recipient_id,
        meeting_id=meeting_id,
        target_agent_ids=tuple(targets),
        stream_id=stream_id,
        message_type=message_type,
        created_at=when,
    )
    assert Message.from_dict(message.to_dict()) == message


@pytest.mark.parametrize(
    ("change", "complaint"),
    [
        (lambda d: d.pop("sender_id"), "missing keys: sender_id"),
        (lambda d: d.update(extra=1), "unknown keys: extra"),
        (lambda d: d.update(created_at="yesterday"), "not an ISO 8601 time"),
        (lambda d: d.update(created_at=12), "must be an ISO 8601 string"),
        (lambda d: d.update(message_type="not_defined_anywhere"), "unknown message type"),
        (lambda d: d.update(target_agent_ids="1001"), "target_agent_ids must be a list"),
        (lambda d: d.update(created_at="2024-01-01T00:00:00"), "timezone-aware"),
    ],
)
def test_from_dict_names_what_is_wrong(change: object, complaint: str) -> None:
    data = Message(sender_id="1000", sender_klass="Host", content="x").to_dict()
    change(data)  # type: ignore[operator]
    with pytest.raises(InvalidMessage, match=complaint):
        Message.from_dict(data)


def test_from_dict_refuses_a_non_mapping() -> None:
    with pytest.raises(InvalidMessage, match="must be a mapping"):
        Message.from_dict(["not", "a", "dict"])  # type: ignore[arg-type]

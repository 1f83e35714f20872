"""Messages: the immutable packets that flow through channels, and their extensible types.

A `Message` is a frozen dataclass with its own id and creation time. `to_dict` gives a JSON-compatible dict
and `from_dict` reads it back into an equal message, so messages can cross a process or network boundary.

`MessageType` is an open set rather than an `Enum`: the five types the runtime uses are predefined, and any
user can add one with `MessageType.define("system_notification")` without touching this module.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar

from pal_core.messaging.errors import InvalidMessage

_TYPE_VALUE = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z][a-z0-9_]*)*")


class MessageType:
    """The kind of a message: an interned value such as `direct`; compare with `is` or `==`.

    `MessageType("direct")` looks a defined type up (like an `Enum`) and raises `InvalidMessage` for an
    unknown value; `MessageType.define(value)` adds a new one and returns it.
    """

    __slots__ = ("name", "value")
    _by_value: ClassVar[dict[str, MessageType]] = {}

    DIRECT: ClassVar[MessageType]
    MEETING_BROADCAST: ClassVar[MessageType]
    MEETING_INVITATION: ClassVar[MessageType]
    MEETING_INVITATION_RESPONSE: ClassVar[MessageType]
    MEETING_ENDED: ClassVar[MessageType]

    value: str
    """The wire form: lower-case words joined by `_`, optionally namespaced with dots (`myapp.status`)."""
    name: str
    """The value in upper case, as an `Enum` member name would read."""

    def __new__(cls, value: str) -> MessageType:
        found = cls._by_value.get(value) if isinstance(value, str) else None
        if found is None:
            known = ", ".join(sorted(cls._by_value))
            raise InvalidMessage(
                f"unknown message type {value!r} (known: {known}); "
                f"define it first with MessageType.define({value!r})"
            )
        return found

    @classmethod
    def define(cls, value: str) -> MessageType:
        """Add the type `value` (or return it if already defined) so messages and `from_dict` accept it."""
        if not isinstance(value, str) or not _TYPE_VALUE.fullmatch(value):
            raise InvalidMessage(
                f"message type value {value!r} is not valid: use lower-case letters, digits and '_', "
                "starting with a letter, optionally namespaced with dots (for example 'myapp.status')"
            )
        existing = cls._by_value.get(value)
        if existing is not None:
            return existing
        created = object.__new__(cls)
        object.__setattr__(created, "value", value)
        object.__setattr__(created, "name", value.upper())
        cls._by_value[value] = created
        return created

    @classmethod
    def defined(cls) -> tuple[MessageType, ...]:
        """Every defined type, in the order they were defined."""
        return tuple(cls._by_value.values())

    @property
    def is_meeting_type(self) -> bool:
        """Whether messages of this type belong to a meeting and so need a `meeting_id`."""
        return self in _MEETING_TYPES

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"MessageType is immutable; cannot set {name!r}")

    def __reduce__(self) -> tuple[type[MessageType], tuple[str]]:
        return (MessageType, (self.value,))

    def __repr__(self) -> str:
        return f"MessageType.{self.name}"

    def __str__(self) -> str:
        return self.value


MessageType.DIRECT = MessageType.define("direct")
MessageType.MEETING_BROADCAST = MessageType.define("meeting_broadcast")
MessageType.MEETING_INVITATION = MessageType.define("meeting_invitation")
MessageType.MEETING_INVITATION_RESPONSE = MessageType.define("meeting_invitation_response")
MessageType.MEETING_ENDED = MessageType.define("meeting_ended")
_MEETING_TYPES = frozenset(
    {
        MessageType.MEETING_BROADCAST,
        MessageType.MEETING_INVITATION,
        MessageType.MEETING_INVITATION_RESPONSE,
        MessageType.MEETING_ENDED,
    }
)


def new_message_id() -> str:
    """A fresh random message id: 128 random bits as 32 hex digits (as unique as a UUID4, cheaper to make)."""
    return os.urandom(16).hex()


def utc_now() -> datetime:
    """The current time, timezone-aware in UTC."""
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message from a sender to a recipient or a meeting. Immutable; build a new one to change it."""

    sender_id: str
    """Id of the participant that sent it, such as `"1000"` or `"human"`."""
    sender_klass: str
    """The sender's class (agent class name, or `Human`)."""
    content: str
    """The text of the message."""
    recipient_id: str | None = None
    """Id of the one recipient of a direct message; None for a meeting broadcast."""
    recipient_klass: str | None = None
    """Class of the recipient of a direct message; None for a meeting broadcast."""
    message_type: MessageType = MessageType.DIRECT
    """What kind of message this is; meeting types require `meeting_id`."""
    meeting_id: str | None = None
    """The meeting this message belongs to, if any."""
    target_agent_ids: tuple[str, ...] = ()
    """Ids of the meeting attendees this message is addressed to; empty when addressed to everyone."""
    stream_id: str | None = None
    """The stream that showed this message chunk by chunk before it was delivered whole, if any."""
    id: str = field(default_factory=new_message_id)
    """Unique id of this message."""
    created_at: datetime = field(default_factory=utc_now)
    """When the message was made; always timezone-aware."""

    def __post_init__(self) -> None:
        # Every message passes here, so the common all-valid case is a handful of cheap type tests.
        if not (
            type(self.sender_id) is str
            and self.sender_id
            and type(self.sender_klass) is str
            and type(self.content) is str
            and type(self.id) is str
            and self.id
            and type(self.message_type) is MessageType
            and (self.recipient_id is None or (type(self.recipient_id) is str and self.recipient_id))
            and (self.recipient_klass is None or type(self.recipient_klass) is str)
            and (self.meeting_id is None or (type(self.meeting_id) is str and self.meeting_id))
            and (self.stream_id is None or (type(self.stream_id) is str and self.stream_id))
        ):
            self._explain_bad_field()
        if self.meeting_id is None and self.message_type in _MEETING_TYPES:
            raise InvalidMessage(f"a {self.message_type.value} message needs a meeting_id")
        if type(self.target_agent_ids) is not tuple:
            object.__setattr__(self, "target_agent_ids", _id_tuple(self.target_agent_ids))
        elif self.target_agent_ids:
            for agent_id in self.target_agent_ids:
                _require_text("target_agent_ids item", agent_id)
        created_at = self.created_at
        if not isinstance(created_at, datetime) or (
            created_at.tzinfo is not UTC and created_at.utcoffset() is None
        ):
            raise InvalidMessage(f"created_at must be a timezone-aware datetime, got {created_at!r}")

    def _explain_bad_field(self) -> None:
        """Raise `InvalidMessage` for the first bad field (the slow path of `__post_init__`)."""
        _require_text("sender_id", self.sender_id)
        _require_str("sender_klass", self.sender_klass)
        _require_str("content", self.content)
        _require_optional_text("recipient_id", self.recipient_id)
        _require_optional_str("recipient_klass", self.recipient_klass)
        _require_optional_text("meeting_id", self.meeting_id)
        _require_optional_text("stream_id", self.stream_id)
        _require_text("id", self.id)
        if not isinstance(self.message_type, MessageType):
            raise InvalidMessage(
                f"message_type must be a MessageType, got {type(self.message_type).__name__} "
                f"{self.message_type!r}; use MessageType({self.message_type!r}) to look a value up"
            )
        # str subclasses pass the checks above; accept them as they are.

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible dict that `from_dict` turns back into an equal message."""
        return {
            "id": self.id,
            "created_at": self.created_at.isoformat(),
            "sender_id": self.sender_id,
            "sender_klass": self.sender_klass,
            "recipient_id": self.recipient_id,
            "recipient_klass": self.recipient_klass,
            "content": self.content,
            "message_type": self.message_type.value,
            "meeting_id": self.meeting_id,
            "target_agent_ids": list(self.target_agent_ids),
            "stream_id": self.stream_id,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Message:
        """Read a dict made by `to_dict`. Raises `InvalidMessage` naming the bad or missing key."""
        if not isinstance(data, Mapping):
            raise InvalidMessage(f"a serialised message must be a mapping, got {type(data).__name__}")
        unknown = sorted(str(key) for key in data if key not in _DICT_KEYS)
        if unknown:
            raise InvalidMessage(f"serialised message has unknown keys: {', '.join(unknown)}")
        missing = [key for key in _REQUIRED_DICT_KEYS if key not in data]
        if missing:
            raise InvalidMessage(f"serialised message is missing keys: {', '.join(missing)}")
        created_at = data["created_at"]
        if not isinstance(created_at, str):
            raise InvalidMessage(f"created_at must be an ISO 8601 string, got {created_at!r}")
        try:
            parsed_created_at = datetime.fromisoformat(created_at)
        except ValueError as error:
            raise InvalidMessage(f"created_at {created_at!r} is not an ISO 8601 time: {error}") from None
        targets = data.get("target_agent_ids", ())
        if not isinstance(targets, list | tuple):
            raise InvalidMessage(f"target_agent_ids must be a list of ids, got {targets!r}")
        return cls(
            id=data["id"],
            created_at=parsed_created_at,
            sender_id=data["sender_id"],
            sender_klass=data["sender_klass"],
            recipient_id=data.get("recipient_id"),
            recipient_klass=data.get("recipient_klass"),
            content=data["content"],
            message_type=MessageType(data["message_type"]),
            meeting_id=data.get("meeting_id"),
            target_agent_ids=tuple(targets),
            stream_id=data.get("stream_id"),
        )


_DICT_KEYS = frozenset(
    {
        "id",
        "created_at",
        "sender_id",
        "sender_klass",
        "recipient_id",
        "recipient_klass",
        "content",
        "message_type",
        "meeting_id",
        "target_agent_ids",
        "stream_id",
    }
)
_REQUIRED_DICT_KEYS = ("id", "created_at", "sender_id", "sender_klass", "content", "message_type")


def _require_str(name: str, value: object) -> None:
    if not isinstance(value, str):
        raise InvalidMessage(f"{name} must be a string, got {type(value).__name__} {value!r}")


def _require_text(name: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise InvalidMessage(f"{name} must be a non-empty string, got {value!r}")


def _require_optional_str(name: str, value: object) -> None:
    if value is not None and not isinstance(value, str):
        raise InvalidMessage(f"{name} must be a string or None, got {type(value).__name__} {value!r}")


def _require_optional_text(name: str, value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidMessage(f"{name} must be a non-empty string or None, got {value!r}")


def _id_tuple(values: object) -> tuple[str, ...]:
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise InvalidMessage(f"target_agent_ids must be a sequence of ids, got {values!r}")
    ids = tuple(values)
    for agent_id in ids:
        _require_text("target_agent_ids item", agent_id)
    return ids

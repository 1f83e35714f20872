"""Receiver specs: the strings PAL programs use to say who a message is for.

| spec                | means                                                              |
|---------------------|--------------------------------------------------------------------|
| `agent 1001`        | the participant with id `1001`                                     |
| `meeting 7`         | everyone in meeting `7`                                            |
| `human`, `user`     | the human participant (`user` is the word PAL programs use)        |
| `HeadChef` / `1001` | a participant with that id, else the first agent of that class     |

Keywords are case-insensitive. A bare `meeting` has no id: the runtime finds the current meeting with
`pal_core.messaging.meetings.current_meeting_id` and passes `meeting <id>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

from pal_core.messaging.errors import InvalidReceiverSpec


class ReceiverKind(StrEnum):
    """What a receiver spec points at."""

    AGENT = "agent"
    """A participant id, written `agent <id>`."""
    MEETING = "meeting"
    """A meeting id, written `meeting <id>`."""
    HUMAN = "human"
    """The human participant, written `human` or `user`."""
    NAME = "name"
    """A single word: a participant id if one is registered, else an agent class name."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReceiverSpec:
    """A parsed receiver spec."""

    kind: ReceiverKind
    """What the spec points at."""
    value: str
    """The id or class name; empty for `human`."""
    text: str
    """The spec as written, for error messages."""


_HUMAN_WORDS = frozenset({"human", "user"})


def parse_receiver_spec(spec: str) -> ReceiverSpec:
    """Read a receiver spec. Raises `InvalidReceiverSpec` saying what is wrong with it."""
    if not isinstance(spec, str):
        raise InvalidReceiverSpec(f"receiver spec must be a string, got {type(spec).__name__} {spec!r}")
    return _parse(spec)


@lru_cache(maxsize=4096)
def _parse(spec: str) -> ReceiverSpec:
    # Programs address the same few receivers over and over; the parsed spec is immutable, so cache it.
    words = spec.split()
    if not words:
        raise InvalidReceiverSpec(
            "receiver spec is empty: expected 'agent <id>', 'meeting <id>', 'human', or a name"
        )
    keyword = words[0].lower()
    if len(words) == 1:
        if keyword in _HUMAN_WORDS:
            return ReceiverSpec(kind=ReceiverKind.HUMAN, value="", text=spec)
        if keyword == "meeting":
            raise InvalidReceiverSpec(
                "receiver spec 'meeting' has no meeting id: resolve the current meeting with "
                "current_meeting_id(call stack frames) and address it as 'meeting <id>'"
            )
        if keyword == "agent":
            raise InvalidReceiverSpec("receiver spec 'agent' has no id: expected 'agent <id>'")
        return ReceiverSpec(kind=ReceiverKind.NAME, value=words[0], text=spec)
    if len(words) == 2 and keyword == "agent":
        return ReceiverSpec(kind=ReceiverKind.AGENT, value=words[1], text=spec)
    if len(words) == 2 and keyword == "meeting":
        return ReceiverSpec(kind=ReceiverKind.MEETING, value=words[1], text=spec)
    raise InvalidReceiverSpec(
        f"receiver spec {spec!r} is not understood: expected 'agent <id>', 'meeting <id>', 'human', 'user', "
        "or one agent id or class name"
    )


def agent_spec(agent_id: str) -> str:
    """The spec addressing the participant `agent_id`."""
    return f"agent {agent_id}"


def meeting_spec(meeting_id: str) -> str:
    """The spec addressing everyone in meeting `meeting_id`."""
    return f"meeting {meeting_id}"

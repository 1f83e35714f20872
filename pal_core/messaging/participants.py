"""Participants: whoever can be on a channel and receive messages.

`Participant` is a protocol, so a custom participant (a remote agent over a socket, a web user, a logger)
needs no base class: it only has to provide the five members below. The runtime registers one
`AgentParticipant` per agent and one `HumanParticipant` for the person at the terminal.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar, Protocol, runtime_checkable

from pal_core.messaging.errors import InvalidParticipant
from pal_core.messaging.message import Message
from pal_core.messaging.queue import AsyncMessageQueue

_PARTICIPANT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.:@-]*")


@runtime_checkable
class Participant(Protocol):
    """Anything a channel can deliver messages to."""

    @property
    def id(self) -> str:
        """Unique id among the registry's participants: letters, digits and `.:@-`, no `_` or spaces."""
        ...

    @property
    def klass(self) -> str:
        """The participant's class, such as an agent class name; receiver specs may name it."""
        ...

    @property
    def is_human(self) -> bool:
        """Whether a person reads this participant's messages; only channels with one stream chunks."""
        ...

    async def deliver(self, message: Message) -> None:
        """Take one message addressed to this participant. May raise; the channel reports it."""
        ...

    async def close(self) -> None:
        """Stop taking messages (the registry calls it at shutdown); waiting readers should wake."""
        ...


def check_participant_id(participant_id: object) -> str:
    """`participant_id` if it is a valid participant id, else `InvalidParticipant` saying why.

    `_` is refused because channel ids join two participant ids with it (`channel_1000_1001`), and
    whitespace because receiver specs split on it (`agent 1001`).
    """
    if not isinstance(participant_id, str) or not _PARTICIPANT_ID.fullmatch(participant_id):
        raise InvalidParticipant(
            f"participant id {participant_id!r} is not valid: use letters, digits and '.:@-', starting with a "
            "letter or digit (no '_' or whitespace, which channel ids and receiver specs use as separators)"
        )
    return participant_id


def check_klass(klass: object) -> str:
    """`klass` if it is a valid participant class name (a non-empty string without whitespace)."""
    if not isinstance(klass, str) or not klass or any(char.isspace() for char in klass):
        raise InvalidParticipant(f"participant class {klass!r} must be a non-empty string without whitespace")
    return klass


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentParticipant:
    """An agent: messages go to its inbox, which the agent's own task reads."""

    id: str
    """The agent's id, such as `"1000"`."""
    klass: str
    """The agent's class name, such as `"HeadChef"`."""
    inbox: AsyncMessageQueue
    """The queue the agent reads its messages from."""
    is_human: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_participant_id(self.id)
        check_klass(self.klass)
        if not isinstance(self.inbox, AsyncMessageQueue):
            raise InvalidParticipant(
                f"inbox of agent {self.id} must be an AsyncMessageQueue, got {self.inbox!r}"
            )

    async def deliver(self, message: Message) -> None:
        """Queue `message` in the agent's inbox."""
        await self.inbox.put(message)

    async def close(self) -> None:
        """Close the inbox, so the agent's waiting read ends with `QueueClosed`."""
        await self.inbox.close()


@dataclass(frozen=True, slots=True, kw_only=True)
class HumanParticipant:
    """The person using the program: whole messages go to an inbox the user interface reads; streamed
    text reaches the interface through the stream observers of the channel (see `pal_core.messaging.streams`).

    A message that was streamed first arrives in the inbox too, with its `stream_id` set, so an interface that
    already showed the stream can skip it.
    """

    inbox: AsyncMessageQueue
    """The queue the user interface reads whole messages from."""
    id: str = "human"
    """The human's id; receiver specs `human` and `user` find it."""
    klass: str = "Human"
    """The human's class name."""
    is_human: ClassVar[bool] = True

    def __post_init__(self) -> None:
        check_participant_id(self.id)
        check_klass(self.klass)
        if not isinstance(self.inbox, AsyncMessageQueue):
            raise InvalidParticipant(
                f"inbox of human {self.id} must be an AsyncMessageQueue, got {self.inbox!r}"
            )

    async def deliver(self, message: Message) -> None:
        """Queue `message` in the human's inbox."""
        await self.inbox.put(message)

    async def close(self) -> None:
        """Close the inbox, so the interface's waiting read ends with `QueueClosed`."""
        await self.inbox.close()

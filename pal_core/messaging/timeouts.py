"""Differential timeouts for meetings (seed 002, section 6.4).

An agent waiting on a meeting should answer quickly when a message is for it, and otherwise let the chatter
accumulate so it does not take a turn after every line. A message is *for* an agent when it lists the agent
in `target_agent_ids`, @mentions the agent's id or one of its names (`@1001`, `@HeadChef`), or ends the
meeting. A message that lists the agent in `target_agent_ids` is more than that: it *gives the agent the
turn* (a chair calling on one attendee, an attendee answering the chair), so nobody else is expected to
speak before the agent answers and there is nothing to gather.

`wait_for_meeting_messages` implements this without polling:

- if a turn for the agent is already queued, it takes the meeting's messages after the turn window
  (`MeetingTimeouts.turn`, default 0: at once);
- else if a message for the agent is queued, it gathers meeting messages for the short window
  (`MeetingTimeouts.targeted`, default 0.5 s);
- otherwise it waits up to the long window (`untargeted`, default 5 s), but the moment a message for the agent
  arrives the wait is cut to at most the short window from then (the turn window for a turn);
- a `MEETING_ENDED` message ends the wait at once;
- then it takes every queued message of the meeting (possibly none) and returns them, oldest first.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from pal_core.messaging.errors import QueueClosed
from pal_core.messaging.message import Message, MessageType
from pal_core.messaging.queue import AsyncMessageQueue


@dataclass(frozen=True, slots=True, kw_only=True)
class MeetingTimeouts:
    """How long a meeting wait gathers messages, depending on whether one is for the waiting agent."""

    turn: float = 0.0
    """Seconds to keep gathering once a turn for the agent is queued (a message listing it in
    `target_agent_ids`); 0 answers at once."""
    targeted: float = 0.5
    """Seconds to keep gathering once a message for the agent is queued."""
    untargeted: float = 5.0
    """Seconds to gather when no message is for the agent."""

    def __post_init__(self) -> None:
        for name in ("turn", "targeted", "untargeted"):
            value = getattr(self, name)
            if (
                not isinstance(value, int | float)
                or isinstance(value, bool)
                or not math.isfinite(value)
                or value < 0
            ):
                raise ValueError(
                    f"MeetingTimeouts.{name} must be a finite number of seconds >= 0, got {value!r}"
                )
        if self.turn > self.targeted:
            raise ValueError(f"MeetingTimeouts.turn ({self.turn}) must not exceed targeted ({self.targeted})")
        if self.targeted > self.untargeted:
            raise ValueError(
                f"MeetingTimeouts.targeted ({self.targeted}) must not exceed untargeted ({self.untargeted})"
            )


DEFAULT_MEETING_TIMEOUTS = MeetingTimeouts()
"""At once for a turn, 0.5 s when targeted, 5 s otherwise (the reference implementation's 0.5 s and 5 s)."""


@lru_cache(maxsize=256)
def _mention_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(name) for name in sorted(names, key=len, reverse=True))
    # `@name` standing alone: not part of an e-mail address before it, not the prefix of a longer word after.
    return re.compile(rf"(?<![\w@])@(?:{alternatives})(?![\w])", re.IGNORECASE)


def mentions(content: str, names: Iterable[str]) -> bool:
    """Whether `content` @mentions any of `names` (case-insensitive, whole names only)."""
    wanted = tuple(sorted({name for name in names if name}))
    if not wanted or "@" not in content:
        return False
    return _mention_pattern(wanted).search(content) is not None


def is_targeted(message: Message, agent_id: str, names: Iterable[str] = ()) -> bool:
    """Whether `message` is for `agent_id`: listed in `target_agent_ids`, @mentioned by id or by one of
    `names` (its class name, a display name), or a meeting-ended message."""
    if message.message_type is MessageType.MEETING_ENDED:
        return True
    if agent_id in message.target_agent_ids:
        return True
    return mentions(message.content, (agent_id, *names))


def is_turn(message: Message, agent_id: str) -> bool:
    """Whether `message` gives `agent_id` the turn: it lists the agent in `target_agent_ids`."""
    return agent_id in message.target_agent_ids


def meeting_timeout(
    inbox: AsyncMessageQueue,
    meeting_id: str,
    agent_id: str,
    names: Iterable[str] = (),
    timeouts: MeetingTimeouts = DEFAULT_MEETING_TIMEOUTS,
) -> float:
    """The seed's rule on its own: the turn timeout if a queued message of the meeting gives the agent the
    turn, the short timeout if one is for the agent, else the long one."""
    names = tuple(names)
    if inbox.peek(lambda m: m.meeting_id == meeting_id and is_turn(m, agent_id)) is not None:
        return timeouts.turn
    pending = inbox.peek(lambda m: m.meeting_id == meeting_id and is_targeted(m, agent_id, names))
    return timeouts.targeted if pending is not None else timeouts.untargeted


async def wait_for_meeting_messages(
    inbox: AsyncMessageQueue,
    meeting_id: str,
    agent_id: str,
    names: Iterable[str] = (),
    timeouts: MeetingTimeouts = DEFAULT_MEETING_TIMEOUTS,
    *,
    max_messages: int | None = None,
) -> list[Message]:
    """Gather the meeting's messages from `inbox` with differential timeouts (see the module docstring) and
    take them. Raises `QueueClosed` if the inbox closes with none of the meeting's messages in it."""
    names = tuple(names)
    loop = asyncio.get_running_loop()

    def in_meeting(message: Message) -> bool:
        return message.meeting_id == meeting_id

    def for_me(message: Message) -> bool:
        return message.meeting_id == meeting_id and is_targeted(message, agent_id, names)

    def my_turn(message: Message) -> bool:
        return message.meeting_id == meeting_id and is_turn(message, agent_id)

    def meeting_ended(message: Message) -> bool:
        return message.meeting_id == meeting_id and message.message_type is MessageType.MEETING_ENDED

    started = loop.time()
    deadline = started + timeouts.untargeted
    try:
        if inbox.peek(my_turn) is not None:
            deadline = started + timeouts.turn
        elif inbox.peek(for_me) is not None:
            deadline = started + timeouts.targeted
        elif await inbox.wait_for_match(for_me, timeout=timeouts.untargeted):
            window = timeouts.turn if inbox.peek(my_turn) is not None else timeouts.targeted
            deadline = min(deadline, loop.time() + window)
        remaining = deadline - loop.time()
        if remaining > 0 and inbox.peek(meeting_ended) is None:
            await inbox.wait_for_match(meeting_ended, timeout=remaining)
    except QueueClosed:
        pass  # the inbox closed: hand over what the meeting left in it, or raise below if nothing
    return await inbox.get_batch(in_meeting, min_messages=0, max_messages=max_messages)

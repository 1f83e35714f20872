"""Errors of the messaging layer.

Every error derives from `MessagingError` (itself a `pal_core.errors.PalError`). They fall into three kinds:

- control flow: `QueueClosed` tells a waiting reader that its inbox was shut down; the runtime's agent loop
  ends on it.
- user errors: bad input from whoever calls the API (`InvalidMessage`, `InvalidParticipant`,
  `InvalidReceiverSpec`, `UnknownReceiver`, `UnknownParticipant`, `DuplicateParticipant`,
  `NotAParticipant`, `ChannelClosed`, `StreamError`, `MeetingError`).
- run failures: something outside the caller went wrong while the program ran (`MeetingTimeout`,
  `MeetingRejected`, and the `HandlerError` family when a participant, observer or callback raised).
"""

from __future__ import annotations

from collections.abc import Sequence

from pal_core.errors import PalError


class MessagingError(PalError):
    """Base class of every error raised by `pal_core.messaging`."""


class QueueClosed(MessagingError):
    """A message queue was closed: a `put` on it, or a waiter with nothing left to take, gets this."""

    def __init__(self, queue_name: str, detail: str) -> None:
        self.queue_name = queue_name
        super().__init__(f"message queue {queue_name!r} is closed: {detail}")


class InvalidMessage(MessagingError, ValueError):
    """A message, message type or serialised message that breaks the rules (wrong type, missing field, ...)."""


class InvalidParticipant(MessagingError, ValueError):
    """A participant with a bad id or class name, or without the members the `Participant` protocol needs."""


class InvalidReceiverSpec(MessagingError, ValueError):
    """A receiver spec that cannot be read, such as `"agent"` with no id or an empty string."""


class UnknownReceiver(MessagingError, LookupError):
    """A well-formed receiver spec that names nobody registered (no such agent, class, meeting or human)."""

    def __init__(self, spec: str, reason: str) -> None:
        self.spec = spec
        super().__init__(f"cannot deliver to {spec!r}: {reason}")


class UnknownParticipant(MessagingError, LookupError):
    """A participant id that is not registered, used where a registered one is needed (usually a sender)."""


class DuplicateParticipant(MessagingError):
    """A participant id registered twice."""


class NotAParticipant(MessagingError):
    """A sender that is not a participant of the channel it sends on."""


class ChannelClosed(MessagingError):
    """A send or stream on a channel that was closed (a meeting channel closes when the meeting ends)."""


class StreamError(MessagingError):
    """A stream used wrongly: an unknown or finished stream id, or a stream id started twice."""


class MeetingError(MessagingError):
    """A meeting used wrongly: unknown meeting, not invited, not joined, not the owner, already ended."""


class MeetingTimeout(MeetingError):
    """Required attendees did not join in time. `missing` holds their ids, `missing_names` how to read them."""

    def __init__(self, meeting_id: str, timeout: float, missing: Sequence[str], missing_names: Sequence[str]):
        self.meeting_id = meeting_id
        self.timeout = timeout
        self.missing = tuple(missing)
        self.missing_names = tuple(missing_names)
        super().__init__(
            f"meeting {meeting_id}: required attendees did not join within {timeout:g} s: "
            + ", ".join(self.missing_names)
        )


class MeetingRejected(MeetingError):
    """A required attendee rejected the invitation, so the meeting cannot have everyone it requires."""

    def __init__(self, meeting_id: str, rejected: Sequence[str], rejected_names: Sequence[str]) -> None:
        self.meeting_id = meeting_id
        self.rejected = tuple(rejected)
        self.rejected_names = tuple(rejected_names)
        super().__init__(
            f"meeting {meeting_id}: required attendees rejected the invitation: " + ", ".join(rejected_names)
        )


class HandlerError(ExceptionGroup, MessagingError):
    """One or more handlers raised; every other handler still ran. `failed` names the ones that raised.

    It is an `ExceptionGroup`, so `except*` and tracebacks show each underlying error.
    """

    def __new__(cls, message: str, exceptions: Sequence[Exception], *, failed: Sequence[str]) -> HandlerError:
        self = super().__new__(cls, message, exceptions)
        self.failed = tuple(failed)
        return self

    def __init__(self, message: str, exceptions: Sequence[Exception], *, failed: Sequence[str]) -> None:
        super().__init__(message, exceptions)

    def derive(self, excs: Sequence[Exception]) -> HandlerError:  # type: ignore[override]
        """Keep the class, and the names of the failures kept, when `except*` splits the group."""
        names = {id(error): name for error, name in zip(self.exceptions, self.failed, strict=True)}
        return type(self)(self.message, excs, failed=[names.get(id(error), "?") for error in excs])


class DeliveryError(HandlerError):
    """Delivering a message to some participants raised; the other participants got it."""


class ObserverError(HandlerError):
    """Some stream observers raised on a stream event; the other observers got it."""


class CallbackError(HandlerError):
    """Some channel-creation callbacks raised; the channel exists and the other callbacks ran."""

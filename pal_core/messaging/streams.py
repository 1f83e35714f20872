"""Streams: text shown to a person piece by piece while an agent produces it.

A stream has three events, each sent to every `StreamObserver` of the channel: start, one per chunk, and
complete (which carries the final whole message). Channels stream only when a human participant is present;
between agents the message is simply delivered whole.

`TerminalStreamObserver` prints chunks as they arrive.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, TextIO, runtime_checkable

from pal_core.messaging.errors import ObserverError
from pal_core.messaging.message import Message


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamStartEvent:
    """A stream began."""

    stream_id: str
    """The stream's id, unique among the channel's active streams."""
    channel_id: str
    """The channel the stream runs on."""
    sender_id: str
    """Id of the participant producing the text."""
    sender_klass: str
    """Class of the participant producing the text."""
    recipient_id: str | None
    """Id of the direct recipient; None on a meeting channel."""
    recipient_klass: str | None
    """Class of the direct recipient; None on a meeting channel."""
    meeting_id: str | None
    """The meeting, when the stream runs on a meeting channel."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamChunkEvent:
    """A piece of a stream's text arrived."""

    stream_id: str
    """The stream this chunk belongs to."""
    channel_id: str
    """The channel the stream runs on."""
    sender_id: str
    """Id of the participant producing the text."""
    sender_klass: str
    """Class of the participant producing the text."""
    chunk: str
    """The new text."""
    index: int
    """0 for the stream's first chunk, then 1, 2, ..."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamCompleteEvent:
    """A stream finished; its final message is delivered to the channel's participants right after."""

    stream_id: str
    """The stream that finished."""
    channel_id: str
    """The channel the stream ran on."""
    sender_id: str
    """Id of the participant that produced the text."""
    sender_klass: str
    """Class of the participant that produced the text."""
    message: Message
    """The final, whole message (its `stream_id` is this stream's id)."""
    streamed_content: str
    """The chunks joined, as observers saw them; may differ from `message.content` if the sender revised it."""


StreamEvent = StreamStartEvent | StreamChunkEvent | StreamCompleteEvent
"""Any of the three stream events."""


@runtime_checkable
class StreamObserver(Protocol):
    """Receives the events of every stream on the channels it observes."""

    async def on_stream_start(self, event: StreamStartEvent) -> None:
        """A stream began."""
        ...

    async def on_stream_chunk(self, event: StreamChunkEvent) -> None:
        """A chunk of a stream arrived."""
        ...

    async def on_stream_complete(self, event: StreamCompleteEvent) -> None:
        """A stream finished."""
        ...


async def notify_observers(observers: Sequence[StreamObserver], event: StreamEvent) -> None:
    """Send `event` to each observer in order; if some raise, the rest still get it, then `ObserverError`."""
    failures: list[Exception] = []
    failed: list[str] = []
    for observer in observers:
        try:
            if isinstance(event, StreamChunkEvent):
                await observer.on_stream_chunk(event)
            elif isinstance(event, StreamStartEvent):
                await observer.on_stream_start(event)
            else:
                await observer.on_stream_complete(event)
        except Exception as error:
            failures.append(error)
            failed.append(repr(observer))
    if failures:
        kind = type(event).__name__
        raise ObserverError(
            f"{len(failures)} stream observer(s) raised on {kind} of stream {event.stream_id}",
            failures,
            failed=failed,
        )


class TerminalStreamObserver:
    """Prints streamed text to a text stream as it arrives: `Sender: text...` then a newline at the end.

    When two streams interleave, each switch starts a new line naming the sender, so text never runs
    together. Output goes to `out`, or to whatever `sys.stdout` is at the time of each write.
    """

    def __init__(self, out: TextIO | None = None, *, show_sender: bool = True) -> None:
        """`out`: where to print (default: the current `sys.stdout`); `show_sender`: prefix the sender."""
        self._out = out
        self._show_sender = show_sender
        self._senders: dict[str, str] = {}
        self._current: str | None = None

    def _write(self, text: str) -> None:
        out = self._out if self._out is not None else sys.stdout
        out.write(text)
        out.flush()

    def _switch_to(self, stream_id: str) -> None:
        """Make `stream_id` the stream being printed, starting a fresh labelled line if another was."""
        if self._current == stream_id:
            return
        prefix = "\n" if self._current is not None else ""
        label = f"{self._senders.get(stream_id, '?')}: " if self._show_sender else ""
        self._current = stream_id
        self._write(prefix + label)

    async def on_stream_start(self, event: StreamStartEvent) -> None:
        """Remember the sender; the label is printed with the first chunk."""
        self._senders[event.stream_id] = event.sender_klass

    async def on_stream_chunk(self, event: StreamChunkEvent) -> None:
        """Print the chunk at once."""
        self._senders.setdefault(event.stream_id, event.sender_klass)
        self._switch_to(event.stream_id)
        self._write(event.chunk)

    async def on_stream_complete(self, event: StreamCompleteEvent) -> None:
        """End the stream's line (printing the whole text if no chunk was shown)."""
        self._senders.setdefault(event.stream_id, event.sender_klass)
        if not event.streamed_content:
            self._switch_to(event.stream_id)
            self._write(event.message.content)
        if self._current == event.stream_id:
            self._write("\n")
            self._current = None
        self._senders.pop(event.stream_id, None)

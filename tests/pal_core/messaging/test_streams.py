"""The terminal stream observer prints chunks as they arrive."""

from __future__ import annotations

import io
import sys

import pytest

from pal_core.messaging import (
    Message,
    StreamChunkEvent,
    StreamCompleteEvent,
    StreamObserver,
    StreamStartEvent,
    TerminalStreamObserver,
)

pytestmark = pytest.mark.anyio


def start(stream_id: str, klass: str) -> StreamStartEvent:
    return StreamStartEvent(
        stream_id=stream_id,
        channel_id="channel_1000_human",
        sender_id="1000",
        sender_klass=klass,
        recipient_id="human",
        recipient_klass="Human",
        meeting_id=None,
    )


def chunk(stream_id: str, text: str, index: int, klass: str = "Host") -> StreamChunkEvent:
    return StreamChunkEvent(
        stream_id=stream_id, channel_id="c", sender_id="1000", sender_klass=klass, chunk=text, index=index
    )


def complete(stream_id: str, content: str, streamed: str) -> StreamCompleteEvent:
    final = Message(sender_id="1000", sender_klass="Host", content=content, stream_id=stream_id)
    return StreamCompleteEvent(
        stream_id=stream_id,
        channel_id="c",
        sender_id="1000",
        sender_klass="Host",
        message=final,
        streamed_content=streamed,
    )


async def test_chunks_appear_as_they_arrive() -> None:
    out = io.StringIO()
    observer = TerminalStreamObserver(out)
    assert isinstance(observer, StreamObserver)
    await observer.on_stream_start(start("s1", "Host"))
    assert out.getvalue() == ""
    await observer.on_stream_chunk(chunk("s1", "Hel", 0))
    assert out.getvalue() == "Host: Hel"
    await observer.on_stream_chunk(chunk("s1", "lo", 1))
    assert out.getvalue() == "Host: Hello"
    await observer.on_stream_complete(complete("s1", "Hello", "Hello"))
    assert out.getvalue() == "Host: Hello\n"


async def test_interleaved_streams_each_get_a_labelled_line() -> None:
    out = io.StringIO()
    observer = TerminalStreamObserver(out)
    await observer.on_stream_start(start("a", "Chef"))
    await observer.on_stream_start(start("b", "Critic"))
    await observer.on_stream_chunk(chunk("a", "one ", 0, "Chef"))
    await observer.on_stream_chunk(chunk("b", "two", 0, "Critic"))
    await observer.on_stream_chunk(chunk("a", "three", 1, "Chef"))
    await observer.on_stream_complete(complete("a", "one three", "one three"))
    await observer.on_stream_complete(complete("b", "two", "two"))
    assert out.getvalue() == "Chef: one \nCritic: two\nChef: three\n"


async def test_a_stream_without_chunks_prints_the_final_text() -> None:
    out = io.StringIO()
    observer = TerminalStreamObserver(out, show_sender=False)
    await observer.on_stream_start(start("s", "Host"))
    await observer.on_stream_complete(complete("s", "all at once", ""))
    assert out.getvalue() == "all at once\n"


async def test_default_output_is_the_current_stdout(capsys: pytest.CaptureFixture[str]) -> None:
    observer = TerminalStreamObserver()
    await observer.on_stream_chunk(chunk("s", "to stdout", 0))
    sys.stdout.flush()
    assert capsys.readouterr().out == "Host: to stdout"

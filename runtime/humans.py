"""Where user input comes from: a list of messages (non-interactive runs and tests), the console, or nobody."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterable
from typing import IO, Protocol


class HumanInput(Protocol):
    """Answers an agent that waits for the user."""

    async def read(self, agent_name: str) -> str | None:
        """The user's next message to `agent_name`, or None when there is no more input."""
        ...

    @property
    def interactive(self) -> bool:
        """Whether anyone can still answer (a question such as an approval is refused otherwise)."""
        ...


class ScriptedHuman:
    """Replies from a fixed list, in order; None once they run out. With `echo`, each reply is shown
    there the way a user typing it on the console would see it."""

    def __init__(self, messages: Iterable[str], *, echo: IO[str] | None = None) -> None:
        self._messages = list(messages)
        self._echo = echo
        self.asked = 0

    async def read(self, agent_name: str) -> str | None:
        self.asked += 1
        if not self._messages:
            return None
        message = self._messages.pop(0)
        if self._echo is not None:
            self._echo.write(f"\n[you -> {agent_name}] {message}\n")
            self._echo.flush()
        return message

    @property
    def remaining(self) -> int:
        return len(self._messages)

    @property
    def interactive(self) -> bool:
        return bool(self._messages)


class ConsoleHuman:
    """Reads lines from a text stream (standard input by default) after showing a prompt; None at end of input."""

    def __init__(self, stream: IO[str] | None = None, prompt_stream: IO[str] | None = None) -> None:
        self._stream = stream or sys.stdin
        self._prompt = prompt_stream or sys.stdout

    async def read(self, agent_name: str) -> str | None:
        self._prompt.write(f"\n[you -> {agent_name}] ")
        self._prompt.flush()
        line = await asyncio.to_thread(self._stream.readline)
        if not line:
            return None
        return line.rstrip("\n")

    @property
    def interactive(self) -> bool:
        return True


class ChainedHuman:
    """The scripted messages first, then another source (the console)."""

    def __init__(self, first: ScriptedHuman, then: HumanInput) -> None:
        self._first = first
        self._then = then

    async def read(self, agent_name: str) -> str | None:
        if self._first.remaining:
            return await self._first.read(agent_name)
        return await self._then.read(agent_name)

    @property
    def interactive(self) -> bool:
        return self._first.interactive or self._then.interactive


class NoHuman:
    """Nobody to ask (a tool call over MCP, an embedded node): waiting for the user ends the run."""

    async def read(self, agent_name: str) -> str | None:
        return None

    @property
    def interactive(self) -> bool:
        return False

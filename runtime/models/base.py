"""The one interface every model sits behind: a request of chat messages in, text out.

The runtime never talks to a provider directly. litellm models, the bundled local model, and the
deterministic ScriptedModel / ReplayModel shipped for users and tests all implement `Model`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable

from pal_core.errors import PalError


class RequestKind(StrEnum):
    """What the runtime asks a model for."""

    TURN = "turn"
    """Execute a fragment of a playbook (the line contract of seeds 003/004)."""
    TRIGGERS = "triggers"
    """Judge whether new messages fire one of the agent's natural-language triggers: `trig? ...` then
    `yld call`. Asked after messages arrive, between turns."""
    RAW = "raw"
    """A raw playbook: its description is the prompt, the answer is the result."""
    REACT = "react"
    """A react playbook's round: call playbooks or answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatMessage:
    """One message of a chat prompt."""

    role: str
    """`system`, `user` or `assistant`."""
    content: str
    """The text."""
    stable_chars: int | None = None
    """Marks the end of the part of the prompt that every turn of the playbook shares: this message's first
    `stable_chars` characters, with every message before it. None: not the message where it ends. Models
    that keep evaluated prompt prefixes (the bundled local model, on disk) keep that part; it never changes
    the answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRequest:
    """What the runtime asks a model for one turn."""

    messages: tuple[ChatMessage, ...]
    """The prompt as chat messages."""
    max_tokens: int = 1024
    """Upper bound on the answer's length in tokens."""
    temperature: float = 0.0
    """Sampling temperature; 0 for the most repeatable answers."""
    stop: tuple[str, ...] = ()
    """Stop sequences."""
    grammar: str | None = None
    """A GBNF grammar constraining the answer, for models that support one (the local model); others ignore it."""
    seed: int | None = None
    """Sampling seed, for models that support one."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    """Free-form context for models and recorders (agent, playbook, line); never sent to a provider."""
    kind: RequestKind = RequestKind.TURN
    """What is asked for (scripted models check that their next answer is for this kind of request)."""

    @property
    def stable_prefix(self) -> tuple[int, int] | None:
        """(message index, characters) where the prompt's stable part ends: the first message that marks it
        (`ChatMessage.stable_chars`); None when none does."""
        for index, message in enumerate(self.messages):
            if message.stable_chars is not None:
                return index, message.stable_chars
        return None

    def prompt_hash(self) -> str:
        """A stable hash of what determines the answer: the messages and sampling settings (not metadata)."""
        payload = {
            "messages": [[message.role, message.content] for message in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stop": list(self.stop),
            "grammar": self.grammar,
            "seed": self.seed,
        }
        encoded = json.dumps(payload, sort_keys=True, ensure_ascii=False).encode("utf-8")
        return hashlib.sha256(encoded).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """Token counts of one model call (0 when the provider does not say)."""

    prompt_tokens: int = 0
    """Tokens in the prompt."""
    completion_tokens: int = 0
    """Tokens in the answer."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelResponse:
    """A model's answer to one request."""

    text: str
    """The answer."""
    model: str
    """Which model answered (the model string)."""
    usage: Usage = Usage()
    """Token counts."""


@runtime_checkable
class Model(Protocol):
    """Anything that can answer a ModelRequest."""

    @property
    def name(self) -> str:
        """The model string, for traces and errors."""
        ...

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request. Raise ModelError (or a subclass) on failure."""
        ...


class ModelError(PalError):
    """A model call failed: the provider errored, timed out, or a scripted/replayed answer is missing."""


class ModelNotAvailable(ModelError):
    """The model cannot be used here: its package is not installed, or no answer is recorded for a prompt."""

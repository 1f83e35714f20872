"""The one interface every model sits behind: a request of chat messages in, text out.

The runtime never talks to a provider directly. litellm models, the bundled local model, and the
deterministic ScriptedModel / ReplayModel shipped for users and tests all implement `Model`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
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


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnShape:
    """How one turn's request is shaped for a model that takes it."""

    grammar: str | None = None
    """A GBNF grammar the answer must match (None: unconstrained)."""
    examples: str | None = None
    """Example answers of this turn's kind, built from the program, for the prompt (None: none)."""


class TurnShaping(Protocol):
    """What a model that decodes under a grammar (the bundled local model) makes of each turn: its grammar
    and example answers, from the one description of the turn (pal_core.contract.turn) the verifier reads."""

    def shape(self, turn: Any) -> TurnShape:
        """The shape of a turn, given its description: a `TurnContext` (numbered steps, with the messages it
        brings), a react round or a meeting's speaker choice (pal_core.contract.turn)."""
        ...

    def trigger_check(self, triggers: tuple[str, ...]) -> TurnShape:
        """The shape of a trigger check over the triggers named `Playbook:T1:CND`."""
        ...


@runtime_checkable
class Model(Protocol):
    """Anything that can answer a ModelRequest, and what it can do besides answering.

    `name` and `complete` are what every model implements. The capabilities have defaults here: a class that
    subclasses Model inherits them, and an object with only `name` and `complete` is taken as a model without
    them (`with_capabilities`)."""

    @property
    def name(self) -> str:
        """The model string, for traces and errors."""
        ...

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request. Raise ModelError (or a subclass) on failure."""
        ...

    async def prepare(self) -> None:
        """Do the slow setup now (imports, loading a file, checking a key), before the run's first call, so
        the first call's time (and its timeout) is its own. ModelNotAvailable when the model cannot work."""
        return None

    def turn_shaping(self) -> TurnShaping | None:
        """How this model wants its turns shaped (a grammar and example answers per turn), or None for the
        plain prompt. The bundled local model shapes its turns; remote APIs take none."""
        return None

    def resume_thread(self, answered: int) -> None:
        """A durable run resumes a thread whose log already holds `answered` answers, replayed rather than
        asked: a model that answers from a script goes on from there. Others ignore it."""
        return None


class _Answering(Protocol):
    """The least a model implements."""

    @property
    def name(self) -> str: ...

    async def complete(self, request: ModelRequest) -> ModelResponse: ...


class _WithoutCapabilities(Model):
    """A model object that implements only `name` and `complete`, with the default capabilities."""

    __slots__ = ("inner",)

    def __init__(self, inner: _Answering) -> None:
        self.inner = inner

    @property
    def name(self) -> str:
        return self.inner.name

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.inner.complete(request)

    def __repr__(self) -> str:
        return repr(self.inner)


class WrappedModel(Model):
    """A model around another (`inner`) that has the inner model's name and capabilities; a subclass changes
    how a request is answered (`complete`)."""

    inner: Model

    @property
    def name(self) -> str:
        """The inner model's name: a wrapper does not change which model answers."""
        return self.inner.name

    async def complete(self, request: ModelRequest) -> ModelResponse:
        return await self.inner.complete(request)

    async def prepare(self) -> None:
        await self.inner.prepare()

    def turn_shaping(self) -> TurnShaping | None:
        return self.inner.turn_shaping()

    def resume_thread(self, answered: int) -> None:
        self.inner.resume_thread(answered)


class ObservedModel(WrappedModel):
    """Another model that shows each request to `observe` before it is answered (tests and benchmarks keep
    the requests a run made: what it asked, under which grammar)."""

    def __init__(self, inner: Model, observe: Callable[[ModelRequest], None]) -> None:
        self.inner = with_capabilities(inner)
        self.observe = observe

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.observe(request)
        return await self.inner.complete(request)

    def __repr__(self) -> str:
        return f"ObservedModel({self.inner!r})"


def with_capabilities(model: Any) -> Model:
    """`model` as a Model with every capability: itself when it has them all; an object with only `name` and
    `complete` gets the defaults. TypeError for anything else."""
    if isinstance(model, Model):
        return model
    if callable(getattr(model, "complete", None)) and hasattr(model, "name"):
        return _WithoutCapabilities(model)
    raise TypeError(f"a model has a `name` and an async `complete(request)`; {type(model).__name__} has not")


class ModelError(PalError):
    """A model call failed: the provider errored, timed out, or a scripted/replayed answer is missing."""


class ModelNotAvailable(ModelError):
    """The model cannot be used here: its package is not installed, or no answer is recorded for a prompt."""

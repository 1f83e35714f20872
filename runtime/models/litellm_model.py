"""LiteLLMModel: any provider litellm knows, by its ordinary model string (`openai/gpt-4o-mini`,
`anthropic/claude-3-5-haiku-latest`, `ollama/llama3`, ...). Keys come from the environment, where litellm
looks for them (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, ...).

litellm is imported on the first call only (it takes seconds to import), with
`LITELLM_LOCAL_MODEL_COST_MAP=True` so importing it never fetches its price list from the network.

Providers of our own (the bundled local model) plug in through litellm's custom-provider hook:
`register_litellm_provider("local", factory)` makes `local/<model>` strings reach the handler `factory()`
builds, a `litellm.CustomLLM`. Such providers receive the request's GBNF grammar in
`optional_params["extra_body"]["grammar"]`; `request_grammar(optional_params)` reads it. They also learn
where the prompt's stable part ends (`ModelRequest.stable_prefix`) through `request_stable_prefix`.
"""

from __future__ import annotations

import asyncio
import importlib
import os
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from pal_core.errors import PalError
from runtime.models.base import (
    Model,
    ModelError,
    ModelNotAvailable,
    ModelRequest,
    ModelResponse,
    TurnShaping,
    Usage,
)
from runtime.models.limits import ModelTimeout, check_timeout

INSTALL_HINT = "pip install 'pal-bridge[llm]'"
"""How to install litellm."""

GRAMMAR_FIELD = "grammar"
"""The `extra_body` key that carries a request's GBNF grammar to providers that accept one."""
STABLE_PREFIX_FIELD = "pal_stable_prefix"
"""The `extra_body` key that tells custom providers where a request's stable prompt part ends."""

RESERVED_EXTRA = {
    "model": "it is the model string",
    "messages": "they come from the request",
    "max_tokens": "it comes from the request",
    "temperature": "it comes from the request",
    "stop": "it comes from the request",
    "seed": "it comes from the request",
    "timeout": "use LiteLLMModel(timeout=...)",
    "stream": "LiteLLMModel asks for whole answers",
}
"""litellm arguments LiteLLMModel sets itself, and why `extra` may not set them."""


class ModelProviderError(ModelError):
    """The provider refused or failed a call (bad key, rate limit, server error, bad request, ...)."""

    def __init__(self, *, model: str, error_type: str, message: str, status_code: int | None = None) -> None:
        self.model = model
        """The model string of the failed call."""
        self.error_type = error_type
        """litellm's name for the failure, such as `RateLimitError` or `AuthenticationError`."""
        self.status_code = status_code
        """The HTTP status the provider gave, when there was one."""
        self.provider_message = message
        """The provider's own words."""
        status = f" (HTTP {status_code})" if status_code else ""
        super().__init__(f"model {model!r} failed: {error_type}{status}: {message}")


HandlerFactory = Callable[[], Any]
"""Builds a `litellm.CustomLLM` instance; called once, after litellm is imported."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Provider:
    factory: HandlerFactory
    """Builds the handler."""
    accepts_grammar: bool
    """Whether requests' grammars are passed to it."""


_providers: dict[str, _Provider] = {}
_installed: set[str] = set()
_install_lock = threading.Lock()
_configured = False


def register_litellm_provider(
    prefix: str, handler_factory: HandlerFactory, *, accepts_grammar: bool = True
) -> None:
    """Make model strings `<prefix>/<model>` reach the litellm custom provider `handler_factory()` builds.

    Nothing is imported or built now: the factory runs once, on the first call of a `<prefix>/...` model.
    Registering the same prefix again with the same factory does nothing; with another factory it is an
    error, so two parts of a program cannot silently fight over a prefix.
    """
    if not prefix or not isinstance(prefix, str) or any(char in prefix for char in "/: \t\n"):
        raise ValueError(f"a litellm provider prefix is a plain name such as 'local', not {prefix!r}")
    if not callable(handler_factory):
        raise TypeError(f"handler_factory for provider {prefix!r} must be callable, not {handler_factory!r}")
    with _install_lock:
        existing = _providers.get(prefix)
        if existing is not None:
            if existing.factory is handler_factory and existing.accepts_grammar == accepts_grammar:
                return
            raise ValueError(f"litellm provider {prefix!r} is already registered with {existing.factory!r}")
        _providers[prefix] = _Provider(factory=handler_factory, accepts_grammar=accepts_grammar)


def registered_litellm_providers() -> tuple[str, ...]:
    """The prefixes registered with `register_litellm_provider`."""
    return tuple(sorted(_providers))


def request_stable_prefix(optional_params: Mapping[str, Any]) -> tuple[int, int] | None:
    """Where the request's stable prompt part ends (`ModelRequest.stable_prefix`), as LiteLLMModel sent it
    to a custom provider; None when it did not."""
    extra_body = optional_params.get("extra_body")
    if isinstance(extra_body, Mapping):
        found = extra_body.get(STABLE_PREFIX_FIELD)
        if (
            isinstance(found, list | tuple)
            and len(found) == 2
            and all(isinstance(part, int) and not isinstance(part, bool) for part in found)
        ):
            return found[0], found[1]
    return None


def request_grammar(optional_params: Mapping[str, Any]) -> str | None:
    """The GBNF grammar LiteLLMModel sent to a custom provider, from the handler's `optional_params`."""
    extra_body = optional_params.get("extra_body")
    if isinstance(extra_body, Mapping):
        grammar = extra_body.get(GRAMMAR_FIELD)
        if isinstance(grammar, str):
            return grammar
    return None


def import_litellm(provider: str | None = None) -> ModuleType:
    """litellm, imported now if it was not; ModelNotAvailable with the install hint if it is missing.

    With `provider`, that custom provider is installed too if it was registered and is not yet. Each
    provider is installed on first use only, so one that cannot be set up never breaks the others.
    """
    # Without this, importing litellm downloads its model price map; the runtime makes no such lookups.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    global _configured
    try:
        litellm = importlib.import_module("litellm")
    except ImportError as exc:
        raise ModelNotAvailable(
            f"LiteLLMModel needs litellm ({exc}); install it with: {INSTALL_HINT}"
        ) from exc
    if not _configured:
        # Errors reach users as ModelError messages; litellm's own "Give Feedback" banner would be noise.
        litellm.suppress_debug_info = True
        _configured = True
    if provider is not None and provider in _providers and provider not in _installed:
        _install_provider(litellm, provider)
    return litellm


def _install_provider(litellm: ModuleType, prefix: str) -> None:
    with _install_lock:
        if prefix in _installed:
            return
        if any(item.get("provider") == prefix for item in litellm.custom_provider_map):
            raise ModelError(
                f"litellm already has a custom provider named {prefix!r}; register another prefix"
            )
        if prefix in litellm.provider_list:
            raise ModelError(
                f"{prefix!r} is one of litellm's own providers; register ours under another prefix"
            )
        try:
            handler = _providers[prefix].factory()
        except PalError:
            raise
        except Exception as exc:
            raise ModelNotAvailable(f"cannot set up litellm provider {prefix!r}: {exc}") from exc
        if not isinstance(handler, litellm.CustomLLM):
            raise TypeError(
                f"the handler factory of litellm provider {prefix!r} returned a {type(handler).__name__}; "
                "it must return a litellm.CustomLLM"
            )
        litellm.custom_provider_map.append({"provider": prefix, "custom_handler": handler})
        _installed.add(prefix)


class LiteLLMModel(Model):
    """A model reached through `litellm.acompletion`.

    `timeout` bounds each call (ModelTimeout past it). `extra` is passed to litellm as is: `api_base`,
    `api_key`, `num_retries`, `mock_response`, ... `pass_grammar` decides whether a request's grammar is
    sent (as `extra_body={"grammar": ...}`): None sends it only to providers registered with
    `accepts_grammar=True`; True always (a llama.cpp server behind `openai/...` with `api_base`); False never.
    Unsupported sampling settings (a seed for a provider without seeds) are dropped, not errors, unless
    `extra` sets `drop_params=False`.
    """

    def __init__(
        self,
        model: str,
        *,
        timeout: float | None = None,
        extra: Mapping[str, Any] | None = None,
        pass_grammar: bool | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValueError(f"a litellm model string such as 'openai/gpt-4o-mini' is needed, not {model!r}")
        self._model = model
        self.timeout = check_timeout(timeout, f"timeout of {model}") if timeout is not None else None
        """Seconds one call may take; None for no limit of our own."""
        extra = dict(extra or {})
        for key in extra:
            if key in RESERVED_EXTRA:
                raise ValueError(f"LiteLLMModel({model!r}) extra may not set {key!r}: {RESERVED_EXTRA[key]}")
        self.extra: Mapping[str, Any] = extra
        """Further litellm arguments."""
        self.pass_grammar = pass_grammar
        """Whether grammars are sent; None decides by provider."""

    @property
    def name(self) -> str:
        """The litellm model string."""
        return self._model

    @property
    def provider(self) -> str | None:
        """The provider part of the model string (`openai` in `openai/gpt-4o-mini`), if it has one."""
        head, slash, _ = self._model.partition("/")
        return head if slash else None

    async def prepare(self) -> None:
        """Import litellm now, so the first call's time (and its timeout) is the call's own, and check
        what would fail every call: ModelNotAvailable when litellm knows no provider for the model string
        (naming the accepted forms) or when the provider's API key is not in the environment."""
        litellm = await _litellm(self.provider)
        if self.provider in _providers:
            return  # a provider of ours: its handler checks what it needs
        try:
            litellm.get_llm_provider(self._model, api_base=self.extra.get("api_base"))
        except Exception:
            from runtime.models.registry import spec_forms

            raise ModelNotAvailable(
                f"model {self._model!r}: litellm knows no provider for it; write provider/model, such as "
                f"openai/gpt-4o-mini.\n{spec_forms()}"
            ) from None
        missing = self.missing_keys(litellm)
        if missing:
            raise ModelNotAvailable(
                f"model {self._model!r} needs the API key {' or '.join(missing)} in the environment; "
                "set it (export NAME=...) or pass api_key"
            )

    def missing_keys(self, litellm: ModuleType) -> list[str]:
        """The provider's API key variables litellm finds unset; empty when `extra` brings a key or its
        own endpoint (a local server may need none), or the provider needs no key."""
        if "api_key" in self.extra or "api_base" in self.extra:
            return []
        try:
            found = litellm.validate_environment(model=self._model)
        except Exception:  # litellm cannot tell: let the call decide
            return []
        names = found.get("missing_keys") or [] if isinstance(found, Mapping) else []
        # Only keys and tokens: an unset endpoint variable (OLLAMA_API_BASE) has a working default.
        return [name for name in names if isinstance(name, str) and ("KEY" in name or "TOKEN" in name)]

    def sends_grammar(self) -> bool:
        """Whether requests' grammars reach this model (its provider accepts them)."""
        if self.pass_grammar is not None:
            return self.pass_grammar
        provider = _providers.get(self.provider or "")
        return provider is not None and provider.accepts_grammar

    def turn_shaping(self) -> TurnShaping | None:
        """A model whose provider takes grammars (a llama.cpp server behind `openai/...` with
        `pass_grammar=True`) gets the turn grammars and example answers the bundled model gets."""
        if not self.sends_grammar():
            return None
        from runtime.local.shaping import GrammarShaping

        return GrammarShaping()

    def arguments(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments `litellm.acompletion` gets for `request`."""
        arguments: dict[str, Any] = {"drop_params": True, **self.extra}
        arguments["model"] = self._model
        arguments["messages"] = [
            {"role": message.role, "content": message.content} for message in request.messages
        ]
        arguments["max_tokens"] = request.max_tokens
        arguments["temperature"] = request.temperature
        if request.stop:
            arguments["stop"] = list(request.stop)
        if request.seed is not None:
            arguments["seed"] = request.seed
        if self.timeout is not None:
            # litellm hands this to the HTTP client; our own deadline below also covers custom providers.
            arguments["timeout"] = self.timeout
        extra_body = dict(arguments.get("extra_body") or {})
        if request.grammar is not None and self.sends_grammar():
            extra_body[GRAMMAR_FIELD] = request.grammar
        stable_prefix = request.stable_prefix
        if stable_prefix is not None and (self.provider or "") in _providers:
            # Only for our own in-process providers: an HTTP API would refuse a field it does not know.
            extra_body[STABLE_PREFIX_FIELD] = list(stable_prefix)
        if extra_body:
            arguments["extra_body"] = extra_body
        return arguments

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Ask the provider. ModelTimeout past `timeout`; ModelProviderError with the provider's message."""
        litellm = await _litellm(self.provider)
        arguments = self.arguments(request)
        deadline = asyncio.timeout(self.timeout)
        try:
            async with deadline:
                response = await litellm.acompletion(**arguments)
        except TimeoutError as exc:
            if deadline.expired():
                raise ModelTimeout(
                    model=self._model, seconds=self.timeout, source="LiteLLMModel timeout"
                ) from exc
            raise self._failure(litellm, exc) from exc
        except Exception as exc:
            raise self._failure(litellm, exc) from exc
        return self._response(response)

    def _failure(self, litellm: ModuleType, exc: BaseException) -> ModelError:
        # A provider of ours may raise ModelError (say, ModelNotAvailable); litellm wraps it; unwrap it.
        cause = _pal_error_in_chain(exc)
        if isinstance(cause, ModelError):
            return cause
        if isinstance(exc, litellm.Timeout):
            return ModelTimeout(
                model=self._model, seconds=self.timeout, source=f"provider timeout: {_clean(exc)}"
            )
        status = getattr(exc, "status_code", None)
        return ModelProviderError(
            model=self._model,
            error_type=type(exc).__name__,
            message=_clean(exc),
            status_code=status if isinstance(status, int) else None,
        )

    def _response(self, response: Any) -> ModelResponse:
        try:
            choice = response.choices[0]
            text = choice.message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise ModelError(f"model {self._model!r} returned no choices: {response!r:.200}") from exc
        if not isinstance(text, str):
            reason = getattr(choice, "finish_reason", None)
            raise ModelError(f"model {self._model!r} returned no text (finish_reason={reason!r})")
        usage = getattr(response, "usage", None)
        return ModelResponse(
            text=text,
            model=self._model,
            usage=Usage(
                prompt_tokens=_count(getattr(usage, "prompt_tokens", 0)),
                completion_tokens=_count(getattr(usage, "completion_tokens", 0)),
            ),
        )

    def __repr__(self) -> str:
        return f"LiteLLMModel({self._model!r}, timeout={self.timeout!r})"


async def _litellm(provider: str | None) -> ModuleType:
    # The first import takes seconds; a worker thread keeps the event loop (other agents) running meanwhile.
    if "litellm" not in sys.modules:
        return await asyncio.to_thread(import_litellm, provider)
    return import_litellm(provider)


def _pal_error_in_chain(exc: BaseException) -> PalError | None:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, PalError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _clean(exc: BaseException) -> str:
    """The provider's message without litellm's traceback, bug-report link or repeated class names."""
    text = getattr(exc, "message", None)
    if not isinstance(text, str) or not text:
        text = str(exc)
    text = text.split("\nTraceback (most recent call last)", 1)[0]
    text = text.split("\nThis looks like a bug in LiteLLM", 1)[0].strip()
    name = type(exc).__name__
    for prefix in (f"litellm.{name}: ", f"{name}: "):
        if text.startswith(prefix):
            text = text[len(prefix) :]
    if not text and exc.__context__ is not None:
        text = f"{type(exc.__context__).__name__}: {exc.__context__}"
    return text or name


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0

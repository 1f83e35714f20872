"""Writing an answer token by token with llama.cpp, under a grammar checked lazily.

llama-cpp-python applies a grammar to the whole vocabulary (49,152 tokens for SmolLM2) before every
token, which costs about as much as computing the token itself. Here the token is sampled first and
the grammar asked about that one token; only when it refuses is the grammar applied to every
candidate and the token sampled again from what it allows (llama.cpp's own `common_sampler` does the
same). With greedy decoding, the runtime's default, the answer is exactly the one a grammar applied
first would give: the most likely token is the most likely allowed token whenever it is allowed.
A turn's answer follows its example turns closely, so a refusal is rare (a few per answer).

Sampling settings follow llama-cpp-python's defaults (top-k 40, top-p 0.95, min-p 0.05, then the
temperature), so the bundled model behaves as it did through `create_completion`.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from runtime.models.base import ModelError


@dataclass(frozen=True, slots=True, kw_only=True)
class Sampling:
    """How the next token is chosen."""

    temperature: float
    """0 (or less): always the most likely token; otherwise sampling at this temperature."""
    seed: int
    """The seed of the random draws (unused when greedy)."""
    top_k: int = 40
    """Only the k most likely tokens are drawn from."""
    top_p: float = 0.95
    """... and of those, the most likely ones that make up this much probability."""
    min_p: float = 0.05
    """... and of those, the ones at least this fraction as likely as the most likely one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Answer:
    """What `write_answer` wrote."""

    text: str
    """The answer's text (without the end-of-turn token or a stop string)."""
    tokens: int
    """Tokens written."""
    refusals: int
    """How often the grammar refused the token sampled first (each cost a full grammar pass)."""


def write_answer(
    llama: Any,
    prompt: Sequence[int],
    *,
    sampling: Sampling,
    max_tokens: int,
    grammar: str | None = None,
    stop: Sequence[str] = (),
    on_token: Callable[[int], None] | None = None,
) -> Answer:
    """Write an answer after `prompt`, which `llama` has just evaluated (its last token's logits are
    current). Stops at the end-of-turn token, a stop string, `max_tokens` or the end of the context.
    `on_token(count)` is called after every token."""
    import llama_cpp
    from llama_cpp._internals import LlamaTokenDataArray

    vocab = llama_cpp.llama_model_get_vocab(llama.model)
    chain = _chain(llama_cpp, sampling)
    constraint = None
    if grammar is not None:
        constraint = llama_cpp.llama_sampler_init_grammar(vocab, grammar.encode("utf-8"), b"root")
        if not constraint:
            llama_cpp.llama_sampler_free(chain)
            raise ModelError("llama.cpp refused the turn grammar")  # checked before; only a bug gets here
    candidates = LlamaTokenDataArray(n_vocab=llama.n_vocab()) if constraint else None
    written: list[int] = []
    refusals = 0
    stop_at: int | None = None
    room = min(max_tokens, llama.n_ctx() - len(prompt))
    try:
        while len(written) < room:
            token = llama_cpp.llama_sampler_sample(chain, llama.ctx, -1)
            if constraint is not None and not _allows(llama_cpp, constraint, token):
                refusals += 1
                token = _sample_allowed(llama_cpp, llama, chain, constraint, candidates)
            if llama_cpp.llama_vocab_is_eog(vocab, token):
                break
            if constraint is not None:
                llama_cpp.llama_sampler_accept(constraint, token)
            written.append(token)
            if on_token is not None:
                on_token(len(written))
            if stop:
                stop_at = _stop_position(llama, prompt, written, stop)
                if stop_at is not None:
                    break
            llama.eval([token])
    finally:
        llama_cpp.llama_sampler_free(chain)
        if constraint is not None:
            llama_cpp.llama_sampler_free(constraint)
    text = llama.detokenize(written, prev_tokens=list(prompt)).decode("utf-8", errors="ignore")
    if stop_at is not None:
        text = text[:stop_at]
    return Answer(text=text, tokens=len(written), refusals=refusals)


def _chain(llama_cpp: Any, sampling: Sampling) -> Any:
    chain = llama_cpp.llama_sampler_chain_init(llama_cpp.llama_sampler_chain_default_params())
    if sampling.temperature <= 0:
        llama_cpp.llama_sampler_chain_add(chain, llama_cpp.llama_sampler_init_greedy())
        return chain
    for sampler in (
        llama_cpp.llama_sampler_init_top_k(sampling.top_k),
        llama_cpp.llama_sampler_init_top_p(sampling.top_p, 1),
        llama_cpp.llama_sampler_init_min_p(sampling.min_p, 1),
        llama_cpp.llama_sampler_init_temp(sampling.temperature),
        llama_cpp.llama_sampler_init_dist(sampling.seed),
    ):
        llama_cpp.llama_sampler_chain_add(chain, sampler)
    return chain


def _allows(llama_cpp: Any, constraint: Any, token: int) -> bool:
    """Whether the grammar, in its current state, allows `token` next."""
    candidate = llama_cpp.llama_token_data(token, 0.0, 0.0)
    single = llama_cpp.llama_token_data_array(ctypes.pointer(candidate), 1, -1, False)
    llama_cpp.llama_sampler_apply(constraint, ctypes.byref(single))
    return not math.isinf(candidate.logit)


def _sample_allowed(llama_cpp: Any, llama: Any, chain: Any, constraint: Any, candidates: Any) -> int:
    """Sample again from the tokens the grammar allows (the grammar first, then the usual chain)."""
    import numpy as np

    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llama.ctx, -1), shape=(llama.n_vocab(),))
    candidates.copy_logits(logits)
    llama_cpp.llama_sampler_apply(constraint, ctypes.byref(candidates.candidates))
    llama_cpp.llama_sampler_apply(chain, ctypes.byref(candidates.candidates))
    chosen = candidates.candidates.selected
    if chosen < 0 or math.isinf(candidates.candidates_data.logit[chosen]):
        raise ModelError("the turn grammar allows no token here")  # a grammar bug, never the model's
    token = int(candidates.candidates_data.id[chosen])
    llama_cpp.llama_sampler_accept(chain, token)
    return token


def _stop_position(llama: Any, prompt: Sequence[int], written: list[int], stop: Sequence[str]) -> int | None:
    text = llama.detokenize(written, prev_tokens=list(prompt)).decode("utf-8", errors="ignore")
    found = [text.find(marker) for marker in stop if marker and marker in text]
    return min(found) if found else None

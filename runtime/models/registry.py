"""From a model spec (a string on the command line, in PAL_MODEL or in code) to a Model.

Spec forms:

- a Model: used as is;
- `scripted:answers.jsonl`: ScriptedModel answering from a JSONL file of `{"text": ...}` lines;
- `replay:cassette.jsonl`: ReplayModel answering only from the cassette;
- `replay:cassette.jsonl=<spec>`: replays what is recorded, asks `<spec>` for the rest and records it;
- `record:cassette.jsonl=<spec>`: asks `<spec>` every time and appends each answer to the cassette;
- `local/smollm2`: the bundled local model (runtime.local; needs the `local` extra);
- a prefix added with `register_model_prefix`;
- anything else: a litellm model string such as `openai/gpt-4o-mini`.

A spec is matched against the registered prefixes, longest first, so no if/elif chain grows here.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

from runtime.models.base import Model, ModelNotAvailable
from runtime.models.litellm_model import LiteLLMModel
from runtime.models.replay import ReplayModel
from runtime.models.scripted import ScriptedModel

MODEL_ENV = "PAL_MODEL"
"""The environment variable read when no model is given."""

ModelFactory = Callable[[str], Model]
"""Builds a Model from what follows the prefix in a spec (`answers.jsonl` in `scripted:answers.jsonl`)."""


class ModelSpecError(ModelNotAvailable):
    """A model spec that names no usable model: empty, malformed, or missing a part."""


_factories: dict[str, ModelFactory] = {}
_lock = threading.Lock()


def register_model_prefix(prefix: str, factory: ModelFactory, *, replace: bool = False) -> None:
    """Send specs starting with `prefix` (including its separator: `local/`, `mine:`) to `factory`.

    The factory gets the rest of the spec. Registering a prefix already taken by another factory is an
    error unless `replace=True`.
    """
    if not isinstance(prefix, str) or not prefix.strip() or prefix != prefix.strip():
        raise ValueError(
            f"a model spec prefix is a non-empty string without surrounding spaces, not {prefix!r}"
        )
    if not callable(factory):
        raise TypeError(f"the factory for model prefix {prefix!r} must be callable, not {factory!r}")
    with _lock:
        existing = _factories.get(prefix)
        if existing is not None and existing is not factory and not replace:
            raise ValueError(f"model prefix {prefix!r} is already registered to {existing!r}")
        _factories[prefix] = factory


def unregister_model_prefix(prefix: str) -> None:
    """Forget a prefix (KeyError if it is not registered)."""
    with _lock:
        del _factories[prefix]


def registered_model_prefixes() -> tuple[str, ...]:
    """The registered prefixes, sorted."""
    return tuple(sorted(_factories))


def resolve_model(spec: str | Model | None, *, default: str | None = None) -> Model:
    """The Model a spec names; with no spec, the one `PAL_MODEL` names, then `default`.

    ModelSpecError when nothing names a model or a spec is malformed; the message lists every form.
    """
    if spec is None:
        spec = os.environ.get(MODEL_ENV, "").strip() or default
        if spec is None or not spec.strip():
            raise ModelSpecError(f"no model given: pass one, or set {MODEL_ENV}.\n{spec_forms()}")
    if not isinstance(spec, str):
        if isinstance(spec, Model):
            return spec
        raise TypeError(f"a model spec is a string or a Model, not {type(spec).__name__}")
    text = spec.strip()
    if not text:
        raise ModelSpecError(f"the model spec is empty.\n{spec_forms()}")
    for prefix in sorted(_factories, key=len, reverse=True):
        if text.startswith(prefix):
            return _factories[prefix](text[len(prefix) :])
    return LiteLLMModel(text)


def absolute_spec(spec: str, base: str | Path | None = None) -> str:
    """`spec` with the files it names made absolute (relative to `base`, default the current directory),
    for a process that starts elsewhere (Claude Desktop starts servers in its own directory):
    `scripted:a.jsonl`, `replay:c.jsonl[=<spec>]`, `record:c.jsonl=<spec>` and `local/<file>.gguf`; other
    specs are returned unchanged."""
    folder = Path(base) if base is not None else Path.cwd()
    text = spec.strip()
    for form in ("scripted:", "replay:", "record:"):
        if text.startswith(form):
            rest = text[len(form) :]
            path, equals, inner = rest.partition("=") if form != "scripted:" else (rest, "", "")
            if not path.strip():
                return spec
            absolute = str((folder / Path(path.strip()).expanduser()).resolve())
            return f"{form}{absolute}{equals}{absolute_spec(inner, folder) if equals else ''}"
    if text.startswith("local/") and text.lower().endswith(".gguf"):
        return f"local/{(folder / Path(text[len('local/') :]).expanduser()).resolve()}"
    return spec


def spec_forms() -> str:
    """What a model spec may be, for error messages and help text."""
    builtin = {"scripted:", "replay:", "record:", "local/"}
    added = [prefix for prefix in registered_model_prefixes() if prefix not in builtin]
    lines = [
        "Model specs:",
        "  openai/gpt-4o-mini, anthropic/..., ollama/...   any litellm model string; keys from the environment",
        '  scripted:answers.jsonl                          answers in order from {"text": ...} lines',
        "  replay:cassette.jsonl                           recorded answers only (no network)",
        "  replay:cassette.jsonl=<spec>                    recorded answers; records missing ones from <spec>",
        "  record:cassette.jsonl=<spec>                    asks <spec> and records every answer",
        "  local/smollm2                                   the bundled local model (no key; pal-bridge[local])",
    ]
    if added:
        lines.append(f"  also registered: {', '.join(prefix + '...' for prefix in added)}")
    return "\n".join(lines)


def _scripted(rest: str) -> Model:
    if not rest.strip():
        raise ModelSpecError("'scripted:' needs a file of answers: scripted:answers.jsonl")
    return ScriptedModel.from_jsonl(rest.strip())


def _split_cassette(form: str, rest: str) -> tuple[str, str | None]:
    cassette, equals, inner = rest.partition("=")
    cassette = cassette.strip()
    if not cassette:
        raise ModelSpecError(f"'{form}:' needs a cassette file: {form}:cassette.jsonl=<spec>")
    if equals and not inner.strip():
        raise ModelSpecError(
            f"'{form}:{rest}' has nothing after '=': name the model to record, such as =openai/gpt-4o-mini"
        )
    return cassette, inner.strip() if equals else None


def _replay(rest: str) -> Model:
    cassette, inner = _split_cassette("replay", rest)
    if inner is None:
        return ReplayModel(cassette, mode="replay")
    return ReplayModel(cassette, inner=resolve_model(inner), mode="auto")


def _record(rest: str) -> Model:
    cassette, inner = _split_cassette("record", rest)
    if inner is None:
        raise ModelSpecError(
            f"'record:{rest}' needs the model to record: record:{cassette}=openai/gpt-4o-mini"
        )
    return ReplayModel(cassette, inner=resolve_model(inner), mode="record")


def _local(rest: str) -> Model:
    # The bundled model lives in runtime.local; importing it loads neither llama.cpp nor litellm.
    from runtime.local.model import local_model, register_local_model

    register_local_model()
    return local_model(rest)


register_model_prefix("scripted:", _scripted)
register_model_prefix("local/", _local)
register_model_prefix("replay:", _replay)
register_model_prefix("record:", _record)

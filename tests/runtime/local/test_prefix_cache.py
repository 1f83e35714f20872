"""The prefix cache on disk with the real model: a new engine (as in a new process) loads the stable part
of a turn's prompt that an earlier one saved, and answers exactly what an engine that evaluates everything
answers; a damaged file is not used and is replaced."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip(
    "llama_cpp", reason="the local model needs llama-cpp-python: pip install 'pal-bridge[local]'"
)

from runtime.local.model import Generation, LocalEngine, LocalSettings, find_bundled_model
from runtime.local.prefix_cache import SUFFIX
from tests.runtime.local.test_engine import _turn

pytestmark = pytest.mark.local_model

FIRST = "The user has not said anything yet."
SECOND = "The user said: my order number is 4242."


def _engine(folder: Path | None) -> LocalEngine:
    """A new engine: nothing in its KV cache, as in a new process."""
    return LocalEngine(find_bundled_model(), LocalSettings(n_threads=1, prefix_cache=folder))


def _ask(local: LocalEngine, line: str) -> Generation:
    """A turn whose system message (instructions and example turns) is the part every turn shares."""
    messages, grammar = _turn(line)
    return local.generate(
        messages, max_tokens=120, temperature=0.7, seed=5, grammar=grammar, stable_prefix=(1, 0)
    )


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob(f"*{SUFFIX}"))


def test_a_new_engine_loads_the_saved_prefix_and_answers_the_same(tmp_path: Path) -> None:
    folder = tmp_path / "prefixes"
    expected = {line: _ask(_engine(None), line).text for line in (FIRST, SECOND)}  # everything evaluated

    earlier = _engine(folder)
    assert _ask(earlier, FIRST).text == expected[FIRST]
    assert earlier.generations[-1].loaded_tokens == 0  # nothing on disk yet: evaluated, then saved
    (saved,) = _files(folder)

    later = _engine(folder)  # another process, the same program: its first turn loads the prefix
    answer = _ask(later, SECOND)
    assert answer.text == expected[SECOND]
    size = later.settings.chunk_tokens
    assert answer.loaded_tokens == answer.reused_tokens > 0 and answer.loaded_tokens % size == 0
    assert answer.evaluated_tokens < answer.prompt_tokens / 2  # the example turns are not read again
    assert _files(folder) == [saved]  # the same prefix: nothing new written
    assert earlier._prefixes is not None and later._prefixes is not None
    assert not earlier._prefixes.problems and not later._prefixes.problems


def test_a_damaged_file_is_not_used_and_is_replaced(tmp_path: Path) -> None:
    folder = tmp_path / "prefixes"
    expected = _ask(_engine(folder), FIRST).text
    (saved,) = _files(folder)
    whole = saved.read_bytes()
    saved.write_bytes(whole[: len(whole) // 2])  # cut short, as by a full disk

    local = _engine(folder)
    answer = _ask(local, FIRST)
    assert answer.text == expected and answer.loaded_tokens == 0
    assert local._prefixes is not None and "not a saved state of this prefix" in local._prefixes.problems[0]
    assert saved.read_bytes() == whole  # evaluated again and saved again, byte for byte
    assert _ask(_engine(folder), FIRST).loaded_tokens > 0

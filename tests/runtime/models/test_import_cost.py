"""Importing the model layer and building models loads no provider package: litellm (seconds to import)
loads on a LiteLLMModel's first call only."""

from __future__ import annotations

import subprocess
import sys

HEAVY = {"litellm", "openai", "pydantic", "httpx", "aiohttp", "tiktoken", "llama_cpp"}

PROBE = """
import sys
import runtime.models as models
models.LiteLLMModel("openai/gpt-4o-mini", timeout=5)
models.resolve_model("anthropic/claude-3-5-haiku-latest")
models.register_litellm_provider("probe", lambda: None)
models.CallLimiter(models.CallLimits(max_calls=3)).wrap(models.ScriptedModel(["x"]))
print(" ".join(sorted({{name.split(".")[0] for name in sys.modules}} & {heavy!r})))
"""


def test_the_model_layer_imports_no_provider_package() -> None:
    code = PROBE.format(heavy=HEAVY)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == ""

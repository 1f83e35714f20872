"""pal_core stays standard-library only; frameworks load lazily, never on `import pal_core` or `pal --help`."""

from __future__ import annotations

import subprocess
import sys

HEAVY = {
    "langgraph",
    "langchain_core",
    "google",
    "autogen_agentchat",
    "autogen",
    "mcp",
    "litellm",
    "openai",
    "pydantic",
    "opentelemetry",
    "starlette",
    "uvicorn",
    "playwright",
}

PROBE = """
import sys
{imports}
roots = {{name.split('.')[0] for name in sys.modules}}
print(' '.join(sorted(roots & {heavy!r})))
"""


def _loaded_after(imports: str) -> str:
    code = PROBE.format(imports=imports, heavy=HEAVY)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return result.stdout.strip()


def test_import_pal_core_loads_no_framework() -> None:
    modules = "import pal_core, pal_core.jsonform, pal_core.flow, pal_core.graph, pal_core.validate"
    modules += ", pal_core.compiler, pal_core.contract, pal_core.messaging"
    assert _loaded_after(modules) == ""


def test_the_cli_parser_loads_no_framework() -> None:
    assert _loaded_after("from runtime.cli import build_parser; build_parser()") == ""


def test_a_run_and_the_studios_modules_load_no_framework() -> None:
    """Spans off (the default) import nothing of OpenTelemetry; the studio imports its web stack only when a
    studio is made."""
    modules = "import runtime.program_run, runtime.session, runtime.telemetry, runtime.studio, runtime.commands.studio"
    assert _loaded_after(modules) == ""

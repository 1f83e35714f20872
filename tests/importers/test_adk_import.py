"""Importing ADK programs: what the program says, that it validates, goldens, the diagnostics, YAML configs.

Golden files (tests/fixtures/adk/<name>.pal) were reviewed by hand. After a deliberate change to the
importer's output, rewrite them with:

    .venv/bin/python -c "from tests.importers.test_adk_import import write_goldens; write_goldens()"

and review the diff before committing.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from importers import ImportFailed, ImportTargetError, get_importer
from importers.adk import CODES, import_agent, import_target
from pal_core.ir import PlaybookKind
from pal_core.parser import parse
from pal_core.validate import validate_text
from pal_core.writer import write
from runtime.module_path import resolve
from tests.conftest import FIXTURES
from tests.fixtures.adk import diagnostic_agents, llm
from tests.importers.adk_runs import adk_outcome, pal_outcome, same

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIR = FIXTURES / "adk"
CONFIG = "tests/fixtures/adk_config/config_app/root_agent.yaml"
GOLDENS = {
    "loop": "tests.fixtures.adk.deterministic:loop",
    "weather": "tests.fixtures.adk.llm:weather",
    "desk": "tests.fixtures.adk.llm:desk",
    "routes": "tests.fixtures.adk.workflows:routes",
}
EXPRESSED = [
    *(
        f"tests.fixtures.adk.deterministic:{name}"
        for name in (
            "sequential",
            "loop",
            "capped_loop",
            "parallel",
            "nested",
            "callbacks",
            "loop_with_sequence",
        )
    ),
    *(f"tests.fixtures.adk.llm:{name}" for name in ("weather", "desk", "research", "refine", "writing")),
    *(
        f"tests.fixtures.adk.workflows:{name}"
        for name in ("routes", "looping", "fan_out", "nested", "asking")
    ),
    CONFIG,
    "tests/fixtures/adk_config/config_app/assistant.yaml",
]


def write_goldens() -> None:
    """Rewrite every golden file from the importer's current output."""
    for name, target in GOLDENS.items():
        (GOLDEN_DIR / f"{name}.pal").write_text(write(import_target(target).program), encoding="utf-8")


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_import_matches_the_reviewed_golden_file(name: str) -> None:
    golden = (GOLDEN_DIR / f"{name}.pal").read_text(encoding="utf-8")
    result = import_target(GOLDENS[name])
    assert write(result.program) == golden
    assert parse(golden) == result.program


@pytest.mark.parametrize("target", EXPRESSED)
def test_a_fully_expressed_program_validates_without_errors_or_warnings_or_diagnostics(target: str) -> None:
    result = import_target(target)
    assert result.diagnostics == ()
    assert [d.format(show_source=False) for d in validate_text(write(result.program))] == []


@pytest.mark.parametrize("name", sorted(diagnostic_agents.EXPECTED))
def test_each_unexpressed_part_is_named_by_its_code_and_the_program_still_validates(name: str) -> None:
    result = import_target(f"tests.fixtures.adk.diagnostic_agents:{name}")
    assert [diagnostic.code for diagnostic in result.diagnostics] == diagnostic_agents.EXPECTED[name]
    for diagnostic in result.diagnostics:
        assert diagnostic.code in CODES
        assert diagnostic.subject.startswith(("agent ", "node ", "app ", "workflow "))
    assert [d.format(show_source=False) for d in validate_text(write(result.program))] == []
    with pytest.raises(ImportFailed) as failed:
        import_target(f"tests.fixtures.adk.diagnostic_agents:{name}", strict=True)
    assert [d.code for d in failed.value.diagnostics] == diagnostic_agents.EXPECTED[name]


def test_every_code_is_tested_and_documented() -> None:
    tested = {code for codes in diagnostic_agents.EXPECTED.values() for code in codes} | {"ADK102"}
    assert tested == set(CODES)
    documented = (ROOT / "docs" / "adk.md").read_text(encoding="utf-8")
    for code in CODES.values():
        assert f"| {code.code} | `{code.name}` |" in documented


def test_an_agent_imported_without_a_source_reports_what_cannot_run() -> None:
    from tests.fixtures.adk import deterministic

    result = import_agent(deterministic.sequential)
    assert {diagnostic.code for diagnostic in result.diagnostics} == {"ADK102"}
    assert "greeter" in result.diagnostics[0].subject
    weather = import_agent(llm.weather)
    assert [d.subject for d in weather.diagnostics] == ["agent 'weather', tool 'remember_city'"]


@pytest.mark.anyio
async def test_an_unsupported_part_fails_where_it_is_reached_with_the_reason() -> None:
    from importers.adk.support import AgentStepError
    from runtime.errors import PlaybookFailed

    program = import_target("tests.fixtures.adk.diagnostic_agents:unfinished").program
    with (
        anyio.fail_after(30),
        pytest.raises(
            PlaybookFailed, match="ADK106 its class Unfinished does not implement _run_async_impl"
        ) as failed,
    ):
        await pal_outcome(program, "hi", {})
    assert isinstance(failed.value.__cause__, AgentStepError)


def test_a_function_tool_is_a_python_playbook_bound_to_the_function() -> None:
    program = import_target("tests.fixtures.adk.llm:weather").program
    agent = program.agent("Weather")
    assert agent is not None
    tool = agent.playbook("GetWeather")
    assert tool is not None and tool.kind is PlaybookKind.PYTHON and tool.metadata.python is not None
    assert resolve(tool.metadata.python) is llm.get_weather
    context_tool = agent.playbook("RememberCity")
    assert context_tool is not None and context_tool.kind is PlaybookKind.MARKDOWN
    assert [parameter.name for parameter in context_tool.parameters] == ["city"]
    respond = agent.playbook("Respond")
    assert respond is not None and respond.metadata.execution_mode == "react"
    assert "You help {user:name?} with the weather." in respond.description


def test_transfers_follow_adks_rules_parent_peers_and_children() -> None:
    program = import_target("tests.fixtures.adk.llm:desk").program
    targets = {}
    for name in ("Desk", "Billing", "Support"):
        agent = program.agent(name)
        assert agent is not None
        transfer = agent.playbook("TransferToAgent")
        steps = [step.text for step in transfer.all_steps()] if transfer is not None else []
        targets[name] = steps[0].split("targets=")[1] if steps else None
    assert targets == {
        "Desk": '["billing", "support"])',
        "Billing": '["desk", "support"])',  # its parent, then its peer
        "Support": '["billing"])',  # disallow_transfer_to_parent: only its peer
    }


@pytest.mark.anyio
async def test_a_yaml_config_imports_and_ends_like_adks_runner() -> None:
    from importers.adk.session import load_source

    program = parse(write(import_target(CONFIG, strict=True).program))
    agent = load_source(CONFIG)
    with anyio.fail_after(60):
        expected = await adk_outcome(agent, "hi", {"ticks": 1})
        actual = await pal_outcome(program, "hi", {"ticks": 1})
    assert same(expected, actual), (expected, actual)
    assert expected["state"]["count"] == 5


def test_an_app_imports_its_root_agent() -> None:
    result = import_target("tests.fixtures.adk.diagnostic_agents:app")
    assert [agent.name for agent in result.program.agents] == ["Counted"]


def test_targets_that_are_not_adk_programs_are_user_errors() -> None:
    with pytest.raises(ImportTargetError, match="expected an ADK agent, a Workflow or an App"):
        import_target("tests.fixtures.adk.llm:MODEL_NAME")
    with pytest.raises(ImportTargetError, match="does not exist"):
        import_target("tests/fixtures/adk/missing.yaml")
    with pytest.raises(ImportTargetError, match="has no attribute 'nope'"):
        import_target("tests.fixtures.adk.llm:nope")


def test_the_importer_is_registered_and_its_modules_load_no_framework() -> None:
    assert get_importer("adk") is import_target
    probe = (
        "import sys, importers.adk, importers.adk.support, exporters.adk\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'google', 'langgraph', 'langchain_core'}))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "[]"


def test_pal_import_adk_writes_the_program_and_reports_diagnostics(tmp_path: Path) -> None:
    output = tmp_path / "search.pal"
    command = [sys.executable, "-m", "runtime.cli", "import", "adk"]
    done = subprocess.run(
        [*command, "tests.fixtures.adk.diagnostic_agents:searcher", "-o", str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "warning: ADK101 agent 'searcher', tool 'google_search'" in done.stderr
    assert output.read_text(encoding="utf-8").startswith("# Searcher")
    strict = tmp_path / "strict.pal"
    failed = subprocess.run(
        [*command, "tests.fixtures.adk.diagnostic_agents:searcher", "-o", str(strict), "--strict"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert failed.returncode == 1 and "ADK101" in failed.stderr and not strict.exists()
    config = subprocess.run(
        [*command, CONFIG], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )
    assert config.returncode == 0, config.stderr
    assert "# Configured" in config.stdout

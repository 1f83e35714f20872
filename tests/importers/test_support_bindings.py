"""Imported programs bind their importer's run-time helpers by a stable name (`pal.langgraph:apply_update`),
resolved through the `pal_bridge.support` entry points; old module paths still load, with a warning."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import anyio
import pytest

from importers.adk import support as adk_support
from importers.autogen import support as autogen_support
from importers.langgraph import support as langgraph_support
from runtime.api import run_playbook
from runtime.errors import ProgramError
from runtime.python_env import resolve_import_path
from runtime.support_modules import (
    ENTRY_POINT_GROUP,
    DeprecatedBinding,
    register_support_module,
    stable_binding,
    support_helper,
    support_names,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "langgraph"


def test_each_importer_registers_its_support_module_by_name() -> None:
    registered = {entry.name: entry.value for entry in entry_points(group=ENTRY_POINT_GROUP)}
    assert registered == {
        "langgraph": "importers.langgraph.support",
        "adk": "importers.adk.support",
        "autogen": "importers.autogen.support",
    }
    for name, module in (
        ("langgraph", langgraph_support),
        ("adk", adk_support),
        ("autogen", autogen_support),
    ):
        for function, helper in module.HELPERS.items():
            assert resolve_import_path(f"pal.{name}:{function}") is helper


def test_an_old_module_path_names_its_stable_form() -> None:
    assert stable_binding("importers.langgraph_support:apply_update") == "pal.langgraph:apply_update"
    assert stable_binding("importers.adk_support:run_agent") == "pal.adk:run_agent"
    assert stable_binding("importers.autogen_support:take_turn") == "pal.autogen:take_turn"
    assert stable_binding("myapp.nodes:first") == "myapp.nodes:first"


def test_an_old_module_path_warns_and_resolves_to_the_same_helper() -> None:
    with pytest.warns(DeprecatedBinding, match=r"write 'pal\.langgraph:finish_graph' instead"):
        helper = support_helper("importers.langgraph_support:finish_graph")
    assert helper is langgraph_support.HELPERS["finish_graph"]


@pytest.mark.anyio
async def test_a_program_imported_before_the_stable_names_runs_the_same() -> None:
    given = {"x": 3, "trail": []}
    with anyio.fail_after(60):
        expected = await run_playbook(FIXTURES / "linear.pal", "Invoke", input=given)
        with pytest.warns(DeprecatedBinding):
            legacy = await run_playbook(FIXTURES / "legacy_binding.pal", "Invoke", input=given)
    assert legacy == expected
    assert expected["trail"]  # the nodes ran


def test_an_unknown_support_module_lists_the_known_ones() -> None:
    with pytest.raises(ProgramError, match=r"no support module pal\.langchain \(known: .*pal\.langgraph"):
        resolve_import_path("pal.langchain:apply_update")


def test_an_unknown_helper_lists_the_helpers() -> None:
    with pytest.raises(
        ProgramError, match=r"pal\.langgraph has no helper 'eval_code' \(helpers: .*apply_update"
    ):
        resolve_import_path("pal.langgraph:eval_code")


def test_only_the_helpers_are_public_not_the_module() -> None:
    # GraphStepError lives in the module, but a program can bind only what HELPERS lists.
    assert hasattr(langgraph_support, "GraphStepError")
    with pytest.raises(ProgramError, match="has no helper 'GraphStepError'"):
        resolve_import_path("pal.langgraph:GraphStepError")


def test_a_support_module_registered_in_code() -> None:
    def shout(text: str) -> str:
        return text.upper()

    register_support_module("testing.shouts", {"shout": shout})
    assert "testing.shouts" in support_names()
    assert resolve_import_path("pal.testing.shouts:shout") is shout
    with pytest.raises(ValueError, match="must be a dotted name"):
        register_support_module("not a name", {"shout": shout})

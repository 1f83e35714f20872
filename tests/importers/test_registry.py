"""The importer registry and the helpers importers share."""

from __future__ import annotations

import pytest

import importers
from importers import (
    ImportDiagnostic,
    ImportFailed,
    ImportResult,
    ImportTargetError,
    UnknownImporter,
    check_strict,
    get_importer,
    importer_names,
    load_target,
    register_importer,
)
from pal_core.ir import Program


def _fake_importer(target: str, *, strict: bool = False) -> ImportResult:
    return ImportResult(program=Program(), diagnostics=())


@pytest.fixture
def clean_registry():
    saved = dict(importers._IMPORTERS._registered)
    yield
    importers._IMPORTERS._registered.clear()
    importers._IMPORTERS._registered.update(saved)


def test_langgraph_is_built_in_and_loaded_on_first_use() -> None:
    from importers.langgraph import import_target

    assert "langgraph" in importer_names()
    assert get_importer("langgraph") is import_target


def test_an_importer_registers_under_its_name(clean_registry: None) -> None:
    register_importer("example", _fake_importer)
    assert get_importer("example") is _fake_importer
    assert "example" in importer_names()
    with pytest.raises(ValueError, match="already registered"):
        register_importer("example", _fake_importer)
    register_importer("example", _fake_importer, replace=True)
    with pytest.raises(ValueError, match="already registered"):
        register_importer("langgraph", _fake_importer)


@pytest.mark.parametrize("name", ["", "two words", "a/b"])
def test_an_importer_name_is_a_word(clean_registry: None, name: str) -> None:
    with pytest.raises(ValueError, match="must be a word"):
        register_importer(name, _fake_importer)


def test_an_importer_must_be_callable(clean_registry: None) -> None:
    with pytest.raises(TypeError, match="must be callable"):
        register_importer("autogen", "importers.x:y")  # type: ignore[arg-type]


def test_an_unknown_importer_lists_the_known_ones() -> None:
    with pytest.raises(UnknownImporter, match=r"no importer for 'crewai'; known importers: .*langgraph"):
        get_importer("crewai")


def test_load_target_finds_nested_attributes() -> None:
    from tests.fixtures.langgraph import prebuilt

    assert load_target("tests.fixtures.langgraph.prebuilt:get_weather.func") is prebuilt.get_weather.func


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_colon", "must be written module:attribute"),
        (":graph", "must be written module:attribute"),
        ("tests.fixtures.langgraph.linear:", "must be written module:attribute"),
        ("tests.fixtures.langgraph.absent:graph", "cannot import module"),
        (
            "tests.fixtures.langgraph.linear:graph.nope",
            "tests.fixtures.langgraph.linear.graph has no attribute",
        ),
    ],
)
def test_load_target_says_what_is_wrong(target: str, message: str) -> None:
    with pytest.raises(ImportTargetError, match=message):
        load_target(target)


def test_a_module_that_fails_to_load_is_reported_as_the_targets_problem(tmp_path, monkeypatch) -> None:
    (tmp_path / "broken_graph_module.py").write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportTargetError, match="raised RuntimeError: boom"):
        load_target("broken_graph_module:graph")


def test_check_strict_fails_only_when_strict_and_something_was_not_expressed() -> None:
    diagnostic = ImportDiagnostic(code="LG101", subject="node 'a'", message="it is a lambda")
    result = ImportResult(program=Program(), diagnostics=(diagnostic,))
    assert check_strict("m:g", result, strict=False) is result
    with pytest.raises(ImportFailed) as caught:
        check_strict("m:g", result, strict=True)
    assert caught.value.diagnostics == (diagnostic,)
    assert str(caught.value) == "cannot import m:g exactly (1 problem(s)):\n  LG101 node 'a': it is a lambda"
    clean = ImportResult(program=Program())
    assert check_strict("m:g", clean, strict=True) is clean

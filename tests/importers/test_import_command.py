"""`pal import <framework> module:attr -o out.pal [--strict]` (importers.cli)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from importers import cli as imports
from pal_core.parser import parse
from tests.conftest import FIXTURES

ROOT = Path(__file__).resolve().parents[2]


def _run(*argv: str) -> int:
    parser = argparse.ArgumentParser(prog="pal import")
    imports.ARGUMENTS["import"](parser)
    return imports.HANDLERS["import"](parser.parse_args(list(argv)))


def test_import_writes_the_program_and_reports_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    output = tmp_path / "branch.pal"
    assert _run("langgraph", "tests.fixtures.langgraph.branch:graph", "-o", str(output)) == 0
    assert output.read_text(encoding="utf-8") == (FIXTURES / "langgraph" / "branch.pal").read_text(
        encoding="utf-8"
    )
    captured = capsys.readouterr()
    assert captured.out == ""
    assert f"imported tests.fixtures.langgraph.branch:graph to {output}: 1 agent(s)" in captured.err
    assert "0 diagnostic(s)" in captured.err


def test_import_without_output_prints_the_program(capsys: pytest.CaptureFixture[str]) -> None:
    assert _run("langgraph", "tests.fixtures.langgraph.linear:graph") == 0
    program = parse(capsys.readouterr().out)
    assert program.agents[0].name == "LinearGraph"


def test_diagnostics_are_warnings_naming_the_node(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "unsupported.pal"
    assert _run("langgraph", "tests.fixtures.langgraph.unsupported:graph", "-o", str(output)) == 0
    err = capsys.readouterr().err
    assert "tests.fixtures.langgraph.unsupported:graph: warning: LG101 node 'double': " in err
    assert "4 diagnostic(s)" in err
    assert output.exists()


def test_strict_fails_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "unsupported.pal"
    assert _run("langgraph", "tests.fixtures.langgraph.unsupported:graph", "-o", str(output), "--strict") == 1
    err = capsys.readouterr().err
    assert "cannot import tests.fixtures.langgraph.unsupported:graph exactly (4 problem(s)):" in err
    assert "LG102 router after 'double'" in err
    assert not output.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("crewai", "m:g"), "pal import: no importer for 'crewai'"),
        (("langgraph", "tests.fixtures.langgraph.missing:graph"), "cannot import module"),
        (("langgraph", "tests.fixtures.langgraph.linear:first"), "expected a StateGraph"),
        (("langgraph", "nocolon"), "must be written module:attribute"),
    ],
)
def test_bad_input_is_one_clear_line(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(*argv) == 1
    assert message in capsys.readouterr().err


def test_an_unwritable_output_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "missing-dir" / "out.pal"
    assert _run("langgraph", "tests.fixtures.langgraph.linear:graph", "-o", str(output)) == 1
    assert "cannot write" in capsys.readouterr().err


def test_the_target_module_is_found_from_the_current_directory(tmp_path: Path) -> None:
    """Run as a program from the project root (where `pal` is used), the root's modules import."""
    code = (
        "import argparse, sys\n"
        "from importers import cli as imports\n"
        "sys.path[:] = [p for p in sys.path if p not in ('', '.')]\n"
        "parser = argparse.ArgumentParser(); imports.ARGUMENTS['import'](parser)\n"
        "args = parser.parse_args(['langgraph', 'tests.fixtures.langgraph.linear:graph', '-o', sys.argv[1]])\n"
        "sys.exit(imports.HANDLERS['import'](args))\n"
    )
    output = tmp_path / "linear.pal"
    completed = subprocess.run(
        [sys.executable, "-c", code, str(output)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert parse(output.read_text(encoding="utf-8")).agents[0].name == "LinearGraph"

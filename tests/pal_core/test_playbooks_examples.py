"""Every example program of the original Playbooks project (tests/fixtures/pb/examples, as their authors
wrote them) compiles to PAL that `pal validate` accepts and that reads back to the same program."""

from __future__ import annotations

from pathlib import Path

import pytest

from pal_core.compiler import compile_file
from pal_core.errors import Severity
from pal_core.parser import parse
from pal_core.validate import validate_text
from pal_core.writer import write
from tests.conftest import FIXTURES

EXAMPLES = FIXTURES / "pb" / "examples"
NAMES = sorted(path.name for path in EXAMPLES.glob("*.pb"))


def test_the_examples_are_all_there() -> None:
    assert len(NAMES) == 24


@pytest.mark.parametrize("name", NAMES)
def test_example_compiles_to_valid_pal(name: str) -> None:
    program = compile_file(EXAMPLES / name)
    text = write(program)
    errors = [item for item in validate_text(text, file=f"{name}.pal") if item.severity is Severity.ERROR]
    assert errors == []
    assert parse(text) == program


def _compiled(name: str) -> tuple[str, list[str]]:
    program = compile_file(EXAMPLES / name)
    return write(program), [warning.code for warning in program.warnings]


def test_shebang_and_separators_are_not_text() -> None:
    text, warnings = _compiled("command-line-utilities__generate_release_notes.pb")
    assert warnings == []
    assert "#!" not in text and "\n---\n" not in text.split("metadata:")[0]
    assert [line for line in text.split("\n") if line.startswith("# ")] == [
        "# ReleaseNotesGenerator",
        "# FilesystemAgent",
        "# ShellAgent",
    ]
    assert "07:YLD exit" in text


def test_a_step_named_in_words_is_the_best_match() -> None:
    text, warnings = _compiled("stock-analyst__stock_analyst.pb")
    assert warnings == ["PAL024"]
    assert "03:TNK Think if there is any missing information" in text
    assert "  04.02:JMP 03 up to 2 times" in text


def test_separators_inside_sections_end_them() -> None:
    for name in ("deep_file_researcher__deep_file_researcher.pb", "deepagents__deepagents.pb"):
        program = compile_file(EXAMPLES / name)
        assert len(program.agents) >= 2
        assert not [warning for warning in program.warnings if warning.code != "PAL021"]


def test_the_examples_cover_the_forms_users_write() -> None:
    sources = {name: (EXAMPLES / name).read_text(encoding="utf-8") for name in NAMES}
    assert any(text.startswith("#!") for text in sources.values())
    assert sum("\n---\n" in text for text in sources.values()) >= 3
    assert any("Go back to thinking" in text for text in sources.values())


def test_no_example_is_read_outside_the_repository() -> None:
    assert Path(EXAMPLES).resolve().is_relative_to(Path(__file__).resolve().parents[2])

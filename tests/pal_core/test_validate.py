"""The validator: every code against a fixture that triggers it and one that does not, the real corpus,
positions and order of the findings, programs built in code, and robustness on generated input."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pal_core import codes as reading_codes
from pal_core.errors import Diagnostic, Severity
from pal_core.ir import Agent, Playbook, Program, Span, Step
from pal_core.parser import parse
from pal_core.validate import BUILTIN_PLAYBOOKS, RULES, is_builtin, validate, validate_text
from tests.conftest import CORPUS, FIXTURES

VALIDATE_FIXTURES = FIXTURES / "validate"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md"

# fixture -> the (code, line) of every diagnostic it must produce, in order. `.bad` fixtures trigger
# their code; `.ok` fixtures are the nearest correct program and must produce nothing.
EXPECTED: dict[str, list[tuple[str, int]]] = {
    "PAL100_bad-line-number.bad.pal": [("PAL100", 9), ("PAL100", 11), ("PAL100", 12)],
    "PAL100_bad-line-number.ok.pal": [],
    "PAL101_duplicate-line-number.bad.pal": [("PAL101", 9)],
    "PAL101_duplicate-line-number.ok.pal": [],
    "PAL102_misplaced-step.bad.pal": [("PAL102", 10), ("PAL102", 17), ("PAL102", 27)],
    "PAL102_misplaced-step.ok.pal": [],
    "PAL103_out-of-sequence.bad.pal": [("PAL103", 8), ("PAL103", 9), ("PAL103", 11)],
    "PAL103_out-of-sequence.ok.pal": [],
    "PAL104_unknown-opcode.bad.pal": [("PAL104", 7), ("PAL104", 8)],
    "PAL104_unknown-opcode.ok.pal": [],
    "PAL105_empty-condition.bad.pal": [("PAL105", 9)],
    "PAL105_empty-condition.ok.pal": [],
    "PAL106_dangling-otherwise.bad.pal": [("PAL106", 8)],
    "PAL106_dangling-otherwise.ok.pal": [],
    "PAL107_body-under-non-condition.bad.pal": [("PAL107", 7)],
    "PAL107_body-under-non-condition.ok.pal": [],
    "PAL108_unreachable-step.bad.pal": [("PAL108", 9), ("PAL108", 13), ("PAL108", 15)],
    "PAL108_unreachable-step.ok.pal": [],
    "PAL110_jump-without-target.bad.pal": [("PAL110", 10)],
    "PAL110_jump-without-target.ok.pal": [],
    "PAL111_jump-target-missing.bad.pal": [("PAL111", 10), ("PAL111", 12)],
    "PAL111_jump-target-missing.ok.pal": [],
    "PAL112_jump-to-itself.bad.pal": [("PAL112", 10)],
    "PAL112_jump-to-itself.ok.pal": [],
    "PAL113_unknown-yield-target.bad.pal": [("PAL113", 8), ("PAL113", 9), ("PAL113", 10)],
    "PAL113_unknown-yield-target.ok.pal": [],
    "PAL120_unknown-trigger-code.bad.pal": [("PAL120", 5), ("PAL120", 13), ("PAL120", 14)],
    "PAL120_unknown-trigger-code.ok.pal": [],
    "PAL121_trigger-out-of-sequence.bad.pal": [("PAL121", 7)],
    "PAL121_trigger-out-of-sequence.ok.pal": [],
    "PAL122_duplicate-trigger.bad.pal": [("PAL122", 8)],
    "PAL122_duplicate-trigger.ok.pal": [],
    "PAL123_trigger-without-condition.bad.pal": [("PAL123", 8)],
    "PAL123_trigger-without-condition.ok.pal": [],
    "PAL124_note-out-of-sequence.bad.pal": [("PAL124", 11)],
    "PAL124_note-out-of-sequence.ok.pal": [],
    "PAL125_duplicate-note.bad.pal": [("PAL125", 12)],
    "PAL125_duplicate-note.ok.pal": [],
    "PAL130_unknown-playbook.bad.pal": [("PAL130", 12), ("PAL130", 13), ("PAL130", 14)],
    "PAL130_unknown-playbook.ok.pal": [],
    "PAL131_unknown-agent.bad.pal": [("PAL131", 7)],
    "PAL131_unknown-agent.ok.pal": [],
    "PAL132_unknown-agent-playbook.bad.pal": [("PAL132", 7)],
    "PAL132_unknown-agent-playbook.ok.pal": [],
    "PAL133_private-agent-playbook.bad.pal": [("PAL133", 7)],
    "PAL133_private-agent-playbook.ok.pal": [],
    "PAL134_remote-tool-name.bad.pal": [("PAL134", 7), ("PAL134", 8)],
    "PAL134_remote-tool-name.ok.pal": [],
    "PAL140_untyped-public-parameter.bad.pal": [("PAL140", 6), ("PAL140", 10)],
    "PAL140_untyped-public-parameter.ok.pal": [],
    "PAL141_empty-playbook.bad.pal": [("PAL141", 13)],
    "PAL141_empty-playbook.ok.pal": [],
    "PAL142_bad-playbook-name.bad.pal": [("PAL142", 4), ("PAL142", 10)],
    "PAL142_bad-playbook-name.ok.pal": [],
    "PAL143_duplicate-playbook.bad.pal": [("PAL143", 10), ("PAL143", 16)],
    "PAL143_duplicate-playbook.ok.pal": [],
    "PAL144_duplicate-parameter.bad.pal": [("PAL144", 4)],
    "PAL144_duplicate-parameter.ok.pal": [],
    "PAL145_unknown-execution-mode.bad.pal": [("PAL145", 4)],
    "PAL145_unknown-execution-mode.ok.pal": [],
    "PAL146_unknown-attendee.bad.pal": [("PAL146", 4)],
    "PAL146_unknown-attendee.ok.pal": [],
    "PAL147_bad-python-binding.bad.pal": [("PAL147", 4)],
    "PAL147_bad-python-binding.ok.pal": [],
    "PAL148_steps-with-python-binding.bad.pal": [("PAL148", 4)],
    "PAL148_steps-with-python-binding.ok.pal": [],
    "PAL150_bad-agent-name.bad.pal": [("PAL150", 1)],
    "PAL150_bad-agent-name.ok.pal": [],
    "PAL151_duplicate-agent.bad.pal": [("PAL151", 10)],
    "PAL151_duplicate-agent.ok.pal": [],
    "PAL152_unknown-startup-mode.bad.pal": [("PAL152", 1)],
    "PAL152_unknown-startup-mode.ok.pal": [],
    "PAL153_no-agents.bad.pal": [("PAL153", 0)],
    "PAL153_no-agents.ok.pal": [],
}

# Every real program of the corpus, with the exact diagnostics it gets: none. A change in behaviour
# (a new rule that fires on real programs) must show up here and be argued for.
CORPUS_EXPECTED: dict[str, list[tuple[str, int]]] = {
    "01-hello-playbooks.pbasm": [],
    "02-personalized-greeting.pbasm": [],
    "03-md-calls-python.pbasm": [],
    "04-md-python-md.pbasm": [],
    "05-country-facts.pbasm": [],
    "06-triggers.pbasm": [],
    "07-execution-modes.pbasm": [],
    "08-artifact.pbasm": [],
    "09-create-playbook.pbasm": [],
    "10-configs.pbasm": [],
    "11-mcp-agent.pbasm": [],
    "12-menu-design-meeting.pbasm": [],
    "13-description-injection.pbasm": [],
    "hello-world_hello-world.pbasm": [],
    "multi-agent.pbasm": [],
    "multi_agent_multi_begin.pbasm": [],
    "playbooks-python-interop.pbasm": [],
    "tutorials_03.01_Order_Support_Agent_6a901f96b774fe82.pbasm": [],
    "two-player-game.pbasm": [],
}


def _codes_and_lines(diagnostics: list[Diagnostic]) -> list[tuple[str, int]]:
    return [(diagnostic.code, diagnostic.line) for diagnostic in diagnostics]


def _check(name: str) -> list[Diagnostic]:
    path = VALIDATE_FIXTURES / name
    return validate_text(path.read_text(encoding="utf-8"), str(path))


# --- the fixture table -----------------------------------------------------------------------------


@pytest.mark.parametrize(("fixture", "expected"), sorted(EXPECTED.items()))
def test_fixture_gives_exactly_the_expected_diagnostics(
    fixture: str, expected: list[tuple[str, int]]
) -> None:
    assert _codes_and_lines(_check(fixture)) == expected


def test_every_fixture_on_disk_is_in_the_table() -> None:
    on_disk = {path.name for path in VALIDATE_FIXTURES.glob("*.pal")}
    assert on_disk == set(EXPECTED)


@pytest.mark.parametrize("code", sorted(RULES))
def test_every_code_has_a_triggering_and_a_clean_fixture(code: str) -> None:
    rule = RULES[code]
    bad = f"{code}_{rule.name}.bad.pal"
    ok = f"{code}_{rule.name}.ok.pal"
    assert EXPECTED[bad], f"{bad} must trigger {code}"
    assert {found for found, _ in EXPECTED[bad]} == {code}
    assert EXPECTED[ok] == []


@pytest.mark.parametrize("fixture", sorted(name for name in EXPECTED if ".bad." in name))
def test_diagnostics_carry_file_severity_and_source_line(fixture: str) -> None:
    path = VALIDATE_FIXTURES / fixture
    lines = path.read_text(encoding="utf-8").splitlines()
    for diagnostic in _check(fixture):
        rule = RULES[diagnostic.code]
        assert diagnostic.severity is rule.severity
        assert diagnostic.file == str(path)
        if diagnostic.line:
            assert diagnostic.source_line == lines[diagnostic.line - 1]
            assert 1 <= diagnostic.column <= len(diagnostic.source_line)
            assert diagnostic.column - 1 + diagnostic.length <= len(diagnostic.source_line)
        else:
            assert diagnostic.source_line is None


# --- the corpus ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("program", "expected"), sorted(CORPUS_EXPECTED.items()))
def test_corpus_program_validates_with_exactly_the_expected_diagnostics(
    program: str, expected: list[tuple[str, int]]
) -> None:
    path = CORPUS / program
    diagnostics = validate_text(path.read_text(encoding="utf-8"), str(path))
    assert _codes_and_lines(diagnostics) == expected
    assert not [item for item in diagnostics if item.severity is Severity.ERROR]


def test_every_corpus_program_is_listed() -> None:
    assert {path.name for path in CORPUS.glob("*.pbasm")} == set(CORPUS_EXPECTED)


@pytest.mark.parametrize(
    ("program", "old", "new", "code"),
    [
        ("06-triggers.pbasm", "- 01.04:JMP 01", "- 01.04:JMP 08", "PAL111"),
        ("06-triggers.pbasm", "T1:CND When $x > 15", "T1:CND", "PAL123"),
        (
            "12-menu-design-meeting.pbasm",
            "  - 07.01:QUE Say(user, apologize and suggest trying again later)\n",
            "",
            "PAL105",
        ),
        (
            "12-menu-design-meeting.pbasm",
            "[HeadChef, MarketingSpecialist]",
            "[HeadChef, Sommelier]",
            "PAL146",
        ),
        ("multi-agent.pbasm", "FirstAgent.A(1024)", "FirstAgent.X(1024)", "PAL133"),
        ("multi-agent.pbasm", "FirstAgent.A(1024)", "FirstAgnt.A(1024)", "PAL131"),
        ("two-player-game.pbasm", "- 06.11:JMP 06", "- 06.11:JMP 06.11", "PAL112"),
        ("two-player-game.pbasm", "  - 06.08:CND Otherwise", "  - 06.08:EXE Otherwise", "PAL107"),
        ("05-country-facts.pbasm", "- 09:YLD for exit", "- 09:YLD for the user", "PAL113"),
        ("playbooks-python-interop.pbasm", "$temp3:float = A($temp1)", "$temp3:float = AA($temp1)", "PAL130"),
    ],
)
def test_a_mistake_in_a_real_program_is_found(program: str, old: str, new: str, code: str) -> None:
    text = (CORPUS / program).read_text(encoding="utf-8")
    assert old in text
    diagnostics = validate_text(text.replace(old, new, 1), program)
    assert [item.code for item in diagnostics] == [code]


# --- positions, order, messages --------------------------------------------------------------------


def test_diagnostics_are_sorted_and_deterministic() -> None:
    text = "\n".join(
        [
            "# Shop",
            "Sells things.",
            "",
            "## Main() -> None",
            "Does many wrong things.",
            "### Triggers",
            "- T2:XYZ At the beginning",
            "### Steps",
            "- 01:FOO Do something",
            "- 03:JMP 99",
            "- 04:YLD for nobody",
            "- 05:CND Otherwise",
            "- 05:QUE Missing()",
        ]
    )
    first = validate_text(text, "shop.pal")
    second = validate_text(text, "shop.pal")
    assert first == second
    keys = [(item.line, item.column, item.code) for item in first]
    assert keys == sorted(keys)
    assert _codes_and_lines(first) == [
        ("PAL121", 7),
        ("PAL120", 7),
        ("PAL104", 9),
        ("PAL103", 10),
        ("PAL111", 10),
        ("PAL108", 11),  # after the JMP
        ("PAL113", 11),
        ("PAL105", 12),
        ("PAL106", 12),
        ("PAL101", 13),
        ("PAL130", 13),
    ]


def test_the_bad_part_is_marked() -> None:
    (opcode,) = _check("PAL104_unknown-opcode.bad.pal")[:1]
    assert (opcode.column, opcode.length) == (6, 3)
    assert opcode.source_line is not None
    assert opcode.source_line[opcode.column - 1 : opcode.column - 1 + opcode.length] == "exe"
    jump = _check("PAL111_jump-target-missing.bad.pal")[1]
    assert jump.source_line is not None
    assert jump.source_line[jump.column - 1 : jump.column - 1 + jump.length] == "09"


def test_a_python_playbook_is_reported_at_its_def_and_its_trigger_in_the_decorator() -> None:
    untyped = _check("PAL140_untyped-public-parameter.bad.pal")[0]
    assert untyped.source_line == "async def Refund(order_id, amount: float) -> None:"
    assert "order_id: str" in untyped.message
    trigger = _check("PAL120_unknown-trigger-code.bad.pal")[0]
    assert trigger.source_line is not None
    assert trigger.source_line[trigger.column - 1 : trigger.column - 1 + trigger.length] == "WHEN"


def test_without_source_text_positions_stay_but_source_lines_are_absent() -> None:
    path = VALIDATE_FIXTURES / "PAL108_unreachable-step.bad.pal"
    text = path.read_text(encoding="utf-8")
    with_text = validate(parse(text, file="x.pal"), source_text=text)
    without = validate(parse(text, file="x.pal"))
    assert _codes_and_lines(without) == _codes_and_lines(with_text)
    assert all(item.source_line is None for item in without)
    assert all(item.file == "x.pal" for item in without)


@pytest.mark.parametrize(
    ("fixture", "index", "fragment"),
    [
        ("PAL100_bad-line-number.bad.pal", 1, "write 02.01"),
        ("PAL102_misplaced-step.bad.pal", 0, "has no parent step 03"),
        ("PAL102_misplaced-step.bad.pal", 1, "has no parent step 01.01"),
        ("PAL102_misplaced-step.bad.pal", 2, "outside the body of step 01"),
        ("PAL103_out-of-sequence.bad.pal", 0, "expected 02 here"),
        ("PAL104_unknown-opcode.bad.pal", 0, "did you mean 'EXE'?"),
        ("PAL108_unreachable-step.bad.pal", 0, "step 01.01 (RET) leaves the block"),
        ("PAL111_jump-target-missing.bad.pal", 0, "did you mean 01?"),
        ("PAL113_unknown-yield-target.bad.pal", 0, "YLD target 'customer' is not known"),
        ("PAL120_unknown-trigger-code.bad.pal", 1, "did you mean 'BGN'?"),
        ("PAL130_unknown-playbook.bad.pal", 2, "did you mean Warehouse.Lookup?"),
        ("PAL142_bad-playbook-name.bad.pal", 0, "such as GreetTheUser"),
        ("PAL151_duplicate-agent.bad.pal", 0, "already defined (line 1)"),
    ],
)
def test_messages_say_what_is_wrong_and_how_to_fix_it(fixture: str, index: int, fragment: str) -> None:
    assert fragment in _check(fixture)[index].message


# --- syntax errors through validate_text -----------------------------------------------------------


def test_validate_text_returns_every_syntax_error_sorted() -> None:
    text = "# Shop\n## Main() -> None\nGreets.\n### Steps\n- 01:QUE Say(user, Hi)\n- oops\n### Extras\n- 02:RET\n"
    diagnostics = validate_text(text, "shop.pal")
    assert _codes_and_lines(diagnostics) == [("PAL003", 6), ("PAL010", 7), ("PAL001", 8)]
    assert all(item.file == "shop.pal" and item.severity is Severity.ERROR for item in diagnostics)
    assert diagnostics[0].source_line == "- oops"


# --- programs built in code ------------------------------------------------------------------------


def _program(*steps: Step, name: str = "Main") -> Program:
    playbook = Playbook(name=name, description="Built in code.", steps=steps, span=Span(line=3, column=4))
    return Program(agents=(Agent(name="Shop", playbooks=(playbook,), span=Span(line=1, column=3)),))


def test_a_step_without_a_span_is_reported_at_its_playbook() -> None:
    diagnostics = validate(_program(Step(line="01", opcode="JMP", text="05")))
    assert _codes_and_lines(diagnostics) == [("PAL111", 3)]


def test_a_sub_step_nested_under_the_wrong_parent_is_misplaced() -> None:
    program = _program(
        Step(line="01", opcode="CND", text="If x", children=(Step(line="02", opcode="RET"),)),
        Step(line="02", opcode="RET"),
    )
    diagnostics = validate(program)
    assert [item.code for item in diagnostics] == ["PAL101", "PAL102"]
    assert "nested under step 01 but its number does not start with 01." in diagnostics[1].message


def test_a_program_with_nothing_located_reports_line_zero() -> None:
    program = Program(agents=(Agent(name="Bad Name", playbooks=()),))
    (diagnostic,) = validate(program)
    assert (diagnostic.code, diagnostic.line, diagnostic.source_line) == ("PAL150", 0, None)


def test_deep_nesting_validates() -> None:
    # Deep nesting is unusual; 60 levels is far beyond any real program and must still work.
    step = Step(line=".".join(["01"] * 60), opcode="RET")
    for depth in range(59, 0, -1):
        step = Step(line=".".join(["01"] * depth), opcode="CND", text="If x", children=(step,))
    assert validate(_program(step)) == []


# --- builtins --------------------------------------------------------------------------------------


def test_builtins_are_one_exported_list() -> None:
    for name in ("Say", "SaveArtifact", "LoadArtifact", "WaitForMessage", "CreateAgent", "Yld", "Return"):
        assert name in BUILTIN_PLAYBOOKS
        assert is_builtin(name)
    assert is_builtin("len")
    assert not is_builtin("Warning")  # CamelCase Python names could be playbooks: not assumed builtin
    assert not is_builtin("ComputeTotal")


# --- the documentation -----------------------------------------------------------------------------


def _documented_codes() -> list[str]:
    return re.findall(r"^## (PAL\d{3})\b", DOCS.read_text(encoding="utf-8"), flags=re.MULTILINE)


def _parser_codes() -> set[str]:
    """The reading codes of the parser and of the markdown compiler (PAL0xx), all in one module."""
    modules = (vars(reading_codes),)
    return {
        value
        for namespace in modules
        for name, value in namespace.items()
        if name.isupper() and isinstance(value, str) and re.fullmatch(r"PAL0\d\d", value)
    }


def test_docs_document_every_code_once_in_order() -> None:
    documented = _documented_codes()
    assert documented == sorted(set(documented))
    assert set(documented) == set(RULES) | _parser_codes()


@pytest.mark.parametrize("code", sorted(RULES))
def test_docs_give_name_severity_example_and_fix(code: str) -> None:
    text = DOCS.read_text(encoding="utf-8")
    # Sections end at the next code heading (examples contain `## Playbook()` lines of their own).
    section = re.split(r"\n## PAL\d{3} ", text.split(f"\n## {code} ", 1)[1], maxsplit=1)[0]
    rule = RULES[code]
    assert section.startswith(rule.name)
    assert f"**{rule.severity.value}**" in section
    assert "```" in section  # an example
    assert "Fix:" in section


# --- robustness ------------------------------------------------------------------------------------

_NUMBERS = st.lists(st.sampled_from(["01", "02", "03", "1", "00", "10", "003"]), min_size=1, max_size=3).map(
    ".".join
)
_OPCODES = st.sampled_from(["EXE", "QUE", "CND", "JMP", "YLD", "RET", "TNK", "CHK", "XYZ", "exe"])
_TEXTS = st.sampled_from(
    [
        "",
        "If $x",
        "Otherwise",
        "01",
        "02.01 again",
        "for user",
        "for nobody",
        "Say(user, Hi)",
        "A.B()",
        "Missing()",
    ]
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(_NUMBERS, _OPCODES, _TEXTS), max_size=25))
def test_generated_programs_validate_without_raising(steps: list[tuple[str, str, str]]) -> None:
    body = [
        f"{'  ' * number.count('.')}- {number}:{opcode} {text}".rstrip() for number, opcode, text in steps
    ]
    text = "\n".join(["# Shop", "Sells.", "", "## Main() -> None", "Does things.", "### Steps", *body, ""])
    diagnostics = validate_text(text, "gen.pal")
    keys = [(item.line, item.column, item.code, item.message) for item in diagnostics]
    assert keys == sorted(keys)
    assert validate_text(text, "gen.pal") == diagnostics
    known = set(RULES) | _parser_codes()
    assert all(item.code in known for item in diagnostics)
    assert all(0 < item.line <= len(text.splitlines()) for item in diagnostics)

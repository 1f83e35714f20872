"""Loose forms the original Playbooks tools accepted: read as their canonical forms, each with its warning
code (docs/diagnostics.md, PAL021-PAL027), and written canonically."""

from __future__ import annotations

from pathlib import Path

import pytest

from pal_core.codes import READING_CODES
from pal_core.compiler import compile_markdown
from pal_core.errors import PalSyntaxError, Severity
from pal_core.parser import parse
from pal_core.validate import validate
from pal_core.writer import write


def _codes(program) -> list[str]:  # type: ignore[no-untyped-def]
    return [warning.code for warning in program.warnings]


def test_every_reading_warning_is_a_warning() -> None:
    for code in ("PAL021", "PAL022", "PAL023", "PAL024", "PAL025", "PAL026", "PAL027"):
        assert READING_CODES[code].severity is Severity.WARNING


# --- markdown -----------------------------------------------------------------------------------------


def test_section_one_heading_level_up() -> None:
    program = compile_markdown(
        "# Shop\n## Greet the user\n## Triggers\n- At the beginning\n## Steps\n- Say hello\n"
    )
    (playbook,) = program.agents[0].playbooks
    assert playbook.name == "GreetTheUser"
    assert [trigger.code for trigger in playbook.triggers] == ["BGN"]
    assert [step.opcode for step in playbook.steps] == ["QUE", "RET"]
    assert _codes(program) == ["PAL021", "PAL021"]
    assert program.warnings[0].line == 3


def test_a_playbook_named_like_a_section_outside_a_playbook_stays_a_playbook() -> None:
    program = compile_markdown("# Shop\nSells.\n## Steps\n### Steps\n- Say hello\n")
    assert [playbook.name for playbook in program.agents[0].playbooks] == ["Steps"]
    assert _codes(program) == []


def test_triggers_as_plain_lines() -> None:
    program = compile_markdown(
        "# Shop\n## Refund\n### Triggers\nAt the beginning\nWhen the user asks for a refund\n"
        "### Steps\n- Say sorry\n"
    )
    triggers = program.agents[0].playbooks[0].triggers
    assert [(t.id, t.code, t.text) for t in triggers] == [
        ("T1", "BGN", "At the beginning"),
        ("T2", "CND", "When the user asks for a refund"),
    ]
    assert _codes(program) == ["PAL022", "PAL022"]


def test_a_listed_trigger_still_continues_on_the_next_line() -> None:
    program = compile_markdown(
        "# Shop\n## Refund\n### Triggers\n- When the user asks\nfor a refund\n### Steps\n- Say sorry\n"
    )
    assert program.agents[0].playbooks[0].triggers[0].text == "When the user asks for a refund"
    assert _codes(program) == []


def test_steps_as_plain_lines_stay_an_error() -> None:
    with pytest.raises(PalSyntaxError) as caught:
        compile_markdown("# A\n## P\n### Steps\nSay hi\n")
    assert caught.value.errors[0].code == "PAL003"


@pytest.mark.parametrize("quote", ['"', "'"])
def test_a_lone_trigger_string(quote: str) -> None:
    markdown = (
        "# Shop\n```python\n"
        f"@playbook(triggers={quote}When program begins{quote})\n"
        "async def Welcome() -> None:\n    pass\n```\n"
    )
    program = compile_markdown(markdown)
    (playbook,) = program.agents[0].playbooks
    assert [(t.id, t.code, t.text) for t in playbook.triggers] == [("T1", "BGN", "When program begins")]
    assert f"triggers=[{quote}T1:BGN When program begins{quote}]" in program.agents[0].python_blocks[0]
    assert _codes(program) == ["PAL023"]
    assert (program.warnings[0].line, program.warnings[0].column) == (3, 20)
    assert parse(write(program)) == program


def test_a_step_named_in_words_matches_the_best_step() -> None:
    program = compile_markdown(
        "# A\n## P\n### Steps\n- Greet the user\n- Think if there is any missing information\n"
        "- If any issues were identified\n  - make additional web queries\n"
        "  - Go back to thinking to find issues, up to 2 times\n- Think carefully and write the report\n"
    )
    steps = program.agents[0].playbooks[0].steps
    assert steps[2].children[1].opcode == "JMP"
    assert steps[2].children[1].text == "02 up to 2 times"
    assert _codes(program) == ["PAL024"]
    assert "step 2 ('Think if there is any missing information')" in program.warnings[0].message


def test_the_nearest_step_before_wins_among_equal_matches() -> None:
    program = compile_markdown(
        "# A\n## P\n### Steps\n- Check the stock\n- Check the price\n- If it is too high\n"
        "  - Go back to checking, at most 3 times\n"
    )
    jump = program.agents[0].playbooks[0].steps[2].children[0]
    assert jump.text == "02 at most 3 times"


def test_a_step_reference_that_matches_nothing_lists_the_candidates() -> None:
    with pytest.raises(PalSyntaxError) as caught:
        compile_markdown(
            "# A\n## P\n### Steps\n- Greet the user\n- Ask for the order number\n"
            "- Go back to the payment page\n"
        )
    (error,) = caught.value.errors
    assert error.code == "PAL020"
    assert (error.line, error.column) == (6, 3)
    assert "no step starts with 'the payment page'" in error.message
    assert "1 'Greet the user'" in error.message and "2 'Ask for the order number'" in error.message


def test_shebang_front_matter_and_separators() -> None:
    program = compile_markdown(
        "#!/usr/bin/env pb\n---\ntitle: Shop\n---\n# Shop\nSells.\n## Greet\n### Steps\n- Say hello\n"
        "\n---\n\n# Till\nCounts.\n\n***\n"
    )
    assert program.frontmatter == {"title": "Shop"}
    assert [agent.name for agent in program.agents] == ["Shop", "Till"]
    assert program.agents[1].description == "Counts."
    assert _codes(program) == []


def test_a_rule_inside_a_description_is_text() -> None:
    program = compile_markdown("# Shop\nSells.\n\n---\n\nMore about it.\n## Greet\n### Steps\n- Say hello\n")
    assert program.agents[0].description == "Sells.\n\n---\n\nMore about it."


# --- compiled PAL -------------------------------------------------------------------------------------

_PBASM = """# Shop
A shop.

```python
@playbook(triggers=["When user asks for refund"])
async def Refund(order: str) -> str:
    return "ok"
```

## Main() -> None
Greets.
### Triggers
- 01:BGN At the beginning
- EVT: When a message arrives
### Steps
- 01:QUE Say(user, Hello)
- 02:YLD for exit
**End output**
"""


def test_compiled_program_forms_are_read_with_warnings() -> None:
    program = parse(_PBASM, file="shop.pbasm")
    refund, main = program.agents[0].playbooks
    assert [(t.id, t.code, t.text) for t in refund.triggers] == [("T1", "CND", "When user asks for refund")]
    assert [(t.id, t.code, t.text) for t in main.triggers] == [
        ("T1", "BGN", "At the beginning"),
        ("T2", "EVT", "When a message arrives"),
    ]
    assert [step.line for step in main.steps] == ["01", "02"]
    assert [(w.code, w.line) for w in program.warnings] == [
        ("PAL026", 5),
        ("PAL025", 13),
        ("PAL025", 14),
        ("PAL027", 18),
    ]
    assert "'**End output**'" in program.warnings[-1].message
    assert all(warning.file == "shop.pbasm" for warning in program.warnings)


def test_compiled_program_forms_are_written_canonically() -> None:
    program = parse(_PBASM)
    text = write(program)
    assert 'triggers=["T1:CND When user asks for refund"]' in text
    assert "T1:BGN At the beginning\nT2:EVT When a message arrives\n" in text
    assert "End output" not in text
    again = parse(text)
    assert again == program
    assert again.warnings == ()


def test_validate_reports_the_reading_warnings_with_its_findings() -> None:
    program = parse(_PBASM, file="shop.pbasm")
    found = validate(program, source_text=_PBASM)
    assert [item.code for item in found if item.code.startswith("PAL02")] == [
        "PAL026",
        "PAL025",
        "PAL025",
        "PAL027",
    ]
    assert not [item for item in found if item.severity is Severity.ERROR]


def test_trailing_text_elsewhere_stays_an_error() -> None:
    for text in (
        "# A\n## P() -> None\n### Steps\n01:RET\n**End output**\n## Q() -> None\n### Steps\n01:RET\n",
        "# A\n## P() -> None\n### Steps\n01:RET\n  indented chatter\n",
        "# A\n## P() -> None\n### Steps\n01:RET\n- Greet the user\n",
        "# A\n## P() -> None\n### Steps\nnot a step\n",
    ):
        with pytest.raises(PalSyntaxError) as caught:
            parse(text)
        assert caught.value.errors[0].code == "PAL003"


def test_a_trigger_line_with_another_code_stays_an_error() -> None:
    with pytest.raises(PalSyntaxError) as caught:
        parse("# A\n## P() -> None\n### Triggers\n- 01:START At the beginning\n")
    assert caught.value.errors[0].code == "PAL004"


def test_broken_python_keeps_a_positioned_error() -> None:
    with pytest.raises(PalSyntaxError) as caught:
        parse('# A\n```python\n@playbook(triggers=["When x"])\nasync def F(:\n    pass\n```\n')
    (error,) = caught.value.errors
    assert (error.code, error.line) == ("PAL008", 4)


def test_shebang_and_separator_in_pal() -> None:
    program = parse(
        "#!/usr/bin/env pal\n# A\nAn agent.\n## P() -> None\n### Steps\n01:RET\n\n---\n\n# B\nB.\n"
    )
    assert [agent.name for agent in program.agents] == ["A", "B"]
    assert program.warnings == ()


@pytest.mark.parametrize("code", sorted(READING_CODES))
def test_docs_give_every_reading_code_its_name_severity_and_example(code: str) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    section = text.split(f"\n## {code} ", 1)[1].split("\n## PAL", 1)[0]
    entry = READING_CODES[code]
    assert section.startswith(entry.name)
    assert f"**{entry.severity.value}**" in section
    assert "```" in section

"""The parser on the seed example, the corpus forms, and bad input."""

from __future__ import annotations

import pytest

from pal_core.errors import PalSyntaxError
from pal_core.ir import ArgKind, ConditionKind, PlaybookKind, YieldKind
from pal_core.parser import parse, parse_file
from tests.conftest import CORPUS, FIXTURES


def test_seed_example_parses_to_the_documented_structure() -> None:
    program = parse_file(FIXTURES / "pal" / "seed_customer_support.pal")
    (agent,) = program.agents
    assert agent.name == "CustomerSupport"
    assert agent.description.startswith("This agent provides customer support services")
    (playbook,) = agent.playbooks
    assert (playbook.name, playbook.parameters, playbook.returns) == ("Greeting", (), "None")
    assert playbook.description == "This playbook greets the user and asks for their order number."
    assert [(t.id, t.code, t.text) for t in playbook.triggers] == [("T1", "BGN", "At the beginning")]
    assert [(s.line, s.opcode) for s in playbook.steps] == [
        ("01", "QUE"),
        ("02", "YLD"),
        ("03", "CND"),
        ("04", "QUE"),
        ("05", "QUE"),
        ("06", "RET"),
    ]
    condition = playbook.steps[2]
    assert condition.condition is not None and condition.condition.kind is ConditionKind.IF
    assert condition.condition.expression == "user provides an invalid order number"
    assert [(s.line, s.opcode, s.text) for s in condition.children] == [
        ("03.01", "QUE", "Ask them to try again"),
        ("03.02", "YLD", "user"),
        ("03.03", "JMP", "03 to check again"),
    ]
    assert condition.children[1].yield_target.kind is YieldKind.USER
    assert condition.children[2].jump_target == "03"
    assert [(n.id, n.text) for n in playbook.notes] == [("N1", "Be polite and professional")]
    assert condition.children[0].span.line == 12 and condition.children[0].span.column == 3


def test_corpus_forms_bullets_metadata_typed_variables_and_blocks() -> None:
    program = parse_file(CORPUS / "12-menu-design-meeting.pbasm")
    consultant = program.agent("RestaurantConsultant")
    meeting = consultant.playbook("MenuRedesignMeeting")
    assert meeting.metadata.meeting is True
    assert meeting.metadata.required_attendees == ("HeadChef", "MarketingSpecialist")
    assert [(p.name, p.type) for p in meeting.parameters] == [("topic", "str"), ("attendees", "list")]
    redesign = consultant.playbook("RedesignMenu")
    call = redesign.step("04").call
    assert call.name == "MenuRedesignMeeting"
    assert (call.result.name, call.result.type) == ("meeting_result", "str")
    assert [(a.name, a.kind, a.value) for a in call.arguments] == [
        ("topic", ArgKind.LITERAL, "menu redesign"),
        ("attendees", ArgKind.LITERAL, ["HeadChef", "MarketingSpecialist"]),
    ]
    assert redesign.step("08").yield_target.kind is YieldKind.EXIT
    assert consultant.public_json == []


def test_python_blocks_become_python_playbooks() -> None:
    program = parse_file(CORPUS / "multi-agent.pbasm")
    first = program.agent("FirstAgent")
    square_root = first.playbook("A")
    assert square_root.kind is PlaybookKind.PYTHON
    assert square_root.public is True
    assert square_root.code_block == 0
    assert [(p.name, p.type) for p in square_root.parameters] == [("num", "float")]
    assert [(t.id, t.code) for t in square_root.triggers] == [("T1", "CND")]
    x = first.playbook("X")
    assert [(p.name, p.type, p.default) for p in x.parameters] == [("num", "int", "10")]
    assert program.frontmatter == {"author": "Playbooks AI", "title": "Multi-agent program"}
    assert program.agent("CountryInfo").metadata.is_empty()


def test_html_comments_are_kept_and_placed() -> None:
    program = parse_file(CORPUS / "tutorials_03.01_Order_Support_Agent_6a901f96b774fe82.pbasm")
    agent = program.agents[0]
    assert agent.comments[0].startswith("<!--\n====")
    assert agent.playbook("ValidateOrderId").comments == (
        "<!-- ============================================ -->",
    )
    assert program.trailing_comments == ("<!-- ============================================ -->",)


def test_inline_yield_in_a_que_step() -> None:
    program = parse_file(CORPUS / "03-md-calls-python.pbasm")
    step = program.agents[0].playbook("DoMagic").step("01")
    assert step.call.name == "Say" and step.call.natural
    assert step.yield_target.kind is YieldKind.USER


def test_nesting_follows_numbers_not_indentation() -> None:
    text = "# A\n\n## P() -> None\n### Steps\n01:CND If x\n01.01:QUE Say(user, hi)\n    02:RET\n"
    playbook = parse(text).agents[0].playbooks[0]
    assert [s.line for s in playbook.steps] == ["01", "02"]
    assert [s.line for s in playbook.steps[0].children] == ["01.01"]


def test_an_orphan_sub_step_stays_visible_at_top_level() -> None:
    text = "# A\n\n## P() -> None\n### Steps\n01:QUE a\n03.01:QUE b\n"
    playbook = parse(text).agents[0].playbooks[0]
    assert [s.line for s in playbook.steps] == ["01", "03.01"]


BAD_INPUTS = [
    ("stray text", "hello\n# A\n", [(1, 1, "PAL001")]),
    ("bad header", "# A\n\n## (x) -> None\n", [(3, 1, "PAL002")]),
    ("bad parameter", "# A\n\n## P($ok, 1bad) -> None\n", [(3, 11, "PAL002")]),
    ("bad step", "# A\n\n## P() -> None\n### Steps\n01:QUE ok\n  oops\n", [(6, 3, "PAL003")]),
    ("bad trigger", "# A\n\n## P() -> None\n### Triggers\n- At the beginning\n", [(5, 1, "PAL004")]),
    ("bad note", "# A\n\n## P() -> None\n### Notes\n- be nice\n", [(5, 1, "PAL005")]),
    ("bad metadata", "# A\nmetadata:\n  public: [unclosed\n---\n", [(3, 20, "PAL006")]),
    ("typed metadata", "# A\n\n## P() -> None\nmetadata:\n  public: maybe\n---\n", [(5, 3, "PAL006")]),
    ("unclosed metadata", "# A\nmetadata:\n  public: true\n", [(2, 1, "PAL007")]),
    ("unclosed fence", "# A\n```python\nx = 1\n", [(2, 1, "PAL007")]),
    ("python syntax", "# A\n```python\ndef f(:\n```\n", [(3, 7, "PAL008")]),
    ("public.json", "# A\n```public.json\n[1,]\n```\n", [(3, 4, "PAL009")]),
    ("unknown section", "# A\n\n## P() -> None\n### Stepz\n", [(4, 5, "PAL010")]),
    ("duplicate section", "# A\n\n## P() -> None\n### Steps\n01:RET\n### Steps\n", [(6, 5, "PAL011")]),
    ("section outside playbook", "# A\n### Steps\n", [(2, 1, "PAL001")]),
    ("comment before step", "# A\n\n## P() -> None\n### Steps\n<!-- c -->\n01:RET\n", [(5, 1, "PAL001")]),
    ("unclosed comment", "# A\n<!-- never closed\n", [(2, 1, "PAL007")]),
]


@pytest.mark.parametrize(
    ("text", "expected"), [(t, e) for _, t, e in BAD_INPUTS], ids=[n for n, _, _ in BAD_INPUTS]
)
def test_bad_input_reports_where_and_why(text: str, expected: list[tuple[int, int, str]]) -> None:
    with pytest.raises(PalSyntaxError) as raised:
        parse(text, file="prog.pal")
    found = [(e.line, e.column, e.code) for e in raised.value.errors]
    assert found == expected
    first = raised.value.errors[0]
    assert str(raised.value).startswith(f"prog.pal:{first.line}:{first.column}: {first.code} ")
    assert "^" in str(raised.value)
    assert first.source_line == text.split("\n")[first.line - 1]


def test_every_error_of_a_file_is_reported() -> None:
    text = "# A\n\n## P() -> None\n### Steps\n01:QUE ok\nnot a step\n### Triggers\nnot a trigger\n### Notes\nnope\n"
    with pytest.raises(PalSyntaxError) as raised:
        parse(text)
    assert [(e.line, e.code) for e in raised.value.errors] == [(6, "PAL003"), (8, "PAL004"), (10, "PAL005")]
    assert str(raised.value).endswith("3 errors")


def test_windows_line_endings() -> None:
    text = (FIXTURES / "pal" / "seed_customer_support.pal").read_text(encoding="utf-8")
    assert parse(text.replace("\n", "\r\n")) == parse(text)

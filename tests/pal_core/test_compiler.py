"""The markdown compiler: the seed example, reviewed fixtures, every rule, errors, determinism."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pal_core.compiler import compile_file, compile_markdown
from pal_core.errors import PalSyntaxError
from pal_core.ir import ConditionKind, Parameter, PlaybookKind, YieldKind
from pal_core.parser import parse
from pal_core.writer import write
from tests.conftest import FIXTURES

PB = FIXTURES / "pb"
FIXTURE_NAMES = sorted(path.stem for path in PB.glob("*.pb") if not path.stem.startswith("seed_"))


def steps_of(*step_lines: str, header: str = "## Main", extra: str = "") -> list[str]:
    """The PAL step lines compiled from markdown step items (given without their bullets' indent)."""
    markdown = f"# Agent\nAn agent.\n\n{header}\n### Steps\n" + "\n".join(step_lines) + "\n" + extra
    text = write(compile_markdown(markdown))
    lines = text.split("\n")
    start = lines.index("### Steps") + 1
    end = next((i for i in range(start, len(lines)) if not lines[i] or lines[i].startswith("#")), len(lines))
    return lines[start:end]


# --- the seed --------------------------------------------------------------------------------------


def test_the_seed_example_compiles_to_the_seed_output() -> None:
    markdown = (PB / "seed_customer_support.pb").read_text(encoding="utf-8")
    expected = (PB / "seed_customer_support.pal").read_text(encoding="utf-8").split("\n")
    actual = write(compile_markdown(markdown)).split("\n")
    assert len(actual) == len(expected)
    # Line 2 is the agent description: the seed's was written by a person, ours is generated.
    assert actual[1] == "Customer Support agent with the playbook Greeting."
    assert actual[:1] + actual[2:] == expected[:1] + expected[2:]


# --- reviewed fixtures -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_compiles_to_the_reviewed_pal(name: str) -> None:
    program = compile_file(PB / f"{name}.pb")
    assert write(program) == (PB / f"{name}.pal").read_text(encoding="utf-8")
    assert program.source == str(PB / f"{name}.pb")


@pytest.mark.parametrize("name", [*FIXTURE_NAMES, "seed_customer_support"])
def test_compiled_output_parses_back_to_the_same_ir(name: str) -> None:
    program = compile_file(PB / f"{name}.pb")
    text = write(program)
    again = parse(text)
    assert again == program
    assert write(again) == text


def test_the_fixtures_cover_every_opcode_and_trigger_code() -> None:
    opcodes: set[str] = set()
    triggers: set[str] = set()
    for name in FIXTURE_NAMES:
        for agent in compile_file(PB / f"{name}.pb").agents:
            for playbook in agent.playbooks:
                opcodes.update(step.opcode for step in playbook.all_steps())
                triggers.update(trigger.code for trigger in playbook.triggers)
    assert opcodes == {"EXE", "QUE", "TNK", "CND", "RET", "JMP", "YLD"}  # CHK is never generated
    assert triggers == {"BGN", "CND", "EVT"}


# --- determinism -----------------------------------------------------------------------------------


def test_compiling_twice_gives_the_same_program_and_text() -> None:
    text = (PB / "calls.pb").read_text(encoding="utf-8")
    first, second = compile_markdown(text), compile_markdown(text)
    assert first == second
    assert write(first) == write(second)


def test_output_does_not_depend_on_the_hash_seed() -> None:
    script = (
        "import sys; from pal_core.compiler import compile_file; from pal_core.writer import write; "
        "sys.stdout.write(''.join(write(compile_file(p)) for p in sys.argv[1:]))"
    )
    paths = [str(PB / f"{name}.pb") for name in FIXTURE_NAMES]
    outputs = set()
    for seed in ("0", "1", "12345"):
        environment = {**os.environ, "PYTHONHASHSEED": seed}
        result = subprocess.run(
            [sys.executable, "-c", script, *paths],
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
            cwd=Path(__file__).parents[2],
            env=environment,
        )
        outputs.add(result.stdout)
    assert len(outputs) == 1


# --- names and headers -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("Customer Support", "CustomerSupport"),
        ("Greet the user", "GreetTheUser"),
        ("GetCountryFact", "GetCountryFact"),
        ("process_order", "process_order"),
        ("Country info", "CountryInfo"),
        ("MCP server for the user's files", "MCPServerForTheUsersFiles"),
        ("e-mail helper", "EMailHelper"),
    ],
)
def test_agent_names_are_camel_case(title: str, name: str) -> None:
    program = compile_markdown(f"# {title}\nText.\n")
    assert program.agents[0].name == name


@pytest.mark.parametrize(
    ("header", "name", "parameters", "returns"),
    [
        ("## Greeting", "Greeting", (), "None"),
        ("## Greet the user", "GreetTheUser", (), "None"),
        (
            "## LoadAccount($email, $pin)",
            "LoadAccount",
            (Parameter(name="email"), Parameter(name="pin")),
            "None",
        ),
        ("## X($num:int=10) -> str", "X", (Parameter(name="num", type="int", default="10"),), "str"),
        ("## Get fact about $country", "GetFact", (Parameter(name="country"),), "None"),
        (
            "## Compare $a:int with $b:int -> bool",
            "Compare",
            (Parameter(name="a", type="int"), Parameter(name="b", type="int")),
            "bool",
        ),
    ],
)
def test_playbook_headers(header: str, name: str, parameters: tuple[Parameter, ...], returns: str) -> None:
    playbook = compile_markdown(f"# A\nText.\n\n{header}\n### Steps\n- Say hi\n").agents[0].playbooks[0]
    assert (playbook.name, playbook.parameters, playbook.returns) == (name, parameters, returns)


@pytest.mark.parametrize(
    ("steps", "returns"),
    [
        ("- Return 3\n- Return 4", "int"),
        ('- Return {"a": 1}', "dict"),
        ("- Return $x:float", "float"),
        ("- Set $total:int to 0\n- Return $total", "int"),
        ("- Return the answer\n- Return $anything", "Any"),
        ("- Return 3\n- Return a number", "Any"),
        ("- If done, return the summary", "str"),
        ("- Return", "None"),
    ],
)
def test_return_types_are_inferred_from_the_returns(steps: str, returns: str) -> None:
    playbook = compile_markdown(f"# A\nText.\n\n## P\n### Steps\n{steps}\n").agents[0].playbooks[0]
    assert playbook.returns == returns


def test_descriptions_are_generated_when_missing_and_kept_when_written() -> None:
    program = compile_markdown(
        "# Help desk\n\n## Greet the user\n### Steps\n- Say hi\n\n## Main\nMain flow.\n"
    )
    agent = program.agents[0]
    assert agent.description == "Help desk agent with the playbooks GreetTheUser and Main."
    assert [playbook.description for playbook in agent.playbooks] == ["Greet the user.", "Main flow."]
    lone = compile_markdown("# Order Support Agent\n").agents[0]
    assert lone.description == "Order Support Agent."


# --- triggers and notes ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "code", "kept"),
    [
        ("At the beginning", "BGN", "At the beginning"),
        ("When program starts", "BGN", "When program starts"),
        ("When the conversation begins", "BGN", "When the conversation begins"),
        ("On startup", "BGN", "On startup"),
        ("When the user starts a new order", "CND", "When the user starts a new order"),
        ("When user provides an email", "CND", "When user provides an email"),
        ("When $x > 15", "CND", "When $x > 15"),
        ("When a message from the Host is received", "EVT", "When a message from the Host is received"),
        ("When an order event arrives", "EVT", "When an order event arrives"),
        ("On a payment webhook", "EVT", "On a payment webhook"),
        ("When an email arrives", "EVT", "When an email arrives"),
        ("EVT: stock changed", "EVT", "stock changed"),
        ("T7:CND At the beginning of each round", "CND", "At the beginning of each round"),
    ],
)
def test_trigger_codes(text: str, code: str, kept: str) -> None:
    # A fragment (a playbook without steps): the compiler's reading, not a whole program, is under test.
    markdown = f"# A\nText.\n\n## P\n### Triggers\n- {text}\n"
    playbook = compile_markdown(markdown, check=False).agents[0].playbooks[0]
    assert [(t.id, t.code, t.text) for t in playbook.triggers] == [("T1", code, kept)]


def test_notes_are_numbered_in_reading_order_and_continuation_lines_join() -> None:
    markdown = "# A\nText.\n\n## P\n### Notes\n- Be brief\n  and kind\n- Use names\n  - first names only\n"
    notes = compile_markdown(markdown, check=False).agents[0].playbooks[0].notes
    assert [(note.id, note.text) for note in notes] == [
        ("N1", "Be brief and kind"),
        ("N2", "Use names"),
        ("N3", "first names only"),
    ]


def test_python_trigger_strings_are_numbered_in_place() -> None:
    code = (
        '@playbook(description="café ☕", triggers=["When a refund webhook fires", "T2:CND When asked"])\n'
        "async def refund(order: str) -> str:\n"
        "    return order\n"
    )
    agent = compile_markdown(f"# A\nText.\n\n```python\n{code}```\n").agents[0]
    assert agent.python_blocks[0] == code.replace(
        '"When a refund webhook fires"', '"T1:EVT When a refund webhook fires"'
    ).rstrip("\n")
    playbook = agent.playbooks[0]
    assert playbook.kind is PlaybookKind.PYTHON
    assert [(t.id, t.code, t.text) for t in playbook.triggers] == [
        ("T1", "EVT", "When a refund webhook fires"),
        ("T2", "CND", "When asked"),
    ]


# --- steps -----------------------------------------------------------------------------------------


def test_conversation_steps_are_queued_and_questions_wait_for_the_user() -> None:
    assert steps_of(
        "- Greet the user", "- Ask for their name", "- Is that right?", "- Tell them the time"
    ) == [
        "01:QUE Greet the user",
        "02:QUE Ask for their name",
        "03:YLD user",
        "04:QUE Is that right?",
        "05:YLD user",
        "06:QUE Tell them the time",
        "07:RET",
    ]


def test_adverbs_and_fillers_before_the_verb_are_skipped() -> None:
    assert steps_of("- Then politely ask for the email", "- Also apply the discount") == [
        "01:QUE Then politely ask for the email",
        "02:YLD user",
        "03:EXE Also apply the discount",
        "04:RET",
    ]


def test_questions_in_a_meeting_wait_for_the_meeting() -> None:
    header = "## Standup\nmetadata:\n  meeting: true\n---"
    assert steps_of("- Ask everyone for updates", "- Ask the user to approve", header=header) == [
        "01:QUE Ask everyone for updates",
        "02:YLD meeting",
        "03:QUE Ask the user to approve",
        "04:YLD user",
        "05:RET",
    ]


def test_think_return_exit_and_wait() -> None:
    assert steps_of("- Think about the options", "- Wait for the user to reply", "- Return $best") == [
        "01:TNK Think about the options",
        "02:YLD user",
        "03:RET $best",
    ]
    assert steps_of("- Consider the budget", "- End the program") == [
        "01:TNK Consider the budget",
        "02:YLD exit",
    ]


def test_assignments_are_executed() -> None:
    assert steps_of(
        "- $x = 10", "- Set $y to $x * 2", "- Set $name to the user's name", "- $n = len($items)"
    ) == [
        "01:EXE $x = 10",
        "02:EXE $y = $x * 2",
        "03:EXE Set $name to the user's name",
        "04:EXE $n = len($items)",
        "05:RET",
    ]


def test_calls_yield_when_their_result_is_needed() -> None:
    extra = (
        "\n## Fetch price($item) -> float\n### Steps\n- Return 9.5\n\n"
        "## Log($text)\n### Steps\n- Note $text\n"
    )
    assert steps_of(
        "- $p = FetchPrice($item)",
        "- FetchPrice($item)",
        "- Log($item)",
        "- $r = unknown_tool($item)",
        "- unknown_tool($item)",
        "- Fetch price of $item",
        "- Log everything",
        extra=extra,
    ) == [
        "01:QUE $p = FetchPrice($item)",
        "02:YLD call",
        "03:QUE FetchPrice($item)",
        "04:YLD call",
        "05:QUE Log($item)",
        "06:QUE $r = unknown_tool($item)",
        "07:YLD call",
        "08:QUE unknown_tool($item)",
        "09:QUE Fetch price of $item",
        "10:YLD call",
        "11:EXE Log everything",  # a one-word playbook name is not spotted inside a sentence
        "12:RET",
    ]


def test_retrieval_from_another_agent_yields_for_the_call() -> None:
    extra = "\n# Weather Service\nKnows the weather.\n"
    assert steps_of("- Get the forecast from the weather service", "- Get the forecast", extra=extra) == [
        "01:QUE Get the forecast from the weather service",
        "02:YLD call",
        "03:QUE Get the forecast",
        "04:RET",
    ]


def test_conditions_split_inline_actions() -> None:
    assert steps_of(
        "- If $x > 1, say so",
        "- Else if $x < 0 then warn the user",
        "- Otherwise: shrug",
        "- If the order is late:",
        "  - Apologize",
        "- If the user's card fails: say sorry",
    ) == [
        "01:CND If $x > 1",
        "  01.01:QUE say so",
        "02:CND Else if $x < 0",
        "  02.01:QUE warn the user",
        "03:CND Otherwise",
        "  03.01:EXE shrug",
        "04:CND If the order is late",
        "  04.01:QUE Apologize",
        "05:CND If the user's card fails",
        "  05.01:QUE say sorry",
        "06:RET",
    ]


def test_condition_kinds() -> None:
    program = compile_markdown(
        "# A\nT.\n\n## P\n### Steps\n- If a\n- Otherwise if b\n- Otherwise\n- While c\n- For each $d in $e\n"
        "- When f\n- Until g\n",
        check=False,  # conditions without bodies: a fragment
    )
    kinds = [step.condition.kind for step in program.agents[0].playbooks[0].steps if step.condition]
    assert kinds == [
        ConditionKind.IF,
        ConditionKind.ELSE_IF,
        ConditionKind.OTHERWISE,
        ConditionKind.WHILE,
        ConditionKind.FOR,
        ConditionKind.WHEN,
        ConditionKind.WHILE,
    ]


def test_loops_jump_back_unless_they_already_leave() -> None:
    assert steps_of("- While $n > 0", "  - $n = $n - 1", "- For each $item in $cart", "  - Return $item") == [
        "01:CND While $n > 0",
        "  01.01:EXE $n = $n - 1",
        "  01.02:JMP 01",
        "02:CND For each $item in $cart",
        "  02.01:RET $item",
        "03:RET",
    ]


def test_try_again_in_an_else_branch_checks_the_if_again() -> None:
    assert steps_of(
        "- Ask for a PIN",
        "- If the PIN is valid",
        "  - Say thanks",
        "- Otherwise",
        "  - Ask them to try again",
    ) == [
        "01:QUE Ask for a PIN",
        "02:YLD user",
        "03:CND If the PIN is valid",
        "  03.01:QUE Say thanks",
        "04:CND Otherwise",
        "  04.01:QUE Ask them to try again",
        "  04.02:YLD user",
        "  04.03:JMP 03 to check again",
        "05:RET",
    ]


def test_jumps_by_number_text_and_position() -> None:
    assert steps_of(
        "- Ask for the city",
        "- Look up the weather",
        "- If the city is unknown",
        "  - Apologize and go back to step 1",
        "- If the lookup failed, go back to 'look up'",
        "- If the user wants more, start over",
        "- Tell the user the weather",
        "- If they disagree, go back to the previous step",
    ) == [
        "01:QUE Ask for the city",
        "02:YLD user",
        "03:QUE Look up the weather",
        "04:CND If the city is unknown",
        "  04.01:QUE Apologize",
        "  04.02:JMP 01",
        "05:CND If the lookup failed",
        "  05.01:JMP 03",
        "06:CND If the user wants more",
        "  06.01:JMP 01",
        "07:QUE Tell the user the weather",
        "08:CND If they disagree",
        "  08.01:JMP 07",
        "09:RET",
    ]


def test_a_playbook_ending_in_exit_or_return_gets_no_closing_return() -> None:
    assert steps_of("- Say bye", "- Exit program") == ["01:QUE Say bye", "02:YLD exit"]
    assert steps_of("- Say bye", "- Return") == ["01:QUE Say bye", "02:RET"]
    assert steps_of("- Say bye and end the conversation") == ["01:QUE Say bye", "02:YLD exit"]


def test_nested_items_under_plain_steps_keep_their_nesting() -> None:
    assert steps_of("- Present the options:", "  - Tell the price", "    1. Think it over") == [
        "01:QUE Present the options:",
        "  01.01:QUE Tell the price",
        "    01.01.01:TNK Think it over",
        "02:RET",
    ]


def test_derived_step_details_are_filled_in() -> None:
    program = compile_markdown(
        "# A\nT.\n\n## P\n### Steps\n- $x:int = Count($items)\n- Ask the user\n- Go back to step 1\n"
    )
    steps = program.agents[0].playbooks[0].steps
    assert steps[0].call is not None and steps[0].call.name == "Count"
    assert steps[0].call.result is not None and steps[0].call.result.type == "int"
    assert [step.opcode for step in steps] == ["QUE", "YLD", "QUE", "YLD", "JMP", "RET"]
    assert steps[1].yield_target is not None and steps[1].yield_target.kind is YieldKind.CALL
    assert steps[3].yield_target is not None and steps[3].yield_target.kind is YieldKind.USER
    assert steps[4].jump_target == "01"
    assert steps[0].span is not None and steps[0].span.line == 6


# --- markdown structure ----------------------------------------------------------------------------


def test_metadata_blocks_and_bare_keys_pass_through() -> None:
    markdown = (
        "# A\nmetadata:\n  startup_mode: standby\n  team: blue\n---\nAgent text.\n\n"
        "## P\npublic: true\nexecution_mode: raw\n\nAnswer questions.\n\n"
        "# Tools\nTool server.\n\nremote:\n  type: mcp\n  url: http://localhost:9/mcp\n"
    )
    first, tools = compile_markdown(markdown).agents
    assert first.metadata.startup_mode == "standby" and dict(first.metadata.extra) == {"team": "blue"}
    playbook = first.playbooks[0]
    assert (playbook.metadata.public, playbook.metadata.execution_mode) == (True, "raw")
    assert playbook.description == "Answer questions." and playbook.steps == ()
    assert tools.metadata.remote is not None and tools.metadata.remote.url == "http://localhost:9/mcp"
    assert tools.description == "Tool server."


def test_unknown_bare_keys_stay_in_the_description() -> None:
    agent = compile_markdown("# A\nframework: GAAP\nDoes accounting.\n").agents[0]
    assert agent.metadata.is_empty()
    assert agent.description == "framework: GAAP\nDoes accounting."


def test_comments_go_with_headers_descriptions_or_the_end() -> None:
    markdown = (
        "<!-- top -->\n# A\nText.\n<!-- inside -->\nMore text.\n<!-- before P -->\n\n## P\n### Steps\n"
        "- Say hi\n<!-- author note -->\n- Say bye\n\n<!-- the end -->\n"
    )
    program = compile_markdown(markdown)
    agent = program.agents[0]
    assert agent.comments == ("<!-- top -->",)
    assert agent.description == "Text.\n<!-- inside -->\nMore text."
    assert agent.playbooks[0].comments == ("<!-- before P -->",)
    assert [step.text for step in agent.playbooks[0].steps] == ["Say hi", "Say bye", ""]
    assert program.trailing_comments == ("<!-- the end -->",)
    assert parse(write(program)) == program


def test_front_matter_python_and_public_json_pass_through() -> None:
    markdown = (
        "---\ntitle: Demo\n---\n# A\nText.\n\n## P\n### Steps\n- Say hi\n\n"
        "```python\nimport math\n\n@playbook\nasync def root(x: float) -> float:\n"
        "    return math.sqrt(x)\n```\n\n"
        '```public.json\n[{"name": "root"}]\n```\n'
    )
    program = compile_markdown(markdown)
    agent = program.agents[0]
    assert dict(program.frontmatter) == {"title": "Demo"}
    assert agent.python_blocks == (
        "import math\n\n@playbook\nasync def root(x: float) -> float:\n    return math.sqrt(x)",
    )
    assert [playbook.name for playbook in agent.playbooks] == ["root", "P"]
    assert agent.public_json == [{"name": "root"}]


def test_ordered_lists_tabs_and_lazy_continuations() -> None:
    assert steps_of("1. Greet the user", "2) If it rains", "\t- Tell them", "to take an umbrella") == [
        "01:QUE Greet the user",
        "02:CND If it rains",
        "  02.01:QUE Tell them to take an umbrella",
        "03:RET",
    ]


# --- errors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "line", "column", "code", "words"),
    [
        ("# A\n\n### Steps\n- Say hi\n", 3, 1, "PAL001", "outside a playbook"),
        ("# A\n\n##\n### Steps\n- Say hi\n", 3, 1, "PAL002", "has no name"),
        ("# A\n\n## ($x)\n### Steps\n- Say hi\n", 3, 1, "PAL002", "has no name"),
        ("# A\n\n## P($x, 1y)\n", 3, 10, "PAL002", "parameter '1y'"),
        ("# A\n\n## P -> \n", 3, 6, "PAL002", "return type"),
        ("# A\n\n## Lookup($id) for $user\n", 3, 4, "PAL002", "must look like"),
        ("#\nText.\n", 1, 1, "PAL002", "agent header without a name"),
        ("# 3D printer\n", 1, 3, "PAL002", "must start with a letter"),
        ("Hello\n# A\n", 1, 1, "PAL001", "before the first agent"),
        ("## P\n### Steps\n- Say hi\n", 1, 1, "PAL001", "before the first agent"),
        ("# A\n## P\n### Steps\nSay hi\n", 4, 1, "PAL003", "expected a list item"),
        ("# A\n## P\n### Steps\n- Say hi\n-\n", 5, 1, "PAL003", "empty list item"),
        ("# A\n## P\n### Stuff\n- x\n", 3, 5, "PAL010", "unknown section"),
        ("# A\n## P\n### Steps\n- a\n### Steps\n- b\n", 5, 5, "PAL011", "already has"),
        ("# A\n## P\n## P\n", 3, 4, "PAL011", "already defined"),
        ("# A\n# A\n", 2, 3, "PAL011", "agent A is already defined"),
        ("# A\n```python\nx = 1\n", 2, 1, "PAL007", "never closed"),
        ("# A\n<!-- open\n", 2, 1, "PAL007", "never closed"),
        ("# A\n```python\ndef f(:\n```\n", 3, 7, "PAL008", "syntax error"),
        ("# A\nmetadata:\n  public: maybe\n---\n", 3, 3, "PAL006", "'public' must be true or false"),
        (
            "# A\n## P\nmetadata:\n  returns_schema: 3\n---\n",
            4,
            3,
            "PAL006",
            "'returns_schema' must be a JSON Schema",
        ),
        ("# A\n## P\n### Steps\n- Try again\n", 4, 3, "PAL020", "nothing to go back to"),
        ("# A\n## P\n### Steps\n- Say hi\n- Go back to step 7\n", 5, 3, "PAL020", "no step 7"),
        (
            "# A\n## P\n### Steps\n- Go back to the checkout\n",
            4,
            3,
            "PAL020",
            "no step starts with 'the checkout'",
        ),
        ("# A\n## P\n### Steps\n- Go back to the previous step\n", 4, 3, "PAL020", "no previous step"),
        ("# A\n## P\n### Steps\n- Say hi\n```text\nx\n```\n", 5, 1, "PAL001", "block can only be part"),
    ],
)
def test_bad_markdown_is_reported_at_the_right_place(
    markdown: str, line: int, column: int, code: str, words: str
) -> None:
    with pytest.raises(PalSyntaxError) as caught:
        compile_markdown(markdown, file="bad.pb")
    error = caught.value
    assert (error.line, error.column, error.errors[0].code) == (line, column, code)
    assert words in error.message
    assert error.file == "bad.pb"
    assert error.source_line == markdown.split("\n")[line - 1]


def test_every_problem_is_reported_with_its_marked_line() -> None:
    markdown = (
        "Intro\n# A\n## ()\n### Steps\n- Try again\n## P\n### Notes\nloose text\n"
        "### Steps\n- Go back to step 9\n"
    )
    with pytest.raises(PalSyntaxError) as caught:
        compile_markdown(markdown, file="many.pb")
    assert [(error.line, error.code) for error in caught.value.errors] == [
        (1, "PAL001"),
        (3, "PAL002"),
        (5, "PAL020"),  # checked although its playbook has no name
        (8, "PAL003"),
        (10, "PAL020"),
    ]
    rendered = str(caught.value)
    assert "many.pb:10:3: PAL020" in rendered
    assert "    - Go back to step 9\n      ^^^^^^^^^^^^^^^^^" in rendered
    assert rendered.endswith("5 errors")


# --- any input -------------------------------------------------------------------------------------

_LINE_STARTS = [
    "# ",
    "## ",
    "### Steps",
    "### Triggers",
    "### Notes",
    "- ",
    "  - ",
    "    - ",
    "1. ",
    "\t- ",
    "",
]
_LINE_STARTS += ["  ", "metadata:", "```python", "```", "<!-- c -->", "---", "meeting: true", "public: true"]
_WORDS = ["If", "if", "Otherwise", "else", "While", "For each", "When", "Until", "Return", "return to step 2"]
_WORDS += [
    "go back",
    "go back to step 1",
    "try again",
    "start over",
    "Ask",
    "Tell",
    "user",
    "$x",
    "$y:int",
    "=",
]
_WORDS += [
    "Foo(",
    ")",
    "(",
    ",",
    ":",
    ": ",
    "then",
    "and",
    "end the conversation",
    "Exit",
    "?",
    "'",
    '"',
    "Set",
]
_WORDS += [
    "to",
    "Think",
    "Get",
    "from",
    "Agent B",
    "AgentB.P()",
    "#",
    "##",
    "###",
    "-",
    "*",
    "1.",
    "<!--",
    "-->",
]
_WORDS += [
    "```",
    "metadata:",
    "public: true",
    "---",
    "N1",
    "T1:",
    "BGN",
    "EVT",
    ".",
    ":int",
    "[",
    "]",
    "{",
    "}",
]
_WORDS += [
    "\t",
    "  ",
    "é",
    "\u2028",
    "\x0b",
    "wait for the user",
    "the previous step",
    "@playbook",
    "async def f():",
]
_LINES = st.tuples(
    st.sampled_from(_LINE_STARTS), st.lists(st.sampled_from(_WORDS), max_size=8).map(" ".join)
).map("".join)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINES, max_size=25))
def test_any_markdown_compiles_to_valid_pal_or_raises_a_syntax_error(lines: list[str]) -> None:
    markdown = "\n".join(lines) + "\n"
    try:
        program = compile_markdown(markdown)
    except PalSyntaxError as error:
        assert all(diagnostic.line >= 1 for diagnostic in error.errors)
        return
    text = write(program)
    assert parse(text) == program
    assert write(parse(text)) == text
    assert compile_markdown(markdown) == program


def test_a_title_that_starts_like_markdown_gives_a_plain_description() -> None:
    program = compile_markdown("# # Intro\n\n## ### setup steps\n### Steps\n- Say hi\n")
    agent = program.agents[0]
    assert (agent.name, agent.description) == ("Intro", "Intro agent with the playbook SetupSteps.")
    assert agent.playbooks[0].description == "Setup steps."
    assert parse(write(program)) == program


# --- the compiled program is validated -------------------------------------------------------------

_OTHERWISE_AFTER_ACTION = (
    "# Shop\nA shop.\n\n## Main\n### Triggers\n- At the beginning\n### Steps\n"
    "- Ask the user for their order\n- Otherwise\n  - Ask again\n"
)


def test_markdown_whose_pal_the_validator_rejects_does_not_compile() -> None:
    with pytest.raises(PalSyntaxError) as caught:
        compile_markdown(_OTHERWISE_AFTER_ACTION, file="shop.pb")
    (error,) = caught.value.errors
    assert (error.file, error.line, error.column, error.code) == ("shop.pb", 9, 3, "PAL106")
    assert error.format().endswith("    - Otherwise\n      ^^^^^^^^^")
    program = compile_markdown(_OTHERWISE_AFTER_ACTION, file="shop.pb", check=False)
    assert [step.opcode for step in program.agents[0].playbooks[0].steps][-2] == "CND"


def test_an_empty_markdown_file_is_reported_at_line_one() -> None:
    with pytest.raises(PalSyntaxError) as caught:
        compile_markdown("\n", file="empty.pb")
    assert [(item.line, item.code) for item in caught.value.errors] == [(1, "PAL153")]


def test_pal_compile_reports_errors_and_warnings_at_markdown_lines(tmp_path: Path, capsys) -> None:
    from runtime.cli import main

    bad = tmp_path / "bad.pb"
    bad.write_text(_OTHERWISE_AFTER_ACTION, encoding="utf-8")
    assert main(["compile", str(bad), "-o", str(tmp_path / "bad.pal")]) == 1
    assert not (tmp_path / "bad.pal").exists()
    assert f"{bad}:9:3: PAL106" in capsys.readouterr().err
    nested = tmp_path / "nested.pb"
    nested.write_text(
        "# Shop\nA shop.\n\n## Main\n### Triggers\n- At the beginning\n### Steps\n"
        "- Ask the user for their order\n  - Thank them\n- Say goodbye\n",
        encoding="utf-8",
    )
    assert main(["compile", str(nested), "-o", str(tmp_path / "nested.pal")]) == 0
    err = capsys.readouterr().err
    assert f"{nested}:8:3: PAL107 warning: QUE step 01 has sub-steps" in err
    assert "    - Ask the user for their order\n" in err

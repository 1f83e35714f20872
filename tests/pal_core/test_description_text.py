"""Any text in a description (an instruction, a prompt) round-trips through the writer and the parser: lines
that would read as structure are escaped with a backslash, as markdown escapes them (issue 24)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pal_core.compiler import compile_markdown
from pal_core.ir import Agent, Metadata, Playbook, Program, Step
from pal_core.parser import parse
from pal_core.writer import write

# Lines chosen to look like every piece of structure PAL has, and like its escapes.
_TRICKY = [
    "# Agent",
    "## Playbook($x:int) -> None",
    "##",
    "### Steps",
    "### Triggers",
    "#### A heading of the prompt",
    "#nohashspace",
    "```",
    "```python",
    "```public.json",
    "```json",
    "  ```",
    "def f():",
    "    return 1",
    "<!-- a comment -->",
    "<!-- opens",
    "closes -->",
    "<!-- a --> text after",
    "metadata:",
    "  metadata:",
    "public: true",
    "---",
    "***",
    "01:QUE Say(user, hi)",
    "- 02:YLD for user",
    "T1:BGN At the beginning",
    "N1 Be nice",
    "\\# escaped already",
    "\\\\```python",
    "\\",
    "$name:str and `code` and $",
    "  indented text",
    "Plain words.",
    "#!/usr/bin/env pb",
]
_line = st.sampled_from(_TRICKY) | st.text(
    alphabet=st.sampled_from(list("#`<!->\\$ :abc-*_")), min_size=1, max_size=12
).map(str.rstrip).filter(bool)
_text = (
    st.lists(_line | st.just(""), min_size=1, max_size=8)
    .map("\n".join)
    .filter(lambda text: text.strip() and text.split("\n")[0].strip() and text.split("\n")[-1].strip())
)
_metadata = st.sampled_from([Metadata(), Metadata(public=True)])
_steps = st.sampled_from([(), (Step(line="01", opcode="RET"),)])


@st.composite
def _programs(draw) -> Program:  # type: ignore[no-untyped-def]
    playbooks = tuple(
        Playbook(
            name=f"P{index}",
            parameters=(),
            returns="None",
            description=draw(_text),
            metadata=draw(_metadata),
            steps=draw(_steps),
        )
        for index in range(draw(st.integers(1, 2)))
    )
    code = draw(st.sampled_from([(), ("x = 1",)]))
    return Program(
        agents=(
            Agent(
                name="Shop",
                description=draw(_text),
                metadata=draw(_metadata),
                python_blocks=code,
                playbooks=playbooks,
                public_json=draw(st.sampled_from([None, [{"name": "P0"}]])),
            ),
        )
    )


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_programs())
def test_any_description_round_trips(program: Program) -> None:
    text = write(program)
    assert parse(text) == program
    assert write(parse(text)) == text


def test_a_python_block_in_an_instruction_is_written_escaped() -> None:
    instruction = (
        "You write code.\n"
        "Answer with one block:\n"
        "```python\n"
        "# the code\n"
        "def solve():\n"
        "    ...\n"
        "```\n"
        "## Rules\n"
        "<!-- not a comment -->"
    )
    program = Program(
        agents=(
            Agent(
                name="Coder",
                description="Writes code.",
                playbooks=(Playbook(name="Respond", parameters=(), returns="None", description=instruction),),
            ),
        )
    )
    text = write(program)
    assert (
        "\\```python\n\\# the code\ndef solve():\n    ...\n\\```\n\\## Rules\n\\<!-- not a comment -->"
        in text
    )
    assert parse(text) == program


def test_a_description_that_starts_with_metadata_is_escaped_only_where_it_would_be_metadata() -> None:
    bare = Playbook(name="P", parameters=(), returns="None", description="metadata:\n  public: true")
    with_metadata = Playbook(
        name="P", parameters=(), returns="None", description="metadata:", metadata=Metadata(public=True)
    )
    for playbook, escaped in ((bare, True), (with_metadata, False)):
        program = Program(agents=(Agent(name="A", description="d", playbooks=(playbook,)),))
        text = write(program)
        assert ("\\metadata:" in text) is escaped
        assert parse(text) == program


def test_existing_descriptions_are_written_as_before() -> None:
    text = (
        "# Shop\nSells.\n<!-- kept as a comment of the description -->\nMore.\n\n"
        '## Greet() -> None\nSays:\n```json\n{"a": 1}\n```\n#### Example\nDone.\n### Steps\n01:RET\n'
    )
    assert write(parse(text)) == text


def test_markdown_reads_the_same_escapes() -> None:
    program = compile_markdown(
        "# Shop\n\\# Not an agent\n## Greet\n\\### Not a section\n### Steps\n- Say hi\n"
    )
    assert program.agents[0].description == "# Not an agent"
    assert program.agents[0].playbooks[0].description == "### Not a section"

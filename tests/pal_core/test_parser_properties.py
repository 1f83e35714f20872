"""Property tests: random IR survives write -> parse; random and mutated text raises only PalSyntaxError."""

from __future__ import annotations

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pal_core import jsonform
from pal_core.errors import PalSyntaxError
from pal_core.ir import Agent, Metadata, Note, Parameter, Playbook, Program, RemoteSpec, Step, Trigger
from pal_core.parser import parse
from pal_core.python_blocks import python_playbooks
from pal_core.writer import write
from tests.conftest import CORPUS

identifiers = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,12}", fullmatch=True)
# One line of text, no surrounding spaces: what a step, trigger or note may hold.
line_text = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=40
).map(str.strip)
words = st.lists(st.sampled_from(["Ask", "the", "user", "$x", "if", "Say(user,", "hi)", "- item", "42", "é"]))
description_line = words.map(" ".join).filter(lambda s: s and not s.startswith(("#", "```", "<!--")))
descriptions = st.lists(description_line, max_size=4).map("\n".join)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | line_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(identifiers, inner, max_size=3),
    max_leaves=8,
)
extras = st.dictionaries(identifiers.filter(lambda k: k not in _KNOWN_KEYS), json_values, max_size=3)
_KNOWN_KEYS = {
    "public",
    "meeting",
    "required_attendees",
    "optional_attendees",
    "startup_mode",
    "execution_mode",
}
_KNOWN_KEYS |= {"python", "remote"}

remote_specs = st.builds(
    RemoteSpec,
    type=st.sampled_from(["mcp", "a2a"]),
    transport=st.none() | st.sampled_from(["stdio", "http"]),
    url=st.none() | st.just("http://127.0.0.1:8000/mcp"),
    args=st.lists(line_text.filter(bool), max_size=2).map(tuple),
    headers=st.dictionaries(identifiers, line_text, max_size=2),
    timeout=st.none() | st.floats(0.5, 60, allow_nan=False).map(lambda f: round(f, 2)),
)
metadata = st.builds(
    Metadata,
    public=st.none() | st.booleans(),
    meeting=st.none() | st.booleans(),
    required_attendees=st.lists(identifiers, max_size=2).map(tuple),
    startup_mode=st.none() | st.sampled_from(["default", "standby"]),
    execution_mode=st.none() | st.sampled_from(["playbook", "react", "raw"]),
    remote=st.none() | remote_specs,
    extra=extras,
)
opcodes = st.sampled_from(["EXE", "QUE", "TNK", "CND", "CHK", "RET", "JMP", "YLD", "XYZ"])


@st.composite
def step_trees(draw, prefix: str = "", depth: int = 0) -> tuple[Step, ...]:
    count = draw(st.integers(0 if depth else 1, 3))
    steps = []
    for index in range(1, count + 1):
        line = f"{prefix}{index:02d}"
        children = (
            draw(step_trees(prefix=f"{line}.", depth=depth + 1)) if depth < 2 and draw(st.booleans()) else ()
        )
        steps.append(Step(line=line, opcode=draw(opcodes), text=draw(line_text), children=children))
    return tuple(steps)


playbooks = st.builds(
    Playbook,
    name=identifiers,
    parameters=st.lists(
        st.builds(
            Parameter,
            name=identifiers,
            type=st.none() | st.sampled_from(["str", "int", "list[str]", "dict[str, int]"]),
            default=st.none() | st.sampled_from(["1", '"a, b"', "None"]),
        ),
        max_size=3,
    ).map(tuple),
    returns=st.none() | st.sampled_from(["None", "str", "dict"]),
    description=descriptions,
    metadata=metadata,
    triggers=st.lists(
        st.builds(
            Trigger,
            id=st.from_regex(r"T[1-9]", fullmatch=True),
            code=st.sampled_from(["BGN", "CND"]),
            text=line_text,
        ),
        max_size=2,
    ).map(tuple),
    steps=st.none().flatmap(lambda _: step_trees()),
    notes=st.lists(
        st.builds(Note, id=st.from_regex(r"N[1-9]", fullmatch=True), text=line_text), max_size=2
    ).map(tuple),
    comments=st.lists(st.sampled_from(["<!-- note -->", "<!--\nmulti\n-->"]), max_size=1).map(tuple),
)

CODE_SNIPPETS = [
    "@playbook\nasync def Double(x: int) -> int:\n    return x * 2",
    '@playbook(public=True, triggers=["T1:CND When asked"])\ndef Greet(name: str = "you") -> str:\n    """Says hi."""\n    return name',
    "import math\n\nx = 1",
]


@st.composite
def agents(draw) -> Agent:
    code = draw(st.lists(st.sampled_from(CODE_SNIPPETS), max_size=2))
    derived = []
    for index, block in enumerate(code):
        found, problems = python_playbooks(block, index)
        assert not problems
        derived.extend(found)
    return Agent(
        name=draw(identifiers),
        description=draw(descriptions),
        metadata=draw(metadata),
        python_blocks=tuple(code),
        playbooks=(*derived, *draw(st.lists(playbooks, max_size=3))),
        public_json=draw(
            st.none() | st.lists(st.dictionaries(identifiers, json_values, max_size=2), max_size=2)
        ),
        comments=draw(st.lists(st.just("<!-- agent -->"), max_size=1).map(tuple)),
    )


programs = st.builds(
    Program,
    agents=st.lists(agents(), min_size=1, max_size=2).map(tuple),
    frontmatter=extras,
    trailing_comments=st.lists(st.just("<!-- end -->"), max_size=1).map(tuple),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_random_ir_survives_write_and_parse(program: Program) -> None:
    text = write(program)
    assert parse(text) == program
    assert write(parse(text)) == text
    assert jsonform.loads(jsonform.dumps(program)) == program


SEED_TEXTS = [path.read_text(encoding="utf-8") for path in sorted(CORPUS.glob("*.pbasm"))]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=string.printable + "–é\u2028", max_size=300))
def test_random_text_raises_only_syntax_errors(text: str) -> None:
    try:
        parse(text)
    except PalSyntaxError as error:
        assert error.errors
        assert all(diagnostic.line >= 1 for diagnostic in error.errors)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(SEED_TEXTS),
    st.lists(
        st.tuples(st.integers(0, 10_000), st.integers(0, 40), st.text(string.printable, max_size=8)),
        max_size=4,
    ),
)
def test_mutated_corpus_raises_only_syntax_errors(text: str, edits: list[tuple[int, int, str]]) -> None:
    for position, cut, insert in edits:
        position %= len(text) + 1
        text = text[:position] + insert + text[position + cut :]
    try:
        program = parse(text)
    except PalSyntaxError as error:
        assert error.errors
    else:
        assert parse(write(program)) == program

"""Messages to skill calls and values to parts, and back (exporters.a2a.parts): the rules the server and the
client share, checked directly, and values round-tripped through protobuf's Value by hypothesis."""

from __future__ import annotations

import math

import pytest
from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2
from hypothesis import given
from hypothesis import strategies as st

from exporters.a2a.parts import (
    MessageRefused,
    entry_skill,
    message_text,
    parts_value,
    skill_call,
    value_parts,
)
from pal_core.parser import parse
from runtime.serving.playbooks import by_name, served_playbooks

PROGRAM = """# Desk
A desk.

## Add($a:int, $b:int) -> int
metadata:
  public: true
---
### Steps
01:EXE $s:int = $a + $b
02:RET $s

## Start() -> str
metadata:
  public: true
---
### Steps
01:RET "started"

## Greet($name:str) -> str
metadata:
  public: true
---
### Triggers
- T1:BGN
### Steps
01:RET $name
"""


def _skills() -> dict:  # type: ignore[type-arg]
    agent = parse(PROGRAM).agents[0]
    return dict(by_name(served_playbooks([(agent.name, agent.playbooks)])))


def _message(*parts: pb.Part) -> pb.Message:
    return pb.Message(message_id="m", role=pb.Role.ROLE_USER, parts=list(parts))


def _data(value: object) -> pb.Part:
    from google.protobuf.json_format import ParseDict

    return pb.Part(data=ParseDict(value, struct_pb2.Value()))


def test_text_fills_the_entry_skills_string_parameter_and_data_names_a_skill() -> None:
    skills = _skills()
    entry = entry_skill(list(skills.values()))
    assert entry is not None and entry.name == "Greet"  # triggered at the start
    call = skill_call(_message(pb.Part(text="Ann"), pb.Part(text="and Bob")), skills, entry)
    assert (call.served.name, call.arguments, call.by_text) == ("Greet", {"name": "Ann\nand Bob"}, True)
    call = skill_call(_message(_data({"skill": "Add", "arguments": {"a": 1, "b": 2}})), skills, entry)
    assert (call.served.name, call.arguments, call.by_text) == ("Add", {"a": 1.0, "b": 2.0}, False)
    call = skill_call(_message(_data({"name": "Cy"})), skills, entry)
    assert (call.served.name, call.arguments) == ("Greet", {"name": "Cy"})
    start = skills["Start"]
    assert skill_call(_message(pb.Part(text="go")), skills, start).arguments == {}


@pytest.mark.parametrize(
    ("parts", "message"),
    [
        ([_data({"skill": "Nope"})], "no skill 'Nope' (skills: Add, Greet, Start)"),
        (
            [_data({"skill": "Add", "arguments": [1, 2]})],
            "'arguments' of skill 'Add' must be an object, got an array",
        ),
        (
            [_data({"skill": "Add", "args": {}})],
            "a data part holds 'skill' and 'arguments' only; it also has args",
        ),
        ([_data("Add")], "a data part must be an object"),
        ([_data({"skill": "Add"}), _data({"skill": "Add"})], "send one data part"),
        ([pb.Part(url="http://example.com/file.pdf")], "this agent reads text and data parts, not url parts"),
    ],
)
def test_messages_a_skill_cannot_take_are_refused_saying_what_to_send(
    parts: list[pb.Part], message: str
) -> None:
    skills = _skills()
    with pytest.raises(MessageRefused) as refused:
        skill_call(_message(*parts), skills, entry_skill(list(skills.values())))
    assert message in str(refused.value)


def test_text_for_a_skill_that_takes_other_arguments_says_to_send_data() -> None:
    skills = _skills()
    with pytest.raises(
        MessageRefused, match=r"skill 'Add' takes \(a, b\), which text cannot fill; send a data part"
    ):
        skill_call(_message(pb.Part(text="1 and 2")), skills, skills["Add"])


JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda number: not number.is_integer())
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(JSON)
def test_values_survive_the_wire_as_parts(value: object) -> None:
    parts = value_parts(value)
    if value is None:
        assert parts == []
        return
    wire = pb.Message.FromString(_message(*parts).SerializeToString())
    assert parts_value(wire.parts) == value


def test_a_nan_on_the_wire_stays_nan_for_the_door_to_refuse() -> None:
    part = pb.Part(
        data=struct_pb2.Value(
            list_value=struct_pb2.ListValue(values=[struct_pb2.Value(number_value=math.nan)])
        )
    )
    [value] = parts_value([part])
    assert math.isnan(value)
    assert message_text(_message(pb.Part(text="a"), _data({"b": 2}))) == 'a\n{"b": 2}'

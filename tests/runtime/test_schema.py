"""PAL types to JSON Schema, tool input/output schemas, and the checks that refuse malformed arguments."""

from __future__ import annotations

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pal_core.ir import Parameter, Playbook
from runtime.schema import (
    input_schema,
    json_schema_for_type,
    json_value,
    output_schema,
    returns_value,
    schema_problems,
)

TYPES = [
    (None, {}),
    ("", {}),
    ("str", {"type": "string"}),
    ("string", {"type": "string"}),
    ("int", {"type": "integer"}),
    ("float", {"type": "number"}),
    ("bool", {"type": "boolean"}),
    ("None", {"type": "null"}),
    ("list", {"type": "array"}),
    ("List", {"type": "array"}),
    ("dict", {"type": "object"}),
    ("Any", {}),
    ("Order", {}),
    ("list[str]", {"type": "array", "items": {"type": "string"}}),
    ("List[int]", {"type": "array", "items": {"type": "integer"}}),
    ("typing.List[float]", {"type": "array", "items": {"type": "number"}}),
    ("list[Any]", {"type": "array"}),
    ("set[str]", {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
    ("tuple[int, ...]", {"type": "array", "items": {"type": "integer"}}),
    (
        "tuple[str, int]",
        {
            "type": "array",
            "prefixItems": [{"type": "string"}, {"type": "integer"}],
            "minItems": 2,
            "maxItems": 2,
        },
    ),
    ("dict[str, int]", {"type": "object", "additionalProperties": {"type": "integer"}}),
    ("Dict[str, Any]", {"type": "object"}),
    (
        "dict[str, list[str]]",
        {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "string"}}},
    ),
    ("Optional[int]", {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    ("str | None", {"anyOf": [{"type": "string"}, {"type": "null"}]}),
    ("int | float | None", {"anyOf": [{"type": "integer"}, {"type": "number"}, {"type": "null"}]}),
    ("Union[str, int]", {"anyOf": [{"type": "string"}, {"type": "integer"}]}),
    ("Optional[Any]", {}),
    ("Literal['low', 'high']", {"enum": ["low", "high"]}),
    ("Annotated[int, 'a count']", {"type": "integer"}),
    ("'list[str]'", {"type": "array", "items": {"type": "string"}}),
    ("list[", {}),
]


@pytest.mark.parametrize(("pal_type", "schema"), TYPES, ids=[repr(t) for t, _ in TYPES])
def test_pal_types_map_to_json_schema(pal_type: str | None, schema: dict) -> None:
    assert json_schema_for_type(pal_type) == schema
    jsonschema.Draft202012Validator.check_schema(schema)


def _playbook(*parameters: Parameter, returns: str | None = None) -> Playbook:
    return Playbook(name="P", parameters=parameters, returns=returns)


def test_input_schema_requires_parameters_without_default_and_refuses_unknown_ones() -> None:
    playbook = _playbook(
        Parameter(name="name", type="str"),
        Parameter(name="count", type="int", default="3"),
        Parameter(name="tags", type="list[str]", default="['a', 'b']"),
        Parameter(name="anything"),
        Parameter(name="helper", type="Order", default="make_order()"),
    )
    schema = input_schema(playbook)
    assert schema == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer", "default": 3},
            "tags": {"type": "array", "items": {"type": "string"}, "default": ["a", "b"]},
            "anything": {},
            "helper": {},  # a default that is not a JSON literal is left out, the parameter stays optional
        },
        "additionalProperties": False,
        "required": ["name", "anything"],
    }
    jsonschema.Draft202012Validator.check_schema(schema)


def test_a_playbook_without_parameters_takes_an_empty_object() -> None:
    assert input_schema(_playbook()) == {"type": "object", "properties": {}, "additionalProperties": False}


@pytest.mark.parametrize(
    ("returns", "expected"),
    [(None, None), ("None", None), (" None ", None), ("int", {"type": "integer"}), ("list[str]", None)],
)
def test_output_schema_wraps_a_typed_return_in_result(returns: str | None, expected: dict | None) -> None:
    schema = output_schema(_playbook(returns=returns))
    if returns in (None, "None", " None "):
        assert schema is None
        assert not returns_value(_playbook(returns=returns))
        return
    assert schema is not None
    assert schema["required"] == ["result"]
    assert schema["properties"]["result"] == json_schema_for_type(returns)
    if expected is not None:
        assert schema["properties"]["result"] == expected


def test_argument_problems_name_the_argument_and_say_what_was_expected() -> None:
    schema = input_schema(
        _playbook(
            Parameter(name="a", type="int"),
            Parameter(name="tags", type="list[str]", default="[]"),
            Parameter(name="mode", type="Literal['fast', 'slow']", default="'fast'"),
            Parameter(name="limit", type="Optional[float]", default="None"),
        )
    )
    assert schema_problems({"a": 1}, schema) == []
    assert schema_problems({"a": 2.0, "limit": None}, schema) == []  # JSON has one number type
    assert schema_problems({"a": "x"}, schema) == ['a must be an integer, got string "x"']
    assert schema_problems({"a": True}, schema) == ["a must be an integer, got boolean true"]
    assert schema_problems({}, schema) == ["a is required"]
    assert schema_problems({"a": 1, "b": 2}, schema) == [
        "b is not a parameter (parameters: a, tags, mode, limit)"
    ]
    assert schema_problems({"a": 1, "tags": ["x", 3]}, schema) == ["tags[1] must be a string, got integer 3"]
    assert schema_problems({"a": 1, "mode": "medium"}, schema) == [
        'mode must be one of "fast", "slow", got "medium"'
    ]
    assert schema_problems({"a": 1, "limit": "high"}, schema) == [
        'limit must be a number or null, got string "high"'
    ]
    assert schema_problems({"a": 1.5}, schema) == ["a must be an integer, got number 1.5"]


def test_nested_values_are_checked_with_their_path() -> None:
    schema = json_schema_for_type("dict[str, list[int]]")
    assert schema_problems({"x": [1, 2], "y": [3, "4"]}, schema, "result") == [
        'result.y[1] must be an integer, got string "4"'
    ]
    pair = json_schema_for_type("tuple[str, int]")
    assert schema_problems(["a", 1], pair, "pair") == []
    assert schema_problems(["a"], pair, "pair") == ["pair must have 2 items, got 1"]
    unique = json_schema_for_type("set[int]")
    assert schema_problems([1, 2, 1], unique, "ids") == ["ids must not repeat items (1 appears twice)"]


def test_json_value_makes_runtime_values_json_compatible() -> None:
    class Artifact:
        def __str__(self) -> str:
            return "Artifact[notes]"

    assert json_value({"a": (1, 2), 3: {"b"}, "c": Artifact(), "d": float("nan")}) == {
        "a": [1, 2],
        "3": ["b"],
        "c": "Artifact[notes]",
        "d": "nan",
    }


JSON_LEAVES = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=12,
)
SCHEMA_TYPES = st.sampled_from([t for t, _ in TYPES if t])


@given(value=JSON_VALUES, pal_type=SCHEMA_TYPES)
def test_schema_problems_agree_with_a_json_schema_validator(value: object, pal_type: str) -> None:
    # One exception by design: 2.0 counts as an integer here (the runtime turns it into 2); so does it in
    # JSON Schema 2020-12, which jsonschema follows.
    schema = json_schema_for_type(pal_type)
    valid = jsonschema.Draft202012Validator(schema).is_valid(value)
    assert (schema_problems(value, schema, "value") == []) == valid, (pal_type, value)


def test_a_schema_an_author_wrote_is_checked_in_full_by_jsonschema() -> None:
    # An MCP tool's `input_schema` may use any keyword; the hand check knows only the ones this module makes.
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "minimum": 0},
            "code": {"type": "string", "pattern": "^[A-Z]+$"},
        },
        "required": ["n"],
    }
    assert schema_problems({"n": 3, "code": "AB"}, schema) == []
    assert schema_problems({"n": -1, "code": "ab"}, schema) == [
        "code: 'ab' does not match '^[A-Z]+$'",
        "n: -1 is less than the minimum of 0",
    ]
    assert schema_problems({"x": [1, -2]}, {"properties": {"x": {"items": {"minimum": 0}}}}) == [
        "x[1]: -2 is less than the minimum of 0"
    ]
    assert schema_problems(1, {"type": "nonsense", "minimum": 0}, "value")[0].startswith(
        "value: the schema to check it against is not valid JSON Schema"
    )

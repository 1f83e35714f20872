"""JSON Schema for PAL playbooks: parameter and return types mapped to schema, and values checked against it.

PAL types are Python-like text (`str`, `int`, `list[str]`, `dict[str, float]`, `Optional[int]`,
`Literal["a", "b"]`, `str | None`), written by hand in markdown playbooks and taken from annotations in
Python playbooks. `json_schema_for_type` maps one such text to JSON Schema; anything it does not know
(a class name, `Any`) becomes `{}`, which accepts every value. `schema_problems` checks a value against a
schema, so arguments are refused with a message naming the argument before a playbook runs: the schemas
made here by hand (no dependency, fast, property-tested against jsonschema), a schema an author wrote with
other keywords (an MCP tool's `input_schema` with `minimum`, `pattern`...) with the jsonschema package.

It is the project's one PAL type -> JSON Schema mapping, kept in the runtime so every bridge can use it
(imports only go down the layers): the MCP bridge for tool schemas, the LangGraph exporter for LangChain
tool schemas and node arguments.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import json
import math
from collections.abc import Mapping
from typing import Any

from pal_core.ir import Playbook
from runtime.expressions import NotEvaluable, evaluate

JsonSchema = dict[str, Any]
"""A JSON Schema object."""

RESULT_KEY = "result"
"""The key that holds a typed return value in a tool's structured content (the convention MCPServer uses)."""

_SCALARS: dict[str, JsonSchema] = {
    "str": {"type": "string"},
    "string": {"type": "string"},
    "int": {"type": "integer"},
    "integer": {"type": "integer"},
    "float": {"type": "number"},
    "number": {"type": "number"},
    "bool": {"type": "boolean"},
    "boolean": {"type": "boolean"},
    "None": {"type": "null"},
    "NoneType": {"type": "null"},
    "null": {"type": "null"},
}
_ARRAYS = frozenset(
    {"list", "List", "Sequence", "Iterable", "array", "tuple", "Tuple", "set", "Set", "frozenset"}
)
_UNIQUE_ARRAYS = frozenset({"set", "Set", "frozenset"})
_OBJECTS = frozenset({"dict", "Dict", "Mapping", "MutableMapping"})
_UNIONS = frozenset({"Union", "Optional"})


def json_schema_for_type(type_text: str | None) -> JsonSchema:
    """The JSON Schema of a PAL type; `{}` (any value) when the type is absent or unknown."""
    if type_text is None or not type_text.strip():
        return {}
    try:
        tree = ast.parse(type_text.strip(), mode="eval").body
    except SyntaxError:
        return {}
    return _schema(tree)


def _name(node: ast.expr) -> str | None:
    """`list` for `list`, `typing.List` -> `List`; None for anything that is not a (dotted) name."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _schema(node: ast.expr) -> JsonSchema:
    if isinstance(node, ast.Constant):
        if node.value is None:
            return {"type": "null"}
        if isinstance(node.value, str):  # a quoted annotation: "list[str]"
            return json_schema_for_type(node.value)
        return {}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([*_union_members(node.left), *_union_members(node.right)])
    name = _name(node)
    if name is not None:
        if name in _SCALARS:
            return dict(_SCALARS[name])
        if name in _ARRAYS:
            return {"type": "array", "uniqueItems": True} if name in _UNIQUE_ARRAYS else {"type": "array"}
        if name in _OBJECTS:
            return {"type": "object"}
        return {}
    if isinstance(node, ast.Subscript):
        return _generic(node)
    return {}


def _union_members(node: ast.expr) -> list[ast.expr]:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return [*_union_members(node.left), *_union_members(node.right)]
    return [node]


def _union(members: list[ast.expr]) -> JsonSchema:
    schemas: list[JsonSchema] = []
    for member in members:
        schema = _schema(member)
        if not schema:
            return {}  # one member accepts anything, so the union does
        if schema not in schemas:
            schemas.append(schema)
    return schemas[0] if len(schemas) == 1 else {"anyOf": schemas}


def _arguments(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _generic(node: ast.Subscript) -> JsonSchema:
    name = _name(node.value)
    arguments = _arguments(node)
    if name in _UNIONS:
        members = arguments + ([ast.Constant(value=None)] if name == "Optional" else [])
        return _union(members)
    if name == "Annotated":
        return _schema(arguments[0])
    if name == "Literal":
        values = [argument.value for argument in arguments if isinstance(argument, ast.Constant)]
        return {"enum": values} if len(values) == len(arguments) else {}
    if name in ("tuple", "Tuple"):
        if len(arguments) == 2 and isinstance(arguments[1], ast.Constant) and arguments[1].value is Ellipsis:
            return _array(arguments[0], unique=False)
        items = [_schema(argument) for argument in arguments]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    if name in _ARRAYS:
        return _array(arguments[0], unique=name in _UNIQUE_ARRAYS)
    if name in _OBJECTS:
        schema: JsonSchema = {"type": "object"}
        if len(arguments) == 2:
            values = _schema(arguments[1])
            if values:
                schema["additionalProperties"] = values
        return schema
    return _schema(node.value)


def _array(item: ast.expr, *, unique: bool) -> JsonSchema:
    schema: JsonSchema = {"type": "array"}
    items = _schema(item)
    if items:
        schema["items"] = items
    if unique:
        schema["uniqueItems"] = True
    return schema


# --- playbooks ---------------------------------------------------------------------------------------


def input_schema(playbook: Playbook) -> JsonSchema:
    """The tool input schema of a playbook: one property per parameter, typed from its declared type;
    parameters without a default are required; unknown arguments are refused."""
    properties: dict[str, JsonSchema] = {}
    required: list[str] = []
    for parameter in playbook.parameters:
        schema = json_schema_for_type(parameter.type)
        if parameter.default is None:
            required.append(parameter.name)
        else:
            default = _default_value(parameter.default)
            if default is not _NO_DEFAULT:
                schema = {**schema, "default": default}
        properties[parameter.name] = schema
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


def returns_value(playbook: Playbook) -> bool:
    """Whether the playbook declares a return type other than None."""
    return playbook.returns is not None and playbook.returns.strip() not in ("", "None")


def output_schema(playbook: Playbook) -> JsonSchema | None:
    """The tool output schema: `{"result": <return type>}` for a typed return (its `returns_schema` when it
    declares one), None otherwise."""
    if not returns_value(playbook):
        return None
    declared = playbook.metadata.returns_schema
    result = dict(declared) if declared is not None else json_schema_for_type(playbook.returns)
    return {
        "type": "object",
        "properties": {RESULT_KEY: result},
        "required": [RESULT_KEY],
    }


_NO_DEFAULT = object()


def _default_value(text: str) -> Any:
    """A parameter default written in Python as a JSON value; _NO_DEFAULT when it is not a JSON literal."""
    try:
        value = evaluate(text, {})
    except NotEvaluable:
        return _NO_DEFAULT
    value = json_value(value)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return _NO_DEFAULT
    return value


# --- values ------------------------------------------------------------------------------------------


def json_value(value: Any) -> Any:
    """A value made JSON-compatible: tuples and sets become lists, keys strings, a pydantic model or a
    dataclass instance the object of its fields (a LangChain message is `{"content": ..., "type": "human",
    ...}`), non-finite floats and other objects their str()."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Mapping):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    if isinstance(value, (set, frozenset)):
        items = [json_value(item) for item in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    fields = _object_fields(value)
    if fields is not None:
        return json_value(fields)
    return str(value)


def _object_fields(value: Any) -> dict[str, Any] | None:
    """The fields of a pydantic model (its JSON dump) or a dataclass instance; None for other objects."""
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):
        try:
            dumped = dump(mode="json")
        except Exception:  # a model that cannot dump itself is shown as text
            return None
        return dumped if isinstance(dumped, dict) else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: getattr(value, field.name) for field in dataclasses.fields(value)}
    return None


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _json_type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _fits(value: Any, json_type: str) -> bool:
    if json_type == "integer" and isinstance(value, float):
        return value.is_integer()  # JSON has one number type: 3.0 is an integer
    if json_type != "boolean" and isinstance(value, bool):
        return False
    expected = _JSON_TYPES.get(json_type)
    return expected is None or isinstance(value, expected)


PRODUCED_KEYWORDS = frozenset(
    {
        "type", "items", "prefixItems", "minItems", "maxItems", "uniqueItems", "properties", "required",
        "additionalProperties", "anyOf", "enum", "default", "title", "description", "$schema",
    }
)  # fmt: skip
"""The JSON Schema keywords of the schemas this module makes, which `schema_problems` checks by hand (fast,
with messages that name the argument). A schema written by an author (an MCP tool's `input_schema`) may
use any other keyword (`minimum`, `pattern`, `$ref`, ...): it is checked by the jsonschema package."""

_SUBSET_VERDICTS: dict[int, tuple[Mapping[str, Any], bool]] = {}
"""id(schema) -> (the schema, kept alive so its id is not reused; whether it stays in PRODUCED_KEYWORDS)."""


def schema_problems(value: Any, schema: Mapping[str, Any], where: str = "") -> list[str]:
    """What is wrong with `value` under `schema`, each naming the place (`where` is the path of `value`:
    `result`, `items[2]`; empty for the top-level arguments object, whose keys are then named alone, as
    `timezone`); empty when the value fits. The schemas this module makes are checked by hand; a schema
    with other keywords by jsonschema (Draft 2020-12)."""
    if not schema:
        return []
    if not _in_subset(schema):
        return _validator_problems(value, schema, where)
    return _subset_problems(value, schema, where)


def _in_subset(schema: Mapping[str, Any]) -> bool:
    known = _SUBSET_VERDICTS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    verdict = _only_produced_keywords(schema)
    if len(_SUBSET_VERDICTS) >= 1024:
        _SUBSET_VERDICTS.clear()
    _SUBSET_VERDICTS[id(schema)] = (schema, verdict)
    return verdict


def _only_produced_keywords(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return True
    if not set(schema) <= PRODUCED_KEYWORDS:
        return False
    children: list[Any] = [schema.get("items"), schema.get("additionalProperties")]
    children += list(schema.get("prefixItems") or ()) + list(schema.get("anyOf") or ())
    children += list((schema.get("properties") or {}).values())
    return all(_only_produced_keywords(child) for child in children if isinstance(child, Mapping))


def _validator_problems(value: Any, schema: Mapping[str, Any], where: str) -> list[str]:
    """The problems jsonschema finds, each at its path (`items[2].name: -1 is less than the minimum of 0`)."""
    try:
        validator = _validator(json.dumps(schema, sort_keys=True))
    except InvalidSchema as error:
        return [f"{_label(where)}: the schema to check it against is not valid JSON Schema: {error}"]
    except ImportError:
        return [
            f"{_label(where)}: its schema uses keywords beyond the basic ones, which need the jsonschema "
            "package to check: pip install 'pal-bridge[mcp]'"
        ]
    problems = []
    for error in sorted(validator.iter_errors(value), key=lambda error: list(map(str, error.absolute_path))):
        place = where
        for step in error.absolute_path:
            place = f"{place}[{step}]" if isinstance(step, int) else _join(place, str(step))
        problems.append(f"{_label(place)}: {error.message}")
    return problems


@functools.lru_cache(maxsize=256)
def _validator(schema_text: str) -> Any:
    import jsonschema

    schema = json.loads(schema_text)
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise InvalidSchema(error.message) from None
    return jsonschema.Draft202012Validator(schema)


class InvalidSchema(ValueError):
    """An author's schema that is not JSON Schema (Draft 2020-12)."""


def _subset_problems(value: Any, schema: Mapping[str, Any], where: str = "") -> list[str]:
    if not schema:
        return []
    if "anyOf" in schema:
        options = schema["anyOf"]
        if any(not _subset_problems(value, option, where) for option in options):
            return []
        kinds = " or ".join(_describe(option) for option in options)
        return [f"{_label(where)} must be {kinds}, got {_got(value)}"]
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(item) for item in schema["enum"])
        return [f"{_label(where)} must be one of {allowed}, got {_preview(value)}"]
    json_type = schema.get("type")
    if isinstance(json_type, str) and not _fits(value, json_type):
        return [f"{_label(where)} must be {_describe(schema)}, got {_got(value)}"]
    if isinstance(value, (list, tuple)):
        return _array_problems(value, schema, where)
    if isinstance(value, dict):
        return _object_problems(value, schema, where)
    return []


def _array_problems(value: list[Any] | tuple[Any, ...], schema: Mapping[str, Any], where: str) -> list[str]:
    problems: list[str] = []
    prefix = schema.get("prefixItems")
    if prefix is not None and len(value) != len(prefix):
        return [f"{_label(where)} must have {len(prefix)} items, got {len(value)}"]
    for index, item in enumerate(value):
        item_schema = prefix[index] if prefix is not None else schema.get("items")
        if item_schema:
            problems.extend(_subset_problems(item, item_schema, f"{where}[{index}]"))
    if schema.get("uniqueItems"):
        seen: list[Any] = []
        for item in value:
            if item in seen:
                problems.append(f"{_label(where)} must not repeat items ({_preview(item)} appears twice)")
                break
            seen.append(item)
    return problems


def _object_problems(value: dict[str, Any], schema: Mapping[str, Any], where: str) -> list[str]:
    problems: list[str] = []
    properties: Mapping[str, Any] = schema.get("properties") or {}
    for name in schema.get("required") or ():
        if name not in value:
            problems.append(f"{_join(where, name)} is required")
    extra = schema.get("additionalProperties")
    for key, item in value.items():
        if key in properties:
            problems.extend(_subset_problems(item, properties[key], _join(where, key)))
        elif extra is False:
            known = ", ".join(properties) or "none"
            problems.append(f"{_join(where, key)} is not a parameter (parameters: {known})")
        elif isinstance(extra, Mapping):
            problems.extend(_subset_problems(item, extra, _join(where, key)))
    return problems


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def _label(where: str) -> str:
    return where or "the arguments"


def _describe(schema: Mapping[str, Any]) -> str:
    if "anyOf" in schema:
        return " or ".join(_describe(option) for option in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(item) for item in schema["enum"])
    json_type = schema.get("type")
    if json_type == "array" and isinstance(schema.get("items"), Mapping) and schema["items"]:
        return f"an array of {_describe(schema['items'])}"
    names = {
        "string": "a string",
        "integer": "an integer",
        "number": "a number",
        "boolean": "true or false",
        "array": "an array",
        "object": "an object",
        "null": "null",
    }
    return names.get(json_type, "any value") if isinstance(json_type, str) else "any value"


def _got(value: Any) -> str:
    """`string "x"`, `integer 3`, `null`: what a value is, for messages."""
    if value is None:
        return "null"
    return f"{_json_type_name(value)} {_preview(value)}"


def _preview(value: Any, limit: int = 60) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"

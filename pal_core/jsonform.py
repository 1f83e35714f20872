"""The JSON form of the IR: the one adapter between the dataclasses and JSON, plus its JSON Schema.

Driven by the dataclasses' type hints, so a field added to the IR is serialised, read back and
described in the schema without touching this module. Derived step details are written (tools want
them) but never read: they are recomputed from the step text. Source spans are left out.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import itertools
import json
import types
import typing
from collections.abc import Mapping
from enum import Enum
from functools import cache
from typing import Any

from pal_core import ir
from pal_core.errors import PalError

FORMAT_VERSION = 1
"""Bumped when the JSON form changes incompatibly."""

_SKIPPED = frozenset({"span", "source", "warnings"})


class PalJsonError(PalError):
    """JSON that is not a valid PAL program; says where (a JSON path) and why."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


def to_json(program: ir.Program) -> dict[str, Any]:
    """The JSON-compatible dict of a program (PalError when its steps nest deeper than MAX_STEP_DEPTH)."""
    ir.check_depth(program)
    data = _dump(program)
    return {"pal_ir_version": FORMAT_VERSION, **data}


def dumps(program: ir.Program, *, indent: int | None = 2) -> str:
    """The JSON text of a program."""
    return json.dumps(to_json(program), indent=indent, ensure_ascii=False)


def from_json(data: Mapping[str, Any]) -> ir.Program:
    """A program from its JSON form; PalJsonError on anything malformed."""
    if not isinstance(data, Mapping):
        raise PalJsonError("$", "expected an object")
    version = data.get("pal_ir_version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise PalJsonError(
            "$.pal_ir_version", f"unsupported version {version!r}; this reader knows {FORMAT_VERSION}"
        )
    body = {key: value for key, value in data.items() if key != "pal_ir_version"}
    _check_nesting(body)
    program = _load(ir.Program, body, "$")
    for agent_index, agent in enumerate(program.agents):
        for playbook_index, playbook in enumerate(agent.playbooks):
            found = ir.too_deep(playbook.steps)
            if found is not None:
                raise PalJsonError(
                    f"$.agents[{agent_index}].playbooks[{playbook_index}]",
                    f"steps nested {found[1]} levels deep; a program's steps nest at most {ir.MAX_STEP_DEPTH} levels",
                )
    return program


def loads(text: str, *, file: str | None = None) -> ir.Program:
    """A program from JSON text; errors start with `file` when given."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno} column {error.colno}"
        raise PalJsonError(f"{file}:{error.lineno}:{error.colno}" if file else where, error.msg) from None
    except RecursionError:
        raise PalJsonError(file or "$", "nested too deeply to read") from None
    try:
        return from_json(data)
    except PalJsonError as error:
        if file is None:
            raise
        raise PalJsonError(f"{file}: {error.path}", error.message) from None


_MAX_NESTING = 2 * ir.MAX_STEP_DEPTH + 40
"""JSON nesting a program may have: two levels per level of steps (`children: [...]`), and room for the
program, agent and playbook objects and metadata values around them."""


def _check_nesting(data: Any) -> None:
    """PalJsonError at the first value nested deeper than a program can be (iteratively: the reader
    itself is recursive)."""
    # (value, depth, where): `where` is (parent's where, key), turned into a path only for the error.
    pending: list[tuple[Any, int, Any]] = [(data, 1, None)]
    while pending:
        value, depth, where = pending.pop()
        if depth > _MAX_NESTING:
            raise PalJsonError(
                _path(where),
                f"nested {depth} levels deep; a program's steps nest at most {ir.MAX_STEP_DEPTH} levels",
            )
        if isinstance(value, Mapping):
            pending.extend((item, depth + 1, (where, f".{key}")) for key, item in value.items())
        elif isinstance(value, list):
            pending.extend((item, depth + 1, (where, f"[{index}]")) for index, item in enumerate(value))


def _path(where: Any) -> str:
    parts: list[str] = []
    while where is not None:
        where, part = where
        parts.append(part)
    path = "$" + "".join(reversed(parts))
    return path if len(path) <= 80 else f"{path[:48]}…{path[-30:]}"


# --- dumping -------------------------------------------------------------------------------------


def _dump(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for spec in dataclasses.fields(value):
            if spec.name in _SKIPPED:
                continue
            item = getattr(value, spec.name)
            if spec.init and _is_default(spec, item):
                continue
            if not spec.init and item is None:
                continue
            out[spec.name] = _dump(item)
        return out
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, (tuple, list)):
        return [_dump(item) for item in value]
    if isinstance(value, Mapping):
        return {str(key): _dump(item) for key, item in value.items()}
    return value


def _is_default(spec: dataclasses.Field[Any], value: Any) -> bool:
    if spec.default is not dataclasses.MISSING:
        return value == spec.default
    if spec.default_factory is not dataclasses.MISSING:
        return value == spec.default_factory()
    return False


# --- loading -------------------------------------------------------------------------------------


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls, vars(ir))


def _load(tp: Any, value: Any, path: str) -> Any:
    if tp is Any or tp is ir.JsonValue:
        return value
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [arg for arg in typing.get_args(tp) if arg is not type(None)]
        if value is None:
            return None
        return _load(options[0], value, path)
    if origin is tuple:
        if not isinstance(value, list):
            raise PalJsonError(path, "expected an array")
        (item_type, _ellipsis) = typing.get_args(tp)
        return tuple(_load(item_type, item, f"{path}[{index}]") for index, item in enumerate(value))
    if origin in (Mapping, dict) or tp in (Mapping, dict):
        if not isinstance(value, dict):
            raise PalJsonError(path, "expected an object")
        args = typing.get_args(tp)
        value_type = args[1] if args else Any
        return {str(key): _load(value_type, item, f"{path}.{key}") for key, item in value.items()}
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(value)
        except ValueError:
            allowed = ", ".join(repr(member.value) for member in tp)
            raise PalJsonError(path, f"expected one of {allowed}, got {value!r}") from None
    if dataclasses.is_dataclass(tp):
        return _load_dataclass(tp, value, path)
    return _load_scalar(tp, value, path)


def _load_dataclass(cls: Any, value: Any, path: str) -> Any:
    if not isinstance(value, dict):
        raise PalJsonError(path, f"expected an object for {cls.__name__}")
    hints = _hints(cls)
    specs = {spec.name: spec for spec in dataclasses.fields(cls)}
    kwargs: dict[str, Any] = {}
    for key, item in value.items():
        spec = specs.get(key)
        if spec is None:
            raise PalJsonError(f"{path}.{key}", f"unknown field of {cls.__name__}")
        if not spec.init or key in _SKIPPED:
            continue  # derived details are recomputed from the text
        kwargs[key] = _load(hints[key], item, f"{path}.{key}")
    for name, spec in specs.items():
        if spec.init and name not in kwargs and _required(spec):
            raise PalJsonError(f"{path}.{name}", f"missing required field of {cls.__name__}")
    return cls(**kwargs)


def _required(spec: dataclasses.Field[Any]) -> bool:
    return spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING


def _load_scalar(tp: Any, value: Any, path: str) -> Any:
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise PalJsonError(path, "expected true or false")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise PalJsonError(path, "expected an integer")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise PalJsonError(path, "expected a number")
    if tp is str:
        if isinstance(value, str):
            return value
        raise PalJsonError(path, "expected a string")
    raise PalJsonError(path, f"cannot read a value of type {tp!r}")


# --- schema --------------------------------------------------------------------------------------


def json_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the JSON form, with the IR's field docstrings."""
    defs: dict[str, Any] = {}
    root = _schema_for(ir.Program, defs)
    program = defs.pop("Program")
    program["properties"] = {
        "pal_ir_version": {"const": FORMAT_VERSION, "description": "Version of the JSON form."},
        **program["properties"],
    }
    del root
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://pal-bridge.dev/schema/program.schema.json",
        "title": "PAL program",
        **program,
        "$defs": dict(sorted(defs.items())),
    }


def _schema_for(tp: Any, defs: dict[str, Any]) -> dict[str, Any]:
    if tp is Any or tp is ir.JsonValue:
        return {}
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        options = [_schema_for(arg, defs) for arg in typing.get_args(tp) if arg is not type(None)]
        return {"anyOf": [*options, {"type": "null"}]}
    if origin is tuple:
        return {"type": "array", "items": _schema_for(typing.get_args(tp)[0], defs)}
    if origin in (Mapping, dict):
        value_type = typing.get_args(tp)[1]
        return {"type": "object", "additionalProperties": _schema_for(value_type, defs)}
    if isinstance(tp, type) and issubclass(tp, Enum):
        return {"enum": [member.value for member in tp]}
    if dataclasses.is_dataclass(tp):
        name = tp.__name__
        if name not in defs:
            defs[name] = {}  # placeholder against recursion (Step.children)
            defs[name] = _dataclass_schema(tp, defs)
        return {"$ref": f"#/$defs/{name}"}
    return {
        str: {"type": "string"},
        int: {"type": "integer"},
        float: {"type": "number"},
        bool: {"type": "boolean"},
    }[tp]


def _dataclass_schema(cls: Any, defs: dict[str, Any]) -> dict[str, Any]:
    hints = _hints(cls)
    docs = _field_docs(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for spec in dataclasses.fields(cls):
        if spec.name in _SKIPPED:
            continue
        schema = dict(_schema_for(hints[spec.name], defs))
        if spec.name in docs:
            schema["description"] = docs[spec.name]
        if not spec.init:
            schema["readOnly"] = True
        properties[spec.name] = schema
        if spec.init and _required(spec):
            required.append(spec.name)
    out: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if cls.__doc__:
        out["description"] = inspect.cleandoc(cls.__doc__).split("\n\n")[0]
    if required:
        out["required"] = required
    return out


@cache
def _field_docs(cls: type) -> dict[str, str]:
    """Attribute docstrings (the string literal after each field), read from the class source."""
    try:
        tree = ast.parse(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
    docs: dict[str, str] = {}
    for node, following in itertools.pairwise(body):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(following.value.value)
    return docs

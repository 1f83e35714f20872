"""Arguments from outside a program: one validator for `pal run --input`, the Python API (`run_playbook`),
MCP tool calls and the exporters (LangGraph nodes, LangChain tools).

- `parse_json_object(text, option="--input")`: strict JSON text to a dict. `NaN`, `Infinity` and numbers
  too large for a float (`1e400`) are refused, as are duplicate keys; every error names the option and
  the place in the text.
- `bind_input(playbook, values)`: a JSON object to the playbook's arguments, by parameter name, or the whole
  object for a playbook whose one parameter is a dict (an imported graph's `Invoke($input:dict)`), the empty
  object included.
- `check_arguments(playbook, arguments)`: the arguments checked against the playbook's parameter types
  (the JSON Schema of runtime.schema): `2.5` for an `int` is an error, `4.0` becomes 4; a number must be
  finite wherever it is; a missing or unknown argument is named. Raises InputError listing every problem.

Results go out through `runtime.schema.json_value`, which makes any value valid JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from pal_core.ir import Playbook
from runtime.errors import CallError
from runtime.expressions import coerce
from runtime.schema import input_schema, schema_problems


class InputError(CallError):
    """Arguments that do not fit a playbook, or input text that is not a JSON object (a user error).
    `problems` lists each thing wrong, naming the argument."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems or (message,)


class _NotJson(ValueError):
    """A value JSON does not allow, found while decoding."""


def _refuse_constant(name: str) -> Any:
    raise _NotJson(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotJson(f"the number {text} is too large")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _NotJson(f"the key {key!r} appears twice")
        found[key] = value
    return found


def parse_json(text: str, *, option: str = "--input") -> Any:
    """The JSON value of `text`, strictly (no NaN, no Infinity, no overflowing numbers, no repeated keys);
    InputError naming `option` and the line and column otherwise."""
    decoder = json.JSONDecoder(
        parse_constant=_refuse_constant, parse_float=_finite_float, object_pairs_hook=_no_duplicates
    )
    try:
        value, end = decoder.raw_decode(text, _skip_space(text, 0))
    except json.JSONDecodeError as error:
        raise InputError(f"{option}: not valid JSON: {error.msg} at {_place(text, error.pos)}") from None
    except _NotJson as error:
        raise InputError(f"{option}: not valid JSON: {error}") from None
    end = _skip_space(text, end)
    if end != len(text):
        raise InputError(f"{option}: not valid JSON: extra text at {_place(text, end)}")
    return value


def parse_json_object(text: str, *, option: str = "--input") -> dict[str, Any]:
    """`parse_json`, for a JSON object (InputError naming `option` for any other value)."""
    value = parse_json(text, option=option)
    if not isinstance(value, dict):
        kind = json_kind(value)
        raise InputError(f"{option} must be a JSON object such as '{{\"x\": 1}}', got {kind}")
    return value


def _skip_space(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\n\r":
        index += 1
    return index


def _place(text: str, position: int) -> str:
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    return f"line {line}, column {column}" if "\n" in text else f"column {column}"


def json_kind(value: Any) -> str:
    """What a JSON value is, in words, for messages (`an array`, `a string`, `a number`)."""
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true or false"
    if value is None:
        return "null"
    return "a number"


def bind_input(playbook: Playbook, values: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments for `playbook` from a JSON object: by parameter name when every key is a parameter and
    every required parameter is given; else the whole object, for a playbook whose one parameter (or one
    required parameter, the others having defaults) is a dict (an imported graph's `Invoke($input:dict)`,
    or `Invoke($input:dict, $context:dict={})`, takes `{}` or `{"x": 1}` as its input state)."""
    names = [parameter.name for parameter in playbook.parameters]
    required = {parameter.name for parameter in playbook.parameters if parameter.default is None}
    by_name = set(values) <= set(names)
    if by_name and required <= set(values):
        return dict(values)
    lone = playbook.parameters[0] if len(playbook.parameters) == 1 else None
    if lone is None and len(required) == 1:
        lone = next(parameter for parameter in playbook.parameters if parameter.name in required)
    if lone is not None and (lone.type or "dict").split("[", 1)[0].strip() in ("dict", "Dict", "Mapping"):
        return {lone.name: dict(values)}
    if by_name:
        return dict(values)  # check_arguments names what is missing
    unknown = ", ".join(sorted(set(values) - set(names)))
    raise InputError(
        f"{playbook.name} has no parameter(s) {unknown} (parameters: {', '.join(names) or 'none'})"
    )


def argument_problems(
    playbook: Playbook, arguments: Mapping[str, Any], *, schema: Mapping[str, Any] | None = None
) -> list[str]:
    """What is wrong with `arguments` for `playbook`, each naming the argument; empty when they fit.
    `schema` is the playbook's `runtime.schema.input_schema`, when the caller keeps it."""
    problems = [
        f"{where} must be a finite number, got {value}" for where, value in _non_finite(arguments, "")
    ]
    if problems:
        return problems
    return schema_problems(dict(arguments), schema if schema is not None else input_schema(playbook))


def check_arguments(
    playbook: Playbook,
    arguments: Mapping[str, Any],
    *,
    label: str | None = None,
    schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """`arguments` checked against the playbook's parameters and converted where lossless (`4.0` for an
    `int` is 4); InputError (`<label>: invalid arguments: ...`, label defaulting to the playbook name)
    listing every problem otherwise."""
    problems = argument_problems(playbook, arguments, schema=schema)
    if problems:
        raise InputError(
            f"{label or playbook.name}: invalid arguments: {'; '.join(problems)}", tuple(problems)
        )
    types = {parameter.name: parameter.type for parameter in playbook.parameters}
    return {name: coerce(value, types.get(name)) for name, value in arguments.items()}


def _non_finite(value: Any, where: str) -> list[tuple[str, float]]:
    """Every NaN or infinity inside `value`, with where it is. Iterative: an argument nested without end
    (from an MCP client, say) must not exhaust the stack; its depth is the value budgets' to refuse."""
    if not _has_non_finite(value):  # the usual case, found without building a path for every item
        return []
    found: list[tuple[str, float]] = []
    pending: list[tuple[Any, str]] = [(value, where)]
    while pending:
        item, at = pending.pop()
        if isinstance(item, float):
            if not math.isfinite(item):
                found.append((at or "the value", item))
        elif isinstance(item, Mapping):
            pending.extend((inner, f"{at}.{key}" if at else str(key)) for key, inner in item.items())
        elif isinstance(item, (list, tuple)):
            pending.extend((inner, f"{at}[{index}]") for index, inner in enumerate(item))
    return sorted(found, key=lambda pair: pair[0])


def _has_non_finite(value: Any) -> bool:
    pending = [value]
    while pending:
        item = pending.pop()
        kind = type(item)
        if kind is str or kind is int or kind is bool or item is None:
            continue
        if kind is float:
            if not math.isfinite(item):
                return True
        elif kind is dict or isinstance(item, Mapping):
            pending.extend(item.values())
        elif kind is list or kind is tuple or isinstance(item, (list, tuple)):
            pending.extend(item)
        elif isinstance(item, float) and not math.isfinite(item):
            return True
    return False


__all__ = [
    "InputError",
    "argument_problems",
    "bind_input",
    "check_arguments",
    "parse_json",
    "parse_json_object",
]

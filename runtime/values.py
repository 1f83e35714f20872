"""Values in the runtime: a safe evaluator for the expressions PAL steps write, and declared-type checks.

`evaluate` accepts literals, `$variables`, arithmetic, comparisons, boolean logic, `in`, indexing,
f-strings and a few pure builtins (len, str, int, float, round, abs, min, max, sorted). It walks the
syntax tree itself: nothing is passed to eval or exec, and anything else raises NotEvaluable so the
runtime hands the step to the model instead.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

from pal_core.pysource import parse_python
from pal_core.step_text import python_source

_MISSING = object()


class NotEvaluable(Exception):
    """The text is not an expression the runtime can evaluate by itself."""


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "round": round,
    "abs": abs,
    "min": min,
    "max": max,
    "sorted": sorted,
}
_CONSTANT_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_MAX_POWER = 10_000


def parse_expression(text: str) -> ast.expr:
    """The syntax tree of a step expression (`$x` read as `x`); NotEvaluable when it is not Python."""
    try:
        tree = parse_python(python_source(text.strip()), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as error:
        raise NotEvaluable(str(error)) from None
    return tree.body  # type: ignore[attr-defined]


def referenced_variables(text: str) -> set[str]:
    """The `$variables` an expression reads (empty when it is not an expression)."""
    try:
        tree = parse_expression(text)
    except NotEvaluable:
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and node.id not in _FUNCTIONS}


def evaluate(text: str, variables: Mapping[str, Any]) -> Any:
    """The value of an expression over `variables` (keys without `$`)."""
    return evaluate_tree(parse_expression(text), variables)


def evaluate_tree(node: ast.AST, variables: Mapping[str, Any]) -> Any:
    """Evaluate a parsed expression; NotEvaluable for anything outside the safe subset."""
    try:
        return _eval(node, variables)
    except NotEvaluable:
        raise
    except RecursionError:
        raise NotEvaluable("expression too deep") from None
    except Exception as error:  # a type error in the program's own arithmetic: let the model handle it
        raise NotEvaluable(f"{type(error).__name__}: {error}") from None


def _eval(node: ast.AST, variables: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        value = variables.get(node.id, _MISSING)
        if value is not _MISSING:
            return value
        if node.id in _CONSTANT_NAMES:
            return _CONSTANT_NAMES[node.id]
        raise NotEvaluable(f"unknown variable ${node.id}")
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = _eval(node.left, variables)
        right = _eval(node.right, variables)
        if isinstance(node.op, ast.Pow) and isinstance(right, (int, float)) and abs(right) > _MAX_POWER:
            raise NotEvaluable("exponent too large")
        if isinstance(node.op, ast.Mult) and _huge_repeat(left, right):
            raise NotEvaluable("repetition too large")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, variables)
        if isinstance(node.op, ast.Not):
            return not operand
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return +operand
        raise NotEvaluable("unsupported unary operator")
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            result: Any = True
            for value in node.values:
                result = _eval(value, variables)
                if not result:
                    return result
            return result
        result = False
        for value in node.values:
            result = _eval(value, variables)
            if result:
                return result
        return result
    if isinstance(node, ast.Compare):
        left = _eval(node.left, variables)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _eval(comparator, variables)
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.IfExp):
        return _eval(node.body if _eval(node.test, variables) else node.orelse, variables)
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_eval(item, variables) for item in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict):
        if any(key is None for key in node.keys):
            raise NotEvaluable("dict unpacking")
        return {
            _eval(key, variables): _eval(value, variables)
            for key, value in zip(node.keys, node.values, strict=True)
        }
    if isinstance(node, ast.Subscript):
        container = _eval(node.value, variables)
        if isinstance(node.slice, ast.Slice):
            parts = [
                None if part is None else _eval(part, variables)
                for part in (node.slice.lower, node.slice.upper, node.slice.step)
            ]
            return container[slice(*parts)]
        return container[_eval(node.slice, variables)]
    if isinstance(node, ast.JoinedStr):
        return "".join(_format_part(part, variables) for part in node.values)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        if node.keywords and node.func.id not in ("sorted", "round", "min", "max"):
            raise NotEvaluable("keyword arguments")
        args = [_eval(arg, variables) for arg in node.args]
        kwargs = {kw.arg: _eval(kw.value, variables) for kw in node.keywords if kw.arg is not None}
        return _FUNCTIONS[node.func.id](*args, **kwargs)
    raise NotEvaluable(f"unsupported expression: {type(node).__name__}")


def _format_part(part: ast.AST, variables: Mapping[str, Any]) -> str:
    if isinstance(part, ast.Constant):
        return str(part.value)
    if isinstance(part, ast.FormattedValue):
        value = _eval(part.value, variables)
        spec = (
            "".join(_format_part(p, variables) for p in part.format_spec.values) if part.format_spec else ""
        )
        if part.conversion == ord("r"):
            value = repr(value)
        elif part.conversion == ord("s"):
            value = str(value)
        return format(value, spec)
    raise NotEvaluable("unsupported f-string part")


def _huge_repeat(left: Any, right: Any) -> bool:
    for sequence, count in ((left, right), (right, left)):
        if (
            isinstance(sequence, (str, list, tuple))
            and isinstance(count, int)
            and count * max(len(sequence), 1) > 1_000_000
        ):
            return True
    return False


def coerce(value: Any, declared: str | None) -> Any:
    """A value converted to its declared type where that is lossless (`"3"` -> 3 for int, 3 -> 3.0 for
    float, tuples -> lists); otherwise the value unchanged (pal_core.values.fits_type says whether it fits)."""
    if declared is None:
        return value
    base = declared.split("[", 1)[0].strip()
    if isinstance(value, tuple):
        value = list(value)
    try:
        if base == "int" and isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value.strip())
        if base == "int" and isinstance(value, float) and value.is_integer():
            return int(value)
        if base == "float" and isinstance(value, (int, str)) and not isinstance(value, bool):
            return float(value)
        if base == "str" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if base == "bool" and isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
    except ValueError:
        return value
    return value

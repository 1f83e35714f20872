"""The expressions PAL steps write, evaluated by the runtime itself, and values coerced to declared types.

`evaluate` accepts literals, `$variables`, arithmetic, bitwise operators, comparisons, boolean logic, `in`,
indexing, f-strings and a few pure builtins (len, str, int, float, round, abs, min, max, sorted). It walks
the syntax tree itself: nothing is passed to eval or exec, and anything else raises NotEvaluable so the
runtime hands the step to the model instead.

Evaluation is bounded before it runs: the size of a power, product, shift, repetition, concatenation or
formatted text is estimated from its operands and refused with ValueTooLarge (a run failure naming the
budget, never a model turn) when it would be over the value-size budget (runtime.value_limits).
"""

from __future__ import annotations

import ast
import operator
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

from pal_core.contract.fixed import ComputationFailed as ContractComputationFailed
from pal_core.contract.fixed import Evaluate, NotComputable
from pal_core.pysource import parse_python
from pal_core.step_text import python_source
from runtime.value_limits import (
    DEFAULT_VALUE_LIMITS,
    ValueLimits,
    ValueTooLarge,
    check_digits,
    check_format_spec,
    check_joined,
    check_power,
    check_printf,
    check_product,
    check_shift,
    check_size,
    check_text,
    int_text_digits,
    measure,
    rounded,
)

_MISSING = object()


class NotEvaluable(Exception):
    """The text is not an expression the runtime can evaluate by itself."""


class ComputationFailed(NotEvaluable):
    """The program's own computation fails (`1 / 0`, `"a" + 1`, a missing key): a step fails with this
    error, as a computation refused for its size does; it is never handed to the model. (A NotEvaluable, for
    the callers that only need to know the runtime has no value: a trigger's condition, a default.)"""


_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_GROWING = frozenset({ast.Add, ast.Mult, ast.Mod, ast.Pow, ast.LShift, ast.BitOr})
"""Operators whose result can be much larger than their operands: its size is estimated before they run."""
_SMALL_NUMBERS = frozenset({int, float, bool})
_BOUNDED_ON_SMALL_NUMBERS = frozenset({ast.Add, ast.Mult, ast.BitOr})
_SMALL = 2**64
"""Ints below this in size: their sums and products stay far under any digit budget (20 and 40 digits)."""
_COMPARE: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: _is(a, b),
    ast.IsNot: lambda a, b: not _is(a, b),
}


def _is(left: Any, right: Any) -> bool:
    """`is` as PAL programs mean it: identity for None, True and False (`$x is None`), equality otherwise
    (`$status is "complete"`: two equal texts are not one object in Python, but they are one value in PAL)."""
    if left is None or right is None or isinstance(left, bool) or isinstance(right, bool):
        return left is right
    return bool(left == right)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "round": rounded,
    "abs": abs,
    "min": min,
    "max": max,
    "sorted": sorted,
}
_CONSTANT_NAMES = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}


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


def evaluate(text: str, variables: Mapping[str, Any], limits: ValueLimits | None = None) -> Any:
    """The value of an expression over `variables` (keys without `$`), within the value-size `limits`
    (default: DEFAULT_VALUE_LIMITS). NotEvaluable when the runtime cannot compute it alone (words, a
    variable that is not set); ComputationFailed when the computation itself fails; ValueTooLarge when it
    could, but the result would be over the limits."""
    return evaluate_tree(parse_expression(text), variables, limits)


def evaluate_tree(node: ast.AST, variables: Mapping[str, Any], limits: ValueLimits | None = None) -> Any:
    """Evaluate a parsed expression; NotEvaluable for anything outside the safe subset, ComputationFailed
    when the computation fails, ValueTooLarge for a result over the limits."""
    try:
        return _Evaluator(variables, limits or DEFAULT_VALUE_LIMITS).value_of(node)
    except (NotEvaluable, ComputationFailed, ValueTooLarge):
        raise
    except RecursionError:
        raise NotEvaluable("expression too deep") from None
    except OverflowError:  # a float result out of range: too large, like an int over its budget
        raise ValueTooLarge(
            f"{_Description(node)} is out of the range of a float",
            budget="float_range",
            limit=sys.float_info.max,
        ) from None
    except Exception as error:  # the program's own arithmetic fails: the step fails with the error
        raise ComputationFailed(f"{type(error).__name__}: {error}") from None


class _Evaluator:
    __slots__ = ("limits", "variables")

    def __init__(self, variables: Mapping[str, Any], limits: ValueLimits) -> None:
        self.variables = variables
        self.limits = limits

    def value_of(self, node: ast.AST) -> Any:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            value = self.variables.get(node.id, _MISSING)
            if value is not _MISSING:
                return value
            if node.id in _CONSTANT_NAMES:
                return _CONSTANT_NAMES[node.id]
            raise NotEvaluable(f"unknown variable ${node.id}")
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left = self.value_of(node.left)
            right = self.value_of(node.right)
            op = type(node.op)
            if op in _GROWING and not (
                # Adding or multiplying two small numbers cannot outgrow anything: skip the estimate.
                type(left) in _SMALL_NUMBERS
                and type(right) in _SMALL_NUMBERS
                and op in _BOUNDED_ON_SMALL_NUMBERS
                and (type(left) is float or -_SMALL < left < _SMALL)
                and (type(right) is float or -_SMALL < right < _SMALL)
            ):
                self._check_binary(node, left, right)
            return _BINARY[op](left, right)
        if isinstance(node, ast.UnaryOp):
            operand = self.value_of(node.operand)
            if isinstance(node.op, ast.Not):
                return not operand
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return +operand
            if isinstance(node.op, ast.Invert):
                return ~operand
            raise NotEvaluable("unsupported unary operator")
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                result: Any = True
                for value in node.values:
                    result = self.value_of(value)
                    if not result:
                        return result
                return result
            result = False
            for value in node.values:
                result = self.value_of(value)
                if result:
                    return result
            return result
        if isinstance(node, ast.Compare):
            left = self.value_of(node.left)
            for op, comparator in zip(node.ops, node.comparators, strict=True):
                right = self.value_of(comparator)
                if not _COMPARE[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.IfExp):
            return self.value_of(node.body if self.value_of(node.test) else node.orelse)
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.value_of(item) for item in node.elts]
            self._check_built(node, items)
            return items if isinstance(node, ast.List) else tuple(items)
        if isinstance(node, ast.Dict):
            if any(key is None for key in node.keys):
                raise NotEvaluable("dict unpacking")
            mapping = {
                self.value_of(key): self.value_of(value)
                for key, value in zip(node.keys, node.values, strict=True)
            }  # type: ignore[arg-type]
            self._check_built(node, mapping)
            return mapping
        if isinstance(node, ast.Subscript):
            container = self.value_of(node.value)
            if isinstance(node.slice, ast.Slice):
                parts = [
                    None if part is None else self.value_of(part)
                    for part in (node.slice.lower, node.slice.upper, node.slice.step)
                ]
                return container[slice(*parts)]
            return container[self.value_of(node.slice)]
        if isinstance(node, ast.JoinedStr):
            text = "".join(self._format_part(part, node) for part in node.values)
            check_size(0, len(text), self.limits, _describe(node))
            return text
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
            name = node.func.id
            if node.keywords and name not in ("sorted", "round", "min", "max"):
                raise NotEvaluable("keyword arguments")
            args = [self.value_of(arg) for arg in node.args]
            kwargs = {kw.arg: self.value_of(kw.value) for kw in node.keywords if kw.arg is not None}
            if args and name in ("str", "int"):
                self._check_conversion(node, name, args[0])
            return _FUNCTIONS[name](*args, **kwargs)
        raise NotEvaluable(f"unsupported expression: {type(node).__name__}")

    def _check_binary(self, node: ast.BinOp, left: Any, right: Any) -> None:
        """Refuse an operation whose result would be over the limits, before it runs."""
        op = node.op
        if isinstance(op, ast.Pow):
            check_power(left, right, self.limits, _describe(node))
        elif isinstance(op, ast.Mult):
            check_product(left, right, self.limits, _describe(node))
        elif isinstance(op, ast.LShift):
            check_shift(left, right, self.limits, _describe(node))
        elif isinstance(op, (ast.Add, ast.BitOr)):
            check_joined(left, right, self.limits, _describe(node))
        elif (
            isinstance(op, ast.Mod)
            and isinstance(left, str)
            and not check_printf(left, right, self.limits, _describe(node))
        ):
            raise NotEvaluable("a %-format taking its width from the arguments")

    def _check_built(self, node: ast.AST, value: Any) -> None:
        items, characters = measure(value, self.limits)
        check_size(items, characters, self.limits, _describe(node))

    def _check_conversion(self, node: ast.Call, name: str, value: Any) -> None:
        if name == "str":
            check_text(value, self.limits, _describe(node))
        elif isinstance(value, str) and self.limits.max_int_digits is not None:
            check_digits(int_text_digits(value), self.limits, _describe(node))

    def _format_part(self, part: ast.AST, whole: ast.JoinedStr) -> str:
        if isinstance(part, ast.Constant):
            return str(part.value)
        if isinstance(part, ast.FormattedValue):
            value = self.value_of(part.value)
            spec = (
                "".join(self._format_part(p, whole) for p in part.format_spec.values)
                if part.format_spec
                else ""
            )
            if part.conversion == ord("r"):
                check_text(value, self.limits, _describe(whole))
                value = repr(value)
            elif part.conversion == ord("s"):
                check_text(value, self.limits, _describe(whole))
                value = str(value)
            check_format_spec(value, spec, self.limits, _describe(whole))
            return format(value, spec)
        raise NotEvaluable("unsupported f-string part")


class _Description:
    """`the result of $a ** $b`, made only when an error message needs it (checks run on every operation)."""

    __slots__ = ("node",)

    def __init__(self, node: ast.AST) -> None:
        self.node = node

    def __str__(self) -> str:
        text = ast.unparse(self.node)
        names = {
            n.id
            for n in ast.walk(self.node)
            if isinstance(n, ast.Name) and n.id not in _FUNCTIONS and n.id not in _CONSTANT_NAMES
        }
        for name in sorted(names, key=len, reverse=True):
            text = re.sub(rf"(?<![\w$]){re.escape(name)}\b", f"${name}", text)
        if len(text) > 80:
            text = text[:79] + "…"
        return f"the result of `{text}`"


_describe = _Description


def coerce(value: Any, declared: str | None, limits: ValueLimits | None = None) -> Any:
    """A value converted to its declared type where that is lossless (`"3"` -> 3 for int, 3 -> 3.0 for
    float, tuples -> lists); otherwise the value unchanged (pal_core.declared_types.fits_type says whether it fits).
    Digits meant as an int that are over the digit budget (`limits`, else the most Python converts) raise
    ValueTooLarge: such a value is refused, never kept as text in an int variable."""
    if declared is None:
        return value
    base = declared.split("[", 1)[0].strip()
    if isinstance(value, tuple):
        value = list(value)
    if base == "int" and isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return _int_from_digits(value, limits)
    try:
        if base == "int" and isinstance(value, float) and value.is_integer():
            return int(value)
        if base == "float" and isinstance(value, (int, str)) and not isinstance(value, bool):
            return float(value)
        if base == "str" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if base == "bool" and isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
    except (ValueError, OverflowError):
        return value
    return value


def _int_from_digits(text: str, limits: ValueLimits | None) -> int:
    if limits is not None:
        check_digits(int_text_digits(text), limits, "the int value")
    try:
        return int(text.strip())
    except ValueError:  # more digits than Python converts (sys.set_int_max_str_digits)
        limit = sys.get_int_max_str_digits()
        raise ValueTooLarge(
            f"the int value has {int_text_digits(text)} digits, more than the {limit} Python converts",
            budget="max_int_digits",
            limit=limit,
        ) from None


def contract_evaluator(limits: ValueLimits | None) -> Evaluate:
    """The evaluator a turn's description carries (pal_core.contract.fixed.Evaluate): this module's, with its
    errors as the verifier reads them. A value over the budgets is not computed while verifying (the runtime
    refuses it when it runs the step)."""

    def evaluate_for_contract(text: str, values: Mapping[str, Any]) -> Any:
        try:
            return evaluate(text, values, limits)
        except ComputationFailed as error:
            raise ContractComputationFailed(str(error)) from None
        except NotEvaluable as error:
            raise NotComputable(str(error)) from None
        except ValueTooLarge as error:
            raise NotComputable(str(error)) from None

    return evaluate_for_contract

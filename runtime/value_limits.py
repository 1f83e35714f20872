"""The size budget of values: digits of an int, characters of text, items of a collection.

Every value a run stores (a step's result, a model's `Var` line, a call's result, a parameter) is checked
against `ValueLimits` (RunLimits.max_int_digits, max_string_length, max_items), and the expression
evaluator estimates the size of a power, product, shift, repetition, concatenation or formatted text from
its operands *before* computing it: anything over the budget is refused with `ValueTooLarge`, so no step
can start a computation whose result would not fit (Python's big ints make `10 ** 10 ** 9` an hours-long
job, `[0] * 10 ** 12` an out-of-memory one).

Sizes are counted as a value would be printed: a string counts its characters, an int its decimal
digits, and a list or dict the items it holds, nested ones included (each time they appear), and the
characters of all its strings and numbers together. Walks stop as soon as a limit is passed, so checking
costs at most the limit, never the size of a runaway value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from runtime.errors import BudgetExceeded

_LOG10_2 = math.log10(2)
MAX_NESTING = 100
"""How deep lists and dicts may nest in one value (a fixed limit: deeper values cannot be printed,
compared or sent as JSON without Python's recursion limit, and no real value comes near)."""
_SCALAR_CHARACTERS = 8
"""What a float, bool, None or other object counts toward the characters of a value."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ValueLimits:
    """How large one value may be (None: no limit)."""

    max_int_digits: int | None = 4300
    """Decimal digits of an int (4300 is also the most Python converts to text by default)."""
    max_string_length: int | None = 1_000_000
    """Characters of a string, and of all the strings and numbers of one list or dict together."""
    max_items: int | None = 100_000
    """Items of a list, tuple or dict, nested ones included."""


DEFAULT_VALUE_LIMITS = ValueLimits()
"""The limits applied when a caller gives none."""


class ValueTooLarge(BudgetExceeded):
    """A value, or the result of an operation, would be larger than the run's value-size budget."""


def int_digits(number: int) -> int:
    """The decimal digits of `number` (exact up to one, from its bit length: no conversion to text)."""
    bits = abs(number).bit_length()
    return int(bits * _LOG10_2) + 1 if bits else 1


def check_digits(digits: float, limits: ValueLimits, what: str) -> None:
    """ValueTooLarge when an int of `digits` digits is over the limit; `what` names it."""
    limit = limits.max_int_digits
    if limit is not None and digits > limit:
        raise ValueTooLarge(
            f"{what} would have about {_count(digits)} digits, more than the {limit} allowed",
            budget="max_int_digits",
            limit=limit,
        )


def check_size(items: float, characters: float, limits: ValueLimits, what: str) -> None:
    """ValueTooLarge when a value of that many items and characters is over the limits."""
    if limits.max_items is not None and items > limits.max_items:
        raise ValueTooLarge(
            f"{what} would hold about {_count(items)} items, more than the {limits.max_items} allowed",
            budget="max_items",
            limit=limits.max_items,
        )
    if limits.max_string_length is not None and characters > limits.max_string_length:
        raise ValueTooLarge(
            f"{what} would have about {_count(characters)} characters, more than the "
            f"{limits.max_string_length} allowed",
            budget="max_string_length",
            limit=limits.max_string_length,
        )


def check_value(value: Any, limits: ValueLimits, what: str) -> None:
    """ValueTooLarge when `value` is over the limits (cheap for numbers and strings)."""
    kind = type(value)
    if kind is int:
        if limits.max_int_digits is not None and value.bit_length() > limits.max_int_digits * 3:
            check_digits(int_digits(value), limits, what)
        return
    if kind is str:
        if limits.max_string_length is not None and len(value) > limits.max_string_length:
            check_size(0, len(value), limits, what)
        return
    if kind is float or kind is bool or value is None:
        return
    items, characters = measure(value, limits, what)
    check_size(items, characters, limits, what)


def measure(value: Any, limits: ValueLimits, what: object = "the value") -> tuple[int, int]:
    """(items, characters) of a value, counted as it would be printed. Stops early once over a limit (the
    counts returned are then over it, not exact); ValueTooLarge for an int over the digit limit, or for
    lists and dicts nested more than MAX_NESTING levels."""
    max_items = limits.max_items if limits.max_items is not None else math.inf
    max_characters = limits.max_string_length if limits.max_string_length is not None else math.inf
    items = characters = 0
    pending: list[tuple[Any, int]] = [(value, 0)]
    while pending:
        current, depth = pending.pop()
        kind = type(current)
        if kind is str:  # exact types first: most of a large value is strings in dicts and lists
            characters += len(current)
        elif (kind is dict or kind is list) and depth < MAX_NESTING:
            items += len(current)
            if items > max_items:
                break
            if kind is dict:
                for key, item in current.items():
                    if type(key) is str:
                        characters += len(key)
                    else:
                        pending.append((key, depth + 1))
                    if type(item) is str:
                        characters += len(item)
                    else:
                        pending.append((item, depth + 1))
            else:
                for item in current:
                    if type(item) is str:
                        characters += len(item)
                    else:
                        pending.append((item, depth + 1))
        elif isinstance(current, str):
            characters += len(current)
        elif isinstance(current, bool) or current is None or isinstance(current, float):
            characters += _SCALAR_CHARACTERS
        elif isinstance(current, int):
            digits = int_digits(current)
            check_digits(digits, limits, f"a number in {what}")
            characters += digits
        elif isinstance(current, (list, tuple, dict)):
            if depth >= MAX_NESTING:
                raise ValueTooLarge(
                    f"{what} nests lists and dicts more than {MAX_NESTING} levels deep",
                    budget="max_nesting",
                    limit=MAX_NESTING,
                )
            items += len(current)
            if items > max_items:
                break
            if isinstance(current, dict):
                pending.extend((key, depth + 1) for key in current)
                pending.extend((item, depth + 1) for item in current.values())
            else:
                pending.extend((item, depth + 1) for item in current)
        else:  # another Python object (an artifact, a playbook's own type): its text is its own business
            characters += _SCALAR_CHARACTERS
        if characters > max_characters:
            break
    return items, characters


# --- estimates of operations, before they run --------------------------------------------------------


def check_power(base: Any, exponent: Any, limits: ValueLimits, what: str) -> None:
    """Refuse an int power whose result would be over the digit limit (float powers are bounded by
    the float range and fail fast on overflow)."""
    if not (isinstance(base, int) and isinstance(exponent, int)) or exponent <= 1:
        return
    magnitude = abs(base)
    if magnitude <= 1:
        return
    check_digits(exponent * math.log10(magnitude), limits, what)


def check_product(left: Any, right: Any, limits: ValueLimits, what: str) -> None:
    """Refuse a product of ints, or a repetition of a string, list or tuple, that would be too large."""
    if isinstance(left, int) and isinstance(right, int):
        if limits.max_int_digits is not None:
            check_digits(int_digits(left) + int_digits(right) - 1, limits, what)
        return
    for sequence, count in ((left, right), (right, left)):
        if isinstance(sequence, (str, list, tuple)) and isinstance(count, int) and count > 1:
            if isinstance(sequence, str):
                check_size(0, len(sequence) * count, limits, what)
            else:
                items, characters = measure(sequence, limits)
                check_size(items * count, characters * count, limits, what)
            return


def check_shift(value: Any, count: Any, limits: ValueLimits, what: str) -> None:
    """Refuse `value << count` when the result would be over the digit limit."""
    if isinstance(value, int) and isinstance(count, int) and count > 0 and value:
        check_digits((abs(value).bit_length() + count) * _LOG10_2, limits, what)


def check_joined(left: Any, right: Any, limits: ValueLimits, what: str) -> None:
    """Refuse a concatenation (`+` of strings, lists or tuples, `|` of dicts) that would be too large."""
    if isinstance(left, str) and isinstance(right, str):
        check_size(0, len(left) + len(right), limits, what)
    elif isinstance(left, (list, tuple, dict)) and isinstance(right, (list, tuple, dict)):
        left_items, left_characters = measure(left, limits)
        right_items, right_characters = measure(right, limits)
        check_size(left_items + right_items, left_characters + right_characters, limits, what)


def text_size(value: Any, limits: ValueLimits) -> int:
    """About how many characters `str(value)` has (an overestimate for containers: quotes, separators)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int_digits(value)
    items, characters = measure(value, limits)
    return characters + 4 * items + 2


def check_text(value: Any, limits: ValueLimits, what: str) -> None:
    """Refuse converting `value` to text when the text would be too long."""
    if isinstance(value, (float, bool)) or value is None:
        return
    check_size(0, text_size(value, limits), limits, what)


_FORMAT_NUMBER = re.compile(r"\d+")


def check_format_spec(value: Any, spec: str, limits: ValueLimits, what: str) -> None:
    """Refuse `format(value, spec)` when a width or precision in `spec`, or the value's text, is too long."""
    longest = max((int(number) for number in _FORMAT_NUMBER.findall(spec)), default=0)
    check_size(0, max(longest, text_size(value, limits) if not isinstance(value, float) else 0), limits, what)


_PRINTF_FIELD = re.compile(r"%(?:\([^)]*\))?[#0\- +]*(\*|\d+)?(?:\.(\*|\d+))?")


def check_printf(template: str, arguments: Any, limits: ValueLimits, what: str) -> bool:
    """Refuse `template % arguments` when its widths or its arguments' text are too long. False when the
    template takes a width from its arguments (`%*d`), which the evaluator does not estimate."""
    longest = 0
    for match in _PRINTF_FIELD.finditer(template):
        for number in match.groups():
            if number == "*":
                return False
            if number:
                longest = max(longest, int(number))
    size = len(template) + text_size(arguments, limits) + longest
    check_size(0, size, limits, what)
    return True


def rounded(value: Any, ndigits: Any) -> Any:
    """`round(value, ndigits)` without Python's `10 ** -ndigits` for ints rounded to more digits than
    they have (which takes hours for ndigits = -10**9): that result is 0."""
    if (
        isinstance(value, int)
        and not isinstance(value, bool)
        and isinstance(ndigits, int)
        and ndigits < 0
        and -ndigits > int_digits(value) + 1
    ):
        return 0
    return round(value, ndigits)


def int_text_digits(text: str) -> int:
    """About the digits `int(text)` would read (surrounding spaces and a sign not counted)."""
    return len(text.strip().lstrip("+-"))


def _count(number: float) -> str:
    return f"{number:,.0f}" if number < 1e15 else f"{number:.3g}"

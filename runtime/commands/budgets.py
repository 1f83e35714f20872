"""The budget options shared by `pal run` and `pal mcp serve`: steps, wall-clock seconds and value sizes
(RunLimits; docs/security.md). Each takes a positive number, or `none` for no limit."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from runtime.budget import DEFAULT_MAX_SECONDS, DEFAULT_MAX_STEPS
from runtime.value_limits import DEFAULT_VALUE_LIMITS

_DEFAULTS: dict[str, Any] = {
    "max_steps": DEFAULT_MAX_STEPS,
    "max_seconds": DEFAULT_MAX_SECONDS,
    "max_int_digits": DEFAULT_VALUE_LIMITS.max_int_digits,
    "max_string_length": DEFAULT_VALUE_LIMITS.max_string_length,
    "max_items": DEFAULT_VALUE_LIMITS.max_items,
}

BUDGET_OPTIONS: tuple[tuple[str, str, Callable[[str], Any], str], ...] = (
    ("max_steps", "N", int, "steps executed (a model turn counts one)"),
    ("max_seconds", "SECONDS", float, "wall-clock seconds, not counting time spent waiting for the user"),
    ("max_int_digits", "N", int, "decimal digits of any int computed or stored"),
    ("max_string_length", "N", int, "characters of any string (and of all the text of one list or dict)"),
    ("max_items", "N", int, "items of any list or dict, nested ones included"),
)
"""(RunLimits field, metavar, number type, what it bounds): one option `--max-...` each."""


def add_budget_arguments(parser: argparse.ArgumentParser, *, scope: str) -> None:
    """Add `--max-steps`, `--max-seconds`, `--max-int-digits`, `--max-string-length`, `--max-items`;
    `scope` says what one budget covers ("the run", "each tool call")."""
    group = parser.add_argument_group(
        "budgets", f"limits of {scope}; a run past one fails with an error naming it (`none`: no limit)"
    )
    for field, metavar, number, what in BUDGET_OPTIONS:
        default = _DEFAULTS[field]
        group.add_argument(
            "--" + field.replace("_", "-"),
            dest=field,
            type=_budget_value(field, number),
            default=default,
            metavar=metavar,
            help=f"{what} (default: {default:g})"
            if isinstance(default, float)
            else f"{what} (default: {default})",
        )


def budget_limits(args: argparse.Namespace) -> dict[str, Any]:
    """The RunLimits fields the budget options set, to pass as `RunLimits(**budget_limits(args))`. A
    digit budget above what Python converts to text (4300 digits by default) raises that limit for the
    process, so the numbers it allows can be printed: the budget, checked before computing, protects
    instead."""
    values = {field: getattr(args, field) for field, *_ in BUDGET_OPTIONS}
    digits = values["max_int_digits"]
    if digits is None:
        sys.set_int_max_str_digits(0)
    elif digits > sys.get_int_max_str_digits() > 0:
        sys.set_int_max_str_digits(digits)
    return values


def _budget_value(field: str, number: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        if text.strip().lower() == "none":
            return None
        try:
            value = number(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive number or `none`, got {text!r}") from None
        if not value > 0 or value != value or value == float("inf"):
            raise argparse.ArgumentTypeError(f"expected a positive number or `none`, got {text!r}")
        return value

    parse.__name__ = field  # argparse names the option's type in its messages
    return parse

"""Random arithmetic over huge operands (issue 13, finding 2): every expression the evaluator is given
finishes within its value-size budget or is refused before it runs; it never runs unbounded.

The expressions are evaluated in a worker process: a runaway big-int operation holds the GIL, so nothing
in the test's own process could interrupt it. The test waits for each answer with a generous bound and,
past it, kills the worker and fails naming the expression: a regression fails instead of hanging CI.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.expressions import NotEvaluable, evaluate
from runtime.value_limits import DEFAULT_VALUE_LIMITS, ValueTooLarge, measure

ANSWER_SECONDS = 60
"""How long one expression may take in the worker: far more than any takes on a busy machine (they take
milliseconds); only a computation without bound gets there."""

OPERANDS = {
    "huge": 10**4000 - 7,
    "negative_huge": -(2**13000) + 1,
    "big": 99_999_999_999,
    "twenty": 12_345_678_901_234_567_890,
    "small": 7,
    "zero": 0,
    "one": 1,
    "minus_one": -1,
    "exponent": 99_999,
    "shift": 50_000_000,
    "half": 0.5,
    "large_float": 1e300,
    "text": "ab",
    "long_text": "x" * 500_000,
    "items": [1, 2, 3],
    "many_items": list(range(60_000)),
    "nested": [[0] * 100] * 100,
}
OPERATORS = ["+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^"]
GROWING = ["**", "*", "<<", "+"]
"""Drawn as often as all the others together: the operators that make values large."""
HUGE = [
    "$huge",
    "$negative_huge",
    "$big",
    "$twenty",
    "$exponent",
    "$shift",
    "$long_text",
    "$many_items",
    "$nested",
]


def expressions(depth: int) -> st.SearchStrategy[str]:
    leaf = st.one_of(
        st.sampled_from(HUGE),
        st.sampled_from([f"${name}" for name in OPERANDS]),
        st.integers(min_value=-(10**30), max_value=10**30).map(str),
        st.sampled_from(["9999", "10000", "123456789", "2", "-3", '"xy"', "[0]", "[[1, 2]]"]),
    )
    if depth == 0:
        return leaf
    inner = expressions(depth - 1)
    operator = st.one_of(st.sampled_from(GROWING), st.sampled_from(OPERATORS))
    return st.one_of(
        st.tuples(inner, operator, inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        leaf,
        inner.map(lambda e: f"str({e})"),
        inner.map(lambda e: f'f"{{{e}}}"'),
        st.tuples(inner, inner).map(lambda t: f"[{t[0]}, {t[1]}]"),
    )


def _evaluate_forever(connection: Connection) -> None:
    """The worker: evaluate each expression received, answer with what came of it."""
    while True:
        expression = connection.recv()
        try:
            value = evaluate(expression, OPERANDS)
        except (ValueTooLarge, NotEvaluable) as error:
            connection.send(("refused", type(error).__name__))
            continue
        except Exception as error:
            connection.send(("raised", repr(error)))
            continue
        connection.send(("value", *measure(value, DEFAULT_VALUE_LIMITS)))


class Worker:
    """A process evaluating expressions; `evaluate` fails the test when an answer takes too long."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.connection, child = context.Pipe()
        self.process = context.Process(target=_evaluate_forever, args=(child,), daemon=True)
        self.process.start()

    def evaluate(self, expression: str) -> tuple[Any, ...]:
        self.connection.send(expression)
        if not self.connection.poll(ANSWER_SECONDS):
            self.close()
            pytest.fail(f"evaluating {expression!r} did not finish within {ANSWER_SECONDS} s: unbounded")
        return self.connection.recv()

    def close(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(10)


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    evaluator = Worker()
    try:
        yield evaluator
    finally:
        evaluator.close()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(expression=expressions(3))
def test_random_arithmetic_over_huge_operands_is_bounded(worker: Worker, expression: str) -> None:
    outcome = worker.evaluate(expression)
    assert outcome[0] in ("value", "refused"), f"{expression!r}: {outcome}"
    if outcome[0] == "value":
        _, items, characters = outcome
        assert items <= DEFAULT_VALUE_LIMITS.max_items  # type: ignore[operator]
        assert characters <= DEFAULT_VALUE_LIMITS.max_string_length  # type: ignore[operator]


@pytest.mark.parametrize(
    "expression",
    [
        "$huge ** $exponent",
        "($huge * $huge) * $huge",
        "$big ** $exponent",
        "$twenty ** 9999",
        "1 << $shift",
        "$long_text * 3",
        "$many_items * 2",
        "[$nested] * 20",
        "str([$long_text, $long_text, $long_text])",
        'f"{$small:>{$shift}}"',
    ],
)
def test_the_findings_of_the_issue_are_refused(worker: Worker, expression: str) -> None:
    assert worker.evaluate(expression) == ("refused", "ValueTooLarge")


def _measured_plainly(value, scalar: int) -> tuple[int, int]:
    """What runtime.value_limits.measure counts, written the obvious way (the reference)."""
    from runtime.value_limits import int_digits

    if isinstance(value, str):
        return 0, len(value)
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return 0, scalar
    if isinstance(value, int):
        return 0, int_digits(value)
    parts = [*value.keys(), *value.values()] if isinstance(value, dict) else list(value)
    items, characters = len(value), 0
    for part in parts:
        inner_items, inner_characters = _measured_plainly(part, scalar)
        items += inner_items
        characters += inner_characters
    return items, characters


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6),
    max_leaves=60,
)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_the_size_of_a_value_is_counted_as_the_plain_reference_counts_it(value) -> None:
    from runtime.value_limits import _SCALAR_CHARACTERS, ValueLimits, measure

    unlimited = ValueLimits(max_items=None, max_string_length=None, max_int_digits=None)
    assert measure(value, unlimited) == _measured_plainly(value, _SCALAR_CHARACTERS)

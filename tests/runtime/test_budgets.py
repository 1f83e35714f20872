"""Budgets (issue 13): every run is bounded in steps, wall-clock time, model calls and value sizes; a
busy playbook gives the event loop its turns; a computation refused for its size fails, never becomes a
model turn. Each test reproduces one finding of the issue."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import anyio
import pytest

from pal_core.parser import parse
from pal_core.writer import write
from runtime.api import run_playbook, run_program
from runtime.budget import Budget
from runtime.cli import main
from runtime.errors import BudgetExceeded, RunError
from runtime.execution import MAX_CALL_DEPTH
from runtime.models import ScriptedModel
from runtime.program_run import RunLimits
from runtime.value_limits import ValueTooLarge

pytestmark = pytest.mark.anyio

LOOP = parse(
    """# Loop
Counts up forever on the fast path.

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:EXE $i = 0
02:CND While $i >= 0
  02.01:EXE $i = $i + 1
  02.02:JMP 02
03:RET
""",
    file="loop.pal",
)

POWER = parse(
    """# Calc
Computes.

## Power($base:int, $exp:int) -> int
metadata:
  public: true
---
Raises a number to a power.
### Steps
01:EXE $r:int = $base ** $exp
02:RET $r
""",
    file="power.pal",
)


# --- finding 1: a loop on the fast path ends at the step budget ----------------------------------------


async def test_a_loop_that_never_ends_stops_at_the_step_budget_naming_it() -> None:
    with anyio.fail_after(60):
        result = await run_program(LOOP, limits=RunLimits(max_steps=500))
    assert result.status == "error"
    error = result.error
    assert isinstance(error, BudgetExceeded) and error.budget == "max_steps"
    assert (error.agent, error.playbook) == ("Loop", "Main")
    assert error.line in ("02", "02.01", "02.02")
    assert str(error).startswith(f"Loop:Main:{error.line}: 500 steps executed")
    assert str(error).endswith("(budget max_steps=500; raise it with --max-steps)")
    assert result.variables["Loop:1000"]["i"] in (166, 167)  # three steps a turn of the loop


async def test_the_default_budgets_stop_a_runaway_loop() -> None:
    with anyio.fail_after(120):
        result = await run_program(LOOP)
    assert isinstance(result.error, BudgetExceeded) and result.error.budget == "max_steps"
    assert RunLimits().max_steps == 100_000


async def test_a_spinning_playbook_gives_other_tasks_their_turn_and_can_be_cancelled() -> None:
    other_task_ran = asyncio.Event()
    with anyio.fail_after(60):
        spinning = asyncio.create_task(run_playbook(LOOP, "Main", limits=RunLimits(max_steps=None)))
        # Scheduled after the spin started: it runs only if the spinning playbook gives the loop a turn.
        asyncio.get_running_loop().call_soon(other_task_ran.set)
        await other_task_ran.wait()
        assert not spinning.done()
        spinning.cancel()
        with pytest.raises(asyncio.CancelledError):
            await spinning


async def test_a_call_that_awaits_forever_ends_at_the_time_budget() -> None:
    program = parse(
        """# Waiter
Waits.

```python
import asyncio


@playbook
async def Forever() -> None:
    await asyncio.Event().wait()
```

## Main() -> None
### Steps
01:EXE Forever()
02:RET
"""
    )
    with anyio.fail_after(60), pytest.raises(BudgetExceeded) as caught:
        await run_playbook(program, "Main", limits=RunLimits(max_seconds=0.2))
    assert caught.value.budget == "max_seconds"
    assert "(budget max_seconds=0.2; raise it with --max-seconds)" in str(caught.value)
    assert caught.value.playbook == "Main"


async def test_time_spent_waiting_for_the_user_does_not_count() -> None:
    budget = Budget(RunLimits(max_seconds=0.5))
    answered = asyncio.Event()
    with anyio.fail_after(30):
        async with budget.bound():
            assert budget.deadline is not None
            before = budget.deadline
            with budget.waiting_for_user():
                # The user takes longer than the whole budget to answer.
                asyncio.get_running_loop().call_later(1.0, answered.set)
                await answered.wait()
            assert budget.deadline > before + 0.9


async def test_a_playbook_calling_itself_without_end_stops_with_a_clear_error() -> None:
    program = parse(
        """# Rec
Recurses.

## Main() -> None
### Steps
01:EXE Main()
02:RET
"""
    )
    with anyio.fail_after(60), pytest.raises(RunError) as caught:
        await run_playbook(program, "Main")
    assert str(caught.value).startswith(
        f"Rec:Main:01: playbook calls nested more than {MAX_CALL_DEPTH} deep (a playbook that calls itself"
    )


# --- finding 2: arithmetic is bounded before it runs, and a refused computation fails -----------------


async def test_a_huge_power_fails_naming_the_budget_and_never_reaches_the_model() -> None:
    model = ScriptedModel(['`Step["Power:01:EXE"]` computed\n`Var[$r, 1]`\nyld call'])
    with anyio.fail_after(60), pytest.raises(ValueTooLarge) as caught:
        await run_playbook(POWER, "Power", base=99999999999, exp=99999, model=model)
    assert model.calls == 0
    assert str(caught.value) == (
        "Calc:Power:01: the result of `$base ** $exp` would have about 1,099,989 digits, more than the 4300 "
        "allowed (budget max_int_digits=4300; raise it with --max-int-digits)"
    )


async def test_powers_within_the_budget_are_computed() -> None:
    assert await run_playbook(POWER, "Power", base=2, exp=100) == 2**100
    with pytest.raises(ValueError, match=r"call sys.set_int_max_str_digits\(20000\) first"):
        RunLimits(max_int_digits=20_000)
    printable = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(20_000)
    try:
        raised = RunLimits(max_int_digits=20_000)
        assert await run_playbook(POWER, "Power", base=10, exp=10_000, limits=raised) == 10**10_000
    finally:
        sys.set_int_max_str_digits(printable)


@pytest.mark.parametrize(
    ("expression", "budget"),
    [
        ("(10 ** 10000) ** 10000", "max_int_digits"),
        ("12345678901234567890 ** 9999", "max_int_digits"),
        ("1 << 100000000", "max_int_digits"),
        ('"ab" * 100000000', "max_string_length"),
        ("[[0] * 1000] * 1000", "max_items"),
        ('f"{1:>100000000}"', "max_string_length"),
        ('"%0100000000d" % 5', "max_string_length"),
    ],
)
async def test_each_growing_operation_is_refused_above_its_budget(expression: str, budget: str) -> None:
    program = parse(f"# Calc\nComputes.\n\n## Main() -> None\n### Steps\n01:EXE $r = {expression}\n02:RET\n")
    model = ScriptedModel([])
    with anyio.fail_after(60), pytest.raises(ValueTooLarge) as caught:
        await run_playbook(program, "Main", model=model)
    assert caught.value.budget == budget
    assert caught.value.line == "01"
    assert model.calls == 0


# --- finding 7: a model-written value is held to the same budget ----------------------------------------


async def test_a_5000_digit_int_written_by_the_model_is_refused_not_stored_as_text() -> None:
    program = parse(
        """# Reader
Reads numbers.

## Main() -> int
### Steps
01:EXE $n:int = the number the user has in mind
02:RET $n
"""
    )
    digits = "7" * 5000
    model = ScriptedModel([f'`Step["Main:01:EXE"]` the number\n`Var[$n, {digits}]`\nyld call'])
    with anyio.fail_after(60), pytest.raises(ValueTooLarge) as caught:
        await run_playbook(program, "Main", model=model)
    assert caught.value.budget == "max_int_digits"
    assert "has 5000 digits, more than the 4300 Python converts" in str(caught.value)
    assert caught.value.line == "01"


async def test_values_stored_by_any_path_are_checked() -> None:
    program = parse(
        """# Maker
Makes big things.

```python
@playbook
async def Big() -> list:
    return list(range(200_000))
```

## Main() -> None
### Steps
01:EXE $items = Big()
02:RET
"""
    )
    with anyio.fail_after(60), pytest.raises(ValueTooLarge) as caught:
        await run_playbook(program, "Main")
    assert caught.value.budget == "max_items"
    assert caught.value.what.startswith("the result of Big would hold about 200,000 items")
    with pytest.raises(ValueTooLarge, match=r"^argument text of Main would have about 2,000,000 characters"):
        await run_playbook(
            parse("# T\nT.\n\n## Main($text:str) -> None\n### Steps\n01:RET\n"), "Main", text="x" * 2_000_000
        )
    writer = parse("# W\nWrites.\n\n## Main() -> None\n### Steps\n01:EXE $s = a very long text\n02:RET\n")
    long_text = "x" * 1_200_000
    # A model's value over the budget is a V12 violation, found before anything of the answer is applied:
    # the model is asked again, and after the retries the run stops naming the budget and its option.
    answer = f'`Step["Main:01:EXE"]` wrote it\n`Var[$s, "{long_text}"]`\nyld call'
    model = ScriptedModel([answer] * 3)
    with pytest.raises(RunError) as rejected:
        await run_playbook(writer, "Main", model=model)
    assert model.calls == 3
    (violation,) = rejected.value.violations
    assert violation.startswith("V12 answer line 2: $s would have about 1,200,000 characters")
    assert "--max-string-length" in violation


def test_budgets_are_validated() -> None:
    with pytest.raises(ValueError, match=r"RunLimits.max_steps must be a whole number >= 1 or None, not 0"):
        RunLimits(max_steps=0)
    with pytest.raises(ValueError, match=r"RunLimits.max_seconds must be a positive finite number"):
        RunLimits(max_seconds=-1)
    assert RunLimits(max_steps=None, max_items=None).value_limits.max_items is None


async def test_a_float_out_of_range_fails_instead_of_becoming_a_model_turn() -> None:
    program = parse(
        "# Calc\nComputes.\n\n## Main($x:float) -> float\n### Steps\n01:EXE $r = $x ** 99999\n02:RET $r\n"
    )
    model = ScriptedModel([])
    with anyio.fail_after(60), pytest.raises(ValueTooLarge) as caught:
        await run_playbook(program, "Main", x=1e10, model=model)
    assert str(caught.value) == (
        "Calc:Main:01: the result of `$x ** 99999` is out of the range of a float (a fixed limit of 1.79769e+308)"
    )
    assert model.calls == 0


# --- the command line ----------------------------------------------------------------------------------


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_pal_run_stops_a_runaway_loop_at_its_step_budget(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _write(tmp_path, "loop.pal", write(LOOP))
    no_answers = _write(tmp_path, "none.jsonl", "")
    status = main(
        ["run", str(program), "--no-input", "--model", f"scripted:{no_answers}", "--max-steps", "900"]
    )
    err = capsys.readouterr().err
    assert status == 1
    assert "error: Loop:Main:02" in err
    assert (
        "900 steps executed, and the next one would be over the budget (budget max_steps=900; raise it with --max-steps)"
        in err
    )


def test_pal_run_refuses_a_huge_power_with_the_option_that_raises_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _write(tmp_path, "power.pal", write(POWER))
    no_answers = _write(tmp_path, "none.jsonl", "")
    arguments = ["run", str(program), "--model", f"scripted:{no_answers}", "--input"]
    assert main([*arguments, '{"base": 12345678901234567890, "exp": 9999}']) == 1
    assert "budget max_int_digits=4300; raise it with --max-int-digits" in capsys.readouterr().err
    assert main([*arguments, '{"base": 7, "exp": 3}']) == 0
    assert capsys.readouterr().out.strip() == "343"


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--max-steps", "0", "argument --max-steps: expected a positive number or `none`, got '0'"),
        ("--max-seconds", "soon", "argument --max-seconds: expected a positive number or `none`, got 'soon'"),
        ("--max-items", "-5", "argument --max-items: expected a positive number or `none`, got '-5'"),
    ],
)
def test_budget_options_refuse_what_is_not_a_budget(
    option: str, value: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = _write(tmp_path, "loop.pal", write(LOOP))
    with pytest.raises(SystemExit) as exited:
        main(["run", str(program), option, value])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err

"""The violation suite: for each rule an answer that breaks it is rejected, nothing of it is applied, the
re-ask names the rule, and after N rejected answers in a row the playbook stops with a RunError."""

from __future__ import annotations

import anyio
import pytest

from pal_core.parser import parse
from runtime.errors import RunError
from runtime.execution import Execution
from runtime.models import ScriptedModel
from runtime.program_run import ProgramRun, RunLimits
from runtime.trace import Tracer

pytestmark = pytest.mark.anyio

PROGRAM = parse(
    """# Shop
Sells things.

## Main($limit:int=3) -> float
### Triggers
T1:BGN At the beginning
T2:CND When the user asks for a refund
### Steps
01:QUE Say(user, Greet the user)
02:EXE $count:int = 2
03:CND If the user seems happy
  03.01:QUE Say(user, Say something nice)
04:QUE $price:float = Price($count)
05:YLD for call
06:RET $price

## Price($n:int) -> float
### Steps
01:RET $n * 2.5

## Describe() -> str
### Steps
01:RET a one-line description of the shop
""",
    file="shop.pal",
)

GOOD_01 = 'recap – start\nplan – greet\n`Step["Main:01:QUE"]` `Say("user", "Welcome!")`\nyld call'
GOOD_03 = (
    "recap – greeted\nplan – price the order\n"
    '`Step["Main:03:CND"]` the user is neutral, skipping\n'
    '`Step["Main:04:QUE"]` `$price = Price($count)`\n'
    '`Step["Main:05:YLD"]` yld call'
)
# Every bad answer also tries to change state, so the test can see that nothing of it was applied.
LEAK = '`Say("user", "LEAKED")`'
BAD_AT_01 = {
    "V01": f'`Step["Nope:01:QUE"]` {LEAK}\nyld call',
    "V02": f'`Step["Main:01:EXE"]` {LEAK}\nyld call',
    "V03": '`Step["Main:02:EXE"]` `Var[$leaked, 1]`\nyld call',
    "V06": f'`Step["Main:01:QUE"]` {LEAK}',
    "V08": '`Step["Main:01:QUE"]` `Var[$class, 1]`\nyld call',
    "V09": f'`Step["Main:01:QUE"]` {LEAK}\ntrig? `Trigger["Main:T9:CND"]`\nyld call',
    "V10": '`Step["Main:01:QUE"]` `Refund("all")`\nyld call',
    "V11": f'`Step["Main:01:QUE"]` {LEAK}\nyld exit',
    "V12": f'`Step["Main:01:QUE"]` {LEAK}\n`Var[$limit, "lots"]`\nyld call',
    "V13": "recap – thinking\nplan – nothing yet\n`Var[$leaked, 1]`\nyld call",
    "V14": f'`Step["Main:01:QUE"]` {LEAK}\nyld lunch',
    "V15": f'`Step["Main:01:QUE"]` {LEAK}\nyld call\n`Var[$leaked, 1]`',
    "V16": f'`Step["Main:01:QUE"]` {LEAK}\n`Return["early"]`\nyld call',
    "PAL201": '`Step["Main:01:QUE"]` `Var[$leaked, "never closed\nyld call',
}
BAD_AT_03 = {
    "V03": '`Step["Main:03:CND"]` happy\n`Step["Main:05:YLD"]` `Var[$leaked, 1]`\nyld call',
    "V04": '`Step["Main:03:CND"]` neutral\n`Step["Main:04:QUE"]` `$price = Price($count)`\n`Step["Main:05:YLD"]`\n`Step["Main:06:RET"]` `Var[$leaked, 1]`\nyld call',
    "V10": '`Step["Main:03:CND"]` neutral\n`Step["Main:04:QUE"]` `$price = Describe()`\n`Step["Main:05:YLD"]`\nyld call',
}


async def run_main(answers: list[str], *, retries: int = 2) -> tuple[object, ProgramRun, ScriptedModel]:
    model = ScriptedModel(answers)
    run = ProgramRun(PROGRAM, model=model, limits=RunLimits(max_retries=retries))
    await run.start()
    try:
        instance = await run.agent_instance("Shop")
        with anyio.fail_after(10):
            value = await Execution(instance).call_playbook("Main")
        return value, run, model
    finally:
        await run.shutdown()


def assert_rejected_and_retried(model: ScriptedModel, rule: str, at_request: int) -> None:
    retry = model.requests[at_request].messages[-1].content
    assert retry.startswith("Your answer was rejected; nothing of it was applied")
    assert rule in retry


@pytest.mark.parametrize("rule", sorted(BAD_AT_01))
async def test_a_bad_first_answer_is_rejected_and_the_retry_names_the_rule(rule: str) -> None:
    value, run, model = await run_main([BAD_AT_01[rule], GOOD_01, GOOD_03])
    assert value == 5.0
    assert_rejected_and_retried(model, rule, at_request=1)
    assert run.messages_to_user == ["Welcome!"]  # nothing of the rejected answer was said
    variables = run.instances["1000"].state.variables
    assert "leaked" not in variables and variables["limit"] == 3
    violations = [event for event in run.tracer.events if event.event == "violation"]
    assert len(violations) == 1 and rule in violations[0].detail


@pytest.mark.parametrize("rule", sorted(BAD_AT_03))
async def test_a_bad_later_answer_is_rejected_and_the_retry_names_the_rule(rule: str) -> None:
    value, run, model = await run_main([GOOD_01, BAD_AT_03[rule], GOOD_03])
    assert value == 5.0
    assert_rejected_and_retried(model, rule, at_request=2)
    assert "leaked" not in run.instances["1000"].state.variables


async def test_a_yld_step_yields_as_the_program_says() -> None:
    # `yld user` at `05:YLD for call` (V05 before): the YLD step's yield is the program's, so the answer is
    # repaired (R18), not rejected, and the run goes on as the program says.
    wrong_yield = (
        '`Step["Main:03:CND"]` neutral\n`Step["Main:04:QUE"]` `$price = Price($count)`\n'
        '`Step["Main:05:YLD"]`\nyld user'
    )
    tracer = Tracer()
    model = ScriptedModel([GOOD_01, wrong_yield])
    run = ProgramRun(PROGRAM, model=model, tracer=tracer)
    await run.start()
    try:
        with anyio.fail_after(10):
            value = await Execution(await run.agent_instance("Shop")).call_playbook("Main")
    finally:
        await run.shutdown()
    assert value == 5.0 and model.calls == 2
    repairs = [event.detail for event in tracer.events if event.event == "repair"]
    assert any(detail.startswith("R18") for detail in repairs), repairs


async def test_ret_without_a_summary_is_repaired_not_rejected() -> None:
    # A missing `$__` summary is benign (repair R06): the runtime writes one, the model is not asked again,
    # and the repair is in the trace.
    model = ScriptedModel(['`Step["Describe:01:RET"]` `Return["A small shop"]`\nyld return'])
    tracer = Tracer()
    run = ProgramRun(PROGRAM, model=model, tracer=tracer)
    await run.start()
    try:
        value = await Execution(await run.agent_instance("Shop")).call_playbook("Describe")
    finally:
        await run.shutdown()
    assert value == "A small shop"
    assert model.calls == 1
    repairs = [event.detail for event in tracer.events if event.event == "repair"]
    assert len(repairs) == 1 and repairs[0].startswith("R06"), repairs


@pytest.mark.parametrize("retries", [0, 1, 3])
async def test_after_n_rejections_the_playbook_stops_with_a_run_error(retries: int) -> None:
    bad = BAD_AT_01["V02"]
    with pytest.raises(RunError) as raised:
        await run_main([bad] * (retries + 1), retries=retries)
    error = raised.value
    assert f"broke the contract {retries + 1} times" in str(error)
    assert error.violations and error.violations[0].startswith("V02")
    assert error.answer == bad
    assert '| `Step["Main:01:EXE"]`' in str(error)  # the answer is quoted
    assert (error.agent, error.playbook, error.line) == ("Shop", "Main", "01")

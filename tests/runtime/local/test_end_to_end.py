"""Programs run end to end by the runtime on the real bundled model, with the turn grammar and the
example turns, a fixed seed and a scripted human: every answer must pass the verifier the first time.

These check the runtime against a real model, not scripted answers. What the 135M model says is not
judged (it is weak); that the runtime and the grammar keep it on legal paths is."""

from __future__ import annotations

import re
import subprocess
import sys

import anyio
import pytest

pytest.importorskip(
    "llama_cpp", reason="the local model needs llama-cpp-python: pip install 'pal-bridge[local]'"
)

from pal_core.compiler import compile_markdown
from pal_core.ir import PlaybookKind, Program
from pal_core.parser import parse
from runtime.humans import ScriptedHuman
from runtime.loader import load
from runtime.local.fewshot import build_example_turns
from runtime.local.model import DEFAULT_MODEL
from runtime.local.turn_plan import GrammarError, local_context
from runtime.models import resolve_model
from runtime.program_run import ProgramRun, RunLimits, RunResult
from runtime.trace import Tracer
from tests.conftest import FIXTURES

EXAMPLES = FIXTURES.parent.parent / "examples"

pytestmark = [pytest.mark.local_model, pytest.mark.slow, pytest.mark.anyio]

SEED = 7


async def run_locally(program: Program, replies: list[str]) -> tuple[RunResult, Tracer]:
    tracer = Tracer()
    # No grammar or examples passed: ProgramRun wires them itself for a model that takes a grammar.
    run = ProgramRun(
        program,
        model=resolve_model(DEFAULT_MODEL),
        human=ScriptedHuman(replies),
        tracer=tracer,
        limits=RunLimits(seed=SEED, max_model_calls=8, max_retries=0),
    )
    with anyio.fail_after(1800):  # a busy 2-core CI box needs minutes; a quiet one seconds
        result = await run.run()
    _no_example_text_in(program, result)
    return result, tracer


def _no_example_text_in(program: Program, result: RunResult) -> None:
    """Nothing the example turns show as a stand-in reaches what the run said or stored (a meeting summary
    once came back as the example's word "example")."""
    stand_ins: set[str] = set()
    for agent in program.agents:
        for playbook in agent.playbooks:
            if playbook.kind is not PlaybookKind.MARKDOWN or not playbook.steps:
                continue
            try:
                turns = build_example_turns(local_context(program, agent.name, playbook.name))
            except GrammarError:
                continue
            for turn in turns:
                stand_ins.update(re.findall(r'"(<[^"]*>)"', turn.answer))
    outputs = [*result.messages_to_user, *(_texts(result.variables))]
    leaked = [text for text in outputs if "<" in text and any(stand_in in text for stand_in in stand_ins)]
    assert not leaked, f"example-turn stand-ins {sorted(stand_ins)} in {leaked}"
    assert not [text for text in outputs if text.strip().lower() == "example"], outputs


def _texts(value: object) -> list[str]:
    """Every string inside a JSON-like value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _texts(item)]
    if isinstance(value, list | tuple):
        return [text for item in value for text in _texts(item)]
    return []


def _violations(tracer: Tracer) -> list[str]:
    return [str(event.detail) for event in tracer.events if event.event == "violation"]


def _trace(tracer: Tracer) -> str:
    """The whole trace, shown when a run fails."""
    return "\n".join(
        f"{event.event:<10} {event.agent}:{event.playbook or ''}:{event.line or ''}:{event.opcode or ''} {event.detail}"
        for event in tracer.events
    )


async def test_hello_world_runs_to_its_exit() -> None:
    program = parse((EXAMPLES / "hello.pal").read_text(encoding="utf-8"))
    result, tracer = await run_locally(program, [])
    assert _violations(tracer) == [], _trace(tracer)
    assert result.status == "exit", f"{result.reason}\n{_trace(tracer)}"
    assert [event.line for event in tracer.steps()] == ["01", "02", "03", "04"]
    assert len(result.messages_to_user) == 3


async def test_the_personalized_greeting_asks_waits_and_exits() -> None:
    program = parse((EXAMPLES / "greeting.pal").read_text(encoding="utf-8"))
    result, tracer = await run_locally(program, ["Alice"])
    assert _violations(tracer) == [], _trace(tracer)
    assert result.status == "exit", f"{result.reason}\n{_trace(tracer)}"
    assert [event.line for event in tracer.steps()] == ["01", "02", "03", "04", "05", "06"]
    assert result.model_calls == 2


async def test_the_seed_customer_support_program_follows_its_flow() -> None:
    source = (EXAMPLES / "customer_support.pb").read_text(encoding="utf-8")
    program = compile_markdown(source, file="customer_support.pb")
    result, tracer = await run_locally(program, ["my order is lost", "12345678"])
    assert _violations(tracer) == [], _trace(tracer)
    assert result.ok, f"{result.reason}\n{_trace(tracer)}"
    lines = [event.line for event in tracer.steps()]
    assert lines[:3] == ["01", "02", "03"]
    assert result.model_calls >= 2


WEATHER = parse(
    '''# Weather
Tells the forecast of a city.

```python
FORECASTS = {"Lisbon": "sunny, 24 C", "Oslo": "snow, -3 C", "Cairo": "hot, 35 C"}


@playbook
async def Forecast(city: str) -> str:
    """The forecast of a city."""
    return FORECASTS.get(city.strip().title(), "unknown")
```

## Main() -> str
### Triggers
T1:BGN At the beginning
### Steps
01:QUE Say(user, Ask the user which city they want the weather for)
02:YLD for user
03:QUE $forecast:str = Forecast(city=$city)
04:YLD for call
05:RET $forecast
''',
    file="weather.pal",
)


async def test_ask_then_call_with_the_reply_in_one_answer() -> None:
    # The most common real turn: the reply stored with `Var[$city, ...]` and the call made with it in the same
    # answer. The bundled model's answer must pass the verifier the first time, and the Python playbook gets
    # the city the user named.
    result, tracer = await run_locally(WEATHER, ["Lisbon"])
    assert _violations(tracer) == [], _trace(tracer)
    assert result.status in ("idle", "exit"), f"{result.reason}\n{_trace(tracer)}"
    variables = next(iter(result.variables.values()))
    assert variables.get("city") == "Lisbon", _trace(tracer)
    assert variables.get("forecast") == "sunny, 24 C", _trace(tracer)


DEMO = EXAMPLES / "order_status.pal"
DEMO_MESSAGE = "Hi! Where is my order 2718?"  # what `make demo` says
TRUTH = {
    "2718": "Order 2718 (two ceramic mugs) is out for delivery, as of 5 March 2026.",
    "3141": "Order 3141 (a wool scarf) is delivered, as of 27 February 2026.",
}


async def test_the_demo_tells_the_true_status_of_the_order_the_user_named() -> None:
    result, tracer = await run_locally(load(DEMO), ["My order number is 3141."])
    assert _violations(tracer) == [], _trace(tracer)
    assert result.status == "exit", f"{result.reason}\n{_trace(tracer)}"
    assert result.messages_to_user[-1] == TRUTH["3141"], _trace(tracer)


def test_make_demo_shows_the_true_result_and_a_finished_line() -> None:
    """`make demo` exactly: the CLI on the bundled model, the user's message given on the command line."""
    shown = subprocess.run(
        [sys.executable, "-m", "runtime.cli", "run", str(DEMO), "--no-input", "--message", DEMO_MESSAGE],
        capture_output=True,
        text=True,
        timeout=3600,  # only against a hang; a busy 2-core machine takes minutes
        check=False,
    )
    assert shown.returncode == 0, shown.stderr
    assert f"OrderDesk: {TRUTH['2718']}" in shown.stdout, shown.stdout
    closing = [line for line in shown.stderr.splitlines() if line.startswith("[finished: ")]
    assert closing and closing[0].startswith("[finished: Main yielded exit; 2 model calls, "), shown.stderr

"""Several agents: a cross-agent public call, a three-agent meeting, Python called from a markdown step,
a CND trigger that fires when its variable changes, and a playbook that runs with zero model calls."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from pal_core.parser import parse, parse_file
from runtime.api import run_playbook
from runtime.errors import CallError
from runtime.execution import Execution
from runtime.humans import ScriptedHuman
from runtime.models import ScriptedModel
from runtime.models.base import ModelRequest
from runtime.program_run import ProgramRun
from runtime.trace import Tracer
from tests.conftest import CORPUS

pytestmark = pytest.mark.anyio


async def test_a_machine_executable_playbook_runs_with_zero_model_calls() -> None:
    program = parse_file(CORPUS / "playbooks-python-interop.pbasm")
    tracer = Tracer()
    model = ScriptedModel([])  # any model call would fail: it has no answers
    with anyio.fail_after(10):
        # BAXY2(num) = B(A(X(num))) * Y(num) through markdown X, Python A and B; Y is natural language, so
        # use XY's numbers: X doubles (RET $num * 2, a computable expression).
        value = await run_playbook(program, "Interop.CallA", 16.0, model=model, tracer=tracer)
    assert value == 4.0
    assert model.calls == 0
    steps = [(event.playbook, event.line) for event in tracer.steps()]
    assert steps == [("CallA", "01"), ("CallA", "02"), ("CallA", "03")]
    assert all(event.model_call is None for event in tracer.steps())


async def test_python_playbook_called_from_a_markdown_step_and_markdown_from_python() -> None:
    program = parse_file(CORPUS / "playbooks-python-interop.pbasm")
    model = ScriptedModel([])
    # CallX is Python calling markdown X, which runs on the fast path.
    assert await run_playbook(program, "CallX", 5.0, model=model) == 10.0
    # XY calls Y (natural language: the model) then X.
    answers = [
        '`Step["Y:01:RET"]` `Return[1.5]` `Var[$__, "Half of 3.0 is 1.5."]`\nyld return',
    ]
    model = ScriptedModel(answers)
    assert await run_playbook(program, "XY", 3.0, model=model) == 3.0
    assert model.calls == 1


CROSS_AGENT = """# Front
Talks to the user.

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:QUE $n:int = Counter.Length(word="banana")
02:YLD for call
03:QUE Say(user, "done")
04:RET

# Counter
Counts things.

```python
@playbook(public=True)
async def Length(word: str) -> int:
    return len(word)

@playbook
async def Secret() -> int:
    return 42
```
"""


async def test_a_cross_agent_public_playbook_call() -> None:
    program = parse(CROSS_AGENT)
    run = ProgramRun(program, model=ScriptedModel([]))
    with anyio.fail_after(10):
        result = await run.run()
    assert result.status == "idle", result.reason
    assert result.variables["Front:1000"]["n"] == 6
    assert result.messages_to_user == ["done"]
    assert result.model_calls == 0


async def test_a_private_playbook_of_another_agent_cannot_be_called() -> None:
    program = parse(CROSS_AGENT.replace("Counter.Length(word=", "Counter.Secret(").replace('"banana")', ")"))
    run = ProgramRun(program, model=ScriptedModel([]))
    await run.start()
    try:
        with pytest.raises(CallError, match="not public"):
            await Execution(run.instance_by_class("Front")).call_playbook("Counter.Secret")
    finally:
        await run.shutdown()


TRIGGERS = """# Watcher
Reacts when a number grows.

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:EXE $x:int = 10
02:EXE $x = $x * 2
03:QUE Say(user, "finished")
04:RET

## TooBig() -> None
### Triggers
T1:CND When $x > 15
### Steps
01:QUE Say(user, "x is too big")
02:RET
"""


async def test_a_cnd_trigger_fires_when_its_variable_changes() -> None:
    tracer = Tracer()
    run = ProgramRun(parse(TRIGGERS), model=ScriptedModel([]), tracer=tracer)
    with anyio.fail_after(10):
        result = await run.run()
    assert result.status == "idle", result.reason
    # $x = 10 does not fire; $x = 20 does, right after step 02 and before step 03.
    assert result.messages_to_user == ["x is too big", "finished"]
    fired = [event for event in tracer.events if event.event == "trigger"]
    assert [event.playbook for event in fired] == ["TooBig"]
    assert result.model_calls == 0


MEETING = """# Host
Runs a quick planning meeting.

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:QUE $summary:str = Plan(topic="lunch")
02:YLD for call
03:QUE Say(user, $summary)
04:RET

## Plan($topic:str) -> str
metadata:
  meeting: true
  required_attendees: [Chef, Critic]
---
### Steps
01:QUE Say(meeting, Ask everyone for one idea about $topic)
02:YLD for meeting
03:RET a one-line summary of the ideas

# Chef
Cooks.

## Plan($topic:str) -> None
metadata:
  meeting: true
---
### Steps
01:QUE Say(meeting, Propose a dish for $topic)
02:RET

# Critic
Judges.

## Plan($topic:str) -> None
metadata:
  meeting: true
---
### Steps
01:QUE Say(meeting, Propose a drink for $topic)
02:RET
"""


def agent_of(request: ModelRequest) -> str:
    return str(request.metadata["agent"])


def meeting_model(request: ModelRequest) -> str:
    agent, line, playbook = agent_of(request), request.metadata["line"], request.metadata["playbook"]
    if agent == "Host" and line == "01":
        return '`Step["Plan:01:QUE"]` `Say("meeting", "Ideas for lunch, please: Chef and Critic?")`\n`Step["Plan:02:YLD"]` yld meeting'
    if agent == "Host" and line == "03":
        heard = request.messages[-1].content
        assert "Soup" in heard and "Lemonade" in heard, heard
        return '`Step["Plan:03:RET"]` `Return["Soup and lemonade"]` `Var[$__, "Collected two ideas."]`\nyld return'
    if agent == "Chef" and playbook == "Plan":
        return '`Step["Plan:01:QUE"]` `Say("meeting", "Soup")`\n`Step["Plan:02:RET"]` `Return[]` `Var[$__, "Proposed soup."]`\nyld return'
    if agent == "Critic" and playbook == "Plan":
        return '`Step["Plan:01:QUE"]` `Say("meeting", "Lemonade")`\n`Step["Plan:02:RET"]` `Return[]` `Var[$__, "Proposed lemonade."]`\nyld return'
    raise AssertionError(f"unexpected prompt for {agent} at {playbook}:{line}")


async def test_a_three_agent_meeting_driven_by_scripted_models() -> None:
    from pal_core.messaging import MeetingTimeouts

    tracer = Tracer()
    run = ProgramRun(
        parse(MEETING),
        model=ScriptedModel(meeting_model),
        tracer=tracer,
        meeting_timeouts=MeetingTimeouts(targeted=0.05, untargeted=0.5),
    )
    with anyio.fail_after(20):
        result = await run.run()
    assert result.status == "idle", result.reason
    assert result.messages_to_user == ["Soup and lemonade"]
    meetings = [event.detail for event in tracer.events if event.event == "meeting"]
    assert meetings[0].startswith("meeting ") and "created" in meetings[0]
    assert sum("joined meeting" in detail for detail in meetings) == 2
    assert meetings[-1].endswith("ended")
    assert not [task for task in asyncio.all_tasks() if task.get_name().startswith("agent ")]


async def test_run_ends_when_input_runs_out() -> None:
    program = parse_file(CORPUS / "02-personalized-greeting.pbasm")
    answers = [
        'recap – start\nplan – introduce\n`Step["GreetTheUser:01:QUE"]` `Say("user", "I am a support agent.")`\n'
        '`Step["GreetTheUser:02:QUE"]` `Say("user", "What is your name?")`\n`Step["GreetTheUser:03:YLD"]` yld user',
    ]
    run = ProgramRun(program, model=ScriptedModel(answers), human=ScriptedHuman([]))
    with anyio.fail_after(10):
        result = await run.run()
    assert result.status == "needs_input"
    assert result.messages_to_user == ["I am a support agent.", "What is your name?"]

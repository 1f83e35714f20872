"""Targeted turns in a meeting: the chair calls on each attendee with `Say("meeting @Name", ...)`, the
attendee answers the chair the same way, and nobody waits out a gathering window (the windows here are a
minute long; a wait that used them would hit fail_after)."""

from __future__ import annotations

import anyio
import pytest

from pal_core.messaging import MeetingTimeouts
from pal_core.parser import parse
from runtime.api import run_playbook
from runtime.errors import CallError
from runtime.execution import Execution
from runtime.models import ScriptedModel
from runtime.program_run import ProgramRun

pytestmark = pytest.mark.anyio

ROUNDS = """# Chair
Calls on each attendee in turn.

## Rounds() -> list
### Triggers
T1:BGN At the beginning
### Steps
01:QUE $heard:list = Meet()
02:YLD for call
03:RET $heard

## Meet() -> list
metadata:
  meeting: true
  required_attendees: [Ann, Bo]
---
### Steps
01:EXE $said:list = []
02:EXE $round:int = 0
03:CND If $round >= 3
  03.01:RET $said
04:QUE Say("meeting @Ann", "@Ann")
05:EXE $answer:list = WaitForMessage("meeting")
06:EXE $said = $said + [len($answer)]
07:QUE Say("meeting @Bo", "@Bo")
08:EXE $answer = WaitForMessage("meeting")
09:EXE $said = $said + [len($answer)]
10:EXE $round = $round + 1
11:JMP 03

# Ann
Answers when called on.

## Meet() -> None
metadata:
  meeting: true
---
### Steps
01:EXE $heard:list = WaitForMessage("meeting")
02:QUE Say("meeting @Chair", "Ann here")
03:JMP 01

# Bo
Answers when called on.

## Meet() -> None
metadata:
  meeting: true
---
### Steps
01:YLD for meeting
02:QUE Say("meeting @Chair", "Bo here")
03:JMP 01
"""


async def test_targeted_turns_need_no_gathering_window_and_the_attendees_leave_when_it_ends() -> None:
    run = ProgramRun(
        parse(ROUNDS),
        model=ScriptedModel([]),
        meeting_timeouts=MeetingTimeouts(turn=0.0, targeted=60, untargeted=60),
    )
    with anyio.fail_after(20):
        result = await run.run()
    assert result.status == "idle", result.reason
    said = result.variables["Chair:1000"]["said"]
    # Six answers, one message each after the first wait (which also takes the join notices).
    assert len(said) == 6 and said[1:] == [1, 1, 1, 1, 1]
    assert result.model_calls == 0


async def test_a_turn_for_someone_who_is_not_there_is_refused() -> None:
    program = parse(ROUNDS.replace('Say("meeting @Ann", "@Ann")', 'Say("meeting @Nobody", "@Nobody")'))
    with anyio.fail_after(20), pytest.raises(CallError, match="@Nobody is not an agent"):
        await run_playbook(program, "Chair.Rounds", model=ScriptedModel([]))


async def test_waiting_for_the_meeting_outside_one_is_refused() -> None:
    run = ProgramRun(parse(ROUNDS), model=ScriptedModel([]))
    await run.start()
    try:
        execution = Execution(run.instance_by_class("Ann"))
        with pytest.raises(CallError, match="outside a meeting"):
            await execution.call_playbook("WaitForMessage", ["meeting"])
        with pytest.raises(CallError, match="outside a meeting"):
            await execution.call_playbook("Say", ["meeting @Chair", "hello"])
    finally:
        await run.shutdown()

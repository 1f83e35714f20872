"""What a model may call (docs/security.md): at a step in words, a model calling a Python playbook that no step
names is refused when the playbook says `model_callable: false`, and waits for a human's approval when it says
`requires_approval: true` — asked through the user channel, recorded in the trace, refused when nobody can answer.
A call a step names literally always runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pal_core.parser import parse
from runtime.api import run_program
from runtime.humans import NoHuman, ScriptedHuman
from runtime.models import ScriptedModel
from runtime.program_run import ProgramRun
from runtime.trace import Tracer

pytestmark = pytest.mark.anyio


def program(target: Path) -> object:
    return parse(
        f'''# Files
Keeps files.

```python
from pathlib import Path

@playbook(requires_approval=True)
async def Wipe(path: str) -> str:
    """Deletes a file."""
    Path(path).unlink()
    return "wiped"

@playbook(model_callable=False)
async def Archive(path: str) -> str:
    """Only steps may archive."""
    return "archived " + path
```

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:QUE Tell the user something helpful
02:YLD for exit

## Cleanup() -> None
### Steps
01:QUE $done:str = Wipe(path="{target}")
02:YLD for call
03:RET
''',
        file="files.pal",
    )


def injected(call: str) -> str:
    """An answer a prompt injection could lead to: the helpful step also calls something no step names."""
    return (
        "recap – r\nplan – p\n"
        f'`Step["Main:01:QUE"]` `Say("user", "Here is a tip.")` `{call}`\n'
        '`Step["Main:02:YLD"]` yld exit'
    )


async def test_a_call_needing_approval_is_refused_when_nobody_can_approve(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    tracer = Tracer()
    run = ProgramRun(
        program(target),
        model=ScriptedModel([injected(f'Wipe(path="{target}")')]),
        human=NoHuman(),
        tracer=tracer,
    )
    result = await run.run()
    assert result.status == "exit", result.reason
    assert target.exists()
    (approval,) = [event.detail for event in tracer.events if event.event == "approval"]
    assert approval.startswith("refused Wipe(") and "non-interactive" in approval


async def test_a_call_needing_approval_runs_when_the_user_says_yes_and_not_when_no(tmp_path: Path) -> None:
    for answer, kept in (("no", True), ("yes", False)):
        target = tmp_path / f"file-{answer}.txt"
        target.write_text("x")
        tracer = Tracer()
        run = ProgramRun(
            program(target),
            model=ScriptedModel([injected(f'Wipe(path="{target}")')]),
            human=ScriptedHuman([answer]),
            tracer=tracer,
        )
        result = await run.run()
        assert result.status == "exit", result.reason
        assert target.exists() is kept
        assert any("needs your approval" in said for said in result.messages_to_user)
        (approval,) = [event.detail for event in tracer.events if event.event == "approval"]
        assert approval.startswith("approved" if answer == "yes" else "refused")
        assert f"the user answered {answer!r}" in approval


async def test_a_playbook_only_steps_may_call_is_refused_to_the_model(tmp_path: Path) -> None:
    model = ScriptedModel([injected('Archive(path="/etc")')] * 3)
    result = await run_program(program(tmp_path / "x"), model=model)
    assert result.status == "error"
    assert "V10" in result.reason and "model_callable: false" in result.reason


async def test_a_call_a_step_names_literally_always_runs(tmp_path: Path) -> None:
    from runtime.api import run_playbook

    target = tmp_path / "old.log"
    target.write_text("x")
    await run_playbook(
        program(target), "Cleanup"
    )  # the fast path runs the step's own call: no model, no approval
    assert not target.exists()


def react_program(target: Path) -> object:
    """A react playbook whose model may call Wipe, which needs approval."""
    return parse(
        f'''# Files
Keeps files.

```python
from pathlib import Path

@playbook(requires_approval=True)
async def Wipe(path: str) -> str:
    """Deletes a file."""
    Path(path).unlink()
    return "wiped"
```

## Tidy() -> str
metadata:
  execution_mode: react
---
Tidy up {target}.
''',
        file="files.pal",
    )


async def test_a_react_playbooks_call_needing_approval_waits_for_the_user(tmp_path: Path) -> None:
    """In a react playbook too, the call runs only after a yes; after a no the model is told it did not run."""
    from runtime.api import run_playbook

    for answer, kept in (("no", True), ("yes", False)):
        target = tmp_path / f"react-{answer}.txt"
        target.write_text("x")
        tracer = Tracer()
        model = ScriptedModel([f'`$r = Wipe(path="{target}")`\nyld call', 'Return["ok"]\nyld return'])
        value = await run_playbook(
            react_program(target), "Tidy", model=model, messages=[answer], tracer=tracer
        )
        assert value == "ok"
        assert target.exists() is kept
        (approval,) = [event.detail for event in tracer.events if event.event == "approval"]
        assert approval.startswith("approved" if answer == "yes" else "refused")
        told = model.requests[1].messages[-1].content
        assert ("did not run: the user did not approve it" in told) is kept

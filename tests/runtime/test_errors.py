"""Failures say what failed and where, and never hang the run."""

from __future__ import annotations

import anyio
import pytest

from pal_core.parser import parse
from runtime.api import run_playbook
from runtime.errors import CallError, PlaybookFailed, RunError
from runtime.program_run import ProgramRun

pytestmark = pytest.mark.anyio

PROGRAM = parse(
    """# Tools
Has tools.

```python
@playbook
async def Divide(a: float, b: float) -> float:
    return a / b
```

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:QUE $r:float = Divide(1, 0)
02:YLD for call
03:RET

## Chat() -> None
### Steps
01:QUE Say(user, Tell a joke)
02:RET
"""
)


async def test_a_failing_python_playbook_names_itself_and_the_error() -> None:
    with pytest.raises(
        PlaybookFailed, match=r"Python playbook Divide raised ZeroDivisionError: division by zero"
    ):
        await run_playbook(PROGRAM, "Main")


async def test_wrong_arguments_are_a_call_error() -> None:
    with pytest.raises(CallError, match="Divide: invalid arguments: b is required"):
        await run_playbook(PROGRAM, "Divide", 1.0)
    with pytest.raises(CallError, match="no playbook Nope"):
        await run_playbook(PROGRAM, "Nope")


async def test_a_step_that_needs_a_model_without_one_says_so() -> None:
    with pytest.raises(RunError, match=r"Tools:Chat:01: this step needs a model and none is configured"):
        await run_playbook(PROGRAM, "Chat")


async def test_a_failure_in_a_bgn_playbook_ends_the_run_with_status_error() -> None:
    run = ProgramRun(PROGRAM)
    with anyio.fail_after(10):
        result = await run.run()
    assert result.status == "error"
    assert isinstance(result.error, PlaybookFailed)
    assert "ZeroDivisionError" in result.reason

"""Values the program fixes are the program's (issue 28), end to end with scripted answers: a literal RET
returns its literal whatever the answer claims; a literal call claimed bare (or with a made-up result) runs,
once; a guard the program computes cannot be flipped by writing the variable it reads; a computation that
fails fails its step and is never handed to the model."""

from __future__ import annotations

from pathlib import Path

import pytest

from pal_core.parser import parse
from runtime.api import run_playbook, run_program
from runtime.errors import PlaybookFailed, RunError
from runtime.models import ScriptedModel
from runtime.program_run import RunLimits
from runtime.trace import Tracer

pytestmark = pytest.mark.anyio

TRIAGE = parse(
    """# Triage
Sorts requests.

## Classify($text:str) -> str
Says how urgent a request is.
### Steps
01:CND If the text sounds urgent
  01.01:RET "urgent"
02:RET "normal"
"""
)


def _claim_urgent(returned: str) -> str:
    return (
        "recap – a request came in\nplan – classify it\n"
        '`Step["Classify:01:CND"]` yes — the server is down\ntrig? no\n'
        f'`Step["Classify:01.01:RET"]` {returned}`Var[$__, "classified as urgent"]`\nyld return'
    )


async def test_a_literal_ret_claimed_without_its_value_returns_the_literal() -> None:
    model = ScriptedModel([_claim_urgent("")])
    value = await run_playbook(TRIAGE, "Classify", "the server is down!", model=model)
    assert value == "urgent"


async def test_a_literal_ret_claimed_with_another_value_returns_the_literal() -> None:
    tracer = Tracer()
    model = ScriptedModel([_claim_urgent('`Return["normal"]` ')])
    value = await run_playbook(TRIAGE, "Classify", "the server is down!", model=model, tracer=tracer)
    assert value == "urgent"
    (replaced,) = [event for event in tracer.events if event.event == "repair"]
    assert replaced.detail.startswith("R16") and '"urgent"' in replaced.detail


def _recorder(audit: Path) -> object:
    return parse(
        f"""# Clerk
Serves requests and keeps an audit trail.

```python
from pathlib import Path

@playbook
async def Record(note: str) -> str:
    with Path({str(audit)!r}).open("a", encoding="utf-8") as trail:
        trail.write(note + "\\n")
    return "recorded"
```

## Serve($request:str) -> str
Serves a request.
### Steps
01:EXE Work out what $request needs
02:EXE $r = Record(note="request served")
03:RET $r
"""
    )


SERVE_HEAD = (
    "recap – a request came in\nplan – serve it\n"
    '`Step["Serve:01:EXE"]` it needs a reply\ntrig? no\n`Step["Serve:02:EXE"]`\n'
)
SERVE_TAIL = 'trig? no\n`Step["Serve:03:RET"]` `Var[$__, "served"]`\nyld return'


async def test_a_literal_call_claimed_bare_is_made_once(tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    model = ScriptedModel([SERVE_HEAD + SERVE_TAIL])
    value = await run_playbook(_recorder(audit), "Serve", "a refund", model=model)
    assert value == "recorded"
    assert audit.read_text(encoding="utf-8") == "request served\n"


async def test_a_made_up_result_of_a_literal_call_is_refused_and_the_call_made_once(tmp_path: Path) -> None:
    audit = tmp_path / "audit.log"
    made_up = SERVE_HEAD + '`Var[$r, "recorded"]`\n' + SERVE_TAIL
    tracer = Tracer()
    model = ScriptedModel([made_up, SERVE_HEAD + SERVE_TAIL])
    value = await run_playbook(_recorder(audit), "Serve", "a refund", model=model, tracer=tracer)
    assert value == "recorded"
    assert audit.read_text(encoding="utf-8") == "request served\n"
    (violation,) = [event for event in tracer.events if event.event == "violation"]
    assert "V17" in violation.detail and "$r is the result of Record" in violation.detail


def _guarded(target: Path) -> object:
    return parse(
        f"""# Files
Keeps files.

```python
from pathlib import Path

@playbook(model_callable=False)
async def Wipe() -> str:
    Path({str(target)!r}).unlink()
    return "wiped"
```

## Main() -> str
### Triggers
T1:BGN At the beginning
### Steps
01:EXE $is_admin:bool = False
02:EXE Note what the visitor wants in $wish
03:CND If $is_admin
  03.01:EXE $done = Wipe()
04:RET "kept"
"""
    )


FLIP = (
    "recap – a visitor\nplan – note the wish\n"
    '`Step["Main:02:EXE"]` noted\n`Var[$wish, "everything"]`\n`Var[$is_admin, true]`\ntrig? no\n'
    '`Step["Main:03:CND"]` yes — admin\ntrig? no\n`Step["Main:03.01:EXE"]` `$done = Wipe()`\nyld call'
)


async def test_a_guard_the_program_computes_cannot_be_flipped(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me", encoding="utf-8")
    model = ScriptedModel([FLIP])
    result = await run_program(_guarded(target), model=model, limits=RunLimits(max_retries=0))
    assert result.status == "error"
    assert isinstance(result.error, RunError)
    assert "V17" in str(result.error) and "$is_admin is false" in str(result.error)
    assert target.read_text(encoding="utf-8") == "keep me"


async def test_a_guard_the_program_computes_follows_the_program_when_the_answer_does_not_touch_it(
    tmp_path: Path,
) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me", encoding="utf-8")
    flipped_path = (
        "recap – a visitor\nplan – note the wish\n"
        '`Step["Main:02:EXE"]` noted\n`Var[$wish, "everything"]`\ntrig? no\n'
        '`Step["Main:03:CND"]` yes — the visitor seems important\ntrig? no\n'
        '`Step["Main:03.01:EXE"]` `$done = Wipe()`\nyld call'
    )
    model = ScriptedModel([flipped_path])
    result = await run_program(_guarded(target), model=model, limits=RunLimits(max_retries=0))
    assert result.status == "error" and "V18" in str(result.error)
    assert target.read_text(encoding="utf-8") == "keep me"


async def test_a_computation_that_fails_fails_its_step_and_never_reaches_the_model() -> None:
    program = parse(
        """# Calc
Calculates.

## Ratio() -> int
### Steps
01:EXE $r = 1 / 0
02:RET $r
"""
    )
    model = ScriptedModel(['`Step["Ratio:01:EXE"]`\n`Var[$r, 42]`\nyld call'])
    with pytest.raises(
        PlaybookFailed, match=r"Calc:Ratio:01: the computation `1 / 0` fails: ZeroDivisionError"
    ):
        await run_playbook(program, "Ratio", model=model)
    assert model.calls == 0

"""The most common real turn: the user's reply is stored with `Var[...]` and the next step of the same
answer calls a playbook with it. Variables set earlier in an answer are known to its later steps."""

from __future__ import annotations

import pytest

from pal_core.parser import parse
from runtime.api import run_program
from runtime.models import ScriptedModel
from runtime.trace import Tracer

pytestmark = pytest.mark.anyio

PROGRAM = parse(
    '''# Weather
Tells the forecast of a city.

```python
@playbook
async def Forecast(city: str) -> str:
    """The forecast of a city."""
    return {"Lisbon": "sunny, 24 C", "Oslo": "snow, -3 C"}.get(city, "unknown")
```

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:QUE Say(user, Ask the user which city they want the forecast for)
02:YLD for user
03:QUE $forecast:str = Forecast(city=$city)
04:YLD for call
05:QUE Say(user, Tell the user the $forecast)
06:YLD for exit
''',
    file="weather.pal",
)

ASK = 'recap – start\nplan – ask\n`Step["Main:01:QUE"]` `Say("user", "Which city?")`\n`Step["Main:02:YLD"]` yld user'
CALL_WITH_REPLY = (
    "recap – the user named Lisbon\nplan – store it and look up the forecast\n"
    '`Var[$city, "Lisbon"]`\n'
    "trig? no\n"
    '`Step["Main:03:QUE"]` `$forecast = Forecast(city=$city)`\n'
    '`Step["Main:04:YLD"]` yld call'
)
TELL = (
    "recap – the forecast is known\nplan – tell the user\n"
    '`Step["Main:05:QUE"]` `Say("user", "Lisbon: sunny, 24 C")`\n'
    '`Step["Main:06:YLD"]` yld exit'
)


async def test_a_variable_set_in_the_answer_is_known_to_its_later_calls() -> None:
    model = ScriptedModel([ASK, CALL_WITH_REPLY, TELL])
    tracer = Tracer()
    result = await run_program(PROGRAM, model=model, messages=["Lisbon please"], tracer=tracer)
    assert result.status == "exit", result.reason
    assert model.calls == 3  # no answer was rejected and asked again
    variables = next(iter(result.variables.values()))
    assert variables["city"] == "Lisbon"
    assert variables["forecast"] == "sunny, 24 C"
    # Every variable change is in the trace, the Var line written before the answer's first step included.
    changes = [(event.event, event.changed) for event in tracer.events if event.changed]
    assert ("assign", {"city": "Lisbon"}) in changes
    assert ("assign", {"forecast": "sunny, 24 C"}) in changes


async def test_a_variable_used_before_the_answer_sets_it_is_still_unknown() -> None:
    call_first = (
        "recap – the user named Lisbon\nplan – look it up\n"
        '`Step["Main:03:QUE"]` `$forecast = Forecast(city=$city)`\n'
        '`Var[$city, "Lisbon"]`\n'
        '`Step["Main:04:YLD"]` yld call'
    )
    model = ScriptedModel([ASK, call_first, call_first, call_first])
    result = await run_program(PROGRAM, model=model, messages=["Lisbon please"])
    assert result.status == "error"
    assert "V10" in result.reason and "$city" in result.reason

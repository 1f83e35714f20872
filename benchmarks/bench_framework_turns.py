"""The equivalence programs of issue 24, timed both ways with the same fakes.

Each program of tests/importers/test_autogen_turns.py and test_adk_turns.py runs under its framework
(AutoGen's ReplayChatCompletionClients, ag2's TestAgent fake client, ADK's ScriptedLlm behind its Runner)
and as the imported program (a fresh run each time, as `pal run --input` does, ScriptedModel answering the
same decisions), alternately, RUNS times each. Printed per program: the messages (AutoGen, ag2) or the
final state keys (ADK) and the model answers on each side, whether the outcomes are equal, and the median
wall time of the framework's run and of the imported run, with their ratio. The framework's objects are
built and the program parsed outside the timing; the imported run's time includes starting and stopping
its run.

Run: python benchmarks/bench_framework_turns.py [runs]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import warnings
from collections.abc import Awaitable
from typing import Any

RUNS = 20


async def _timed(work: Awaitable[Any]) -> tuple[float, Any]:
    """(seconds, value) of awaiting `work` (a coroutine does nothing until awaited)."""
    started = time.perf_counter()
    value = await work
    return time.perf_counter() - started, value


def _report(name: str, framework: list[float], pal: list[float], detail: str, equal: bool) -> None:
    native, ours = statistics.median(framework), statistics.median(pal)
    print(
        f"{name:<34} {detail:<34} equal={equal!s:<5} "
        f"framework {native * 1000:8.1f} ms   imported {ours * 1000:8.1f} ms   {ours / native:5.2f}x"
    )


async def autogen_programs(runs: int) -> None:
    from importers.autogen import import_target
    from pal_core.parser import parse
    from pal_core.writer import write
    from runtime.api import run_playbook
    from tests.fixtures.autogen import tool_teams
    from tests.importers.autogen_scripts import pal_model, transcript

    cases = {
        "AutoGen Swarm with tools": ("swarm", tool_teams.service_swarm, ("desk", "billing"), None),
        "AutoGen reflect/iterations/format": (
            "stock_team",
            tool_teams.stock_room,
            ("clerk", "auditor"),
            None,
        ),
        "AutoGen UserProxyAgent": (
            "approval",
            tool_teams.approval_desk,
            ("writer",),
            ["Too plain.", "APPROVE"],
        ),
    }
    for label, (attribute, build, agents, said) in cases.items():
        decisions = tool_teams.DECISIONS[{"swarm": "swarm", "stock_team": "stock"}.get(attribute, attribute)]
        program = parse(write(import_target(f"tests.fixtures.autogen.tool_teams:{attribute}").program))
        framework, pal = [], []
        expected = actual = None
        answers = (0, 0)
        for _ in range(runs):
            clients = [tool_teams.client(decisions[agent]) for agent in agents]
            team = build(*clients, said) if said is not None else build(*clients)
            seconds, result = await _timed(team.run(task="Go"))
            framework.append(seconds)
            expected = transcript(result)
            model = pal_model(program, decisions)
            seconds, actual = await _timed(
                run_playbook(program, "Run", task="Go", model=model, messages=said)
            )
            pal.append(seconds)
            answers = (sum(len(decisions[agent]) for agent in agents), model.calls)
        detail = (
            f"{len(expected['messages'])}/{len(actual['messages'])} msgs, {answers[0]}/{answers[1]} answers"
        )
        _report(label, framework, pal, detail, expected == actual)


async def ag2_programs(runs: int) -> None:
    from autogen.io import IOStream
    from autogen.testing import TestAgent

    from importers.autogen import import_target
    from pal_core.parser import parse
    from pal_core.writer import write
    from runtime.api import run_playbook
    from tests.fixtures.autogen import ag2_tools
    from tests.importers.test_autogen_turns import _ag2_answers, _ag2_entries, _ag2_model, _Typed

    for label, name, said in (
        ("ag2 suggest/execute tools", "pantry", []),
        ("ag2 human input", "tasting", ["No.", "exit"]),
    ):
        decisions = ag2_tools.DECISIONS[name]
        program = parse(write(import_target(f"tests.fixtures.autogen.ag2_tools:{name}").program))
        framework, pal = [], []
        expected = actual = []
        calls = 0
        for _ in range(runs):
            manager = getattr(ag2_tools, f"{name}_chat")()
            llm_agent = next(agent for agent in manager.groupchat.agents if agent.llm_config)
            ag2_tools.PANTRY.clear()  # each side starts from an empty pantry
            started = time.perf_counter()
            with (
                TestAgent(llm_agent, _ag2_answers(decisions[llm_agent.name])),
                IOStream.set_default(_Typed(said)),
            ):
                ag2_tools.user().initiate_chat(manager, message="Go", silent=True)
            framework.append(time.perf_counter() - started)
            expected = _ag2_entries(manager.groupchat.messages)
            model = _ag2_model(program, decisions)
            ag2_tools.PANTRY.clear()
            seconds, result = await _timed(
                run_playbook(program, "Run", task="Go", model=model, messages=said)
            )
            pal.append(seconds)
            actual = _ag2_entries(result["messages"])
            calls = model.calls
        detail = f"{len(expected)}/{len(actual)} msgs, {len(decisions[llm_agent.name])}/{calls} answers"
        _report(label, framework, pal, detail, expected == actual)


async def adk_programs(runs: int) -> None:
    from importers.adk import import_target
    from pal_core.parser import parse
    from pal_core.writer import write
    from runtime.models.scripted import ScriptedModel
    from tests.fixtures.adk import confirming, dynamic, llm
    from tests.importers.adk_runs import adk_outcome, pal_outcome, same
    from tests.importers.test_adk_turns import CONFIRMATIONS, STATE, _call, _text

    office = parse(write(import_target("tests.fixtures.adk.confirming:office_agent").program))
    for name, ((tool, arguments), replies, answers, said) in CONFIRMATIONS.items():
        framework, pal = [], []
        expected = actual = None
        counts = (0, 0)
        for _ in range(runs):
            adk_model = llm.ScriptedLlm(
                responses=[llm.call(tool, **arguments), *(llm.text(r) for r in replies)]
            )
            seconds, expected = await _timed(
                adk_outcome(confirming.office(adk_model), "Help", STATE, confirmations=answers)
            )
            framework.append(seconds)
            model = ScriptedModel([_call(tool, **arguments), *(_text(r) for r in replies)])
            seconds, actual = await _timed(
                pal_outcome(office, "Help", STATE, model=model, calls=9, said=said)
            )
            pal.append(seconds)
            counts = (len(adk_model.requests), model.calls)
        detail = f"{len(expected['state'])} state keys, {counts[0]}/{counts[1]} model calls"
        _report(f"ADK confirm {name}", framework, pal, detail, same(expected, actual))
    for attribute, build, state in (
        ("analyst_agent", dynamic.analyst, {"tables": ["pies"], "user:name": "Ada"}),
        ("greeter_agent", dynamic.greeter, {"language": "French"}),
    ):
        program = parse(write(import_target(f"tests.fixtures.adk.dynamic:{attribute}").program))
        framework, pal = [], []
        for _ in range(runs):
            adk_model = llm.ScriptedLlm(responses=[llm.text("Hello.")])
            seconds, expected = await _timed(adk_outcome(build(adk_model), "Hi", state))
            framework.append(seconds)
            model = ScriptedModel([_text("Hello.")])
            seconds, actual = await _timed(pal_outcome(program, "Hi", state, model=model, calls=1))
            pal.append(seconds)
        detail = f"{len(expected['state'])} state keys, 1/1 model calls"
        _report(f"ADK instruction {attribute}", framework, pal, detail, same(expected, actual))


async def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else RUNS
    print(f"{runs} runs each, alternated; medians; 'a/b' is framework/imported")
    await autogen_programs(runs)
    await ag2_programs(runs)
    await adk_programs(runs)


if __name__ == "__main__":
    import logging

    logging.disable(logging.WARNING)  # ADK and ag2 log every scripted request
    warnings.simplefilter("ignore")
    asyncio.run(main())

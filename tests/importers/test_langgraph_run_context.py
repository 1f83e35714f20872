"""Nodes get what LangGraph gives them: `config`, `runtime` with the graph's context, `store`, `writer`.

The imported program of tests/fixtures/langgraph/run_context.py runs with our runtime (no model) and ends in
the state `graph.invoke` ends in, with the same thread id, context and store; what the nodes stream reaches
the run's output in the order LangGraph's custom stream gives it.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from importers.langgraph import import_target
from pal_core.parser import parse
from pal_core.writer import write
from runtime.api import run_playbook
from runtime.inputs import InputError
from runtime.program_run import RunLimits
from runtime.trace import Tracer
from tests.fixtures.langgraph import run_context
from tests.pal_command import no_model, run_pal

TARGET = "tests.fixtures.langgraph.run_context:graph"
RUN_SECONDS = 60


def _program() -> object:
    result = import_target(TARGET, strict=True)
    return parse(write(result.program))


def _forget_visits() -> None:
    run_context.store.delete(("visits",), run_context.INPUT["name"])


@pytest.mark.anyio
async def test_nodes_get_config_runtime_store_and_writer_as_under_langgraph() -> None:
    _forget_visits()
    config = {"configurable": {"thread_id": "visit-1"}}
    streamed = []
    async for mode, chunk in run_context.graph.astream(
        dict(run_context.INPUT), config, context=run_context.CONTEXT, stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            streamed.append(chunk)
        else:
            expected = chunk
    _forget_visits()
    tracer = Tracer()
    with anyio.fail_after(RUN_SECONDS):
        actual = await run_playbook(
            _program(),
            "Invoke",
            model=None,
            limits=RunLimits(max_model_calls=0),
            thread="visit-1",
            tracer=tracer,
            input=dict(run_context.INPUT),
            context=dict(run_context.CONTEXT),
        )
    assert actual == expected
    assert actual["greeting"] == "Welcome, Ada (u-7)" and actual["visits"] == 1
    assert actual["log"] == ["node note_thread", "announced", "u-7 signed off on visit-1"]
    said = [event.detail.removeprefix("to human: ") for event in tracer.events if event.event == "message"]
    assert said == [chunk if isinstance(chunk, str) else json.dumps(chunk) for chunk in streamed]
    assert said == ['{"step": "announce", "visits": 1}', "Welcome, Ada (u-7)!", "signing off"]


@pytest.mark.anyio
async def test_the_store_is_the_graphs_own_and_keeps_what_nodes_put_across_runs() -> None:
    _forget_visits()
    program = _program()
    for expected_visits in (1, 2):
        with anyio.fail_after(RUN_SECONDS):
            state = await run_playbook(
                program,
                "Invoke",
                model=None,
                input=dict(run_context.INPUT),
                context=dict(run_context.CONTEXT),
            )
        assert state["visits"] == expected_visits
    assert run_context.store.get(("visits",), "Ada").value == {"count": 2}
    _forget_visits()


@pytest.mark.anyio
async def test_the_context_schema_fills_defaults_and_a_missing_required_field_is_an_input_error() -> None:
    _forget_visits()
    program = _program()
    with anyio.fail_after(RUN_SECONDS):
        state = await run_playbook(
            program, "Invoke", model=None, input={"name": "Ada"}, context={"user_id": "u-1"}
        )
    assert state["greeting"] == "Hello, Ada (u-1)"
    _forget_visits()
    with pytest.raises(
        InputError, match=r"context: user_id is required \(the graph's context schema is Visitor\)"
    ):
        await run_playbook(program, "Invoke", model=None, input={"name": "Ada"})
    with pytest.raises(InputError, match=r"colour is not a field of Visitor"):
        await run_playbook(
            program, "Invoke", model=None, input={"name": "Ada"}, context={"user_id": "u", "colour": 1}
        )


@pytest.mark.slow
def test_pal_run_takes_the_context_and_names_a_missing_field(tmp_path: Path) -> None:
    program = tmp_path / "visits.pal"
    program.write_text(write(import_target(TARGET).program), encoding="utf-8")
    root = Path(__file__).resolve().parents[2]
    ran = run_pal(
        "run",
        str(program),
        "--input",
        '{"name": "Grace"}',
        "--context",
        '{"user_id": "u-9"}',
        *no_model(tmp_path),
        cwd=root,
    )
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["greeting"] == "Hello, Grace (u-9)"
    assert "Hello, Grace (u-9)!" in ran.stderr  # what a node streams is said to the user
    missing = run_pal(
        "run", str(program), "--input", '{"name": "Grace"}', "-q", *no_model(tmp_path), cwd=root
    )
    assert missing.returncode != 0
    assert "user_id is required" in missing.stderr and "--context" in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1, missing.stderr

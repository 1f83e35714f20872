"""A node that calls a chat model inside its Python is said at import (LG118) and answered by the run's model.

The graph of tests/fixtures/langgraph/model_nodes.py runs under LangGraph with LangChain's fake chat model,
then as the imported program with a ScriptedModel giving the same answers in PAL's format, and both end
in the same state. In the imported run the graph's own model is never called (its list of answers is
empty), and a model whose provider would be called is refused, never reached.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from langchain_core.messages import AIMessage

from importers import ImportFailed
from importers.langgraph import import_target
from pal_core.parser import parse
from pal_core.writer import write
from runtime.api import run_playbook
from runtime.models.scripted import ScriptedModel
from runtime.program_run import RunLimits
from tests.fixtures.langgraph import model_nodes
from tests.fixtures.langgraph.fakes import calls

TARGET = "tests.fixtures.langgraph.model_nodes:graph"
RUN_SECONDS = 60
TEXT = {"text": "Rain on Saturday, sun on Sunday, a warm week after."}


def _program() -> Any:
    return parse(write(import_target(TARGET).program))


async def _run(model: ScriptedModel, state: dict[str, Any]) -> Any:
    with anyio.fail_after(RUN_SECONDS):
        return await run_playbook(
            _program(), "Invoke", model=model, limits=RunLimits(max_model_calls=10), input=dict(state)
        )


def test_each_node_that_calls_a_model_is_said_and_strict_import_fails() -> None:
    result = import_target(TARGET)
    assert [(item.code, item.subject) for item in result.diagnostics] == [
        ("LG118", "node 'summarize'"),
        ("LG118", "node 'classify'"),
        ("LG118", "node 'headline'"),
    ]
    assert "the chat model llm (through _headline_model)" in result.diagnostics[2].message
    with pytest.raises(ImportFailed, match="LG118 node 'summarize'"):
        import_target(TARGET, strict=True)


@pytest.mark.anyio
async def test_the_run_model_answers_the_nodes_calls_and_the_state_is_langgraphs() -> None:
    model_nodes.llm.answer(
        [
            AIMessage(content="Rainy Saturday, sunny Sunday"),
            calls(("Topic", {"topic": "weather", "confident": True})),
            AIMessage(content="weekend weather turns"),
        ]
    )
    expected = await model_nodes.graph.ainvoke(dict(TEXT))
    model_nodes.llm.answer([])  # the imported program must not call the graph's own model
    scripted = ScriptedModel(
        [
            'Return["Rainy Saturday, sunny Sunday"]\nyld return',
            'Return[{"topic": "weather", "confident": true}]\nyld return',
            '`$r = Topic(topic="weather", confident=true)`\nyld call',  # refused: no tool here
            'Return["weekend weather turns"]\nyld return',
        ]
    )
    actual = await _run(scripted, TEXT)
    assert actual == expected
    assert actual["headline"] == "WEEKEND WEATHER TURNS" and actual["topic"] == "weather"
    summary, classify, refused, retried = scripted.requests
    assert summary.messages[0].content.startswith(model_nodes.SUMMARY_PROMPT)
    assert summary.messages[-1].content == TEXT["text"]
    assert "Return[{...}]" in classify.messages[0].content and '"topic"' in classify.messages[0].content
    assert "Topic is not a tool you can call" in retried.messages[-1].content
    assert refused.metadata["playbook"] == "node 'headline'"


@pytest.mark.anyio
async def test_an_answer_that_does_not_fit_the_schema_is_asked_again() -> None:
    model_nodes.llm.answer([])
    scripted = ScriptedModel(
        [
            'Return["Rainy Saturday"]\nyld return',
            'Return["weather"]\nyld return',  # not an object with Topic's fields
            'Return[{"topic": "weather"}]\nyld return',  # confident is missing
            'Return[{"topic": "weather", "confident": false}]\nyld return',
            'Return["rain then sun"]\nyld return',
        ]
    )
    state = await _run(scripted, TEXT)
    assert state["confident"] is False and state["headline"] == "RAIN THEN SUN"
    assert "must hold a JSON object with the fields of Topic" in scripted.requests[2].messages[-1].content
    assert "confident is required" in scripted.requests[3].messages[-1].content


class _Cloud(model_nodes.ToolCallingFake):
    """Stands for a provider's chat model: any call that reaches it is a call to the network."""

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the node's own provider was called")


@pytest.mark.anyio
async def test_the_nodes_own_provider_is_never_called(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_nodes, "llm", _Cloud(messages=iter([])))
    scripted = ScriptedModel(
        [
            'Return["sun"]\nyld return',
            'Return[{"topic": "weather", "confident": true}]\nyld return',
            'Return["sunny"]\nyld return',
        ]
    )
    state = await _run(scripted, TEXT)
    assert state["headline"] == "SUNNY" and scripted.calls == 3


@pytest.mark.anyio
async def test_a_model_made_from_a_provider_string_inside_the_node_is_answered_by_the_run_model() -> None:
    """`init_chat_model("anthropic:...")` in the node, with no anthropic package installed: while the node
    is served the factory gives a chat model the run's model answers, tools bound and called as LangGraph
    calls them; outside a served node it is LangChain's own factory (which needs the package)."""
    from tests.fixtures.langgraph import factory_model

    result = import_target("tests.fixtures.langgraph.factory_model:graph")
    assert [item.code for item in result.diagnostics] == ["LG118"]
    scripted = ScriptedModel(
        [
            '`$r1 = next_train(station="Leeds")`\nyld call',
            'Return["The next train from Leeds leaves at 10:42."]\nyld return',
        ]
    )
    question = {"messages": [{"role": "user", "content": "When is the next train from Leeds?"}]}
    with anyio.fail_after(RUN_SECONDS):
        state = await run_playbook(
            parse(write(result.program)),
            "Invoke",
            model=scripted,
            limits=RunLimits(max_model_calls=4),
            input=question,
        )
    contents = [message.content for message in state["messages"]]
    assert contents[-2:] == [
        "The next train from Leeds leaves at 10:42.",
        "The next train from Leeds leaves at 10:42.",
    ]
    assert "It is now" in scripted.requests[0].messages[0].content
    with pytest.raises(ImportError, match="langchain-anthropic"):
        factory_model.init_chat_model(factory_model.MODEL)

"""Importing LangGraph graphs: what the program says, that it validates, goldens, and the diagnostics.

Golden files (tests/fixtures/langgraph/<name>.pal) were reviewed by hand. After a deliberate change to
the importer's output, rewrite them with:

    .venv/bin/python -c "from tests.importers.test_langgraph_import import write_goldens; write_goldens()"

and review the diff before committing.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from importers import ImportFailed, ImportTargetError
from importers.langgraph import CODES, import_graph, import_target
from pal_core.ir import Agent, PlaybookKind, Program, Step
from pal_core.parser import parse
from pal_core.validate import validate_text
from pal_core.writer import write
from runtime.module_path import resolve
from tests.conftest import FIXTURES

GOLDEN_DIR = FIXTURES / "langgraph"
PLAIN_GRAPHS = (
    "linear",
    "branch",
    "loop",
    "send_fanout",
    "subgraph",
    "parallel",
    "command",
    "routes",
    "pydantic_state",
    "async_nodes",
    "map_reduce",
    "parallel_goto",
)
GOLDENS: dict[str, str] = {
    **{name: f"tests.fixtures.langgraph.{name}:graph" for name in PLAIN_GRAPHS},
    "interrupt": "tests.fixtures.langgraph.interrupt:graph",
    "unsupported": "tests.fixtures.langgraph.unsupported:graph",
    "react_agent": "tests.fixtures.langgraph.prebuilt:react_graph",
    "create_agent": "tests.fixtures.langgraph.prebuilt:agent_graph",
    "supervisor": "tests.fixtures.langgraph.prebuilt:supervisor_graph",
    "swarm": "tests.fixtures.langgraph.prebuilt:swarm_graph",
}


def write_goldens() -> None:
    """Rewrite every golden file from the importer's current output."""
    for name, target in GOLDENS.items():
        (GOLDEN_DIR / f"{name}.pal").write_text(write(import_target(target).program), encoding="utf-8")


def _text(target: str) -> str:
    return write(import_target(target).program)


def _invoke(program: Program) -> list[Step]:
    playbook = program.agents[0].playbook("Invoke")
    assert playbook is not None
    return list(playbook.all_steps())


def _texts(steps: list[Step], opcode: str) -> list[str]:
    return [step.text for step in steps if step.opcode == opcode]


# --- goldens and validity ------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_import_matches_the_reviewed_golden_file(name: str) -> None:
    golden = (GOLDEN_DIR / f"{name}.pal").read_text(encoding="utf-8")
    result = import_target(GOLDENS[name])
    assert write(result.program) == golden
    assert parse(golden) == result.program


@pytest.mark.parametrize("name", sorted(GOLDENS))
def test_every_imported_program_validates_without_errors_or_warnings(name: str) -> None:
    text = _text(GOLDENS[name])
    assert [diagnostic.format(show_source=False) for diagnostic in validate_text(text)] == []


@pytest.mark.parametrize(
    "name", [*PLAIN_GRAPHS, "interrupt", "react_agent", "create_agent", "supervisor", "swarm"]
)
def test_graphs_the_importer_expresses_fully_have_no_diagnostics(name: str) -> None:
    assert import_target(GOLDENS[name]).diagnostics == ()


# --- what the programs say -----------------------------------------------------------------------


def test_each_plain_node_is_a_python_playbook_bound_to_its_function() -> None:
    from tests.fixtures.langgraph import linear

    program = import_target("tests.fixtures.langgraph.linear:graph").program
    agent = program.agents[0]
    for playbook_name, function in (
        ("First", linear.first),
        ("Second", linear.second),
        ("Third", linear.third),
    ):
        playbook = agent.playbook(playbook_name)
        assert playbook is not None and playbook.kind is PlaybookKind.PYTHON
        assert playbook.metadata.python is not None
        assert resolve(playbook.metadata.python) is function
    invoke = agent.playbook("Invoke")
    assert invoke is not None and [trigger.code for trigger in invoke.triggers] == ["BGN"]
    assert [parameter.name for parameter in invoke.parameters] == ["input"]


def test_static_edges_are_queued_node_calls_in_order_each_run_by_yld_call() -> None:
    steps = _invoke(import_target("tests.fixtures.langgraph.linear:graph").program)
    assert _texts(steps, "QUE") == [
        "$update = First(state=$state)",
        "$update = Second(state=$state)",
        "$update = Third(state=$state)",
    ]
    assert _texts(steps, "YLD") == ["call"] * 3
    assert steps[-1].opcode == "RET" and steps[-2].call is not None and steps[-2].call.name == "FinishGraph"


def test_the_state_schema_records_types_and_reducers_by_import_path() -> None:
    steps = _invoke(import_target("tests.fixtures.langgraph.linear:graph").program)
    assignment = steps[0].assignment
    assert assignment is not None and assignment.target.name == "schema"
    assert '"x": {"type": "int"}' in assignment.expression
    assert '"trail": {"type": "list[str]", "reducer": "operator:add", "initial": []}' in assignment.expression


def test_a_conditional_edge_is_the_router_call_then_a_branch_per_destination() -> None:
    from tests.fixtures.langgraph import branch

    program = import_target("tests.fixtures.langgraph.branch:graph").program
    router = program.agents[0].playbook("SizeRouter")
    assert router is not None and router.metadata.python is not None
    assert resolve(router.metadata.python) is branch.size_router
    steps = _invoke(program)
    conditions = [step.text for step in steps if step.opcode == "CND"]
    assert conditions == ['If $route == "handle_big"', 'Else if $route == "handle_small"']
    destination = next(step for step in steps if step.call is not None and step.call.name == "Destination")
    assert destination.text.endswith('ends={"big": "handle_big", "small": "handle_small"})')


def test_a_cycle_is_a_jump_back() -> None:
    steps = _invoke(import_target("tests.fixtures.langgraph.loop:graph").program)
    step_node = next(step for step in steps if step.text == "$update = Step(state=$state)")
    back = [step for step in steps if step.opcode == "JMP" and step.jump_target == step_node.line]
    assert back, "the router's 'step' branch jumps back to the step node"
    assert all(jump.path > step_node.path for jump in back)


def test_a_send_fan_out_loops_over_the_packets_and_applies_them_together() -> None:
    steps = _invoke(import_target("tests.fixtures.langgraph.send_fanout:graph").program)
    loop = next(step for step in steps if step.opcode == "CND" and step.text == "While $sends != []")
    body = [child.text for child in loop.children]
    assert "$update = WriteJoke(state=$packet)" in body
    assert loop.children[-1].opcode == "JMP" and loop.children[-1].jump_target == loop.line
    assert any(step.text.startswith("$sends:list = SendArgs(") for step in steps)
    assert any(step.text.startswith("$state:dict = ApplyWrites(") for step in steps)


def test_parallel_nodes_are_queued_together_on_one_state_and_written_in_langgraph_order() -> None:
    steps = _invoke(import_target("tests.fixtures.langgraph.parallel:graph").program)
    queued = _texts(steps, "QUE")
    assert queued[1:4] == [
        "$update_left = Left(state=$state)",
        "$update_right = Right(state=$state)",
        "$update_slow_1 = Slow1(state=$state)",
    ]
    assert (
        '$writes:list = [["left", $update_left], ["right", $update_right], ["slow_1", $update_slow_1]]'
        in (_texts(steps, "EXE"))
    )


def test_a_subgraph_is_an_agent_whose_invoke_the_parent_calls() -> None:
    program = import_target("tests.fixtures.langgraph.subgraph:graph").program
    assert [agent.name for agent in program.agents] == ["SubgraphGraph", "Child"]
    child = program.agent("Child")
    assert isinstance(child, Agent)
    invoke = child.playbook("Invoke")
    assert invoke is not None and invoke.public and invoke.triggers == ()
    assert "$update = Child.Invoke(input=$state)" in _texts(_invoke(program), "QUE")


def test_command_routes_come_from_the_annotation_and_from_destinations() -> None:
    steps = _invoke(import_target("tests.fixtures.langgraph.command:graph").program)
    applies = [step.text for step in steps if step.call is not None and step.call.name == "ApplyUpdate"]
    assert any(
        'node="triage"' in text and 'routes=["billing", "support", "__end__"]' in text for text in applies
    )
    assert any('node="review"' in text and 'routes=["support"]' in text for text in applies)
    assert sum(1 for step in steps if step.call is not None and step.call.name == "CommandGoto") == 2
    # get_graph() draws Command routing as edges to every node; the import follows only the declared ones.
    review_branches = [step.text for step in steps if step.opcode == "CND"]
    assert review_branches.count('If $route == "support"') == 1


def test_an_interrupting_node_asks_the_user_and_a_static_interrupt_yields_to_the_user() -> None:
    program = import_target("tests.fixtures.langgraph.interrupt:graph").program
    agent = program.agents[0]
    asking = agent.playbook("AskName")
    assert asking is not None and asking.kind is PlaybookKind.MARKDOWN
    texts = [step.text for step in asking.all_steps()]
    assert 'Say("human", $question)' in texts and '$reply = WaitForMessage("human")' in texts
    steps = _invoke(program)
    greet = next(step for step in steps if step.text == "$update = Greet(state=$state)")
    before = steps[steps.index(greet) - 1]
    assert (before.opcode, before.text) == ("YLD", "user")


def test_a_react_agent_is_a_react_playbook_with_its_prompt_and_its_tools_bound_by_path() -> None:
    from tests.fixtures.langgraph import prebuilt

    program = import_target("tests.fixtures.langgraph.prebuilt:react_graph").program
    (agent,) = program.agents
    run = agent.playbook("Run")
    assert run is not None and run.metadata.execution_mode == "react"
    assert run.description == "You are a weather assistant. Answer briefly and cite the city."
    tool = agent.playbook("GetWeather")
    assert tool is not None and tool.metadata.python is not None
    assert resolve(tool.metadata.python) is prebuilt.get_weather.func
    assert [(parameter.name, parameter.type) for parameter in tool.parameters] == [("city", "str")]


def test_create_agent_is_read_from_its_model_node() -> None:
    program = import_target("tests.fixtures.langgraph.prebuilt:agent_graph").program
    (agent,) = program.agents
    run = agent.playbook("Run")
    assert run is not None and run.description == "You are a helpful assistant. Use the tools when they help."
    assert {playbook.name for playbook in agent.playbooks} >= {"GetWeather", "Add"}


def test_a_supervisor_routes_to_worker_agents_by_its_hand_offs() -> None:
    program = import_target("tests.fixtures.langgraph.prebuilt:supervisor_graph").program
    assert [agent.name for agent in program.agents] == [
        "SupervisorGraph",
        "Supervisor",
        "ResearchExpert",
        "MathExpert",
    ]
    supervisor = program.agent("Supervisor")
    assert supervisor is not None
    transfer = supervisor.playbook("TransferToMathExpert")
    assert transfer is not None
    assert [step.text for step in transfer.steps] == ['$command = Handoff(agent="math_expert")', "$command"]
    queued = _texts(_invoke(program), "QUE")
    assert queued == [
        "$update = Supervisor.Run(state=$state)",
        "$update = ResearchExpert.Run(state=$state)",
        "$update = MathExpert.Run(state=$state)",
    ]


def test_a_swarm_starts_at_the_active_agent_and_hands_off_by_command() -> None:
    program = import_target("tests.fixtures.langgraph.prebuilt:swarm_graph").program
    steps = _invoke(program)
    assert '$result = StateValue(state=$state, key="active_agent", default="Alice")' in _texts(steps, "EXE")
    alice = program.agent("Alice")
    assert alice is not None
    transfer = alice.playbook("TransferToBob")
    assert transfer is not None
    assert transfer.steps[0].text == '$command = Handoff(agent="Bob", update={"active_agent": "Bob"})'


def test_names_come_from_the_compiled_graph_or_the_target() -> None:
    assert import_target("tests.fixtures.langgraph.linear:graph").program.agents[0].name == "LinearGraph"
    assert import_target("tests.fixtures.langgraph.linear:builder").program.agents[0].name == "LinearBuilder"
    from tests.fixtures.langgraph import linear

    assert import_graph(linear.graph).program.agents[0].name == "Graph"
    assert import_graph(linear.graph, name="my graph").program.agents[0].name == "MyGraph"


def test_a_state_graph_builder_imports_like_its_compiled_graph() -> None:
    built = write(import_target("tests.fixtures.langgraph.linear:builder").program)
    compiled = write(import_target("tests.fixtures.langgraph.linear:graph").program)
    assert built.replace("LinearBuilder", "X").replace(":builder", ":g").replace(
        "tool: linear_builder", "tool: t"
    ) == compiled.replace("LinearGraph", "X").replace(":graph", ":g").replace("tool: linear_graph", "tool: t")


def test_pydantic_state_is_rebuilt_for_each_node() -> None:
    steps = _invoke(import_target("tests.fixtures.langgraph.pydantic_state:graph").program)
    views = [text for text in _texts(steps, "EXE") if "StateView" in text]
    assert views and all('model="tests.fixtures.langgraph.pydantic_state:State"' in text for text in views)


# --- diagnostics ---------------------------------------------------------------------------------

DIAGNOSTIC_CASES = [
    ("parallel_routing", "LG106", "node 'left'"),
    ("several_routes", "LG107", "node 'start'"),
    ("channel_kinds", "LG104", "state key 'flash'"),
    ("channel_kinds", "LG103", "state key 'log'"),
    ("channel_kinds", "LG105", "state key 'remaining_steps'"),
    ("needs_context", "LG110", "node 'configured'"),
    ("list_router", "LG111", "router after 'start'"),
    ("command_send", "LG117", "node 'start'"),
    ("runnable_nodes", "LG116", "node 'chain'"),
    ("runnable_nodes", "LG116", "node 'method'"),
    ("too_large", "LG115", "graph 'too_large'"),
    ("local_state", "LG112", "node 'note'"),
    ("agent_problems", "LG114", "agent 'troubled', tool 'secret'"),
    ("agent_problems", "LG114", "agent 'troubled', tool 'read_state'"),
    ("agent_problems", "LG113", "agent 'troubled'"),
]


@pytest.mark.parametrize(("attribute", "code", "subject"), DIAGNOSTIC_CASES)
def test_strict_import_refuses_what_cannot_run(attribute: str, code: str, subject: str) -> None:
    from tests.fixtures.langgraph import diagnostic_graphs

    with pytest.raises(ImportFailed) as caught:
        import_graph(getattr(diagnostic_graphs, attribute), name=attribute, strict=True)
    assert f"{code} {subject}:" in str(caught.value)


@pytest.mark.parametrize(("attribute", "code", "subject"), DIAGNOSTIC_CASES)
def test_what_cannot_be_expressed_is_reported_naming_its_subject(
    attribute: str, code: str, subject: str
) -> None:
    from tests.fixtures.langgraph import diagnostic_graphs

    result = import_graph(getattr(diagnostic_graphs, attribute), name=attribute)
    found = {(diagnostic.code, diagnostic.subject) for diagnostic in result.diagnostics}
    assert (code, subject) in found
    errors = [item for item in validate_text(write(result.program)) if item.severity == "error"]
    assert errors == []


def test_unsupported_parts_are_reported_and_fail_loudly_where_they_would_run() -> None:
    result = import_target("tests.fixtures.langgraph.unsupported:graph")
    assert [(diagnostic.code, diagnostic.subject) for diagnostic in result.diagnostics] == [
        ("LG101", "node 'double'"),
        ("LG108", "node 'late'"),
        ("LG109", "node 'late'"),
        ("LG102", "router after 'double'"),
    ]
    steps = _invoke(result.program)
    failing = [step.text for step in steps if step.call is not None and step.call.name == "Unsupported"]
    assert failing == [
        'Unsupported(node="double", reason="its function cannot be imported by path: it is a lambda, which has '
        'no import path; make it a module-level function")',
        'Unsupported(node="double", reason="its router cannot be called by import path")',
    ]


def test_strict_import_fails_listing_every_diagnostic() -> None:
    with pytest.raises(ImportFailed) as caught:
        import_target("tests.fixtures.langgraph.unsupported:graph", strict=True)
    assert [diagnostic.code for diagnostic in caught.value.diagnostics] == [
        "LG101",
        "LG108",
        "LG109",
        "LG102",
    ]
    message = str(caught.value)
    assert "node 'double'" in message and "router after 'double'" in message and "node 'late'" in message
    assert import_target("tests.fixtures.langgraph.linear:graph", strict=True).diagnostics == ()


def test_every_diagnostic_code_is_documented() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "langgraph.md").read_text(encoding="utf-8")
    for code in CODES.values():
        assert f"| {code.code} | `{code.name}` |" in docs


# --- bad targets ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("tests.fixtures.langgraph.linear", "must be written module:attribute"),
        ("tests.fixtures.langgraph.nothing_here:graph", "cannot import module"),
        ("tests.fixtures.langgraph.linear:nothing", "has no attribute 'nothing'"),
        ("tests.fixtures.langgraph.linear:first", "expected a StateGraph"),
    ],
)
def test_a_bad_target_is_a_clear_error(target: str, message: str) -> None:
    with pytest.raises(ImportTargetError, match=message):
        import_target(target)


def test_a_graph_without_an_entry_point_is_refused() -> None:
    from langgraph.graph import StateGraph

    from tests.fixtures.langgraph.linear import State, first

    builder = StateGraph(State)
    builder.add_node("first", first)
    with pytest.raises(ImportTargetError, match="no entry point"):
        import_graph(builder)


def test_importing_the_importer_loads_no_framework() -> None:
    code = (
        "import sys, importers, importers.langgraph, importers.langgraph.support\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'langgraph', 'langchain_core', 'pydantic'}))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert completed.stdout.strip() == "[]"


def test_the_support_helpers_have_the_signatures_their_playbooks_declare() -> None:
    from importers.langgraph import support as langgraph_support
    from runtime.support_modules import support_helper

    program = import_target("tests.fixtures.langgraph.send_fanout:graph").program
    for playbook in program.agents[0].playbooks:
        if playbook.metadata.python is None or not playbook.metadata.python.startswith("pal."):
            continue
        function = support_helper(playbook.metadata.python)
        assert function is langgraph_support.HELPERS[playbook.metadata.python.rpartition(":")[2]]
        names = [parameter.name for parameter in playbook.parameters]
        assert names == list(inspect.signature(function).parameters)

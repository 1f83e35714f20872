"""Import a LangGraph StateGraph (or a compiled graph) as a PAL program that runs.

    pal import langgraph myapp.graphs:graph -o graph.pal [--strict]
    pal run graph.pal --input '{"x": 1}'

`import_target("module:attr")` and `import_graph(graph)` return an `ImportResult`: the program, and a
diagnostic for every part of the graph the program does not express, naming the node, state key, router
or tool (codes LG101-LG117, listed in docs/langgraph.md). With `strict=True` any diagnostic raises
`ImportFailed`. The graph is read from its builder (`nodes`, `edges`, `waiting_edges`, `branches`,
`channels`, `schemas`), never from `get_graph()`, which draws false edges for Command routing.

The mapping
-----------
- **One agent per graph.** The imported graph's agent has `Invoke($input:dict) -> dict` (trigger BGN): it
  runs the graph on an input state and returns the output state, the shape `graph.invoke` returns
  (`pal run out.pal --input '{"x": 1}'` binds the JSON object to `$input` and prints the result).
- **Subgraphs are agents.** A compiled subgraph used as a node is an agent of its own whose public
  `Invoke` the parent calls with its state (`Child.Invoke(input=$state)`); the output is the node's
  update. Agents, not nested playbooks, because PAL variables belong to an agent: the subgraph's `$state`
  must not overwrite its parent's.
- **State.** The whole state is one `$state:dict` variable. The state schema is recorded in the first step
  as the `$schema` literal: every key with its type, and for a key with a reducer the reducer's import
  path and starting value. `StartGraph` writes the input, `ApplyUpdate` / `ApplyWrites` apply a
  superstep's updates through the reducers, `FinishGraph` returns the output keys (Python playbooks
  bound to `pal.langgraph`, importers/langgraph/support.py).
- **Nodes.** A plain-function node is a Python playbook bound to the function (`python: module:qualname`),
  called with the state and answering the node's update. A node that calls `interrupt()` is a markdown
  playbook that runs the function with the human's answers so far and, at an unanswered question, says
  it to the user and waits for the reply (`WaitForMessage("human")`), as LangGraph re-runs an interrupted
  node on resume.
- **LLM agents.** A graph built by `create_react_agent` or langchain's `create_agent` (imported itself, used
  as a node, or a langgraph-supervisor worker) becomes an agent with a react playbook `Run($state:dict)`
  holding its prompt, and its tools as Python playbooks bound to the tool functions. Hand-off tools of
  langgraph-supervisor and langgraph-swarm become `TransferTo...` playbooks returning the `Command`.
- **Control flow**, one superstep at a time: a superstep's node calls are QUE steps run by one
  `YLD call`, all on the state before the superstep, then their writes are applied together in
  LangGraph's order; a static edge to the next superstep falls through or JMPs; a conditional edge is the
  router's call, `Destination` mapping its result through the path map, then `CND If $route == "<node>"`
  branches; a `Command(goto=...)` route (from a `Command[Literal[...]]` return annotation or
  `destinations=`) is `CommandGoto` and the same branches; a `Send` fan-out is a `CND While $sends != []`
  loop calling the node on each packet; waiting edges (joins) wait for all their sources; cycles are JMPs
  back; static `interrupt_before` / `interrupt_after` are `YLD user`; START is the input and END is
  `FinishGraph` and RET.

Routes that name several destinations at once (Sends to several nodes, a router returning a list,
`Command(goto=[...])`) branch on the combination, each a superstep running those nodes together.

Not expressed (each reported): routing from a node running in parallel with others, several routes out
of one node, routes building their lists at run time among more than five destinations, `Command`s that
go to a `Send` or to the parent graph,
deferred nodes, retry / cache / timeout policies and error handlers, managed values, channels other than
values and reducers, nodes or routers without an import path (lambdas, closures), nodes that take
config / runtime / store / writer, and parts of LLM agents (prompt functions, hooks, middleware).
LangGraph's recursion limit is not enforced.
"""

from __future__ import annotations

from typing import Any

from importers import ImportResult, ImportTargetError, load_target
from importers.common.diagnostics import Findings
from importers.common.naming import target_name
from importers.langgraph._diagnostics import CODES
from importers.langgraph._emit import AGENT_PLAYBOOK, ENTRY_PLAYBOOK, build_program
from importers.langgraph._model import START
from importers.langgraph._read import read_graph

_GENERIC_NAMES = frozenset({"graph", "app", "workflow", "builder", "agent", "compiled", "compiled_graph"})


def import_graph(
    graph: Any, *, name: str | None = None, source: str | None = None, strict: bool = False
) -> ImportResult:
    """The PAL program of a StateGraph or compiled graph.

    `name` names the agent when the compiled graph has no name of its own; `source` (the graph's
    `module:attr`) is recorded in the agent's metadata.
    """
    findings = Findings()
    model = read_graph(graph, name=name or "graph", source=source, scope="", findings=findings)
    if (
        model.agent is None
        and not any(edge[0] == START for edge in model.edges)
        and START not in model.routers
    ):
        raise ImportTargetError(
            f"graph {model.name!r} has no entry point: add an edge from START (add_edge(START, node))"
        )
    return findings.result(build_program(model, findings), target=source or model.name, strict=strict)


def import_target(target: str, *, strict: bool = False) -> ImportResult:
    """The PAL program of the graph at `target` (`package.module:attribute`)."""
    graph = load_target(target)
    return import_graph(graph, name=target_name(target, _GENERIC_NAMES), source=target, strict=strict)


__all__ = ["AGENT_PLAYBOOK", "CODES", "ENTRY_PLAYBOOK", "import_graph", "import_target"]

"""The steps of a workflow's `Run`: its graph as PAL control flow.

ADK runs a workflow by triggering nodes: a node runs on the output of the node that triggered it (the
workflow's input after START: the user's message for the root), then its edges trigger the next nodes:
the edges without a route always, the routed ones whose route the node emitted (`__DEFAULT__` when none
matched). Each node that can be reached is a block of steps with a label; after it, one of:

    EXE $node_input = $node_output; JMP <next>                   one edge
    EXE $next:str = Destination(route=$route, node="n", routes=[[["big"], "big"], ...])
    CND If $next == "big" ... JMP <big>                           routed edges, one branch per target
    EXE $workflow_output = $node_output; JMP <end>                no edge: a terminal node

A fan-out (several unrouted edges) runs its targets in edge order, each on the same input, and a
JoinNode after them gets `{target: output}`; ADK runs synchronous nodes in that order too, each seeing
what the one before it wrote to the state. Other shapes (a routed and an unrouted edge out of one node,
a fan-out whose branches do not meet in one JoinNode) are reported (ADK108) and fail there at run time.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from importers.adk._diagnostics import WORKFLOW_SHAPE
from importers.adk._model import Agent, AgentKind, Edge, Node, NodeKind, Workflow
from importers.adk._read import START
from importers.common.steps import StepList, literal

if TYPE_CHECKING:
    from importers.adk._emit import ProgramWriter
    from importers.common.emit import AgentParts

_END = "workflow_end"
_SLUG_RE = re.compile(r"[^A-Za-z0-9_]+")


def _slug(name: str) -> str:
    return _SLUG_RE.sub("_", name).strip("_").lower() or "node"


class WorkflowSteps:
    """Writes one workflow's graph into the steps of its `Run`."""

    __slots__ = ("agent", "emitted", "parts", "pending", "program", "steps", "workflow")

    def __init__(self, program: ProgramWriter, agent: Agent, parts: AgentParts, steps: StepList) -> None:
        if agent.workflow is None:
            raise ValueError("a workflow agent without its graph")
        self.program = program
        self.agent = agent
        self.parts = parts
        self.steps = steps
        self.workflow: Workflow = agent.workflow
        self.emitted: set[str] = set()
        self.pending: list[str] = []

    def write(self) -> None:
        steps = self.steps
        steps.add("EXE", "$from_start:bool = $from_message")
        steps.add("EXE", "$workflow_output = None")
        steps.add("EXE", "$node_output = $node_input")
        self._transition(START, steps, from_start=True)
        while self.pending:
            name = self.pending.pop(0)
            if name not in self.emitted:
                self._block(name)
        steps.label(_END)
        steps.add(
            "EXE",
            f"$session:dict = {self.parts.helper('with_output')}(session=$session, output=$workflow_output)",
        )

    # --- blocks ----------------------------------------------------------------------------------

    def _block(self, name: str) -> None:
        self.emitted.add(name)
        self.steps.label(("node", name))
        self._run_node(self.workflow.nodes[name], self.steps)
        self._transition(name, self.steps, from_start=False)

    def _goto(self, target: str, steps: StepList) -> None:
        """Continue at `target`'s block: written next when it is not yet written (fall through), else a
        jump. Inside a CND body it is always a jump."""
        if steps is self.steps and target not in self.emitted and target not in self.pending:
            self._block(target)
            return
        if target not in self.emitted and target not in self.pending:
            self.pending.append(target)
        steps.jump(("node", target))

    def _run_node(self, node: Node, steps: StepList) -> None:
        helper = self.parts.helper
        routed = any(edge.routes is not None for edge in self.workflow.out_edges(node.name))
        if node.kind is NodeKind.ADK:
            steps.add(
                "EXE",
                f"$node_result:dict = {helper('run_node')}(session=$session, source={self.program.source_literal()}, "
                f"path={literal(node.path)}, node_input=$node_input, start=$from_start)",
            )
            steps.add("EXE", '$session:dict = $node_result["session"]')
            steps.add("EXE", '$node_output = $node_result["output"]')
            if routed:
                steps.add("EXE", '$route = $node_result["route"]')
            if node.asks_user:
                self._ask_user(steps)
        elif node.kind is NodeKind.AGENT and node.agent is not None:
            call = self.program.call(node.agent)
            if node.agent.kind is AgentKind.LLM:
                steps.add(
                    "EXE",
                    f"$agent_session:dict = {helper('agent_input')}(session=$session, node_input=$node_input)",
                )
                steps.add("EXE", f"$agent_session:dict = {call}(session=$agent_session)")
                steps.add(
                    "EXE",
                    f"$node_result:dict = {helper('agent_output')}(session=$session, result=$agent_session, "
                    f"agent={literal(node.agent.name)})",
                )
                steps.add("EXE", '$session:dict = $node_result["session"]')
                steps.add("EXE", '$node_output = $node_result["output"]')
            elif node.agent.kind is AgentKind.WORKFLOW:
                steps.add(
                    "EXE",
                    f"$session:dict = {call}(session=$session, node_input=$node_input, from_message=$from_start)",
                )
                steps.add("EXE", '$node_output = $session["output"]')
            else:
                steps.add("EXE", f"$session:dict = {call}(session=$session)")
                steps.add("EXE", "$node_output = None")
            if routed:
                steps.add("EXE", "$route = None")
        else:
            reason = node.reason or "the importer cannot run this node"
            steps.add(
                "EXE",
                f"{helper('unsupported')}(subject={literal(f'node {node.path!r}')}, reason={literal(reason)})",
            )
        steps.add("EXE", "$from_start:bool = False")

    def _ask_user(self, steps: StepList) -> None:
        """A node that yielded a RequestInput: its message is said to the user, and the user's answer is
        the node's output (ADK resumes a node that does not rerun with the answer as its output)."""
        steps.add("EXE", '$ask = $node_result["ask"]')
        body = StepList()
        body.add("QUE", 'Say("user", $ask)')
        body.add("EXE", '$answer = WaitForMessage("human")')
        body.add("EXE", f"$node_output = {self.parts.helper('message_text')}(message=$answer)")
        steps.branch("If $ask != None", body)

    # --- ways out of a node ----------------------------------------------------------------------

    def _transition(self, source: str, steps: StepList, *, from_start: bool) -> None:
        edges = self.workflow.out_edges(source)
        if not edges:
            if source != START:
                steps.add("EXE", "$workflow_output = $node_output")
            steps.jump(_END)
            return
        routed = [edge for edge in edges if edge.routes is not None]
        plain = [edge for edge in edges if edge.routes is None]
        if routed and plain:
            self._unsupported(
                source,
                "it has edges with and without routes, so it triggers several nodes at once; give every edge "
                "out of it a route (or none)",
                steps,
            )
        elif routed:
            self._routes(source, routed, steps)
        elif len(plain) == 1:
            steps.add("EXE", "$node_input = $node_output")
            self._goto(plain[0].target, steps)
        else:
            self._fan_out(source, plain, steps, from_start=from_start)

    def _routes(self, source: str, edges: list[Edge], steps: StepList) -> None:
        pairs = [[list(edge.routes or ()), edge.target] for edge in edges]
        steps.add(
            "EXE",
            f"$next:str = {self.parts.helper('destination')}(route=$route, node={literal(source)}, "
            f"routes={literal(pairs)})",
        )
        for index, target in enumerate(dict.fromkeys(edge.target for edge in edges)):
            body = StepList()
            body.add("EXE", "$node_input = $node_output")
            self._goto(target, body)
            steps.branch(f"{'If' if index == 0 else 'Else if'} $next == {literal(target)}", body)
        steps.jump(_END)

    def _fan_out(self, source: str, edges: list[Edge], steps: StepList, *, from_start: bool) -> None:
        targets = [edge.target for edge in edges]
        join = self._join_of(source, targets)
        if join is None:
            return self._unsupported(
                source,
                f"it triggers {', '.join(targets)} at once and they do not all end in one JoinNode (or at no "
                "edge); fan out to nodes whose only edge leads to the same JoinNode",
                steps,
            )
        steps.add("EXE", "$fanout_input = $node_output")
        steps.add("EXE", "$fanout_start:bool = $from_start")
        outputs: list[str] = []
        for target in targets:
            node = self.workflow.nodes[target]
            self.emitted.add(target)
            steps.add("EXE", "$node_input = $fanout_input")
            steps.add("EXE", "$from_start:bool = $fanout_start")
            self._run_node(node, steps)
            variable = f"$out_{_slug(target)}"
            steps.add("EXE", f"{variable} = $node_output")
            if self.workflow.out_edges(target):
                outputs.append(f"{literal(target)}: {variable}")
            else:
                steps.add("EXE", f"$workflow_output = {variable}")
        if join == "":
            steps.jump(_END)
            return None
        self.emitted.add(join)
        steps.add("EXE", "$node_output = {" + ", ".join(outputs) + "}")
        steps.add("EXE", "$from_start:bool = False")
        self._transition(join, steps, from_start=False)
        return None

    def _join_of(self, source: str, targets: list[str]) -> str | None:
        """The JoinNode every branch of a fan-out leads to ("" when no branch has an edge), or None when
        the fan-out has another shape."""
        if len(set(targets)) != len(targets):
            return None
        joins: set[str] = set()
        for target in targets:
            node = self.workflow.nodes.get(target)
            if node is None or node.kind is NodeKind.JOIN:
                return None
            if [edge.source for edge in self.workflow.in_edges(target)] != [source]:
                return None
            out = self.workflow.out_edges(target)
            if len(out) > 1 or any(edge.routes is not None for edge in out):
                return None
            joins.update(edge.target for edge in out)
        if not joins:
            return ""
        if len(joins) != 1:
            return None
        join = joins.pop()
        node = self.workflow.nodes.get(join)
        if node is None or node.kind is not NodeKind.JOIN:
            return None
        if {edge.source for edge in self.workflow.in_edges(join)} != {
            target for target in targets if self.workflow.out_edges(target)
        }:
            return None
        return join

    def _unsupported(self, source: str, reason: str, steps: StepList) -> None:
        subject = (
            f"node {self.agent.path}/{source}" if source != START else f"workflow {self.agent.path!r}, START"
        )
        self.program.findings.add(WORKFLOW_SHAPE, subject, reason)
        coded = f"{WORKFLOW_SHAPE.code} {reason}"
        steps.add(
            "EXE", f"{self.parts.helper('unsupported')}(subject={literal(subject)}, reason={literal(coded)})"
        )
        steps.jump(_END)

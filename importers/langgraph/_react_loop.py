"""A ReAct loop written by hand, recognised: a model node, a ToolNode and `tools_condition`, as one LLM agent.

    builder.add_node("agent", call_model)            # model.bind_tools(tools).invoke([system, *messages])
    builder.add_node("tools", ToolNode(tools))
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")

is what `create_react_agent` builds, and is imported the same way: one PAL agent whose model (a react
playbook holding the system prompt) calls the ToolNode's tools until it answers. The pattern is checked on
the graph and on the model node's code (read with `ast`, never run): the ToolNode is reached only from the
model node's router and goes back only to it; the router is `tools_condition` or reads the last message's
`tool_calls`, and leads to the ToolNode or one other place; the model node does nothing but call its model
on a system prompt (text, or a module-level string) and the state's messages and return the answer as its
messages. Anything more (a prompt built at run time, other state keys, conditions in the node) keeps the
node in Python, its model call answered by the run's model (LG118), and the ToolNode a node of its own.
"""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from importers.langgraph._code import function_tree
from importers.langgraph._model import END, START, AgentFactory, Graph, LlmAgent, Node, NodeKind, Router
from importers.langgraph._model_use import code_names

_TOOLS_CONDITION = "langgraph.prebuilt.tool_node:tools_condition"
_INVOKES = frozenset({"invoke", "ainvoke"})
_SYSTEM_MESSAGES = frozenset({"SystemMessage"})


def fold_react_loops(graph: Graph) -> Graph:
    """`graph` with each hand-written ReAct loop (model node, ToolNode, router) made one LLM agent node."""
    for tools in [node for node in graph.nodes.values() if node.kind is NodeKind.TOOLS]:
        loop = _loop(graph, tools)
        if loop is None:
            continue
        model_node, _, done = loop
        prompt = _model_node_prompt(model_node, tools.messages_key)
        if prompt is None:
            continue
        agent = LlmAgent(
            name=model_node.name,
            factory=AgentFactory.HAND_WRITTEN,
            prompt=prompt or None,
            tools=tools.tools,
            tool_node=tools.tool_node,
            messages_key=tools.messages_key,
        )
        nodes = {
            name: (
                dataclasses.replace(node, kind=NodeKind.AGENT, agent=agent, model=None)
                if name == model_node.name
                else node
            )
            for name, node in graph.nodes.items()
            if name != tools.name
        }
        routers = {source: found for source, found in graph.routers.items() if source != model_node.name}
        edges = tuple(
            sorted({*(edge for edge in graph.edges if tools.name not in edge), (model_node.name, done)})
        )
        graph = dataclasses.replace(graph, nodes=nodes, routers=routers, edges=edges)
    return graph


def _loop(graph: Graph, tools: Node) -> tuple[Node, Router, str] | None:
    """(model node, its router, where it goes when done) when `tools` closes a ReAct loop."""
    if tools.command_ends or tools.name in graph.routers:
        return None
    if any(tools.name in starts or end == tools.name for starts, end in graph.joins):
        return None
    if graph.static_targets(tools.name) == () or len(graph.static_targets(tools.name)) != 1:
        return None
    (back,) = graph.static_targets(tools.name)
    if any(target == tools.name for _, target in graph.edges):
        return None
    model_node = graph.nodes.get(back)
    if model_node is None or model_node.kind is not NodeKind.FUNCTION or model_node.model is None:
        return None
    if model_node.injected or model_node.reads_context or model_node.asks_human or model_node.command_ends:
        return None
    if model_node.view is not None or graph.static_targets(back):
        return None
    routers = graph.routers.get(back, ())
    if len(routers) != 1 or not _routes_on_tool_calls(routers[0]):
        return None
    targets = routers[0].targets(tuple(graph.nodes))
    others = [target for target in targets if target != tools.name]
    if tools.name not in targets or len(others) != 1:
        return None
    # Nothing else may route into the ToolNode.
    for source, found in graph.routers.items():
        if source != back and any(tools.name in router.targets(tuple(graph.nodes)) for router in found):
            return None
    if any(tools.name in node.command_ends for node in graph.nodes.values()) or tools.name == START:
        return None
    return model_node, routers[0], others[0]


def _routes_on_tool_calls(router: Router) -> bool:
    callee = router.callee
    if callee is None or callee.path is None or router.may_send or router.several:
        return False
    if callee.path == _TOOLS_CONDITION:
        return True
    code = getattr(callee.function, "__code__", None)
    return code is not None and "tool_calls" in set(code_names(code))


def _model_node_prompt(node: Node, messages_key: str) -> str | None:
    """The model node's system prompt ("" for none) when the node only calls its model on the prompt and
    the state's messages and returns the answer as its messages; None when it does anything else."""
    function = node.callee.function if node.callee is not None else None
    tree = function_tree(function) if function is not None else None
    if tree is None or not tree.body or not isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
        return None
    definition = tree.body[0]
    reader = _NodeReader(function, definition, messages_key)
    return reader.prompt()


class _NodeReader:
    """Reads a model node's body: assignments, one model call, one return of its answer."""

    def __init__(self, function: Any, definition: ast.FunctionDef | ast.AsyncFunctionDef, key: str) -> None:
        self.function = function
        self.key = key
        self.state = definition.args.args[0].arg if definition.args.args else None
        self.body = definition.body
        self.names: dict[str, ast.expr] = {}

    def prompt(self) -> str | None:
        if self.state is None:
            return None
        invoked: ast.Call | None = None
        answer: str | None = None
        returned = False
        for statement in self.body:
            if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                continue  # the docstring
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and not returned:
                target = statement.targets[0] if isinstance(statement, ast.Assign) else statement.target
                if (isinstance(statement, ast.Assign) and len(statement.targets) != 1) or not isinstance(
                    target, ast.Name
                ):
                    return None
                value = statement.value
                call = _model_call(value)
                if call is not None:
                    if invoked is not None:
                        return None
                    invoked, answer = call, target.id
                elif value is not None:
                    self.names[target.id] = value
                continue
            if isinstance(statement, ast.Return) and not returned and statement.value is not None:
                inline = _returned_call(statement.value, self.key)
                if inline is not None and invoked is None:
                    invoked, answer = inline, None
                elif not self._returns_answer(statement.value, answer):
                    return None
                returned = True
                continue
            return None
        if invoked is None or not returned or len(invoked.args) != 1 or invoked.keywords:
            return None
        return self._messages_prompt(invoked.args[0])

    def _returns_answer(self, value: ast.expr, answer: str | None) -> bool:
        if answer is None or not isinstance(value, ast.Dict) or len(value.keys) != 1:
            return False
        key = value.keys[0]
        if not (isinstance(key, ast.Constant) and key.value == self.key):
            return False
        item = value.values[0]
        if isinstance(item, ast.List) and len(item.elts) == 1:
            item = item.elts[0]
        return isinstance(item, ast.Name) and item.id == answer

    def _messages_prompt(self, argument: ast.expr) -> str | None:
        """The prompt of `[system, *state["messages"]]` (and its spellings); "" for the messages alone."""
        argument = self._named(argument)
        if self._is_messages(argument):
            return ""
        if isinstance(argument, ast.BinOp) and isinstance(argument.op, ast.Add):
            left, right = self._named(argument.left), self._named(argument.right)
            if isinstance(left, ast.List) and len(left.elts) == 1 and self._is_messages(right):
                return self._system_text(left.elts[0])
            return None
        if isinstance(argument, ast.List) and len(argument.elts) == 2:
            first, rest = argument.elts
            if isinstance(rest, ast.Starred) and self._is_messages(self._named(rest.value)):
                return self._system_text(first)
        return None

    def _named(self, node: ast.expr) -> ast.expr:
        seen = 0
        while isinstance(node, ast.Name) and node.id in self.names and seen < 5:
            node, seen = self.names[node.id], seen + 1
        return node

    def _is_messages(self, node: ast.expr) -> bool:
        """`state["messages"]` or `state.messages`."""
        if (
            isinstance(node, ast.Subscript)
            and isinstance(node.value, ast.Name)
            and node.value.id == self.state
        ):
            return isinstance(node.slice, ast.Constant) and node.slice.value == self.key
        return (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == self.state
            and node.attr == self.key
        )

    def _system_text(self, node: ast.expr) -> str | None:
        node = self._named(node)
        if isinstance(node, ast.Call) and _called(node) in _SYSTEM_MESSAGES:
            content = (
                node.args[0]
                if node.args
                else next((k.value for k in node.keywords if k.arg == "content"), None)
            )
            return self._text(content)
        if isinstance(node, ast.Dict):
            fields = {
                key.value: value
                for key, value in zip(node.keys, node.values, strict=True)
                if isinstance(key, ast.Constant)
            }
            role = fields.get("role")
            if isinstance(role, ast.Constant) and role.value == "system":
                return self._text(fields.get("content"))
        if isinstance(node, ast.Tuple) and len(node.elts) == 2:
            role, content = node.elts
            if isinstance(role, ast.Constant) and role.value == "system":
                return self._text(content)
        return None

    def _text(self, node: ast.expr | None) -> str | None:
        """A string literal, or a module-level string the node names."""
        node = self._named(node) if node is not None else None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        value = _global_value(self.function, node)
        return value if isinstance(value, str) else None


def _model_call(value: ast.expr | None) -> ast.Call | None:
    """The `.invoke(...)` / `await .ainvoke(...)` call `value` is (through `cast(T, ...)`), if it is one."""
    if isinstance(value, ast.Call) and _called(value) == "cast" and len(value.args) == 2:
        value = value.args[1]
    if isinstance(value, ast.Await):
        value = value.value
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in _INVOKES:
        return value
    return None


def _returned_call(value: ast.expr, key: str) -> ast.Call | None:
    """The model call in `return {"messages": [model.invoke(...)]}`."""
    if not isinstance(value, ast.Dict) or len(value.keys) != 1:
        return None
    if not (isinstance(value.keys[0], ast.Constant) and value.keys[0].value == key):
        return None
    item = value.values[0]
    if isinstance(item, ast.List) and len(item.elts) == 1:
        item = item.elts[0]
    return _model_call(item)


def _called(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _global_value(function: Any, node: ast.expr | None) -> Any:
    """The value a Name or dotted Attribute names in the function's module, if it names one."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    namespace = getattr(function, "__globals__", {}) or {}
    if parts[-1] not in namespace:
        return None
    value = namespace[parts.pop()]
    while parts:
        value = getattr(value, parts.pop(), None)
    return value


__all__ = ["END", "fold_react_loops"]

"""The LangGraph importer's diagnostic codes (LG1xx, docs/langgraph.md); a code is never reused."""

from __future__ import annotations

from importers.common.diagnostics import Code, CodeTable

NODE_WITHOUT_IMPORT_PATH = Code(
    code="LG101", name="node-without-import-path", summary="a node's function cannot be imported by path"
)
ROUTER_WITHOUT_IMPORT_PATH = Code(
    code="LG102", name="router-without-import-path", summary="a router cannot be imported by path"
)
REDUCER_WITHOUT_IMPORT_PATH = Code(
    code="LG103", name="reducer-without-import-path", summary="a reducer cannot be imported by path"
)
UNSUPPORTED_CHANNEL = Code(
    code="LG104",
    name="unsupported-channel",
    summary="a state key uses a channel kind other than a value or reducer",
)
MANAGED_VALUE = Code(
    code="LG105", name="managed-value", summary="a state key is a managed value (remaining steps, ...)"
)
PARALLEL_ROUTING = Code(
    code="LG106", name="parallel-routing", summary="a node that routes runs in parallel with other nodes"
)
SEVERAL_ROUTES = Code(
    code="LG107", name="several-routes", summary="a node has more than one conditional edge or Command route"
)
DEFERRED_NODE = Code(code="LG108", name="deferred-node", summary="a node is deferred (defer=True)")
NODE_POLICY = Code(
    code="LG109",
    name="node-policy",
    summary="a node has a retry, cache or timeout policy or an error handler",
)
NODE_NEEDS_CONTEXT = Code(
    code="LG110",
    name="node-needs-context",
    summary="(no longer reported: nodes get config, runtime, store and writer as in LangGraph)",
)
SEVERAL_DESTINATIONS = Code(
    code="LG111",
    name="several-destinations",
    summary="a route may name several of too many destinations at once to lay out every combination",
)
STATE_SCHEMA = Code(
    code="LG112", name="state-schema", summary="a state schema class cannot be rebuilt by import path"
)
AGENT_FEATURE = Code(
    code="LG113",
    name="agent-feature",
    summary="part of an LLM agent (prompt function, hook, middleware) is not expressed",
)
TOOL_WITHOUT_IMPORT_PATH = Code(
    code="LG114", name="tool-without-import-path", summary="a tool cannot be called by import path"
)
GRAPH_TOO_LARGE = Code(
    code="LG115", name="graph-too-large", summary="the graph has too many distinct supersteps to lay out"
)
UNSUPPORTED_NODE = Code(
    code="LG116", name="unsupported-node", summary="a node is a kind of runnable the importer does not read"
)
UNSUPPORTED_COMMAND = Code(
    code="LG117",
    name="unsupported-command",
    summary="a node returns a Command the imported program does not follow (goto=Send, graph=PARENT)",
)

MODEL_IN_PYTHON = Code(
    code="LG118",
    name="model-in-python",
    summary="a node calls a chat model inside its Python: the run's model answers it, but PAL sees no prompt",
)
CONTEXT_SCHEMA = Code(
    code="LG119",
    name="context-schema",
    summary="the graph's context schema cannot be imported by path; nodes get the context as a dict",
)

CODES = CodeTable(
    prefix="LG1",
    docs="docs/langgraph.md",
    codes=(
        NODE_WITHOUT_IMPORT_PATH,
        ROUTER_WITHOUT_IMPORT_PATH,
        REDUCER_WITHOUT_IMPORT_PATH,
        UNSUPPORTED_CHANNEL,
        MANAGED_VALUE,
        PARALLEL_ROUTING,
        SEVERAL_ROUTES,
        DEFERRED_NODE,
        NODE_POLICY,
        NODE_NEEDS_CONTEXT,
        SEVERAL_DESTINATIONS,
        STATE_SCHEMA,
        AGENT_FEATURE,
        TOOL_WITHOUT_IMPORT_PATH,
        GRAPH_TOO_LARGE,
        UNSUPPORTED_NODE,
        UNSUPPORTED_COMMAND,
        MODEL_IN_PYTHON,
        CONTEXT_SCHEMA,
    ),
)
"""Every code by its number."""

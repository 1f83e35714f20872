"""Import a Google ADK agent tree, Workflow or App as a PAL program that runs.

    pal import adk myapp.agent:root_agent -o agent.pal [--strict]
    pal import adk path/to/root_agent.yaml -o agent.pal
    pal run agent.pal --input '{"message": "hello", "state": {"user:name": "Ada"}}'

`import_target("module:attr")` (or a YAML agent config path) and `import_agent(agent, source=...)`
return an `ImportResult`: the program, and a diagnostic for every part it does not express, naming the
agent and field (codes ADK101-ADK110, listed in docs/adk.md). With `strict=True` any diagnostic raises
`ImportFailed`. The tree is read from the live objects (`sub_agents`, `tools`, `instruction`,
`output_key`, callbacks, `max_iterations`, a workflow's `graph.nodes` / `graph.edges`), never from a dump.

The mapping
-----------
- **One PAL agent per ADK agent**, with a public `Run($session:dict) -> dict`; the root's agent also
  has `Invoke($message, $state)` (trigger BGN): it starts the session, runs the root and returns
  `{"state": <final session state>, "reply": <final reply text>}`, what `pal run --input` prints.
- **The session** is one `$session` dict: the user's message, the state and the events
  (`pal.adk`, importers/adk/support.py), with ADK's `temp:` / `app:` / `user:` rules.
- **Sequential / Loop / Parallel agents** are PAL control flow that runs on the fast path when their
  children do: calls of the sub-agents' `Run` in order; a `While` that stops after the sub-agent whose
  events escalate, or at `max_iterations`; queued calls on the same session whose events are merged in
  ADK's order.
- **A custom agent** (its own `_run_async_impl`) is run by ADK over the session (`RunAgent`), so a
  deterministic one makes no model call.
- **An LLM agent** fills its instruction's `{key}` templates from the state, lets the model answer in a
  react playbook whose callable playbooks are its tools and `TransferToAgent` (ADK's transfer rules),
  then follows the transfer or writes its reply and `output_key`. Function tools are Python playbooks
  bound by import path; tools that need ADK run through `CallTool` with a real ToolContext; an
  AgentTool calls the wrapped agent's `Run` in a session of its own.
- **A Workflow** is its graph as steps: each node on its predecessor's output, routes as branches,
  fan-outs into a JoinNode, loops as jumps; function nodes run in ADK (`RunNode`), agent nodes are
  calls of their agents.
- **Callbacks**: before / after agent callbacks run in ADK around a body of PAL steps; model and tool
  callbacks are reported.

Parts run by ADK (custom agents, ADK tools, callbacks, instruction providers, workflow nodes) are found
again at run time from the program's source and the agent's path, so the source must be importable when
the program runs, as the functions bound by import path are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from importers import ImportResult, ImportTargetError, load_target
from importers.adk._diagnostics import CODES
from importers.adk._emit import AGENT_PLAYBOOK, ENTRY_PLAYBOOK, ProgramWriter
from importers.adk._read import TreeReader, root_of
from importers.adk.session import YAML_SUFFIXES
from importers.common.diagnostics import Findings

INSTALL_HINT = "pip install 'pal-bridge[adk]'"
"""What installs Google ADK at the version this importer is tested with."""


def _require_adk() -> None:
    try:
        import google.adk.agents  # noqa: F401
    except ImportError as error:
        raise ImportError(f"importing ADK programs needs Google ADK: {INSTALL_HINT} ({error})") from error


def import_agent(value: Any, *, source: str | None = None, strict: bool = False) -> ImportResult:
    """The PAL program of an ADK agent, Workflow or App.

    `source` is where the program finds the tree again at run time (`module:attr` or a YAML config
    path); without it, the parts ADK runs (custom agents, tools with a ToolContext, callbacks, workflow
    nodes) are reported (ADK102) and fail where reached.
    """
    _require_adk()
    import warnings

    findings = Findings()
    subject = source or getattr(value, "name", type(value).__name__)
    with warnings.catch_warnings():
        # Reading a deprecated agent's fields must not warn: the program being imported chose the class.
        warnings.simplefilter("ignore", DeprecationWarning)
        root = root_of(value, subject=subject, findings=findings)
        model = TreeReader(findings, has_source=source is not None).agent(root)
        program = ProgramWriter(findings, source).write(model)
    return findings.result(program, target=subject, strict=strict)


def import_target(target: str, *, strict: bool = False) -> ImportResult:
    """The PAL program of the ADK agent at `target`: `package.module:attribute` (an agent of any kind, a
    Workflow or an App), or the path of a YAML agent config (`root_agent.yaml`)."""
    _require_adk()
    if target.endswith(YAML_SUFFIXES):
        return import_agent(load_config(target), source=target, strict=strict)
    return import_agent(load_target(target), source=target, strict=strict)


def load_config(path: str) -> Any:
    """The agent a YAML agent config builds (once per process: the program's run finds the same one),
    with the config's folder (and its parent, as `adk web` has it) importable for its `code:` references."""
    from importers.adk.session import load_config as build

    if not Path(path).is_file():
        raise ImportTargetError(f"agent config {path!r} does not exist")
    try:
        return build(str(Path(path).resolve()))
    except Exception as error:  # the user's config failed to build: report it as theirs
        raise ImportTargetError(f"agent config {path!r}: {type(error).__name__}: {error}") from error


__all__ = ["AGENT_PLAYBOOK", "CODES", "ENTRY_PLAYBOOK", "INSTALL_HINT", "import_agent", "import_target"]

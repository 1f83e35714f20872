"""Imported ADK programs and AutoGen teams run where the user keeps them (issue 14's rule, runtime.module_path).

The user's module sits in a folder of its own; `pal import` and `pal run` are separate processes started
in that folder (`python -P`: the current directory is not on `sys.path` unless the runtime puts it there),
with PYTHONPATH naming this checkout only. The program's run-time helpers find the live agents again by
the import path recorded at import (`module:attr`), looked up as bound modules are: the program file's
folder, then the current directory, then Python's path. So the run also works from another folder when
the module sits beside the program.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.pal_command import no_model, run_pal

pytestmark = pytest.mark.slow

ADK_MODULE = '''"""Two custom agents in a sequence: no model."""

from google.adk.agents import BaseAgent, SequentialAgent
from google.adk.events import Event, EventActions
from google.genai import types

from wording import shout


class Counter(BaseAgent):
    async def _run_async_impl(self, ctx):
        value = ctx.session.state.get("count", 0) + 1
        yield Event(
            author=self.name,
            invocation_id=ctx.invocation_id,
            content=types.Content(role="model", parts=[types.Part(text=shout(f"{self.name} counted {value}"))]),
            actions=EventActions(state_delta={"count": value}),
        )


root_agent = SequentialAgent(name="pipeline", sub_agents=[Counter(name="first"), Counter(name="second")])
'''
AUTOGEN_MODULE = '''"""A round robin of two custom agents that stops after four messages: no model."""

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import TextMessage
from autogen_agentchat.teams import RoundRobinGroupChat

from wording import shout


class Echo(BaseChatAgent):
    @property
    def produced_message_types(self):
        return (TextMessage,)

    async def on_messages(self, messages, cancellation_token):
        heard = messages[-1].to_text() if messages else ""
        return Response(chat_message=TextMessage(source=self.name, content=shout(f"{self.name} heard {heard}")))

    async def on_reset(self, cancellation_token):
        pass


team = RoundRobinGroupChat(
    [Echo("alice", description="echoes"), Echo("bob", description="echoes")],
    termination_condition=MaxMessageTermination(4),
)
'''
WORDING_MODULE = """def shout(text: str) -> str:
    return text.upper() + "!"
"""


def _project(folder: Path, name: str, module: str) -> Path:
    """The user's folder: their module and a helper module it imports."""
    folder.mkdir()
    (folder / f"{name}.py").write_text(module, encoding="utf-8")
    (folder / "wording.py").write_text(WORDING_MODULE, encoding="utf-8")
    return folder


def _import_and_run(tmp_path: Path, framework: str, target: str, module: str, given: dict) -> list[dict]:
    """Import `target` in the user's folder, run the program there and from another folder with the
    program's absolute path; the two results."""
    name = target.partition(":")[0]
    project = _project(tmp_path / "project", name, module)
    imported = run_pal("import", framework, target, "-o", "imported.pal", "--strict", cwd=project)
    assert imported.returncode == 0, imported.stderr
    assert "0 diagnostic(s)" in imported.stderr
    results = []
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for cwd, program in ((project, "imported.pal"), (elsewhere, str(project / "imported.pal"))):
        ran = run_pal("run", program, "--input", json.dumps(given), *no_model(cwd), cwd=cwd)
        assert ran.returncode == 0, ran.stderr
        results.append(json.loads(ran.stdout))
    return results


def test_an_imported_adk_program_runs_from_its_folder_and_from_elsewhere(tmp_path: Path) -> None:
    pytest.importorskip("google.adk")
    given = {"message": "hi", "state": {"count": 10}}
    here, elsewhere = _import_and_run(tmp_path, "adk", "pipeline_agent:root_agent", ADK_MODULE, given)
    assert here == {"state": {"count": 12}, "reply": "SECOND COUNTED 12!"}
    assert elsewhere == here


def test_an_imported_autogen_team_runs_from_its_folder_and_from_elsewhere(tmp_path: Path) -> None:
    pytest.importorskip("autogen_agentchat")
    here, elsewhere = _import_and_run(tmp_path, "autogen", "echo_team:team", AUTOGEN_MODULE, {"task": "go"})
    assert here == {
        "messages": [
            {"source": "user", "content": "go"},
            {"source": "alice", "content": "ALICE HEARD GO!"},
            {"source": "bob", "content": "BOB HEARD ALICE HEARD GO!!"},
            {"source": "alice", "content": "ALICE HEARD BOB HEARD ALICE HEARD GO!!!"},
        ],
        "stop_reason": "Maximum number of messages 4 reached, current message count: 4",
    }
    assert elsewhere == here


@pytest.mark.parametrize(
    ("framework", "target", "module", "given"),
    [
        ("adk", "pipeline_agent:root_agent", ADK_MODULE, {"message": "hi", "state": {}}),
        ("autogen", "echo_team:team", AUTOGEN_MODULE, {"task": "go"}),
    ],
)
def test_a_module_that_is_gone_is_reported_with_where_it_was_looked_for(
    tmp_path: Path, framework: str, target: str, module: str, given: dict
) -> None:
    pytest.importorskip({"adk": "google.adk", "autogen": "autogen_agentchat"}[framework])
    name = target.partition(":")[0]
    project = _project(tmp_path / "project", name, module)
    imported = run_pal("import", framework, target, "-o", "imported.pal", cwd=project)
    assert imported.returncode == 0, imported.stderr
    (project / f"{name}.py").unlink()
    ran = run_pal("run", "imported.pal", "--input", json.dumps(given), *no_model(project), cwd=project)
    assert ran.returncode == 1, ran.stderr
    assert f"No module named '{name}' (looked in {project.resolve()} and Python's path)" in ran.stderr

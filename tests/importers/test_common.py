"""What the importers share (`importers.common`): diagnostic code tables and their documentation, names,
and the rule that one importer's private modules are not another's API."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from importers.autogen import support as autogen_support
from importers.common.diagnostics import Code, CodeTable, Findings
from importers.common.emit import AgentParts, SupportModule
from importers.common.naming import Namer, target_name
from importers.langgraph import support as langgraph_support
from pal_core.ir import Metadata, Playbook, PlaybookKind

ROOT = Path(__file__).resolve().parents[2]
FRAMEWORKS = ("langgraph", "adk", "autogen")


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_code_of_every_importer_is_a_row_of_its_documentation(framework: str) -> None:
    codes = __import__(f"importers.{framework}", fromlist=["CODES"]).CODES
    assert isinstance(codes, CodeTable) and len(codes) >= 8
    assert codes.docs == f"docs/{framework}.md"
    assert codes.undocumented((ROOT / codes.docs).read_text(encoding="utf-8")) == []
    assert all(number.startswith(codes.prefix) for number in codes)


def test_a_code_table_refuses_a_foreign_prefix_and_a_code_declared_twice() -> None:
    first = Code(code="XY101", name="first", summary="one")
    with pytest.raises(ValueError, match="ZZ102 does not start with XY1"):
        CodeTable(prefix="XY1", docs="docs/x.md", codes=(first, Code(code="ZZ102", name="b", summary="")))
    with pytest.raises(ValueError, match="XY101 \\(again\\) is declared twice"):
        CodeTable(prefix="XY1", docs="docs/x.md", codes=(first, Code(code="XY101", name="again", summary="")))
    table = CodeTable(prefix="XY1", docs="docs/x.md", codes=(first,))
    assert table.undocumented("| XY101 | `first` | one |") == []
    assert table.undocumented("| XY101 | first |") == [first]


def test_findings_keep_the_order_found_and_report_each_finding_once() -> None:
    code = Code(code="XY101", name="first", summary="one")
    findings = Findings()
    findings.add(code, "node 'b'", "why")
    findings.add(code, "node 'a'", "why")
    findings.add(code, "node 'b'", "why")
    assert [item.format() for item in findings.all()] == ["XY101 node 'b': why", "XY101 node 'a': why"]


def test_unique_names_take_the_hint_then_a_number() -> None:
    namer = Namer({"Invoke"})
    assert [namer.take(base, "Tool") for base in ("Invoke", "Search", "Search", "Search")] == [
        "InvokeTool",
        "Search",
        "SearchTool",
        "SearchTool2",
    ]
    plain = Namer({"Team"})
    assert [plain.take(base) for base in ("Team", "Writer", "Writer")] == ["Team2", "Writer", "Writer2"]


def test_a_generic_attribute_name_is_qualified_by_its_module() -> None:
    assert target_name("myapp.plans:graph", {"graph"}) == "plans_graph"
    assert target_name("myapp.plans:planner", {"graph"}) == "planner"
    assert target_name("myapp.plans:Team", {"team"}) == "Team"
    assert target_name("myapp.plans:Team", {"team"}, ignore_case=True) == "plans_Team"


def test_a_helper_playbook_is_read_from_the_helpers_signature_and_docstring() -> None:
    support = SupportModule(langgraph_support, name="langgraph", reserved=("Invoke",))
    reply = support.playbook("agent_reply")
    assert reply.kind is PlaybookKind.PYTHON
    assert reply.metadata.python == "pal.langgraph:agent_reply"
    assert [(p.name, p.type, p.default) for p in reply.parameters] == [
        ("output", "dict", None),
        ("mode", "str", None),
        ("agent", "str", None),
        ("supervisor", "str", "None"),
    ]
    assert (reply.name, reply.returns) == ("AgentReply", "dict")
    assert reply.description.startswith(
        "A langgraph-supervisor worker's result as the supervisor graph takes it"
    )
    assert {"Invoke", "AgentReply", "Say"} <= support.reserved
    turn = SupportModule(autogen_support, name="autogen", defaults=False).playbook("take_turn")
    assert [(p.name, p.default) for p in turn.parameters][-1] == ("fresh_start", None)
    with pytest.raises(KeyError):
        support.playbook("no_such_helper")


def test_an_agent_lists_its_main_playbooks_then_the_others_then_the_helpers_it_used() -> None:
    parts = AgentParts(
        name="A",
        description="",
        metadata=Metadata(),
        support=SupportModule(langgraph_support, name="langgraph"),
    )
    assert parts.helper("unsupported") == "Unsupported"
    assert parts.helper("apply_update") == parts.helper("apply_update") == "ApplyUpdate"
    parts.main.append(Playbook(name="Invoke"))
    parts.playbooks.append(Playbook(name=parts.namer.take("ApplyUpdate", "Node")))
    names = [playbook.name for playbook in parts.build().playbooks]
    assert names == ["Invoke", "ApplyUpdateNode", "ApplyUpdate", "Unsupported"]


def _private_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):  # `from a._b import c` and `from a import _b`
            names = [node.module or "", *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        found.update(name for name in names if any(part.startswith("_") for part in name.split(".")))
    return found


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_an_importer_imports_no_private_module_of_another(framework: str) -> None:
    own = f"importers.{framework}."
    modules = [
        *(ROOT / "importers" / framework).glob("*.py"),
        *(ROOT / "importers").glob(f"{framework}_*.py"),
    ]
    foreign = {
        f"{path.relative_to(ROOT)}: {name}"
        for path in modules
        for name in _private_imports(path)
        if name.startswith("importers.") and not name.startswith(own)
    }
    assert foreign == set()


def test_a_prompt_with_markdown_headers_and_fences_is_kept_as_written_and_reads_back() -> None:
    """A framework prompt written in markdown (`# Role`, a fenced example) is the playbook's description
    exactly: the writer escapes what would read as structure, the parser undoes it."""
    from importers.common.naming import safe_description
    from pal_core.ir import Agent, Metadata, Playbook, Program
    from pal_core.parser import parse
    from pal_core.writer import write

    prompt = "# Role\nYou are helpful.  \n```python\nprint(1)\n```\n## Rules\n- be brief\n\n"
    description = safe_description(prompt)
    assert description == "# Role\nYou are helpful.\n```python\nprint(1)\n```\n## Rules\n- be brief"
    playbook = Playbook(name="Respond", description=description, metadata=Metadata(execution_mode="react"))
    program = Program(agents=(Agent(name="Helper", description=description, playbooks=(playbook,)),))
    assert parse(write(program)) == program

"""Remote tools as playbooks: PAL names for tools and arguments, the originals kept for the call."""

from __future__ import annotations

from runtime.remote import RemoteTool, remote_call, remote_listing, remote_playbooks

TOOLS = [
    RemoteTool(
        name="look-up",
        description="Looks things up.",
        input_schema={
            "type": "object",
            "properties": {"query": {"type": "string"}, "max-results": {"type": "integer", "default": 5}},
            "required": ["query"],
        },
    ),
    RemoteTool(name="look_up", input_schema={"type": "object", "properties": {}}),
    RemoteTool(name="echo", input_schema={"type": "object", "properties": {"message": {"type": "string"}}}),
]


def test_tools_and_arguments_get_pal_names_and_keep_their_own_for_the_call() -> None:
    playbooks = {playbook.name: playbook for playbook in remote_playbooks(TOOLS)}
    assert sorted(playbooks) == ["echo", "look_up", "look_up_2"]
    kebab = playbooks["look_up_2"]
    assert [(p.name, p.type, p.default) for p in kebab.parameters] == [
        ("query", "str", None),
        ("max_results", "int", "5"),
    ]
    assert remote_call(kebab, {"query": "pal", "max_results": 2}) == (
        "look-up",
        {"query": "pal", "max-results": 2},
    )
    assert remote_call(playbooks["look_up"], {}) == ("look_up", {})
    assert remote_call(playbooks["echo"], {"message": "hi"}) == ("echo", {"message": "hi"})
    assert playbooks["echo"].metadata.extra == {}  # nothing to remember for a name that is already PAL
    assert remote_listing(playbooks.values()) == "echo, look_up, look_up_2 (the tool look-up)"

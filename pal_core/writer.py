"""IR -> canonical PAL text in the seed layout.

The layout: front matter, then each agent (comments, `# Name`, metadata, description, python blocks,
playbooks, public.json), each playbook as `## Name($p:type) -> Ret`, metadata, description,
`### Triggers` / `### Steps` / `### Notes` with unbulleted lines and two spaces of indent per level.
`parse(write(ir)) == ir`, and `write(parse(text))` is a fixed point after one pass.

Text that would read back as something else (a description line starting with `##`, say) is refused
with PalWriteError rather than written wrong.
"""

from __future__ import annotations

import json
import re

from pal_core import yamlish
from pal_core.errors import PalWriteError
from pal_core.ir import (
    Agent,
    Metadata,
    Note,
    Parameter,
    Playbook,
    PlaybookKind,
    Program,
    Step,
    Trigger,
    check_depth,
)
from pal_core.metadata import metadata_to_yaml

_STRUCTURE_RE = re.compile(r"(# |## |##\Z|### )")


def write(program: Program) -> str:
    """The canonical PAL text of a program (PalError when its steps nest deeper than MAX_STEP_DEPTH)."""
    check_depth(program)
    out: list[str] = []
    if program.frontmatter:
        out.append("---")
        out.extend(yamlish.dump(dict(program.frontmatter)))
        out.append("---")
        out.append("")
    for index, agent in enumerate(program.agents):
        if index:
            out.append("")
        _write_agent(agent, out)
    if program.trailing_comments:
        out.append("")
        out.extend(program.trailing_comments)
    return "\n".join(out) + "\n"


def _write_agent(agent: Agent, out: list[str]) -> None:
    _check_name(agent.name, "agent")
    out.extend(agent.comments)
    out.append(f"# {agent.name}")
    _write_metadata(agent.metadata, out)
    written = [playbook for playbook in agent.playbooks if _written_as_section(playbook)]
    if agent.description:
        # A trailing comment reads back as description only when a block or section follows it.
        block_follows = bool(agent.python_blocks) or (not written and agent.public_json is not None)
        _check_description(
            agent.description,
            f"agent {agent.name}",
            after_metadata=not agent.metadata.is_empty(),
            may_end_with_comment=block_follows,
        )
        out.append(agent.description)
    for code in agent.python_blocks:
        _check_code(code, f"agent {agent.name}")
        out.append("")
        out.append("```python")
        out.append(code)
        out.append("```")
    for index, playbook in enumerate(written):
        out.append("")
        last = index == len(written) - 1
        _write_playbook(playbook, out, block_follows=last and agent.public_json is not None)
    if agent.public_json is not None:
        out.append("")
        out.append("```public.json")
        out.append(json.dumps(agent.public_json, indent=2, ensure_ascii=False))
        out.append("```")


def _written_as_section(playbook: Playbook) -> bool:
    if playbook.kind is PlaybookKind.PYTHON and playbook.code_block is not None:
        return False  # written as part of its python block
    # Remote playbooks are listed from the remote server when the program starts.
    return playbook.kind is not PlaybookKind.REMOTE


def _write_playbook(playbook: Playbook, out: list[str], *, block_follows: bool = False) -> None:
    _check_name(playbook.name, "playbook")
    out.extend(playbook.comments)
    out.append(header(playbook))
    _write_metadata(playbook.metadata, out)
    if playbook.description:
        has_sections = bool(playbook.triggers or playbook.steps or playbook.notes)
        _check_description(
            playbook.description,
            f"playbook {playbook.name}",
            after_metadata=not playbook.metadata.is_empty(),
            may_end_with_comment=has_sections or block_follows,
        )
        out.append(playbook.description)
    if playbook.triggers:
        out.append("### Triggers")
        out.extend(trigger_line(trigger) for trigger in playbook.triggers)
    if playbook.steps:
        out.append("### Steps")
        for step in playbook.steps:
            _write_step(step, 0, out)
    if playbook.notes:
        out.append("### Notes")
        out.extend(note_line(note) for note in playbook.notes)


def write_playbook(playbook: Playbook) -> str:
    """The PAL text of one playbook section (for prompts and tools; the runtime has checked its depth)."""
    out: list[str] = []
    _write_playbook(playbook, out, block_follows=True)
    return "\n".join(out) + "\n"


def header(playbook: Playbook) -> str:
    """`## Name($a:type, $b) -> Returns`."""
    params = ", ".join(parameter_text(parameter) for parameter in playbook.parameters)
    arrow = f" -> {playbook.returns}" if playbook.returns is not None else ""
    return f"## {playbook.name}({params}){arrow}"


def parameter_text(parameter: Parameter) -> str:
    """`$name`, `$name:type` or `$name:type=default`."""
    text = f"${parameter.name}"
    if parameter.type:
        text += f":{parameter.type}"
    if parameter.default is not None:
        text += f"={parameter.default}"
    return text


def step_line(step: Step, depth: int = 0) -> str:
    """`  03.01:QUE text` at the given depth."""
    _check_single_line(step.text, f"step {step.line}")
    text = f" {step.text}" if step.text else ""
    return f"{'  ' * depth}{step.line}:{step.opcode}{text}"


def trigger_line(trigger: Trigger) -> str:
    """`T1:BGN At the beginning`."""
    _check_single_line(trigger.text, f"trigger {trigger.id}")
    return f"{trigger.id}:{trigger.code} {trigger.text}".rstrip()


def note_line(note: Note) -> str:
    """`N1 Be polite`."""
    _check_single_line(note.text, f"note {note.id}")
    if note.text[:1] in (":", "."):
        return f"{note.id}: {note.text}"  # `N1 : x` would read as `N1:` then `x`
    return f"{note.id} {note.text}".rstrip()


def _write_step(step: Step, depth: int, out: list[str]) -> None:
    out.append(step_line(step, depth))
    for child in step.children:
        _write_step(child, depth + 1, out)


def _write_metadata(metadata: Metadata, out: list[str]) -> None:
    data = metadata_to_yaml(metadata)
    if not data:
        return
    out.append("metadata:")
    out.extend(yamlish.dump(data, indent=2))
    out.append("---")


def _check_name(name: str, what: str) -> None:
    # A playbook name ends at "(" in its header; an agent header takes the rest of the line.
    if not name or name != name.strip() or "\n" in name or (what == "playbook" and "(" in name):
        raise PalWriteError(f"{what} name {name!r} cannot be written as a header")


def _check_single_line(text: str, what: str) -> None:
    if "\n" in text or "\r" in text or text != text.strip():
        raise PalWriteError(f"{what}: text must be one line without surrounding spaces: {text!r}")


def _check_code(code: str, what: str) -> None:
    for line in code.split("\n"):
        if line.strip() == "```":
            raise PalWriteError(f"{what}: python code contains a line '```', which would end the block")


def _check_description(text: str, what: str, *, after_metadata: bool, may_end_with_comment: bool) -> None:
    """Refuse description text that the parser would read as structure."""
    lines = text.split("\n")
    if not lines[0].strip() or not lines[-1].strip():
        raise PalWriteError(f"{what}: description must not start or end with a blank line")
    first_text = _first_line_after_comments(lines)
    if first_text is None:
        raise PalWriteError(
            f"{what}: a description made only of comments would read as a comment before a header"
        )
    if not after_metadata and first_text.strip() == "metadata:":
        raise PalWriteError(f"{what}: a description cannot start with 'metadata:'")
    in_fence = in_comment = False
    last_is_comment = False
    for line in lines:
        stripped = line.strip()
        if line != line.rstrip() or "\r" in line:
            raise PalWriteError(f"{what}: description line {line!r} has trailing spaces")
        last_is_comment = in_comment or stripped.startswith("<!--")
        if in_fence:
            in_fence = stripped != "```"
            continue
        if in_comment:
            in_comment = "-->" not in line
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in line[line.find("<!--") + 4 :]
            if not in_comment and line[line.find("-->", line.find("<!--") + 4) + 3 :].strip():
                raise PalWriteError(f"{what}: description line {line!r} has text after '-->'")
            continue
        if stripped.startswith("```"):
            language = stripped[3:].strip()
            if language in ("python", "public.json"):
                raise PalWriteError(f"{what}: description contains a ```{language} block")
            in_fence = True
            continue
        if _STRUCTURE_RE.match(line):
            raise PalWriteError(f"{what}: description line {line!r} would read as a header")
    if in_fence or in_comment:
        raise PalWriteError(f"{what}: description has an unclosed ``` block or comment")
    if last_is_comment and not may_end_with_comment:
        raise PalWriteError(
            f"{what}: a description cannot end with a comment (it would read as the next header's)"
        )


def _first_line_after_comments(lines: list[str]) -> str | None:
    in_comment = False
    for line in lines:
        if in_comment:
            in_comment = "-->" not in line
            continue
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped[4:]
            continue
        return line
    return None

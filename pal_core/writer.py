"""IR -> canonical PAL text in the seed layout.

The layout: front matter, then each agent (comments, `# Name`, metadata, description, python blocks,
playbooks, public.json), each playbook as `## Name($p:type) -> Ret`, metadata, description,
`### Triggers` / `### Steps` / `### Notes` with unbulleted lines and two spaces of indent per level.
`parse(write(ir)) == ir`, and `write(parse(text))` is a fixed point after one pass.

Description text that would read back as structure (a line starting with `##`, a ```python fence) is
escaped with a backslash before its first character (`\\## Not a header`), as markdown escapes it; reading
drops that backslash, so any description round-trips. Text that reading would change another way (a blank
line at the start of a description, trailing spaces) is refused with PalWriteError rather than written wrong.
"""

from __future__ import annotations

import json
import re

from pal_core import yamlish
from pal_core.description_text import escaped, is_escapable
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
        out.append(
            _description_text(
                agent.description,
                f"agent {agent.name}",
                after_metadata=not agent.metadata.is_empty(),
                may_end_with_comment=block_follows,
            )
        )
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
        out.append(
            _description_text(
                playbook.description,
                f"playbook {playbook.name}",
                after_metadata=not playbook.metadata.is_empty(),
                may_end_with_comment=has_sections or block_follows,
            )
        )
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


def _description_text(text: str, what: str, *, after_metadata: bool, may_end_with_comment: bool) -> str:
    """The description as written: lines that would read as structure escaped with a backslash (see
    `pal_core.outline`), everything else as it is. Refused only where reading would change the text:
    blank lines at its start or end, trailing spaces (reading drops both), a line break inside a line."""
    lines = text.split("\n")
    if not lines[0].strip() or not lines[-1].strip():
        raise PalWriteError(f"{what}: description must not start or end with a blank line")
    for line in lines:
        if line != line.rstrip() or "\r" in line:
            raise PalWriteError(f"{what}: description line {line!r} has trailing spaces")
    out: list[str] = []
    text_seen = False
    """Whether a line of text came before (a `metadata:` line only reads as metadata right under a header)."""
    index = 0
    while index < len(lines):
        line = lines[index]
        stripped = line.strip()
        if not stripped:
            out.append(line)
            index += 1
            continue
        if stripped.startswith("```"):
            close = next((j for j in range(index + 1, len(lines)) if lines[j].strip() == "```"), None)
            if close is not None and stripped[3:].strip() not in ("python", "public.json"):
                # A fenced block of the description (a prompt showing an example): read back as written.
                out.extend(lines[index : close + 1])
                index = close + 1
                text_seen = True
                continue
        elif stripped.startswith("<!--"):
            end = _comment_end(lines, index)
            if end is not None and _comment_stays(
                lines, end, may_end_with_comment, text_seen, after_metadata
            ):
                out.extend(lines[index : end + 1])
                index = end + 1
                continue
        elif not (
            _STRUCTURE_RE.match(line)
            or (stripped == "metadata:" and not text_seen and not after_metadata)
            or (stripped.startswith("\\") and is_escapable(stripped[1:]))
        ):
            out.append(line)
            index += 1
            text_seen = True
            continue
        out.append(escaped(line))
        index += 1
        text_seen = True
    return "\n".join(out)


def _comment_end(lines: list[str], start: int) -> int | None:
    """The line where the comment opened at `start` closes, if it closes with nothing after `-->`."""
    line = lines[start]
    tail = line[line.find("<!--") + 4 :]
    end = start
    while "-->" not in tail:
        end += 1
        if end >= len(lines):
            return None
        tail = lines[end]
    return end if not tail[tail.find("-->") + 3 :].strip() else None


def _comment_stays(
    lines: list[str], end: int, may_end_with_comment: bool, text_seen: bool, after_metadata: bool
) -> bool:
    """Whether a comment reads back as part of the description: text follows it (else it would belong to the
    next header), and it does not stand between a header and a line that would read as its metadata."""
    following = next((line for line in lines[end + 1 :] if line.strip()), None)
    if following is None:
        return may_end_with_comment and text_seen
    return not (following.strip() == "metadata:" and not text_seen and not after_metadata)

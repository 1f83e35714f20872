"""A2A messages and parts to PAL calls and values, and back: what the server and the client both map.

A message picks a skill and its arguments:

- a data part that is an object naming the skill, `{"skill": "Add", "arguments": {"a": 1, "b": 2}}`
  (`arguments` may be left out for a skill without parameters);
- a data part that is an object without `skill`: the arguments of the agent's entry skill;
- text (the text parts, joined by newlines): the agent's entry skill, filling its one string parameter, or
  starting it when it has no parameter.

The entry skill is the agent's served playbook triggered at the start (BGN), else its first served one.
Every other message (files, a text for a skill that takes other arguments, an unknown skill) is refused
with an error that says what to send instead. A message that answers a task waiting for input is read as
text (a data part as its JSON).

Values go out as parts: a string as a text part, anything else as a data part (JSON). protobuf's `Value`
holds every number as a double, so a whole number comes back as `4.0`: the door's argument check (and the
client's, by the output schema) turns it back into an integer, losslessly; integers beyond 2**53 do not
survive the wire and should travel as strings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2
from google.protobuf.json_format import ParseDict

from runtime.inputs import json_kind
from runtime.schema import json_value
from runtime.serving.playbooks import ServedPlaybook

SKILL_KEY = "skill"
"""The key of a data part that names the skill to call."""
ARGUMENTS_KEY = "arguments"
"""The key of a data part that holds the skill's arguments."""
TEXT_TYPES = frozenset({None, "", "str", "Any", "string"})
"""Parameter types a text message can fill."""


class MessageRefused(ValueError):
    """A message that names no skill this agent has, or arguments it cannot take (a client error)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillCall:
    """What a message asks: a skill and its arguments."""

    served: ServedPlaybook
    """The skill (a served playbook)."""
    arguments: dict[str, Any]
    """Its arguments as the client sent them (the host's door checks them)."""
    by_text: bool
    """Whether the message was text for the entry skill (else a data part)."""


def entry_skill(skills: Sequence[ServedPlaybook]) -> ServedPlaybook | None:
    """The skill plain text goes to: the one whose playbook is triggered at the start (BGN), else the first."""
    for served in skills:
        if any(trigger.code == "BGN" for trigger in served.playbook.triggers):
            return served
    return skills[0] if skills else None


def text_parameter(served: ServedPlaybook) -> str | None:
    """The parameter a text message fills: the playbook's one string (or untyped) parameter; None when it
    has no parameter. MessageRefused when text cannot call it."""
    parameters = served.playbook.parameters
    if served.arguments_parameter is None and not parameters:
        return None
    if served.arguments_parameter is None and len(parameters) == 1:
        kind = (parameters[0].type or "").split("[", 1)[0].strip()
        if kind in TEXT_TYPES:
            return parameters[0].name
    names = ", ".join(parameter.name for parameter in parameters)
    raise MessageRefused(
        f"skill {served.name!r} takes ({names}), which text cannot fill; send a data part "
        f'{{"{SKILL_KEY}": "{served.name}", "{ARGUMENTS_KEY}": {{...}}}}'
    )


def skill_call(
    message: pb.Message, skills: Mapping[str, ServedPlaybook], entry: ServedPlaybook | None
) -> SkillCall:
    """The skill and arguments a message asks for (see the module docstring); MessageRefused otherwise."""
    unsupported = [_part_kind(part) for part in message.parts if _part_kind(part) not in ("text", "data")]
    if unsupported:
        raise MessageRefused(
            f"this agent reads text and data parts, not {', '.join(sorted(set(unsupported)))} parts"
        )
    data = [part_data(part) for part in message.parts if part.HasField("data")]
    if data:
        if len(data) > 1:
            raise MessageRefused("send one data part: the skill and its arguments")
        return _data_call(data[0], skills, entry)
    if entry is None:
        raise MessageRefused("this agent serves no skill")
    text = message_text(message)
    parameter = text_parameter(entry)
    arguments = {} if parameter is None else {parameter: text}
    return SkillCall(served=entry, arguments=arguments, by_text=True)


def _data_call(value: Any, skills: Mapping[str, ServedPlaybook], entry: ServedPlaybook | None) -> SkillCall:
    known = ", ".join(sorted(skills)) or "none"
    if not isinstance(value, dict):
        raise MessageRefused(
            f'a data part must be an object such as {{"{SKILL_KEY}": "<skill>", "{ARGUMENTS_KEY}": {{...}}}}, '
            f"got {json_kind(value)}"
        )
    if SKILL_KEY not in value:
        if entry is None:
            raise MessageRefused("this agent serves no skill")
        return SkillCall(served=entry, arguments=dict(value), by_text=False)
    name = value[SKILL_KEY]
    served = skills.get(name) if isinstance(name, str) else None
    if served is None:
        raise MessageRefused(f"this agent has no skill {name!r} (skills: {known})")
    extra = sorted(set(value) - {SKILL_KEY, ARGUMENTS_KEY})
    if extra:
        raise MessageRefused(
            f"a data part holds {SKILL_KEY!r} and {ARGUMENTS_KEY!r} only; it also has {', '.join(extra)}"
        )
    arguments = value.get(ARGUMENTS_KEY, {})
    if not isinstance(arguments, dict):
        raise MessageRefused(
            f"{ARGUMENTS_KEY!r} of skill {name!r} must be an object, got {json_kind(arguments)}"
        )
    return SkillCall(served=served, arguments=arguments, by_text=False)


def message_text(message: pb.Message) -> str:
    """The message as text: its text parts, and its data parts as JSON, joined by newlines."""
    pieces: list[str] = []
    for part in message.parts:
        if part.HasField("text"):
            pieces.append(part.text)
        elif part.HasField("data"):
            pieces.append(json.dumps(_whole_numbers(part_data(part)), ensure_ascii=False))
    return "\n".join(pieces)


def part_data(part: pb.Part) -> Any:
    """A data part's value as Python (numbers as floats, as protobuf holds them; a NaN sent on the wire
    stays NaN, for the door's check to refuse by name)."""
    return _value(part.data)


def _value(value: struct_pb2.Value) -> Any:
    kind = value.WhichOneof("kind")
    if kind == "number_value":
        return value.number_value
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return {key: _value(item) for key, item in value.struct_value.fields.items()}
    if kind == "list_value":
        return [_value(item) for item in value.list_value.values]
    return None


def _part_kind(part: pb.Part) -> str:
    kind = part.WhichOneof("content")
    return kind or "empty"


def _whole_numbers(value: Any) -> Any:
    """protobuf's doubles back to integers where they are whole (`4.0` is 4)."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) <= 2**53:
        return int(value)
    if isinstance(value, dict):
        return {key: _whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(item) for item in value]
    return value


# --- values out -------------------------------------------------------------------------------------------


def value_parts(value: Any) -> list[pb.Part]:
    """A value as parts: a string as text, anything else as JSON data (None: no part)."""
    if value is None:
        return []
    if isinstance(value, str):
        return [pb.Part(text=value)]
    return [pb.Part(data=ParseDict(json_value(value), struct_pb2.Value()), media_type="application/json")]


def text_message(
    text: str, *, role: int, message_id: str, task_id: str = "", context_id: str = ""
) -> pb.Message:
    """A message of one text part."""
    return pb.Message(
        message_id=message_id,
        role=role,
        parts=[pb.Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


def call_message(call: SkillCall, *, message_id: str, task_id: str, context_id: str) -> pb.Message:
    """The user's message that started a task, as its history shows it: the text, or the data part."""
    if call.by_text:
        parameter = next(iter(call.arguments), None)
        text = "" if parameter is None else str(call.arguments[parameter])
        parts = [pb.Part(text=text)]
    else:
        body = {SKILL_KEY: call.served.name, ARGUMENTS_KEY: json_value(call.arguments)}
        parts = [pb.Part(data=ParseDict(body, struct_pb2.Value()), media_type="application/json")]
    return pb.Message(
        message_id=message_id, role=pb.Role.ROLE_USER, parts=parts, task_id=task_id, context_id=context_id
    )


def parts_value(parts: Iterable[pb.Part]) -> Any:
    """What parts hold, as one value: one data part's value, else the text parts joined (None: nothing)."""
    listed = list(parts)
    data = [part_data(part) for part in listed if part.HasField("data")]
    texts = [part.text for part in listed if part.HasField("text")]
    if len(data) == 1 and not texts:
        return _whole_numbers(data[0])
    if data:
        texts += [json.dumps(_whole_numbers(item), ensure_ascii=False) for item in data]
    return "\n".join(texts) if texts else None


__all__ = [
    "ARGUMENTS_KEY",
    "SKILL_KEY",
    "MessageRefused",
    "SkillCall",
    "call_message",
    "entry_skill",
    "message_text",
    "parts_value",
    "skill_call",
    "text_message",
    "text_parameter",
    "value_parts",
]

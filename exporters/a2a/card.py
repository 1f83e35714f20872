"""The agent card of a served PAL agent: who it is, where to reach it, how to authenticate, its skills.

- `name`, `description`: the agent's; `version`: pal-bridge's.
- `supported_interfaces`: the JSON-RPC binding at the server's root, for protocol 1.0 and, on the same URL,
  0.3 (the SDK's compatibility switch serves both; the card then also carries the 0.3 fields, `url`,
  `preferredTransport`, `protocolVersion`, for older clients).
- `capabilities`: streaming; no push notifications; the extension `SKILL_SCHEMAS_URI`, whose `params` hold
  each skill's input and output JSON Schemas (from the PAL types, as MCP's tool schemas), since an A2A
  skill has no field for them.
- `securitySchemes` / `securityRequirements`: HTTP bearer, when the server has a token.
- `skills`: one per public playbook (runtime.serving.playbooks): id the served name, the playbook's
  description with a line on its arguments and result, text and JSON in and out.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2
from google.protobuf.json_format import ParseDict

from exporters.a2a.parts import ARGUMENTS_KEY, SKILL_KEY
from pal_core.ir import Agent
from runtime.serving.playbooks import ServedPlaybook

SKILL_SCHEMAS_URI = "urn:pal-bridge:a2a:skill-schemas:v1"
"""The card extension whose params map each skill id to `{"input_schema": ..., "output_schema": ...}`."""
BEARER_SCHEME = "bearer"
"""The name of the bearer-token security scheme in the card."""
MODES = ("text/plain", "application/json")
"""What a served agent reads and writes."""


def package_version() -> str:
    """pal-bridge's version (the card's `version`)."""
    try:
        return version("pal-bridge")
    except PackageNotFoundError:
        return "0"


def agent_card(
    agent: Agent, skills: Sequence[ServedPlaybook], *, url: str, token: bool, name: str | None = None
) -> pb.AgentCard:
    """The card of `agent` serving `skills` at `url`; `token`: the server wants a bearer token."""
    schemas = {
        served.name: {"input_schema": served.input_schema, "output_schema": served.output_schema}
        for served in skills
    }
    extension = pb.AgentExtension(
        uri=SKILL_SCHEMAS_URI,
        description="The JSON Schemas of each skill's arguments and result (from the PAL types); call a "
        f'skill with a data part {{"{SKILL_KEY}": "<id>", "{ARGUMENTS_KEY}": {{...}}}}',
        required=False,
        params=ParseDict({"skills": schemas}, struct_pb2.Struct()),
    )
    card = pb.AgentCard(
        name=name or agent.name,
        description=" ".join(agent.description.split()) or f"The PAL agent {agent.name}.",
        version=package_version(),
        supported_interfaces=[
            pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            pb.AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=False, extensions=[extension]),
        default_input_modes=list(MODES),
        default_output_modes=list(MODES),
        skills=[_skill(agent, served) for served in skills],
    )
    if token:
        card.security_schemes[BEARER_SCHEME].CopyFrom(
            pb.SecurityScheme(
                http_auth_security_scheme=pb.HTTPAuthSecurityScheme(
                    scheme="bearer", description="Authorization: Bearer <token> on every request"
                )
            )
        )
        requirement = pb.SecurityRequirement()
        requirement.schemes[BEARER_SCHEME].CopyFrom(pb.StringList())
        card.security_requirements.append(requirement)
    return card


def _skill(agent: Agent, served: ServedPlaybook) -> pb.AgentSkill:
    description = " ".join(served.description.split())
    signature = _signature(served)
    return pb.AgentSkill(
        id=served.name,
        name=served.qualified_name,
        description=f"{description} {signature}".strip(),
        tags=["pal", agent.name],
        input_modes=list(MODES),
        output_modes=list(MODES),
    )


def _signature(served: ServedPlaybook) -> str:
    """`Arguments: a (integer), b (integer). Returns: integer.`: the schemas in words, for clients (and their
    models) that read only descriptions."""
    properties: dict[str, Any] = dict(served.input_schema.get("properties") or {})
    required = set(served.input_schema.get("required") or ())
    arguments = ", ".join(
        f"{name} ({_type_word(schema)}{'' if name in required else ', optional'})"
        for name, schema in properties.items()
    )
    said = f"Arguments: {arguments}." if arguments else "No arguments."
    output = served.output_schema
    if output is not None:
        said += f" Returns: {_type_word((output.get('properties') or {}).get('result') or {})}."
    return said


def _type_word(schema: Any) -> str:
    if not isinstance(schema, dict):
        return "any"
    kind = schema.get("type")
    if isinstance(kind, str):
        return kind
    if "anyOf" in schema:
        return " or ".join(_type_word(item) for item in schema["anyOf"])
    if "enum" in schema:
        return "one of " + ", ".join(repr(item) for item in schema["enum"])
    return "any"


def skill_schemas(card: pb.AgentCard) -> dict[str, dict[str, Any]]:
    """The skills' schemas a card's SKILL_SCHEMAS_URI extension holds (empty for another agent's card)."""
    from google.protobuf.json_format import MessageToDict

    for extension in card.capabilities.extensions:
        if extension.uri == SKILL_SCHEMAS_URI and extension.HasField("params"):
            skills = MessageToDict(extension.params).get("skills")
            if isinstance(skills, dict):
                return {str(key): value for key, value in skills.items() if isinstance(value, dict)}
    return {}


__all__ = ["BEARER_SCHEME", "SKILL_SCHEMAS_URI", "agent_card", "package_version", "skill_schemas"]

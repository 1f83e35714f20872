"""A2A (the Agent2Agent protocol, spec 1.0, `a2a-sdk` 1.x) both ways.

- serve (`pal a2a serve`, `A2AServer`): a program's agent as an A2A server, its public playbooks the skills
  of its agent card; every task is a durable thread of the store (docs/a2a.md);
- consume (`remote: {type: a2a, url: ...}`, entry point `pal_bridge.remote: a2a`): any A2A agent as a PAL
  remote agent whose skills are playbooks (`exporters.a2a.client`).

Serving a PAL agent to A2A clients is exporting it, as the other exporters make it a node or a tool of a
framework; the remote client lives beside it because both speak the same SDK and map the same messages,
parts and task states (`exporters.a2a.parts`). The protocol-free serving (runs, threads, leases, argument
checks, HTTP operations) is `runtime.serving`, shared with the MCP server.

The SDK is imported only by the modules that need it (`import exporters.a2a` loads none of it); a missing
SDK is an error with the install hint.
"""

from __future__ import annotations

INSTALL_HINT = "pip install 'pal-bridge[a2a]'"
"""What installs the A2A SDK at the version this bridge is tested with."""
TOKEN_ENV = "PAL_A2A_TOKEN"
"""Environment variable holding the HTTP bearer token of `pal a2a serve` when --token is not given."""


class A2ASdkMissing(ImportError):
    """The A2A SDK is not installed; the message gives the pip command."""


def require_sdk() -> None:
    """Raise A2ASdkMissing (with the install hint) when a2a-sdk or its HTTP server parts are missing."""
    import importlib.util

    for module in ("a2a", "starlette", "sse_starlette"):
        if importlib.util.find_spec(module) is None:
            raise A2ASdkMissing(f"A2A needs the A2A SDK (a2a-sdk with its HTTP server parts): {INSTALL_HINT}")


__all__ = ["INSTALL_HINT", "TOKEN_ENV", "A2ASdkMissing", "require_sdk"]

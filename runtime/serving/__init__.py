"""Serving a program to clients outside it, whatever the protocol: what the MCP server (mcp_bridge) and the
A2A server (exporters.a2a) share, so both serve a program the same way.

- `playbooks`: which playbooks are served (the public ones) and under which names, with their JSON Schemas;
- `host`: the one host that runs them (runs, pooled remote connections, threads in a store, leases), its
  door checking every call's arguments (runtime.session.PlaybookCalls);
- `http`: serving an ASGI app on a socket, the bearer token, the Host/Origin checks against DNS
  rebinding, refusing an exposed address without a token, stopping on signals;
- `operations`: `/healthz`, `/readyz`, Prometheus metrics and the access log; `logs`: the log's format.

Nothing here imports a protocol's SDK; starlette-free ASGI, with uvicorn and prometheus-client imported
only where they are used.
"""

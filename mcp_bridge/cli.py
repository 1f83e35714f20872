"""`pal mcp serve` and `pal mcp config` (a plugin of the `pal` command, entry point `pal_bridge.commands`).

Importing this module is cheap: argparse only. The MCP SDK is imported when a command runs, with an
install hint when it is missing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from runtime.commands.options import seconds, thread_id
from runtime.serving.options import (
    add_http_arguments,
    add_lease_arguments,
    add_log_arguments,
    add_run_arguments,
    positive,
    served_program,
    serving_limits,
    serving_token,
)

if TYPE_CHECKING:
    from mcp_bridge.server import PlaybookServer
    from mcp_bridge.stdio import StdioWire
    from pal_core.ir import Program
    from runtime.models.base import Model
    from runtime.program_run import RunLimits

INSTALL_HINT = "pal mcp needs the MCP SDK: pip install 'pal-bridge[mcp]'"
TOKEN_ENV = "PAL_MCP_TOKEN"
"""Environment variable holding the HTTP bearer token when --token is not given."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `mcp` command's sub-commands and options."""
    actions = parser.add_subparsers(dest="mcp_action", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve the program's public playbooks as MCP tools",
        description="Serve every public playbook (markdown and Python) of a program as an MCP tool.",
    )
    serve.add_argument("program", metavar="FILE", help=".pal, .pbasm, .pb, .md or .json program")
    serve.add_argument("--transport", choices=("stdio", "http"), default="stdio", help="default: stdio")
    add_http_arguments(serve, token_env=TOKEN_ENV, default_port=8000, only="HTTP only: ")
    serve.add_argument(
        "--max-sessions",
        type=positive,
        default=1000,
        metavar="N",
        help="HTTP only: MCP sessions kept open at once (default: 1000)",
    )
    serve.add_argument(
        "--session-idle-timeout",
        type=seconds,
        default=600.0,
        metavar="SECONDS",
        help="HTTP only: seconds an idle MCP session is kept (default: 600)",
    )
    add_log_arguments(serve, per="call")
    serve.add_argument("--name", help="server name shown to clients (default: the file name)")
    add_run_arguments(serve, scope="each tool call")
    serve.add_argument(
        "--store",
        metavar="URL",
        help="record every call as a thread in this store (sqlite:///runs.db, postgresql://...): a call "
        "continues the thread its `_meta` names (`pal/thread`), else gets a new one; several servers on one "
        "Postgres store share the threads (default: no store, nothing recorded)",
    )
    add_lease_arguments(serve)
    serve.add_argument(
        "--thread",
        metavar="ID",
        type=thread_id,
        help="with --store and a `state: shared` program: the one thread all calls continue "
        "(default: mcp-<server name>)",
    )
    config = actions.add_parser(
        "config",
        help="print the Claude Desktop `mcpServers` entry for the program",
        description="Print the mcpServers entry to paste into claude_desktop_config.json.",
    )
    config.add_argument("program", metavar="FILE", help=".pal, .pbasm, .pb or .md program")
    config.add_argument("--name", help="the server's key in mcpServers (default: the file name)")
    config.add_argument("--model", "-m", help="model the server uses (added as --model)")
    config.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="KEY[=VALUE]",
        help="environment for the server (API keys...); a bare KEY copies its current value (repeatable)",
    )


def handle(args: argparse.Namespace) -> int:
    """Run `pal mcp serve` or `pal mcp config`; the exit status."""
    if args.mcp_action == "config":
        return _config(args)
    if importlib.util.find_spec("mcp") is None:
        print(f"error: {INSTALL_HINT}", file=sys.stderr)
        return 2
    return _serve(args)


def _config(args: argparse.Namespace) -> int:
    from mcp_bridge.config import claude_desktop_entry, parse_env

    try:
        entry = claude_desktop_entry(args.program, name=args.name, model=args.model, env=parse_env(args.env))
    except (OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(json.dumps(entry, indent=2, ensure_ascii=False))
    return 0


def _serve(args: argparse.Namespace) -> int:
    import asyncio

    from pal_core.errors import PalError

    token = serving_token(args.token, TOKEN_ENV)
    problem = _option_problem(args, token)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    # Over stdio, stdout is the protocol from now on: python blocks run while loading print to stderr.
    wire = _claim_stdio() if args.transport == "stdio" else None
    from runtime.serving.logs import configure

    configure(args.log_level, args.log_format, command="mcp")
    try:
        program, model = served_program(args.program, args.model, command="mcp")
    except (PalError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    limits = serving_limits(args)
    return asyncio.run(_serve_program(program, args, model=model, limits=limits, token=token, wire=wire))


def _option_problem(args: argparse.Namespace, token: str | None) -> str | None:
    if args.thread is not None and args.store is None:
        return "--thread needs --store (the store the thread lives in)"
    if args.store is not None:
        from runtime.store import StoreURLError, parse_store_url

        try:
            parse_store_url(args.store)
        except StoreURLError as error:
            return str(error)
    if args.transport == "stdio" and args.token is not None:
        return "--token applies to --transport http (stdio is private to the client that starts the server)"
    if token is not None and not token.strip():
        return "the bearer token is empty"
    if args.transport == "http":
        from mcp_bridge.transports import ExposureRefused, check_exposure

        try:
            check_exposure(args.host, token, args.allow_unauthenticated)
        except ExposureRefused as refused:
            return str(refused)
    return None


def _claim_stdio() -> StdioWire:
    from mcp_bridge.stdio import claim_stdio

    return claim_stdio()


async def _serve_program(
    program: Program,
    args: argparse.Namespace,
    *,
    model: Model | None,
    limits: RunLimits,
    token: str | None,
    wire: StdioWire | None,
) -> int:
    from mcp_bridge.server import PlaybookServer
    from mcp_bridge.transports import FORCE_EXIT_AFTER, stopping_on_signals
    from pal_core.errors import PalError

    store = None
    if args.store is not None:
        from runtime.commands.stores import open_command_store

        try:
            store = await open_command_store(args.store, create=args.create_store, writes=True)
        except (PalError, OSError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
    served = PlaybookServer(
        program,
        name=args.name,
        model=model,
        limits=limits,
        store=store,
        shared_thread=args.thread,
        lease=args.lease,
        log_calls=True,
    )
    try:
        # Held until the server has closed: SIGTERM ends the process within seconds, whatever the calls do.
        with stopping_on_signals(served, force_exit_after=FORCE_EXIT_AFTER):
            async with served:
                await _serve_transport(served, args, token=token, wire=wire)
    except PalError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except OSError as error:  # the port is taken, for instance
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        if store is not None:
            await store.close()
    return 0


async def _serve_transport(
    served: PlaybookServer, args: argparse.Namespace, *, token: str | None, wire: StdioWire | None
) -> None:
    from mcp_bridge.transports import SessionLimits, serve_http, serve_stdio

    names = ", ".join(served.tools) or "none"
    if not served.tools:
        _say(
            "warning: no public playbook to serve; mark playbooks `public: true` (metadata) or "
            "`@playbook(public=True)`"
        )
    if args.transport == "stdio":
        _say(f"serving {len(served.tools)} tool(s) from {args.program} over stdio: {names}")
        await serve_stdio(served, wire=wire, handle_signals=False)
    else:
        await serve_http(
            served,
            host=args.host,
            port=args.port,
            token=token,
            limits=SessionLimits(max_sessions=args.max_sessions, idle_timeout=args.session_idle_timeout),
            allow_unauthenticated=args.allow_unauthenticated,
            handle_signals=False,
            announce=lambda url: _say(f"serving {len(served.tools)} tool(s) at {url}: {names}"),
        )


def _say(text: str) -> None:
    print(f"pal mcp: {text}", file=sys.stderr, flush=True)


HELP: dict[str, str] = {
    "mcp": "serve a program's public playbooks over MCP, or print its Claude Desktop config"
}
ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"mcp": add_arguments}
HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"mcp": handle}

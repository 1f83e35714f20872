"""`pal a2a serve` (a plugin of the `pal` command, entry point `pal_bridge.commands`).

Importing this module is cheap: argparse only. The A2A SDK is imported when the command runs, with an
install hint when it is missing.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from exporters.a2a import INSTALL_HINT, TOKEN_ENV
from runtime.commands.stores import add_store_arguments
from runtime.serving.options import (
    add_http_arguments,
    add_lease_arguments,
    add_log_arguments,
    add_run_arguments,
    served_program,
    serving_limits,
    serving_token,
)

if TYPE_CHECKING:
    from exporters.a2a.server import A2AServer
    from pal_core.ir import Program

DEFAULT_PORT = 9999
"""The port `pal a2a serve` listens on by default (exporters.a2a.server.DEFAULT_PORT)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The `a2a` command's sub-commands and options."""
    actions = parser.add_subparsers(dest="a2a_action", metavar="ACTION", required=True)
    serve = actions.add_parser(
        "serve",
        help="serve the program's agent over A2A: its public playbooks are its skills",
        description="Serve one agent of a program over A2A (JSON-RPC, protocol 1.0 and 0.3): its public "
        "playbooks are the skills of its agent card, and every task is a thread of the store.",
    )
    serve.add_argument("program", metavar="FILE", help=".pal, .pbasm, .pb, .md or .json program")
    serve.add_argument(
        "--agent", help="the agent to serve, when several have public playbooks (default: the one that has)"
    )
    add_http_arguments(serve, token_env=TOKEN_ENV, default_port=DEFAULT_PORT)
    serve.add_argument(
        "--public-url",
        metavar="URL",
        help="the address clients reach the server by, as the agent card names it (behind a proxy; default: "
        "the address it listens on)",
    )
    serve.add_argument("--name", help="the agent's name in its card (default: the agent's name)")
    add_log_arguments(serve, per="task call")
    add_run_arguments(serve, scope="each task call")
    add_store_arguments(
        serve,
        creates=False,
        help_text="where the tasks are kept, each a thread (sqlite:///runs.db, postgresql://... for several "
        "servers, memory:// to keep nothing); default: $PAL_STORE, else the default SQLite file "
        "(docs/durability.md)",
    )
    add_lease_arguments(serve, needs_store="")


def handle(args: argparse.Namespace) -> int:
    """Run `pal a2a serve`; the exit status."""
    import importlib.util

    if any(importlib.util.find_spec(module) is None for module in ("a2a", "starlette", "uvicorn")):
        print(f"error: pal a2a needs the A2A SDK: {INSTALL_HINT}", file=sys.stderr)
        return 2
    return _serve(args)


def _serve(args: argparse.Namespace) -> int:
    import asyncio

    from pal_core.errors import PalError
    from runtime.serving.http import ExposureRefused
    from runtime.serving.logs import configure

    token = serving_token(args.token, TOKEN_ENV)
    if token is not None and not token.strip():
        print("error: the bearer token is empty", file=sys.stderr)
        return 2
    try:
        from exporters.a2a.server import check_exposure

        check_exposure(args.host, token, args.allow_unauthenticated)
        if args.public_url is not None and not args.public_url.startswith(("http://", "https://")):
            raise ValueError(f"--public-url must be an http(s):// URL, got {args.public_url!r}")
    except (ExposureRefused, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    configure(args.log_level, args.log_format, command="a2a")
    try:
        program, model = served_program(args.program, args.model, command="a2a")
    except (PalError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return asyncio.run(_serve_program(program, args, model=model, token=token))


async def _serve_program(
    program: Program, args: argparse.Namespace, *, model: object, token: str | None
) -> int:
    from exporters.a2a.server import A2AServer
    from pal_core.errors import PalError
    from runtime.commands.stores import open_command_store
    from runtime.serving.http import FORCE_EXIT_AFTER, stopping_on_signals

    try:
        store = await open_command_store(args.store, create=args.create_store, writes=True)
    except (PalError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    served = A2AServer(
        program,
        agent=args.agent,
        model=model,  # type: ignore[arg-type]
        limits=serving_limits(args),
        store=store,
        lease=args.lease,
        name=args.name,
        public_url=args.public_url,
        token=token,
        log_calls=True,
    )
    try:
        # Held until the server has closed: SIGTERM ends the process within seconds, whatever the calls do.
        with stopping_on_signals(served, force_exit_after=FORCE_EXIT_AFTER, command="pal a2a"):
            async with served:
                await _serve_http(served, args, token=token, store_url=store.url)
    except PalError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    except OSError as error:  # the port is taken, for instance
        print(f"error: {error}", file=sys.stderr)
        return 1
    finally:
        await store.close()
    return 0


async def _serve_http(
    served: A2AServer, args: argparse.Namespace, *, token: str | None, store_url: str
) -> None:
    from exporters.a2a.server import serve_a2a

    skills = ", ".join(served.skills) or "none"
    agent = served.agent.name if served.agent is not None else "?"

    def announce(url: str) -> None:
        _say(
            f"serving agent {agent} ({len(served.skills)} skill(s): {skills}) at {url}; tasks in {store_url}"
        )

    await serve_a2a(
        served,
        host=args.host,
        port=args.port,
        token=token,
        allow_unauthenticated=args.allow_unauthenticated,
        announce=announce,
        handle_signals=False,
    )


def _say(text: str) -> None:
    print(f"pal a2a: {text}", file=sys.stderr, flush=True)


HELP: dict[str, str] = {"a2a": "serve a program's agent over A2A (the Agent2Agent protocol)"}
ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"a2a": add_arguments}
HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"a2a": handle}

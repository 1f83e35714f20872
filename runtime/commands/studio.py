"""`pal studio`: serve the local web page over a store of threads (docs/studio.md) until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

INSTALL_HINT = "pal studio needs the studio extra: pip install 'pal-bridge[studio]'"


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value} is not a port number (0 to 65535; 0 picks a free one)")
    return value


def _add_studio(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="URL",
        help="sqlite:///runs.db, postgresql://... (default: $PAL_STORE, else the default SQLite file; "
        "docs/durability.md)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1: this machine only)"
    )
    parser.add_argument(
        "--port", type=_port, default=8760, metavar="N", help="port (default 8760; 0 picks a free one)"
    )
    parser.add_argument(
        "--model",
        "-m",
        help="the model a thread resumed or answered from the page uses for its live turns (any `pal run` "
        "model string; default: $PAL_MODEL, else none: only steps the runtime runs itself)",
    )
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help="the access token in the printed URL (default: $PAL_STUDIO_TOKEN, else a new random one)",
    )


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {"studio": _add_studio}


def studio_command(args: argparse.Namespace) -> int:
    return asyncio.run(_studio(args))


async def _studio(args: argparse.Namespace) -> int:
    try:
        from runtime.studio import Studio, new_token, serving_studio
        from runtime.studio.security import TOKEN_ENV
    except ImportError as error:
        print(f"{INSTALL_HINT} ({error})", file=sys.stderr)
        return 2
    from pal_core.errors import PalError
    from runtime.commands.stores import error_text, open_command_store

    token = args.token or os.environ.get(TOKEN_ENV) or new_token()
    try:
        model = _model(args.model)
        store = await open_command_store(args.store, writes=False)
    except (PalError, OSError, ValueError) as error:
        print(error_text(error), file=sys.stderr)
        return 2
    try:
        studio = Studio(store, token=token, host=args.host, model=model)
        async with contextlib.AsyncExitStack() as stack:
            try:
                endpoint = await stack.enter_async_context(
                    serving_studio(studio, host=args.host, port=args.port)
                )
            except OSError as error:
                print(
                    f"error: cannot serve on {args.host}:{args.port}: {error.strerror or error}",
                    file=sys.stderr,
                )
                return 2
            if args.host not in ("127.0.0.1", "localhost", "::1"):
                print(
                    f"warning: serving on {args.host}: other machines can reach the studio (they still need "
                    "the token); there is no TLS",
                    file=sys.stderr,
                )
            print(f"pal studio: {endpoint.url}", flush=True)
            print(f"[threads of {store.url}; Ctrl-C stops]", file=sys.stderr, flush=True)
            await _until_signal(endpoint.task)
    finally:
        await store.close()
    return 0


def _model(spec: str | None) -> Any:
    from runtime.models.registry import ModelSpecError, resolve_model

    try:
        return resolve_model(spec)
    except ModelSpecError:
        if spec is None:
            return None  # no model configured: resumed runs take only the steps the runtime runs itself
        raise


async def _until_signal(serving: asyncio.Task[None]) -> None:
    """Wait until SIGINT or SIGTERM (or the server ends by itself)."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for number in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(number, stop.set)
    try:
        stopping = asyncio.create_task(stop.wait())
        await asyncio.wait({stopping, serving}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
    finally:
        for number in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(number)


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"studio": studio_command}

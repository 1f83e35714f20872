"""The `--store` option of the `pal` commands (and of `pal mcp serve`), and the one rule for making a store.

Without `--store` a command uses `$PAL_STORE`, else the default SQLite file (docs/durability.md). A store is
made only where that is what the user asked for: the default file on first use, or any store with
`--create-store` (on the commands that write). A store that does not exist is otherwise an error naming
it, so a mistyped `--store sqlite:///runz.db` never becomes a new, empty store.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runtime.store import Store

STORE_HELP = (
    "sqlite:///runs.db, postgresql://..., memory:// (nothing kept); default: $PAL_STORE, else the default "
    "SQLite file (docs/durability.md)"
)


def add_store_arguments(
    parser: argparse.ArgumentParser, *, creates: bool, help_text: str = STORE_HELP
) -> None:
    """`--store URL`, and `--create-store` for a command that writes to the store."""
    parser.add_argument("--store", metavar="URL", help=help_text)
    if creates:
        parser.add_argument(
            "--create-store",
            action="store_true",
            help="make the store named by --store (or $PAL_STORE) if it does not exist yet; without it, a "
            "store that does not exist is an error (the default store is always made on first use)",
        )


def store_url(named: str | None, *, create: bool = False) -> tuple[str, bool]:
    """(the store URL in effect, whether opening it may make it): `named` (`--store`), else `$PAL_STORE`,
    else the default file, which may always be made."""
    from runtime.store import default_store_url

    named = named or os.environ.get("PAL_STORE") or None
    if named is None:
        return default_store_url(), True
    return named, create


async def open_command_store(named: str | None, *, create: bool = False, writes: bool) -> Store:
    """The command's store, open (see `store_url`). StoreNotFound, saying how to make it, when it does not
    exist and may not be made here; `writes`: the command has `--create-store`."""
    from runtime.store import StoreNotFound, open_store

    url, may_create = store_url(named, create=create)
    store = open_store(url, create=may_create)
    try:
        await store.open()
    except StoreNotFound as error:
        hint = (
            "; to make a new store there, add --create-store"
            if writes
            else "; check the URL (`pal run` and `pal mcp serve` make a new store with --create-store)"
        )
        raise StoreNotFound(f"{error}{hint}") from None
    return store


def error_text(error: BaseException | None) -> str:
    """An error as the `pal` commands print it (`error: ...`), without a traceback."""
    if error is None:
        return "error"
    if isinstance(error, FileNotFoundError) and error.filename:
        return f"error: {error.filename}: no such file"
    if isinstance(error, OSError) and error.filename:
        return f"error: {error.filename}: {error.strerror}"
    text = f"error: {error}"
    if _limit_reached(error):
        text += "\n(raise the limit with --max-model-calls N)"
    return text


def say_error(error: BaseException | None) -> None:
    """Print `error_text(error)` on standard error."""
    print(error_text(error), file=sys.stderr)


def _limit_reached(error: BaseException) -> bool:
    from runtime.models.limits import ModelCallLimitExceeded

    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, ModelCallLimitExceeded):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False

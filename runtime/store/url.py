"""Store URLs: which store, where, with which options.

    memory://                                   in this process only (tests, persistence off)
    sqlite:///runs.db                           a file, relative to the working folder
    sqlite:////var/lib/pal/runs.db              an absolute path (four slashes, as in SQLAlchemy)
    sqlite://                                   the default file (`default_sqlite_path`)
    postgresql://user:password@host:5432/db     Postgres (also postgres://); libpq options pass through

Options go in the query string: `snapshot_every`, `keep_snapshots` (every store), `busy_timeout` (seconds)
and `synchronous` (`normal` or `full`) for SQLite, e.g. `sqlite:///runs.db?snapshot_every=100`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from runtime.paths import data_folder
from runtime.plugins import NamedRegistry

from .base import Store
from .errors import StoreURLError

ACCEPTED = (
    "memory://",
    "sqlite:///relative/path.db, sqlite:////absolute/path.db or sqlite:// (the default file)",
    "postgresql://user@host:port/database",
)
"""The accepted forms, as errors list them."""

DEFAULT_FILE = "runs.db"

STORES: NamedRegistry[type[Store]] = NamedRegistry(
    "store",
    {
        "memory": "runtime.store.memory:MemoryStore",
        "sqlite": "runtime.store.sqlite:SQLiteStore",
        "postgresql": "runtime.store.postgres:PostgresStore",
    },
    unknown=StoreURLError,
    accepts=lambda part: isinstance(part, type) and issubclass(part, Store),
    expected="a Store subclass",
)
"""Store classes by URL scheme; the built-ins load on first use (Postgres only imports psycopg on open)."""

_COMMON_OPTIONS = {"snapshot_every": int, "keep_snapshots": int}
_OPTIONS: Mapping[str, Mapping[str, type]] = {
    "memory": _COMMON_OPTIONS,
    "sqlite": {**_COMMON_OPTIONS, "busy_timeout": float, "synchronous": str},
    "postgresql": _COMMON_OPTIONS,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreURL:
    """A parsed store URL."""

    scheme: str
    """`memory`, `sqlite` or `postgresql` (a store registered under another name is looked up as given)."""
    target: str
    """The SQLite file path, the Postgres connection URL (without our options), or "" for memory."""
    options: dict[str, Any] = field(default_factory=dict)
    """The store's own options from the query string, typed (`snapshot_every=100` -> 100)."""


def default_sqlite_path(environ: Mapping[str, str] | None = None) -> Path:
    """Where `sqlite://` (and the CLI without `--store`) keeps runs: `runs.db` in pal-bridge's data folder
    (`runtime.paths.data_folder`: `$PAL_HOME` when set, else `$XDG_DATA_HOME/pal-bridge`, default
    `~/.local/share`, on Linux; `~/Library/Application Support/pal-bridge` on macOS;
    `%LOCALAPPDATA%\\pal-bridge` on Windows)."""
    return data_folder(environ) / DEFAULT_FILE


def default_store_url(environ: Mapping[str, str] | None = None) -> str:
    """The store to use when none is named: `$PAL_STORE` when set, else the default SQLite file."""
    env = os.environ if environ is None else environ
    return env.get("PAL_STORE") or f"sqlite:///{default_sqlite_path(env)}"


def parse_store_url(url: str) -> StoreURL:
    """A store URL split into scheme, target and options; `StoreURLError` naming the accepted forms."""
    if not isinstance(url, str) or "://" not in url:
        raise StoreURLError(f"{url!r} is not a store URL; {_accepted()}")
    scheme, _, rest = url.partition("://")
    scheme = scheme.lower()
    if scheme in ("postgres", "postgresql"):
        return _postgres(url)
    if scheme == "memory":
        path, query = _split_query(rest)
        if path:
            raise StoreURLError(
                f"{url!r}: a memory store has no path (memory:// holds threads in this process)"
            )
        return StoreURL(scheme="memory", target="", options=_options(url, "memory", query))
    if scheme == "sqlite":
        path, query = _split_query(rest)
        if path and not path.startswith("/"):
            raise StoreURLError(
                f"{url!r}: write sqlite:///{path} (three slashes, then the path; four for an absolute path)"
            )
        path = unquote(path[1:])
        if path == ":memory:":
            raise StoreURLError(f"{url!r}: an in-memory SQLite database cannot be shared; use memory://")
        target = str(Path(path).expanduser()) if path else str(default_sqlite_path())
        return StoreURL(scheme="sqlite", target=target, options=_options(url, "sqlite", query))
    if scheme in STORES.names():
        path, query = _split_query(rest)
        return StoreURL(scheme=scheme, target=unquote(path), options=dict(parse_qsl(query)))
    raise StoreURLError(f"{url!r}: unknown store {scheme!r}; {_accepted()}")


def open_store(url: str | None = None, **options: Any) -> Store:
    """The store at `url` (default: `default_store_url()`), not connected yet: use it as
    `async with open_store("sqlite:///runs.db") as store:`. Keyword options override the URL's."""
    parsed = parse_store_url(default_store_url() if url is None else url)
    store_class = STORES.get(parsed.scheme)
    merged = {**parsed.options, **options}
    try:
        if parsed.scheme == "memory":
            return store_class(**merged)
        return store_class(parsed.target, **merged)  # type: ignore[call-arg]
    except TypeError as error:
        raise StoreURLError(f"{url!r}: {error}") from None


def _postgres(url: str) -> StoreURL:
    parts = urlsplit(url)
    ours: dict[str, Any] = {}
    theirs = []
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if name in _COMMON_OPTIONS:
            ours[name] = _typed(url, name, value, _COMMON_OPTIONS[name])
        else:
            theirs.append((name, value))
    target = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(theirs), parts.fragment))
    return StoreURL(scheme="postgresql", target=target, options=ours)


def _split_query(rest: str) -> tuple[str, str]:
    path, _, query = rest.partition("?")
    return path, query


def _options(url: str, scheme: str, query: str) -> dict[str, Any]:
    known = _OPTIONS[scheme]
    options: dict[str, Any] = {}
    try:
        pairs = parse_qsl(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise StoreURLError(f"{url!r}: the options after '?' must read name=value&name=value") from None
    for name, value in pairs:
        if name not in known:
            raise StoreURLError(
                f"{url!r}: unknown option {name!r}; a {scheme} store accepts {', '.join(sorted(known))}"
            )
        options[name] = _typed(url, name, value, known[name])
    return options


def _typed(url: str, name: str, value: str, kind: type) -> Any:
    if name == "keep_snapshots" and value.lower() == "all":
        return None
    try:
        return kind(value)
    except ValueError:
        raise StoreURLError(f"{url!r}: option {name}={value!r} must be a {kind.__name__}") from None


def _accepted() -> str:
    return "accepted forms: " + "; ".join(ACCEPTED)

"""Fixtures of the store tests: one store of each kind, and the throwaway Postgres cluster behind the
Postgres one (started once per session, stopped by its pid; each test gets a schema of its own)."""

from __future__ import annotations

import importlib
import itertools
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from runtime.store import ProgramRef, Store, open_store
from tests.runtime.store.postgres_cluster import PostgresCluster, running_cluster

STORE_KINDS: tuple[str, ...] = ("memory", "sqlite", "postgres")
"""The stores every conformance test runs against. A store registered from outside runs the same suite:

    PAL_TEST_STORE_PLUGINS=my_package.store PAL_TEST_STORE_URLS=mystore://conformance \
        pytest tests/runtime/store -k conformance

imports the plugin modules (which call `runtime.store.STORES.register(...)`), then runs every conformance
test against each URL instead of the built-ins, with `-N` added to the URL for each test (a new, empty store)."""
EXTRA_URLS = tuple(os.environ.get("PAL_TEST_STORE_URLS", "").split())
for _plugin in os.environ.get("PAL_TEST_STORE_PLUGINS", "").split():
    importlib.import_module(_plugin)
if EXTRA_URLS:
    STORE_KINDS = EXTRA_URLS
SNAPSHOT_EVERY = 3
PROGRAM = ProgramRef.of_source("# Demo\n## Main() -> None\n### Steps\n01:RET\n", path="/programs/demo.pal")

_schemas = itertools.count(1)


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    with running_cluster() as cluster:
        yield cluster


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> str:
    """A URL whose tables live in a fresh schema of their own (cheaper than a database per test)."""
    import psycopg

    schema = f"test_{next(_schemas)}"
    with psycopg.connect(postgres_cluster.url(), autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    return f"{postgres_cluster.url()}?options=-csearch_path%3D{schema}"


def _url(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if "://" in kind:  # a store registered from outside: a new one for each test
        return f"{kind}-{next(_schemas)}"
    if kind == "memory":
        return "memory://"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return request.getfixturevalue("postgres_url")


@pytest.fixture(params=STORE_KINDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    return _url(request.param, request, tmp_path)


@pytest.fixture(params=EXTRA_URLS or ("sqlite", "postgres"))
def durable_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The stores that outlive their objects and are shared between processes."""
    return _url(request.param, request, tmp_path)


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[Store]:
    async with open_store(store_url, snapshot_every=SNAPSHOT_EVERY) as opened:
        yield opened


@pytest.fixture
async def same_store_again(store: Store, store_url: str) -> AsyncIterator[Store]:
    """A second connection to the same store (a second process would hold one); the memory store can only
    be shared as the same object."""
    if store_url == "memory://":
        yield store
        return
    async with open_store(store_url, snapshot_every=SNAPSHOT_EVERY) as other:
        yield other

"""Store URLs, the default location, and the lazily imported Postgres driver."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from runtime.store import (
    StoreUnavailable,
    StoreURLError,
    default_sqlite_path,
    default_store_url,
    open_store,
    parse_store_url,
)
from runtime.store.memory import MemoryStore
from runtime.store.postgres import PostgresStore
from runtime.store.sqlite import SQLiteStore

pytestmark = pytest.mark.anyio


def test_memory() -> None:
    parsed = parse_store_url("memory://")
    assert (parsed.scheme, parsed.target, parsed.options) == ("memory", "", {})
    store = open_store("memory://?snapshot_every=10&keep_snapshots=all")
    assert isinstance(store, MemoryStore) and (store.snapshot_every, store.keep_snapshots) == (10, None)
    with pytest.raises(StoreURLError, match="a memory store has no path"):
        parse_store_url("memory://somewhere")


def test_sqlite_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert parse_store_url("sqlite:///runs.db").target == "runs.db"
    relative = open_store("sqlite:///data/runs.db")
    assert isinstance(relative, SQLiteStore) and relative.path == tmp_path / "data" / "runs.db"
    assert relative.url == f"sqlite:///{tmp_path / 'data' / 'runs.db'}"
    assert parse_store_url("sqlite:////var/lib/pal/runs.db").target == "/var/lib/pal/runs.db"
    assert parse_store_url("SQLITE:////x%20y.db").target == "/x y.db"
    assert parse_store_url("sqlite:///~/runs.db").target == str(Path.home() / "runs.db")
    with pytest.raises(StoreURLError, match=r"write sqlite:///runs.db \(three slashes"):
        parse_store_url("sqlite://runs.db")
    with pytest.raises(StoreURLError, match="an in-memory SQLite database cannot be shared; use memory://"):
        parse_store_url("sqlite:///:memory:")


def test_sqlite_options() -> None:
    store = open_store(
        "sqlite:////tmp/x.db?busy_timeout=2.5&synchronous=full&snapshot_every=7&keep_snapshots=3"
    )
    assert isinstance(store, SQLiteStore)
    assert (store.busy_timeout, store.synchronous, store.snapshot_every, store.keep_snapshots) == (
        2.5,
        "full",
        7,
        3,
    )
    assert (
        open_store("sqlite:////tmp/x.db?snapshot_every=7", snapshot_every=9).snapshot_every == 9
    )  # code wins
    with pytest.raises(
        StoreURLError, match="unknown option 'timeout'; a sqlite store accepts busy_timeout, keep_snapshots"
    ):
        parse_store_url("sqlite:////tmp/x.db?timeout=3")
    with pytest.raises(StoreURLError, match=r"option snapshot_every='often' must be a int"):
        parse_store_url("sqlite:////tmp/x.db?snapshot_every=often")
    with pytest.raises(StoreURLError, match="must read name=value"):
        parse_store_url("sqlite:////tmp/x.db?busy_timeout")
    with pytest.raises(Exception, match="synchronous must be one of normal, full, not 'off'"):
        open_store("sqlite:////tmp/x.db?synchronous=off")
    with pytest.raises(Exception, match="busy_timeout must be a positive number of seconds"):
        open_store("sqlite:////tmp/x.db?busy_timeout=0")
    with pytest.raises(StoreURLError, match="unexpected keyword argument 'busy_timeout'"):
        open_store("memory://", busy_timeout=3)


def test_postgres_urls_keep_libpq_options_and_hide_the_password() -> None:
    parsed = parse_store_url("postgres://ana:s3cret@db.example:6543/runs?sslmode=require&snapshot_every=20")
    assert parsed.scheme == "postgresql" and parsed.options == {"snapshot_every": 20}
    assert parsed.target == "postgresql://ana:s3cret@db.example:6543/runs?sslmode=require"
    store = open_store("postgresql://ana:s3cret@db.example:6543/runs?sslmode=require")
    assert isinstance(store, PostgresStore)
    assert store.url == "postgresql://ana:***@db.example:6543/runs?sslmode=require"
    assert "s3cret" not in repr(store)


@pytest.mark.parametrize("url", ["runs.db", "mysql://host/db", "", "file:///runs.db"])
def test_a_bad_url_names_the_accepted_forms(url: str) -> None:
    with pytest.raises(
        StoreURLError, match=r"accepted forms: memory://; sqlite:///relative/path.db, .*; postgresql://"
    ):
        parse_store_url(url)


def test_the_default_location() -> None:
    home = Path.home()
    assert default_sqlite_path({"PAL_HOME": "/srv/pal"}) == Path("/srv/pal/runs.db")
    if sys.platform.startswith("linux"):
        assert default_sqlite_path({"XDG_DATA_HOME": "/data"}) == Path("/data/pal-bridge/runs.db")
        assert default_sqlite_path({}) == home / ".local" / "share" / "pal-bridge" / "runs.db"
    assert default_store_url({"PAL_HOME": "/srv/pal"}) == "sqlite:////srv/pal/runs.db"
    assert (
        default_store_url({"PAL_STORE": "postgresql://db/runs", "PAL_HOME": "/srv"}) == "postgresql://db/runs"
    )


async def test_no_url_opens_the_default_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PAL_STORE", raising=False)
    monkeypatch.setenv("PAL_HOME", str(tmp_path / "pal-home"))
    async with open_store() as store:
        assert store.url == f"sqlite:///{tmp_path / 'pal-home' / 'runs.db'}"
    assert (tmp_path / "pal-home" / "runs.db").is_file()  # the folder was created too
    assert parse_store_url("sqlite://").target == str(tmp_path / "pal-home" / "runs.db")


def test_naming_a_store_imports_no_driver() -> None:
    code = (
        "import sys; from runtime.store import open_store; open_store('postgresql://db/x'); "
        "open_store('sqlite:////tmp/x.db'); print('psycopg' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


async def test_a_missing_psycopg_is_reported_with_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # what `import psycopg` sees when it is not installed
    with pytest.raises(StoreUnavailable, match=r"needs psycopg 3: pip install 'pal-bridge\[postgres\]'"):
        async with open_store("postgresql://127.0.0.1:1/db"):
            pass

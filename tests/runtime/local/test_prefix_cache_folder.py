"""The prefix cache's folder without the model: where it is, how to turn it off, and how it keeps to its
budget (least recently used files first; half-written files of dead processes go, live ones stay)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from runtime.local.model import LocalSettings
from runtime.local.prefix_cache import CACHE_ENV, PrefixCache, default_prefix_cache_folder
from runtime.paths import cache_folder


def test_the_default_folder_and_how_to_turn_it_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PAL_HOME", "/srv/pal")
    monkeypatch.delenv(CACHE_ENV, raising=False)
    assert default_prefix_cache_folder() == Path("/srv/pal/cache/prefix-cache")
    assert LocalSettings.from_environment().prefix_cache == Path("/srv/pal/cache/prefix-cache")
    monkeypatch.setenv(CACHE_ENV, "/tmp/elsewhere")
    assert LocalSettings.from_environment().prefix_cache == Path("/tmp/elsewhere")
    for off in ("off", "OFF", "0", "no", "false"):
        monkeypatch.setenv(CACHE_ENV, off)
        assert LocalSettings.from_environment().prefix_cache is None
    assert LocalSettings().prefix_cache is None  # an engine built in code caches only when told where


def test_the_platform_cache_folder() -> None:
    assert cache_folder({"PAL_HOME": "/srv/pal"}) == Path("/srv/pal/cache")
    if sys.platform.startswith("linux"):
        assert cache_folder({"XDG_CACHE_HOME": "/c"}) == Path("/c/pal-bridge")
        assert cache_folder({}) == Path.home() / ".cache" / "pal-bridge"


def _file(folder: Path, name: str, size: int, age: float) -> Path:
    path = folder / name
    path.write_bytes(b"x" * size)
    moment = time.time() - age
    os.utime(path, (moment, moment))
    return path


def test_the_folder_keeps_to_its_budget_dropping_the_least_recently_used(tmp_path: Path) -> None:
    oldest = _file(tmp_path, "a.kv", 400, age=300)
    used_lately = _file(tmp_path, "b.kv", 400, age=10)
    newest = _file(tmp_path, "c.kv", 400, age=1)
    dead_writer = _file(tmp_path, ".writing-1.kv", 400, age=7200)
    live_writer = _file(tmp_path, ".writing-2.kv", 400, age=5)
    unrelated = _file(tmp_path, "notes.txt", 5000, age=9000)
    PrefixCache(tmp_path, identity="m", budget_bytes=900).trim()
    assert not oldest.exists() and used_lately.exists() and newest.exists()
    assert not dead_writer.exists() and live_writer.exists()  # another process is writing that one
    assert unrelated.exists()  # only its own files are touched
    PrefixCache(tmp_path, identity="m", budget_bytes=100).trim()
    assert sorted(path.name for path in tmp_path.iterdir()) == [".writing-2.kv", "notes.txt"]


def test_a_file_name_covers_the_engine_and_the_tokens(tmp_path: Path) -> None:
    cache = PrefixCache(tmp_path, identity="model=a\nchunk_tokens=64")
    same = cache.entry([1, 2, 3])
    assert same == cache.entry([1, 2, 3]) and same.tokens == (1, 2, 3)
    assert cache.entry([1, 2, 4]).path != same.path
    assert PrefixCache(tmp_path, identity="model=b\nchunk_tokens=64").entry([1, 2, 3]).path != same.path

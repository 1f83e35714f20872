"""Where pal-bridge keeps files of its own: runs (data) and evaluated prompt prefixes (cache).

`PAL_HOME` puts both under one folder (`$PAL_HOME` for data, `$PAL_HOME/cache` for the cache); otherwise
each goes where the platform expects it (XDG folders on Linux, `~/Library` on macOS, `%LOCALAPPDATA%` on
Windows). Nothing is created here: the code that writes a file creates its folder.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

APP = "pal-bridge"
"""The folder name under the platform's data and cache folders."""


def data_folder(environ: Mapping[str, str] | None = None) -> Path:
    """`$PAL_HOME`, else `$XDG_DATA_HOME/pal-bridge` (default `~/.local/share`) on Linux,
    `~/Library/Application Support/pal-bridge` on macOS, `%LOCALAPPDATA%\\pal-bridge` on Windows."""
    env = os.environ if environ is None else environ
    if env.get("PAL_HOME"):
        return Path(env["PAL_HOME"]).expanduser()
    if sys.platform == "win32" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / APP
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP
    return _xdg(env, "XDG_DATA_HOME", Path(".local") / "share")


def cache_folder(environ: Mapping[str, str] | None = None) -> Path:
    """`$PAL_HOME/cache`, else `$XDG_CACHE_HOME/pal-bridge` (default `~/.cache`) on Linux,
    `~/Library/Caches/pal-bridge` on macOS, `%LOCALAPPDATA%\\pal-bridge\\cache` on Windows. What is
    there can be deleted at any time: it only saves work."""
    env = os.environ if environ is None else environ
    if env.get("PAL_HOME"):
        return Path(env["PAL_HOME"]).expanduser() / "cache"
    if sys.platform == "win32" and env.get("LOCALAPPDATA"):
        return Path(env["LOCALAPPDATA"]) / APP / "cache"
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / APP
    return _xdg(env, "XDG_CACHE_HOME", Path(".cache"))


def _xdg(env: Mapping[str, str], variable: str, default: Path) -> Path:
    base = Path(env[variable]).expanduser() if env.get(variable) else Path.home() / default
    return base / APP

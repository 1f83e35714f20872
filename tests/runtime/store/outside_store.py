"""A store added from outside pal-bridge, through the registry (issue 22): what a package of its own would
ship. `shelf://NAME` keeps threads in this process under NAME, so every connection to one name sees the same
threads (as connections to one database do). Importing this module registers it."""

from __future__ import annotations

from typing import Any, ClassVar

from runtime.store import STORES
from runtime.store.memory import MemoryStore, _Held


class ShelfStore(MemoryStore):
    """Threads on a named shelf of this process, shared by every store object opened on that name."""

    scheme = "shelf"
    _shelves: ClassVar[dict[str, tuple[dict[str, _Held], dict[str, tuple[str, int]]]]] = {}

    def __init__(self, name: str, **options: Any) -> None:
        super().__init__(**options)
        self.name = name
        """The shelf's name."""

    @property
    def url(self) -> str:
        return f"shelf://{self.name}"

    async def _open(self) -> None:
        self._threads, self._leases = self._shelves.setdefault(self.name, ({}, {}))

    async def _close(self) -> None:
        return None  # the shelf outlives its connections


STORES.register("shelf", ShelfStore, replace=True)

"""Programs the session tests run, and a store that can be made to die like a killed process."""

from __future__ import annotations

from typing import Any

from pal_core.parser import parse
from runtime.models import ScriptedModel
from runtime.store import StoreUnavailable
from runtime.store.memory import MemoryStore
from tests.runtime.session.processes import SHOP, SHOP_ANSWERS

SHOP_PROGRAM = parse(SHOP.read_text(encoding="utf-8"), file=str(SHOP))


def shop_model() -> ScriptedModel:
    """The five answers of the shop (the third is rejected: it skips step 05)."""
    return ScriptedModel.from_jsonl(SHOP_ANSWERS)


COUNTER = parse(
    '''# Counter
Keeps a total across calls.

```python
from runtime.python_api import idempotency_key
from tests.runtime.session import sink


@playbook
async def Record(label: str) -> str:
    """Notes the call (and its idempotency key) in the test's sink."""
    sink.CALLS.append((label, idempotency_key()))
    return label.upper()


@playbook
async def Explode() -> None:
    raise ValueError("the fuse was lit")
```

## Reset() -> int
metadata:
  public: true
---
### Steps
01:EXE $total:int = 0
02:RET $total

## Add($n:int) -> int
metadata:
  public: true
---
### Steps
01:EXE $total:int = $total + $n
02:RET $total

## Note($label:str) -> str
metadata:
  public: true
---
### Steps
01:QUE $shout:str = Record(label=$label)
02:YLD for call
03:RET $shout

## Boom() -> None
metadata:
  public: true
---
### Steps
01:EXE $total:int = 1000
02:QUE Explode()
03:YLD for call
04:RET

## Ask() -> int
metadata:
  public: true
---
### Steps
01:EXE $reply:list = WaitForMessage("human")
02:QUE Say(user, "noted")
03:RET len($reply)
''',
    file="counter.pal",
)


class DyingStore(MemoryStore):
    """A memory store that refuses every write once `dead` is set: what a process killed at that moment
    leaves in a real store (nothing after it), while the run goes on failing in this process."""

    dead = False

    def _check(self) -> None:
        if self.dead:
            raise StoreUnavailable("the process died here (a test's dying store)")

    async def _append(self, *args: Any) -> Any:
        self._check()
        return await super()._append(*args)

    async def _put_snapshot(self, *args: Any) -> Any:
        self._check()
        return await super()._put_snapshot(*args)

    async def _update(self, *args: Any) -> Any:
        self._check()
        return await super()._update(*args)

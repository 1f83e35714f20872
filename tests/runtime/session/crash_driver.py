"""`pal`, with the hooks the crash tests need (run as `python -P crash_driver.py <pal arguments>`).

The hooks, set through the environment by the test:

- the model prefix `logged:answers.jsonl`: a ScriptedModel that first appends `{"pid", "answer"}` (the
  number of the scripted answer it is about to give) to `$PAL_TEST_MODEL_LOG`, so a test counts every
  model call across processes;
- `PAL_TEST_KILL=point:n`: the process kills itself with SIGKILL at the n-th time this process reaches
  `point`: `model.asking` (inside a live model call, before it answers) or a checkpoint point of
  runtime.session.journal.PROBES (`model.answered`, `model.committed`, `call.returned`, `call.committed`,
  `wait.committed`, `input.committed`, `delivery.committed`);
- `PAL_TEST_PROBE_LOG`: every point reached is appended there as `{"pid", "point", ...details}` (the test
  counts the points of a run, and sees which answers each process committed).
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the checkout, as PYTHONPATH would

from runtime.models.base import ModelRequest, ModelResponse
from runtime.models.registry import register_model_prefix
from runtime.models.scripted import ScriptedModel
from runtime.session import PROBES

KILL = os.environ.get("PAL_TEST_KILL", "")
_reached: Counter[str] = Counter()


def reached(point: str, details: dict[str, object] | None = None) -> None:
    """Count `point`; log it; die here if the test said so."""
    _reached[point] += 1
    log = os.environ.get("PAL_TEST_PROBE_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps({"pid": os.getpid(), "point": point, **(details or {})}) + "\n")
    if f"{point}:{_reached[point]}" == KILL:
        sys.stdout.flush()
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGKILL)


class LoggedModel(ScriptedModel):
    """A scripted model that logs each call it receives (which answer, which process) before answering."""

    async def complete(self, request: ModelRequest) -> ModelResponse:
        answer = self._offset + len(self._requests) + 1
        with open(os.environ["PAL_TEST_MODEL_LOG"], "a", encoding="utf-8") as out:
            out.write(json.dumps({"pid": os.getpid(), "answer": answer}) + "\n")
        reached("model.asking", {"answer": answer})
        return await super().complete(request)


def logged(path: str) -> LoggedModel:
    scripted = ScriptedModel.from_jsonl(path)
    return LoggedModel(list(scripted._answers), name=f"logged:{path}")


register_model_prefix("logged:", logged)
PROBES.append(lambda point, details: reached(point, dict(details)))

if __name__ == "__main__":
    from runtime.cli import main

    sys.exit(main(sys.argv[1:]))

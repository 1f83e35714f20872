"""The messaging benchmark runs end to end and reports every figure it promises (not its speed: CI
machines are shared, so the goals are checked by running the benchmark itself)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "bench_messaging.py"


@pytest.mark.slow
def test_benchmark_quick_run_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    namespace = runpy.run_path(str(BENCHMARK), run_name="bench_messaging")
    exit_code = namespace["main"](["--quick"])
    out = capsys.readouterr().out
    for expected in (
        "bare asyncio.Queue",
        "Channel.send -> AgentParticipant -> inbox.get_batch",
        "ratio channel / bare queue",
        f"bare loop putting into {namespace['FAN_OUT']} asyncio.Queues",
        "MeetingManager.post",
        "ratio meeting / bare fan-out",
        "predicate matches nothing",
        "over 10,000 pending messages",
    ):
        assert expected in out
    assert exit_code in (0, 1)
    assert ("goals met" in out) == (exit_code == 0)

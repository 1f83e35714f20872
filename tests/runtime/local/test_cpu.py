"""Choosing the local model's threads from the machine's load (no model needed)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from runtime.local import cpu
from runtime.local.cpu import CpuSample, busy_elsewhere, choose_threads, threads_for, usable_cpus


@pytest.mark.parametrize(
    ("cpus", "busy", "threads"),
    [
        (2, 0.0, 2),  # a quiet machine: every core
        (2, 0.1, 2),  # background noise does not cost a thread
        (2, 0.5, 1),  # half a core taken: a second thread would mostly wait for it
        (2, 1.0, 1),  # one core busy: one thread on the other
        (2, 5.0, 1),  # overloaded: still one thread
        (1, 0.0, 1),
        (4, 1.0, 3),
        (64, 0.0, 8),  # a small model gains nothing from more threads
    ],
)
def test_threads_follow_the_free_cores(cpus: int, busy: float, threads: int) -> None:
    assert threads_for(cpus, busy) == threads


def test_busy_elsewhere_takes_this_process_out() -> None:
    before = CpuSample(busy=100.0, total=400.0, own=10.0, cores=2)
    # 1 s of wall time on 2 cores: 2 s of CPU in all, 1.5 s busy, 0.5 s of it ours.
    after = CpuSample(busy=101.5, total=402.0, own=10.5, cores=2)
    assert busy_elsewhere(before, after) == pytest.approx(1.0)
    assert busy_elsewhere(after, after) == 0.0  # no time passed: nothing measured
    ours_only = CpuSample(busy=101.0, total=402.0, own=11.0, cores=2)
    assert busy_elsewhere(before, ours_only) == 0.0


def test_a_busy_process_is_seen_and_costs_a_thread() -> None:
    if cpu.sample() is None:
        pytest.skip("no /proc/stat here: the load average is used instead")
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = cpu.measure_busy(0.5)
        threads = choose_threads(busy)
        assert burner.poll() is None
    finally:
        burner.kill()
        burner.wait()
    assert busy >= 0.5  # at least most of the core it keeps busy (other jobs may add to it)
    assert threads <= max(usable_cpus() - 1, 1)


def test_without_proc_stat_the_load_average_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "sample", lambda: None)
    monkeypatch.setattr(cpu.os, "getloadavg", lambda: (1.5, 1.0, 0.5))
    assert cpu.measure_busy() == 1.5

"""How many CPU threads the local model uses for a call: the cores this process may run on, less the
cores other processes keep busy right now.

llama.cpp's worker threads spin while they wait for each other. With two threads on two cores and
another process on one of them, each step of the computation waits for the thread that got preempted:
a turn that takes 8 s on a quiet machine took over 120 s. One thread on the free core is not slowed
by the others at all (docs/local-model.md has the figures), so the choice is made before every call
from what the machine is doing at that moment, not once at start.

The answer does not depend on the choice: llama.cpp computes every value of a token with one thread,
whatever the number of threads (tests/runtime/local/test_engine.py checks the logits bit for bit).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

MAX_THREADS = 8
"""Most threads worth using on a small model: more only add synchronisation."""

SPARE_FOR_A_THREAD = 0.8
"""How much of a core must be free to run another thread on it. A thread on a core that another
process uses a fifth of the time is still mostly waited for by the others."""

_PROC_STAT = Path("/proc/stat")


def usable_cpus() -> int:
    """The cores this process may run on (its CPU affinity where the system has one)."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # not Linux
        return max(os.cpu_count() or 1, 1)


@dataclass(frozen=True, slots=True, kw_only=True)
class CpuSample:
    """The machine's CPU counters at one moment."""

    busy: float
    """Seconds all cores have spent on any work since boot."""
    total: float
    """Seconds all cores have existed since boot (busy plus idle)."""
    own: float
    """CPU seconds this process has used (all its threads)."""
    cores: int
    """Cores the counters cover."""


def sample() -> CpuSample | None:
    """The counters now; None where the system has no /proc/stat (then the load average is used)."""
    try:
        lines = _PROC_STAT.read_text(encoding="ascii").splitlines()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    fields = [int(value) for value in lines[0].split()[1:]]
    # user nice system idle iowait irq softirq steal [guest guest_nice, already counted in user/nice]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    total = sum(fields[:8])
    cores = sum(1 for line in lines[1:] if line.startswith("cpu"))
    times = os.times()
    return CpuSample(
        busy=(total - idle) / ticks,
        total=total / ticks,
        own=times.user + times.system,
        cores=max(cores, 1),
    )


def busy_elsewhere(before: CpuSample, after: CpuSample) -> float:
    """Cores other processes kept busy between two samples (this process's own use taken out)."""
    elapsed = after.total - before.total
    if elapsed <= 0:
        return 0.0
    wall = elapsed / after.cores
    others = (after.busy - before.busy) - (after.own - before.own)
    return max(others / wall, 0.0)


def measure_busy(seconds: float = 0.1) -> float:
    """Cores other processes keep busy now: /proc/stat over `seconds`, else the 1-minute load average."""
    before = sample()
    if before is None:
        try:
            return float(os.getloadavg()[0])
        except (AttributeError, OSError):
            return 0.0
    time.sleep(seconds)
    after = sample()
    return busy_elsewhere(before, after) if after is not None else 0.0


def threads_for(cpus: int, busy: float) -> int:
    """Threads to use on `cpus` cores when others keep `busy` cores busy: one per core with at least
    SPARE_FOR_A_THREAD of it free, at least one, at most MAX_THREADS."""
    free = cpus - busy
    return max(1, min(cpus, MAX_THREADS, math.floor(free + (1 - SPARE_FOR_A_THREAD))))


def choose_threads(busy: float | None = None) -> int:
    """Threads for a call now (`busy`: cores used by others, measured when not given)."""
    return threads_for(usable_cpus(), measure_busy() if busy is None else busy)

"""Latency of one MCP tool call to a Python public playbook through the bridge (`pal mcp serve`) against a
bare `MCPServer` tool wrapping the same function, both over stdio in a subprocess, one client each.
Goal (issue 5): bridge median <= 1.3 x bare median.

The bridge does more per call by design: it checks the arguments against the tool's schema and runs the
playbook with fresh agent state (a pooled instance reset, its Python block executed anew), as a real
served program would. Calls to the two servers alternate in rounds, so a busy machine slows both alike.
A second line shows the same comparison in process (no transport), where that fixed cost stands alone.
Run: python benchmarks/bench_mcp.py [--calls N] [--rounds N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import Client, StdioServerParameters
from mcp.server import MCPServer

from mcp_bridge.server import PlaybookServer
from pal_core.parser import parse

GOAL = 1.3

FUNCTION = textwrap.dedent(
    '''
    async def Add(a: int, b: int) -> int:
        """Adds two integers."""
        return a + b
    '''
).strip()

PROGRAM = (
    f"# Calculator\nAdds numbers for MCP clients.\n\n```python\n@playbook(public=True)\n{FUNCTION}\n```\n"
)

BARE_SERVER = f"""
from mcp.server import MCPServer

server = MCPServer("bare")

{FUNCTION}

server.tool()(Add)

if __name__ == "__main__":
    server.run()
"""


def bare_in_process() -> MCPServer:
    server = MCPServer("bare")
    namespace: dict[str, object] = {}
    exec(FUNCTION, namespace)  # the very function text the program's python block holds
    server.tool()(namespace["Add"])
    return server


async def timed_calls(call: Callable[[int], Awaitable[object]], count: int) -> list[float]:
    seconds = []
    for index in range(count):
        start = time.perf_counter()
        await call(index)
        seconds.append(time.perf_counter() - start)
    return seconds


def checked(client: Client) -> Callable[[int], Awaitable[object]]:
    async def call(index: int) -> object:
        result = await client.call_tool("Add", {"a": index, "b": 1})
        if result.is_error or result.structured_content != {"result": index + 1}:
            raise RuntimeError(f"wrong answer: {result}")
        return result

    return call


async def compare(bridge: Client, bare: Client, calls: int, rounds: int) -> tuple[list[float], list[float]]:
    bridge_call, bare_call = checked(bridge), checked(bare)
    await timed_calls(bridge_call, 50)  # warm up both (imports, caches, JIT-free but lazy paths)
    await timed_calls(bare_call, 50)
    bridge_seconds: list[float] = []
    bare_seconds: list[float] = []
    for _ in range(rounds):
        bridge_seconds += await timed_calls(bridge_call, calls)
        bare_seconds += await timed_calls(bare_call, calls)
    return bridge_seconds, bare_seconds


def report(label: str, bridge: list[float], bare: list[float]) -> float:
    bridge_median = statistics.median(bridge) * 1e3
    bare_median = statistics.median(bare) * 1e3
    ratio = bridge_median / bare_median
    p90 = lambda values: statistics.quantiles(values, n=10)[-1] * 1e3  # noqa: E731
    print(
        f"{label:<12} bridge median {bridge_median:6.3f} ms (p90 {p90(bridge):6.3f})   "
        f"bare MCPServer median {bare_median:6.3f} ms (p90 {p90(bare):6.3f})   ratio {ratio:4.2f} x"
    )
    return ratio


async def main(calls: int, rounds: int) -> int:
    with tempfile.TemporaryDirectory() as directory:
        program_file = Path(directory) / "calculator.pal"
        program_file.write_text(PROGRAM, encoding="utf-8")
        bare_file = Path(directory) / "bare_server.py"
        bare_file.write_text(BARE_SERVER, encoding="utf-8")
        bridge_parameters = StdioServerParameters(
            command=sys.executable, args=["-m", "runtime.cli", "mcp", "serve", str(program_file)]
        )
        bare_parameters = StdioServerParameters(command=sys.executable, args=[str(bare_file)])
        async with Client(bridge_parameters) as bridge, Client(bare_parameters) as bare:
            stdio_ratio = report("stdio", *await compare(bridge, bare, calls, rounds))
    async with (
        PlaybookServer(parse(PROGRAM)) as served,
        Client(served.mcp_server) as bridge,
        Client(bare_in_process()) as bare,
    ):
        report("in process", *await compare(bridge, bare, calls, rounds))
    verdict = "meets" if stdio_ratio <= GOAL else "misses"
    print(
        f"stdio ratio {stdio_ratio:.2f} x {verdict} the goal of <= {GOAL} x ({calls * rounds} calls per server)"
    )
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100, help="calls per server per round")
    parser.add_argument("--rounds", type=int, default=10)
    options = parser.parse_args()
    sys.exit(anyio.run(main, options.calls, options.rounds))

"""Compile and install llama-cpp-python (it has no binary wheel on PyPI) with only what pal-bridge uses,
on every core the machine gives us, showing the compiler's progress.

    python packaging/install_llama_cpp.py 'llama-cpp-python>=0.3.36,<0.4'

Run with the Python of the virtualenv to install into (the Makefile does). What is built: libllama and
libggml for the CPU. Not built: llama.cpp's common library with its HTTP client (see
llama_cpp_minimal.cmake), the multimodal library (LLAVA_BUILD=OFF), tools, examples, tests and the
server (llama.cpp leaves those off when it is built as part of another project). `CMAKE_ARGS` from the
environment are added after ours, so a user's own flags win. The full build log goes to a file; on a
terminal the progress is one line that updates, elsewhere one line per compiled file.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

CMAKE_ARGS = (
    "-DLLAVA_BUILD=OFF",
    f"-DCMAKE_PROJECT_llama.cpp_INCLUDE={HERE / 'llama_cpp_minimal.cmake'}",
    # One portable x86-64 build (AVX2 machines of the last ten years); ignored on other architectures.
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX=ON",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
)

_STEP = re.compile(r"^\s*\[(\d+)/(\d+)\]\s+(.*)$")
_COMPILED = re.compile(r"\s-c\s+(\S+)")
_WRITTEN = re.compile(r"\s-o\s+(\S+)")
_DESCRIBED = re.compile(r"(?:object|library)\s+(\S+)")


def usable_cpus() -> int:
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):
        return max(os.cpu_count() or 1, 1)


def _what(rest: str) -> str:
    """The file a ninja status line is about (`src/llama-model.cpp`), verbose command or short form."""
    for pattern in (_COMPILED, _WRITTEN, _DESCRIBED):
        found = pattern.search(rest)
        if found:
            target = found.group(1)
            break
    else:
        target = rest.strip()
    if "vendor/llama.cpp/" in target:
        target = target.split("vendor/llama.cpp/", 1)[1]
    return target.replace("CMakeFiles/", "").replace(".dir/", "/").removesuffix(".o")[-70:]


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}:{int(seconds % 60):02d}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    requirement = argv[0]
    log_path = Path(sys.prefix) / "llama-cpp-build.log"
    environment = dict(os.environ)
    environment["CMAKE_ARGS"] = " ".join((*CMAKE_ARGS, environment.get("CMAKE_ARGS", ""))).strip()
    environment.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(usable_cpus()))
    environment.setdefault("SKBUILD_BUILD_VERBOSE", "false")  # ninja's short status lines, not commands
    terminal = sys.stdout.isatty()
    print(
        f"Compiling {requirement} on {environment['CMAKE_BUILD_PARALLEL_LEVEL']} core(s); "
        f"full log: {log_path}",
        flush=True,
    )
    started = time.monotonic()
    command = [sys.executable, "-m", "pip", "install", "-v", requirement]
    with log_path.open("w", encoding="utf-8", buffering=1) as log:
        log.write(f"$ CMAKE_ARGS='{environment['CMAKE_ARGS']}' {' '.join(command)}\n")
        process = subprocess.Popen(
            command,
            env=environment,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        for line in process.stdout or ():
            log.write(line)
            step = _STEP.match(line)
            if step is None:
                if line.startswith(("Successfully installed", "Requirement already satisfied: llama")):
                    print(("\n" if terminal else "") + line.rstrip(), flush=True)
                continue
            done, total, rest = step.groups()
            shown = f"[{done}/{total} {_clock(time.monotonic() - started)}] {_what(rest)}"
            if terminal:
                print(f"\r\x1b[K{shown}", end="", flush=True)
            else:
                print(shown, flush=True)
        code = process.wait()
    elapsed = time.monotonic() - started
    if code != 0:
        tail = log_path.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
        print("\n".join(["", *tail]), file=sys.stderr)
        print(
            f"\nllama-cpp-python did not build (pip exit {code}); the full log is {log_path}", file=sys.stderr
        )
        return code
    print(f"llama-cpp-python ready in {_clock(elapsed)} (min:s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

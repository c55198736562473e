"""``make test``: the whole suite as two pytest processes side by side, one per core.

Run serially the suite took about 27 minutes on the 2-core machines it runs on, while one
core sat mostly idle: most tests are single-threaded, and half of them spend their time
waiting on the processes, sockets and Mininet links they drive. So the test tree is split
in two halves of similar length that share nothing but the machine:

- **compute**: the front end, the interpreter, the native engine, the STF and data-plane
  tests, the controller and compression tests (CPU-bound, in process, or on ports that
  are leased under file locks);
- **network**: everything that runs a switch process, worker processes, torch ranks or a
  Mininet network (the Mininet tests stay serial: they are all in this half).

Each half is one pytest run with the project's settings (pyproject.toml); its lines are
printed as they come, prefixed with the half's name, and each half's summary again at the
end. The exit status is 0 when both halves pass. Extra arguments go to both runs (``make
test ARGS="-x"``); a directory under tests/ that is in neither half is an error, so a new
test directory cannot be skipped silently. ``pytest`` by itself still runs everything in
one process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"\b(passed|failed|errors?|deselected|skipped|no tests ran)\b.* in [\d.]+s")
TESTPATHS = ("tests", "bmv2_tests")  # pyproject.toml's testpaths, in its order
HALVES: dict[str, list[str]] = {
    "compute": [
        "bmv2_tests", "tests/frontend", "tests/interp", "tests/stf", "tests/p4src",
        "tests/dataplane", "tests/native", "tests/controller", "tests/compress", "tests/ports",
        "tests/base",
    ],
    "network": [
        "tests/testbed", "tests/torch", "tests/host_e2e", "tests/host", "tests/process",
        "tests/p4runtime", "tests/integration", "tests/oracle", "tests/bmv2_controller",
        "tests/packaging", "tests/docs",
    ],
}  # fmt: skip


def unassigned() -> list[str]:
    """Test directories in neither half or in both, and test files directly under tests/
    (which both halves would collect)."""
    listed = [d for dirs in HALVES.values() for d in dirs]
    found = {
        f"tests/{p.name}"
        for p in (ROOT / "tests").iterdir()
        if p.is_dir() and any(p.glob("test_*.py"))
    }
    twice = {d for d in listed if listed.count(d) > 1}
    loose = {f"tests/{p.name}" for p in (ROOT / "tests").glob("test_*.py")}
    return sorted((found - set(listed)) | twice | loose)


def main(argv: list[str]) -> int:
    missing = unassigned()
    if missing:
        print(f"run_suite: error: not in exactly one half of the suite: {', '.join(missing)}",
              file=sys.stderr)  # fmt: skip
        return 2
    t0 = time.monotonic()
    procs: dict[str, subprocess.Popen[str]] = {}
    tails: dict[str, list[str]] = {}
    lock = threading.Lock()

    def pump(name: str, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            tails[name].append(line.rstrip("\n"))
            del tails[name][:-40]
            with lock:
                print(f"[{name}] {line}", end="", flush=True)

    for name in HALVES:
        tails[name] = []
        # the project's testpaths with the other half ignored, rather than this half's
        # directories as arguments: pytest loads the conftest.py of every argument up front,
        # and the test modules that import helpers from their own directory's conftest
        # (sys.path) would then see the last one loaded; this way each half is collected
        # exactly as in a whole run, in the same order, without the other half
        others = [d for n, dirs in HALVES.items() if n != name for d in dirs]
        roots = [r for r in TESTPATHS if any(d.split("/")[0] == r for d in HALVES[name])]
        procs[name] = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                "-o",
                f"testpaths={' '.join(roots)}",
                *(f"--ignore={d}" for d in others),
                *argv,
            ],  # fmt: skip
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
    readers = [threading.Thread(target=pump, args=(n, p), daemon=True) for n, p in procs.items()]
    for r in readers:
        r.start()

    def stop(signum: int, _frame: object) -> None:
        for p in procs.values():
            if p.poll() is None:
                p.send_signal(signum)

    signal.signal(signal.SIGTERM, stop)
    codes: dict[str, int] = {}
    try:
        for name, p in procs.items():
            codes[name] = p.wait()
    except KeyboardInterrupt:  # the terminal sent SIGINT to the children too
        for name, p in procs.items():
            codes[name] = p.wait()
    for r in readers:
        r.join(timeout=10)
    print()
    for name in procs:
        summary = next((ln for ln in reversed(tails[name]) if SUMMARY.search(ln)), "")
        print(f"{name}: exit {codes[name]}: {summary.strip('= ') or '(no summary)'}")
    print(f"run_suite: both halves in {time.monotonic() - t0:.0f} s")
    return next((c for c in codes.values() if c != 0), 0)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main(sys.argv[1:]))

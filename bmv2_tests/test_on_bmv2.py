"""Every ``bmv2_tests/NAME.stf`` on the real BMv2 ``simple_switch``, through p4c's STF runner.

test_stf_suite.py runs the same files on the embedded switch; here each one runs where its
expected bytes come from. The runner is p4c's ``backends/bmv2/run-bmv2-test.py`` as
installed beside ``p4c-bmv2-stf`` (``<prefix>/share/p4c/stf``), driven by ``bmv2_stf.py`` in
this folder, which adds our action-profile commands and fixes three races of the runner on a
loaded machine (its docstring says which). The files are found by glob, so a new pair is
run here as soon as it exists.

Each run compiles with p4c-bm2-ss, starts simple_switch on pcap files and waits for its
output: a few seconds, mostly waiting, so they run four at a time in threads (``Runs``),
each in its own temporary directory, and every test looks up its own result. conftest.py
starts them once the session has collected its tests and runs these tests last, so the runs
overlap the others. A
failure shows the tail of the runner's output (p4c's "Packet N on port P differs" and the
CLI's replies). Without the tools every test is skipped with one line saying which are
missing (p4reduce.p4lang finds them in /opt/p4lang, $P4LANG_ROOT or PATH). conftest.py
prints "bmv2: N STF tests passed on simple_switch" at the end of the run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from p4reduce import p4lang

HERE = Path(__file__).resolve().parent
DRIVER = HERE / "bmv2_stf.py"
CASES = sorted(p.stem for p in HERE.glob("*.stf"))
TOOLS = ("p4c-bmv2-stf", "p4c-bm2-ss", "simple_switch", "simple_switch_CLI")
WORKERS = 4  # concurrent runs: each mostly waits (on the switch, the CLI, the output)
RUN_TIMEOUT_S = 150
TAIL_CHARS = 6000

# Tests whose program BMv2 cannot run as it should, with the reason (docs/interpreter.md,
# "Where BMv2 and the embedded switch differ"). They run on the embedded switch only.
OURS_ONLY: dict[str, str] = {
    "profile_shared_action_run": (
        "BMv2 bug: an action_profile shared by two tables, one of them in a switch on "
        "action_run, aborts simple_switch (std::out_of_range in "
        "MatchTableAbstract::get_next_node): p4c-bm2-ss gives each table its own copy of "
        "every action, a member holds one copy's id, and next_nodes.at() of the other "
        "table does not know it"
    ),
}


@dataclass(frozen=True)
class Setup:
    python: str  # the interpreter of p4c's runner (its ptf, scapy, ply)
    stf_root: Path  # backends/bmv2/run-bmv2-test.py, bmv2stf.py, tools/
    build: Path  # p4c-bm2-ss and config.h, as the runner wants its build directory


@dataclass(frozen=True)
class Result:
    returncode: int
    output: str
    seconds: float


def setup() -> Setup | str:
    """Where p4c's runner is, or one line saying why it cannot run here."""
    reason = p4lang.missing_reason(*TOOLS)
    if reason:
        return reason
    wrapper = p4lang.find("p4c-bmv2-stf")
    assert wrapper is not None
    prefix = Path(wrapper).resolve().parent.parent
    stf_root = prefix / "share" / "p4c" / "stf"
    script = stf_root / "backends" / "bmv2" / "run-bmv2-test.py"
    if not script.is_file() or not (stf_root / "build" / "config.h").is_file():
        return f"p4c's STF runner is not installed beside p4c-bmv2-stf ({script} is missing)"
    venv = prefix / "venv" / "bin" / "python3"
    python = str(venv) if venv.is_file() else p4lang.find("python3")
    if python is None:
        return "no python3 for p4c's STF runner"
    return Setup(python, stf_root, stf_root / "build")


def run_one(name: str, s: Setup, base: Path) -> Result:
    """One STF file through bmv2_stf.py, in a directory of its own, in a process group of
    its own so that a simple_switch left behind by a crash or a timeout is stopped too."""
    work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=base))
    cmd = [s.python, str(DRIVER), str(s.stf_root), str(s.build)]
    cmd += [str(HERE / f"{name}.p4"), str(HERE / f"{name}.stf"), str(work)]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=work,
        env=p4lang.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate()
        out += f"\ntimed out after {RUN_TIMEOUT_S} s"
        rc = -1
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # whatever the runner left running
        except ProcessLookupError:
            pass
        shutil.rmtree(work, ignore_errors=True)
    return Result(rc, out, time.monotonic() - t0)


class Runs:
    """The runs of every runnable case, started at once, WORKERS at a time, in the tests'
    order. conftest.py starts them once the session has collected its tests and moves the
    tests that read them to the end of the session, so the runs, which mostly wait, overlap
    the other tests."""

    def __init__(self) -> None:
        self.pool: ThreadPoolExecutor | None = None
        self.futures: dict[str, Future[Result]] = {}
        self.base: Path | None = None

    def start(self, names: Iterable[str]) -> None:
        s = setup()
        if isinstance(s, str):
            return
        if self.pool is None:
            self.base = Path(tempfile.mkdtemp(prefix="p4reduce-bmv2-"))
            self.pool = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="bmv2")
        for n in names:
            if n not in OURS_ONLY and n not in self.futures:
                self.futures[n] = self.pool.submit(run_one, n, s, self.base)

    def stop(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
            self.futures = {}
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None

    def result(self, name: str) -> Result:
        self.start([name])  # started already, unless conftest.py did not run
        return self.futures[name].result()


RUNS = Runs()


@pytest.fixture(scope="module")
def bmv2_runs() -> Iterator[Runs]:
    yield RUNS
    RUNS.stop()


def test_the_ours_only_cases_exist() -> None:
    for name in OURS_ONLY:
        assert name in CASES, f"OURS_ONLY names {name}, which has no .stf here"


def test_every_p4reduce_case_runs_the_real_program() -> None:
    # p4reduce_NAME.p4 is a one-line wrapper of p4src/ (tests/dataplane/stf_gen.py)
    names = [n for n in CASES if n.startswith("p4reduce_")]
    assert len(names) >= 5
    for name in names:
        assert '#include "../p4src/' in (HERE / f"{name}.p4").read_text(), name


@pytest.mark.parametrize("name", CASES)
def test_stf_on_bmv2(name: str, bmv2_runs: Runs) -> None:
    if name in OURS_ONLY:
        pytest.skip(f"embedded switch only: {OURS_ONLY[name]}")
    s = setup()
    if isinstance(s, str):
        pytest.skip(s)
    r = bmv2_runs.result(name)
    assert r.returncode == 0, (
        f"{name}.stf failed on simple_switch (exit {r.returncode}, {r.seconds:.1f} s); "
        f"the runner's output ends:\n{r.output[-TAIL_CHARS:]}"
    )

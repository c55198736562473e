"""A built wheel works where there is no checkout: the commands find the P4 programs and the
example they run as installed package data.

The wheel is built (``pip wheel --no-deps``) from a copy of the checkout's files, installed
(not editable) into a fresh virtual environment, and every command runs from an empty folder
outside the checkout. The fresh environment gets the third-party dependencies (numpy, grpcio,
protobuf, torch, ...) of the test's own environment through a path file: installing torch
again would take minutes and the CPU wheel is local to these machines; p4reduce itself comes
only from the wheel (the test checks where it is imported from).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 600


def run(cmd: list[str], cwd: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("P4REDUCE_")}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(cmd)} -> {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done


def source_files() -> list[str]:
    """The checkout's files as git knows them (tracked, and new ones not ignored)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("building the wheel from the checkout needs git and a git checkout")
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [f for f in out.split("\0") if f and (ROOT / f).is_file()]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ folder of a fresh venv with the wheel installed."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    for f in source_files():
        (src / f).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / f, src / f)
    dist = base / "dist"
    run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(dist), str(src)], cwd=base)  # fmt: skip
    (wheel,) = dist.glob("p4reduce-*.whl")
    venv = base / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=base)
    purelib = Path(
        subprocess.run(
            [str(venv / "bin" / "python"), "-c",
             "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    # the dependencies: this environment's site-packages as a plain path (its own .pth
    # files, among them the editable p4reduce's, are not processed from there)
    (purelib / "deps-from-test-env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps",
         "--no-index", str(wheel)], cwd=base)  # fmt: skip
    return venv / "bin"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """An empty working directory outside the checkout."""
    assert ROOT not in tmp_path.parents
    return tmp_path


def test_imported_from_the_wheel(installed: Path, outside: Path) -> None:
    done = run([str(installed / "python"), "-c",
                "import p4reduce, p4reduce.host._engine_c as e; print(p4reduce.__file__); "
                "print(e.__file__)"], cwd=outside)  # fmt: skip
    for line in done.stdout.split():
        assert str(installed.parent) in line and str(ROOT) not in line, done.stdout


def test_package_data_is_in_the_wheel(installed: Path, outside: Path) -> None:
    done = run([str(installed / "python"), "-c",
                "from p4reduce import resources; print(resources.p4src()); "
                "print(resources.example('train_ddp.py'))"], cwd=outside)  # fmt: skip
    p4src, example = done.stdout.split()
    assert str(installed.parent) in p4src and Path(p4src, "include", "constants.p4").is_file()
    assert str(installed.parent) in example


def test_p4c_and_stf(installed: Path, outside: Path) -> None:
    for name in ("pre_multicast.p4", "pre_multicast.stf"):
        shutil.copy(ROOT / "bmv2_tests" / name, outside / name)
    run([str(installed / "p4reduce-p4c"), "-o", "out", "--p4runtime-files", "out/p.txtpb",
         "pre_multicast.p4"], cwd=outside)  # fmt: skip
    assert (outside / "out" / "pre_multicast.json").is_file()
    run([str(installed / "p4reduce-stf"), "pre_multicast.p4", "pre_multicast.stf"], cwd=outside)


def test_check(installed: Path, outside: Path) -> None:
    done = run([str(installed / "p4reduce"), "check", "--workers", "2", "--json"], cwd=outside)
    verdict = json.loads(done.stdout.strip().splitlines()[-1])
    assert verdict.get("ok") is True, verdict


def test_demo(installed: Path, outside: Path) -> None:
    done = run([str(installed / "p4reduce"), "demo", "--steps", "3", "--json"], cwd=outside)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report.get("ok") is True, report


TORCH_ONE_PROCESS = """
import torch, torch.distributed as dist
import p4reduce.host.torch  # registers the backend
dist.init_process_group("p4reduce", init_method="tcp://127.0.0.1:{port}", rank=0, world_size=1)
t = torch.arange(10, dtype=torch.int32)
dist.all_reduce(t)
assert t.tolist() == list(range(10)), t
dist.destroy_process_group()
print("ok")
"""


def test_torch_backend(installed: Path, outside: Path) -> None:
    pytest.importorskip("torch")
    from p4reduce.free_port import free_port

    script = TORCH_ONE_PROCESS.format(port=free_port())
    done = run([str(installed / "python"), "-c", script], cwd=outside, timeout=180)
    assert done.stdout.strip().splitlines()[-1] == "ok"

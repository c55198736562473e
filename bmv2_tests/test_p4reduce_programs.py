"""The p4reduce STF tests (``p4reduce_*.stf``) on BMv2 ``simple_switch``, when it is installed.

On the embedded switch these files run in test_stf_suite.py like every other pair: each
``p4reduce_NAME.p4`` is a one-line wrapper that includes ``../p4src/dense.p4`` or
``sparse.p4``, so p4c finds ``NAME.p4`` next to ``NAME.stf`` too. The files are generated
from docs/protocol.md by tests/dataplane/stf_gen.py (tests/dataplane/test_stf_files.py keeps
them current).

Running them on BMv2 uses p4c's own STF runner, ``backends/bmv2/run-bmv2-test.py`` (it
compiles with p4c-bm2-ss, starts simple_switch on pcap files and drives simple_switch_CLI),
which needs a p4c source tree with a build. The test runs when ``simple_switch`` and ``p4c``
are on PATH and ``P4C_SRC`` names that tree (the build directory is ``$P4C_BUILD``, default
``$P4C_SRC/build``, where the runner is started); ``P4REDUCE_BMV2_STF`` may instead give the
whole command, with ``{p4}`` for the program. Otherwise every case is skipped, saying why.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CASES = sorted(p.stem for p in HERE.glob("p4reduce_*.stf"))


def bmv2_command(p4: Path) -> tuple[list[str] | None, Path | None, str]:
    """(command, working directory, reason it cannot run)."""
    template = os.environ.get("P4REDUCE_BMV2_STF")
    if template:
        return shlex.split(template.format(p4=p4)), None, ""
    missing = [
        tool for tool in ("simple_switch", "simple_switch_CLI", "p4c") if not shutil.which(tool)
    ]
    if missing:
        return None, None, f"BMv2 is not installed here ({', '.join(missing)} not on PATH)"
    src = os.environ.get("P4C_SRC")
    if not src:
        return (
            None,
            None,
            (
                "set P4C_SRC to a built p4c source tree (its backends/bmv2/run-bmv2-test.py runs "
                "STF files on simple_switch), or P4REDUCE_BMV2_STF to a command with {p4}"
            ),
        )
    script = Path(src) / "backends" / "bmv2" / "run-bmv2-test.py"
    build = Path(os.environ.get("P4C_BUILD", Path(src) / "build"))
    if not script.is_file() or not build.is_dir():
        return None, None, f"{script} or the build directory {build} does not exist"
    return [sys.executable, str(script), src, str(p4)], build, ""


def test_every_stf_has_its_wrapper() -> None:
    assert len(CASES) >= 5
    for name in CASES:
        text = (HERE / f"{name}.p4").read_text()
        assert '#include "../p4src/' in text, name


@pytest.mark.parametrize("name", CASES)
def test_on_bmv2(name: str) -> None:
    cmd, cwd, why = bmv2_command(HERE / f"{name}.p4")
    if cmd is None:
        pytest.skip(why)
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"{' '.join(cmd)}\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}"

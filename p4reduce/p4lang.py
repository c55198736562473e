"""Where the real p4c and BMv2 live, when they are installed.

p4c and BMv2 are in no package registry, so p4reduce never installs them: a user builds them
(or unpacks a bundle) into a prefix, by default ``/opt/p4lang`` (``$P4LANG_ROOT`` overrides),
or puts them on PATH. Everything that runs the real tools (the BMv2 tests, ``--switch bmv2``,
the side-by-side benchmarks) finds them here and, where they are absent, says which tool is
missing in one line instead of pretending.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

DEFAULT_ROOT = "/opt/p4lang"


def root() -> Path:
    """The prefix of the p4lang tools (``$P4LANG_ROOT``, default /opt/p4lang)."""
    return Path(os.environ.get("P4LANG_ROOT", DEFAULT_ROOT))


def search_path() -> str:
    """PATH with the prefix's ``bin`` and its Python environment's ``venv/bin`` in front, for
    child processes: p4c's STF runner and simple_switch_CLI are scripts that expect both."""
    parts = [str(root() / "bin"), str(root() / "venv" / "bin"), os.environ.get("PATH", "")]
    return os.pathsep.join(p for p in parts if p)


def env() -> dict[str, str]:
    """The environment for running a p4lang tool as a child process."""
    e = dict(os.environ)
    e["PATH"] = search_path()
    return e


def find(tool: str) -> str | None:
    """The path of ``tool`` (``p4c-bm2-ss``, ``simple_switch``, ...), or None."""
    return shutil.which(tool, path=search_path())


def missing(*tools: str) -> list[str]:
    """The tools of ``tools`` that cannot be found."""
    return [t for t in tools if find(t) is None]


def missing_reason(*tools: str) -> str:
    """One line saying which tools are missing and how to get them ('' when none is)."""
    gone = missing(*tools)
    if not gone:
        return ""
    return (
        f"{', '.join(gone)} not found (p4c/BMv2 are not installed: put them in {root()}/bin, "
        "set P4LANG_ROOT, or add them to PATH; README.md 'Real p4c and BMv2')"
    )

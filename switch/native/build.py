"""Compile generated C into a shared object, cached by content hash, and load it.

The cache key is the SHA-256 of the generated source (which embeds the generator version and
the fixed runtime) and the compiler flags. Objects are written to a temporary name in the
cache directory and renamed into place, so a concurrent start never loads half a file.
Every failure (no compiler, the compiler crashing or refusing the code, an unwritable or
full cache directory) raises ``BuildError`` with one line saying what went wrong.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from importlib import resources
from pathlib import Path

CFLAGS = ["-fPIC", "-shared", "-std=gnu11", "-pthread", "-w"]
# -O2, except for very large programs, where -O1 compiles about 2.5 times faster for nearly
# the same code, keeping a switch's first start (a compile) well inside its callers' start-up
# deadlines. Re-rolling (creroll.py) keeps dense.p4 at K = 1024 under 4,000 lines.
LARGE_SOURCE_LINES = 8000
SANITIZE = ["-O1", "-g", "-fno-omit-frame-pointer", "-fsanitize=address,undefined"]


class BuildError(Exception):
    """The native engine could not be built; the message is one line."""


def cache_dir() -> Path:
    env = os.environ.get("P4REDUCE_CACHE_DIR")
    if env:
        return Path(env)
    return Path.home() / ".cache" / "p4reduce" / "native"


def compiler() -> str | None:
    cc = os.environ.get("P4REDUCE_CC") or os.environ.get("CC") or "cc"
    return shutil.which(cc)


def flags(sanitize: bool, source: str = "") -> list[str]:
    if sanitize:
        return CFLAGS + SANITIZE
    opt = "-O1" if source.count("\n") > LARGE_SOURCE_LINES else "-O2"
    return [opt, *CFLAGS]


COMPILE_TIMEOUT = 300.0  # seconds a compile may take (a slow compiler on a loaded machine)


def object_path(source: str, sanitize: bool = False) -> Path:
    """Where the shared object of ``source`` is cached (it may not exist yet)."""
    opts = flags(sanitize, source)
    # the source embeds the generator version and the runtime, so it is the whole key
    key = hashlib.sha256("\0".join([source, *opts]).encode()).hexdigest()[:32]
    return cache_dir() / f"p4r_{key}{'_asan' if sanitize else ''}.so"


def build(source: str, sanitize: bool = False, timeout: float = COMPILE_TIMEOUT) -> Path:
    """The path of the shared object for ``source``, compiling it on a cache miss (the
    compiler gets ``timeout`` seconds)."""
    opts = flags(sanitize, source)
    target = object_path(source, sanitize)
    directory = target.parent
    if target.exists():
        return target  # a second start needs no compiler
    cc = compiler()
    if cc is None:
        raise BuildError("no C compiler found (cc; set CC or P4REDUCE_CC)")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BuildError(f"cache directory {directory} cannot be created: {e.strerror}") from None
    include = resources.files(__package__).joinpath("runtime")
    sweep_stale(directory, 2 * timeout)
    try:
        work = tempfile.mkdtemp(prefix=".build-", dir=directory)
    except OSError as e:
        raise BuildError(f"cache directory {directory} is not writable: {e.strerror}") from None
    try:
        src = Path(work) / "engine.c"
        obj = Path(work) / "engine.so"
        try:
            src.write_text(source)
        except OSError as e:
            raise BuildError(f"cache directory {directory}: {e.strerror}") from None
        cmd = [cc, *opts, "-I", str(include), "-o", str(obj), str(src)]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise BuildError(f"the C compiler {cc} did not finish within {timeout:g} s") from None
        except OSError as e:
            raise BuildError(f"the C compiler {cc} could not run: {e}") from None
        if run.returncode != 0 or not obj.exists():
            detail = _first_error(run.stderr) or f"exit status {run.returncode}"
            raise BuildError(f"the C compiler {cc} failed: {detail}")
        try:
            os.replace(obj, target)
        except OSError as e:
            raise BuildError(f"cache directory {directory}: {e.strerror}") from None
        return target
    finally:
        shutil.rmtree(work, ignore_errors=True)


def sweep_stale(directory: Path, age: float) -> None:
    """Remove the work directories of compiles that ended without cleaning up (a process
    killed mid-compile leaves its ``.build-*``) once they are older than ``age`` seconds,
    longer than any compile may run, so a running compile's directory is never touched."""
    cutoff = time.time() - age
    try:
        stale = [p for p in directory.glob(".build-*") if p.stat().st_mtime < cutoff]
    except OSError:
        return  # an unreadable cache: build() says so itself
    for p in stale:
        shutil.rmtree(p, ignore_errors=True)


def _first_error(stderr: str) -> str:
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln[:300]
    return lines[-1][:300] if lines else ""


def load(path: Path) -> ctypes.CDLL:
    try:
        return ctypes.CDLL(str(path))
    except OSError as e:
        raise BuildError(f"the native engine {path.name} cannot be loaded: {e}") from None

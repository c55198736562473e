"""The one place p4reduce compiles C at run time: find the compiler, compile, cache by content
hash, load.

Three users share it: the native engine (generated C, ``build()``), the native I/O loop of
p4reduce-switch (``ioloop.py``) and the kernel-floor reflector of the benchmarks
(``bench/floor.py``), the last two through ``build_files()``. The compiler is ``compiler()``'s
one lookup: ``$P4REDUCE_CC``, else ``$CC``, else ``cc``, else ``gcc`` (a P4REDUCE_CC or CC that
names no program means no compiler: the caller falls back to Python with its one-line notice).
The cache key is the SHA-256 of the sources (a generated source embeds the generator version
and the fixed runtime) and the flags. Objects are built in a work directory in the cache
directory and renamed into place, so a concurrent start never loads half a file. Every
failure (no compiler, the compiler crashing or refusing the code, an unwritable or full cache
directory) raises ``BuildError`` with one line saying what went wrong.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
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
    """The C compiler every run-time build uses (the module's docstring), or None."""
    for var in ("P4REDUCE_CC", "CC"):
        if os.environ.get(var):
            return shutil.which(os.environ[var])  # named: that one or none
    return shutil.which("cc") or shutil.which("gcc")


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
    target = object_path(source, sanitize)
    if target.exists():
        return target  # a second start needs no compiler
    include = resources.files(__package__).joinpath("runtime")
    opts = [*flags(sanitize, source), "-I", str(include)]
    return _compile(target, opts, "engine.c", source, timeout)


def build_files(
    stem: str,
    main: Path,
    flags: Sequence[str],
    depends: Sequence[Path] = (),
    suffix: str = "",
    timeout: float = COMPILE_TIMEOUT,
) -> Path:
    """The cached output of ``cc flags -o OUT main`` (a shared object or a program, as the
    flags say), keyed by the contents of ``main`` and ``depends``, the compiler and the
    flags; compiled on a cache miss. ``stem`` and ``suffix`` name the cached file."""
    cc = compiler()
    if cc is None:
        raise BuildError(_NO_CC)
    digest = hashlib.sha256()
    for path in (main, *depends):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update("\0".join((cc, *flags)).encode())
    target = cache_dir() / f"{stem}-{digest.hexdigest()[:24]}{suffix}"
    if target.exists():
        return target
    opts = [*flags, "-I", str(main.parent)]
    return _compile(target, opts, main.name, main.read_text(), timeout)


_NO_CC = "no C compiler found (cc or gcc on PATH; set P4REDUCE_CC or CC)"


def _compile(target: Path, opts: Sequence[str], name: str, source: str, timeout: float) -> Path:
    """Compile ``source`` (written as ``name`` in a work directory) with ``opts`` into
    ``target``, renamed into place once whole."""
    cc = compiler()
    if cc is None:
        raise BuildError(_NO_CC)
    directory = target.parent
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BuildError(f"cache directory {directory} cannot be created: {e.strerror}") from None
    sweep_stale(directory, 2 * timeout)
    try:
        work = tempfile.mkdtemp(prefix=".build-", dir=directory)
    except OSError as e:
        raise BuildError(f"cache directory {directory} is not writable: {e.strerror}") from None
    try:
        src = Path(work) / name
        obj = Path(work) / "out"
        try:
            src.write_text(source)
        except OSError as e:
            raise BuildError(f"cache directory {directory}: {e.strerror}") from None
        cmd = [cc, *opts, "-o", str(obj), str(src)]
        try:
            run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            raise BuildError(f"the C compiler {cc} did not finish within {timeout:g} s") from None
        except OSError as e:
            raise BuildError(f"the C compiler {cc} could not run: {e}") from None
        if run.returncode != 0 or not obj.exists():
            detail = _first_error(run.stderr) or f"exit status {run.returncode}"
            raise BuildError(f"the C compiler {cc} failed on {name}: {detail}")
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

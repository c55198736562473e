"""Our front end against the real p4c: accept/reject and P4Info, program by program.

For every P4 program of the repository, ``p4reduce-p4c`` (in process) and the real
``p4c-bm2-ss --arch v1model`` must both accept it with the same P4Info (compared as
parsed messages, see normalised_text) or both refuse it. Prints one line per program, ``agree``,
``accept-reject`` (one accepts, the other refuses; both first error lines follow) or
``p4info`` (a unified diff of the normalised text follows), then a summary line. The warnings
of the kinds p4reduce-p4c emits (``[--Wwarn=shadow]``, ``[--Wwarn=overflow]``: WARNING_KINDS)
that each side prints for a program both accept are compared too, line for line, and listed
when they differ, without failing the comparison; ``--warnings`` also counts p4c's warnings by
kind over the programs, with how many of each we print too.

    python bench/p4c_diff.py [--json] [-j N] [--cache DIR | --no-cache] [--only SUBSTR]
                             [--rules | --all]

``--rules`` compares the programs generated per spec rule (tests/frontend/rules/programs.py,
written to build/p4c_rules) instead, ``--all`` both; for those, where both refuse, the first
error must be on the same line (``error-line`` otherwise). The summary ends with the
accept/refuse agreement and the share of programs both accept whose P4Info is identical.

Exit status 0 when every program agrees, 1 on any mismatch, 2 when p4c-bm2-ss is missing.

Which files are programs: every ``.p4`` under the repository's program directories except
those another file ``#include``s without themselves instantiating ``main`` (p4src/include,
the bmv2_tests headers): those are parts of programs, not programs. A file with no ``main``
that nothing includes (tests/frontend/programs/bad/bmv2_no_main_module.p4) is a program that
both must refuse. Flags, as the tests that compile each program use them:

- p4src/dense.p4 and sparse.p4: ``-I p4src/include``, once as they are and once each with
  ``-DK=256`` and ``-DK=1024`` (tests/p4src compiles all three);
- bmv2_tests/*: ``-I bmv2_tests`` (bmv2_tests/test_stf_suite.py);
- a program that declares its own ``extern``: both without flags and with
  ``--emit-externs``, which p4c-bm2-ss has too, so both settings are judged by p4c;
- programs written for our embedded-only extensions are compiled without them:
  ``--runtime-divmod`` (tests/interp, the tofino arith_* programs) and ``--value-arrays``
  (tests/frontend/programs/value_arrays) have no p4c counterpart, and p4c must refuse those
  programs exactly as we do without the flag; ``--target-profile
  tofino`` checks rules on top of a program that compiles for BMv2 (test_tofino_profile.py),
  so tofino_programs are compared as plain v1model programs.

p4c's results are cached by content (p4c's version, the flags, the text of the program and
of every file it includes) under build/p4c_cache, so a second run costs only our side.
"""

from __future__ import annotations

import argparse
import base64
import difflib
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from p4reduce import p4lang

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CACHE = ROOT / "build" / "p4c_cache"
P4C = "p4c-bm2-ss"
TIMED_OUT = "p4c timed out"
# p4c needs ~5 s of CPU for p4src/dense.p4 -DK=1024 and far longer on a loaded machine; a
# hang must still not stall the whole comparison (a timeout is reported, never cached)
P4C_TIMEOUT_S = 300.0
# The diagnostic kinds whose warnings p4reduce-p4c prints with p4c's wording
WARNING_KINDS = ("shadow", "overflow", "unsupported")
# Bumped when what a cache entry holds changes (2: every warning p4c printed, any kind)
CACHE_FORMAT = 2
_WARNING = re.compile(r"\[--Wwarn=(\w+)\] warning:")

# Where programs live (relative to ROOT); build/, .venv/ and our own p4include are not here.
PROGRAM_DIRS = ("p4src", "tests", "bmv2_tests", "bench", "examples")
# The aggregation programs take K from -D; each value must compile the same on both sides.
P4SRC_DEFINES: tuple[dict[str, str], ...] = ({}, {"K": "256"}, {"K": "1024"})

_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.M)
_MAIN = re.compile(r"\)\s*main\s*;")
_USER_EXTERN = re.compile(r"^\s*extern\b", re.M)


@dataclass(frozen=True)
class Job:
    """One compilation to compare: a program and the flags both compilers get."""

    program: str  # relative to ROOT
    include_dirs: tuple[str, ...] = ()
    defines: tuple[tuple[str, str], ...] = ()
    emit_externs: bool = False
    # a generated rule program (tests/frontend/rules): where both refuse, the first error's
    # line must be the same too
    error_line: bool = False

    @property
    def label(self) -> str:
        flags = [f"-D{k}={v}" for k, v in self.defines]
        if self.emit_externs:
            flags.append("--emit-externs")
        return " ".join([self.program, *flags])

    def flags(self) -> list[str]:
        """The options common to both command lines (paths relative to ROOT)."""
        out: list[str] = []
        for d in self.include_dirs:
            out += ["-I", d]
        out += [f"-D{k}={v}" for k, v in self.defines]
        if self.emit_externs:
            out.append("--emit-externs")
        return out


@dataclass
class Outcome:
    """What one compiler made of a job: accepted (with its P4Info) or the first error."""

    accepted: bool
    p4info: bytes = b""  # serialised p4.config.v1.P4Info, when accepted
    error: str = ""  # the first error line, when refused
    # the warnings, 'FILE(LINE): [--Wwarn=KIND] warning: ...' (paths relative to ROOT):
    # p4c's of every kind, ours (of WARNING_KINDS); those of WARNING_KINDS are compared and
    # reported, but are not a mismatch by themselves
    warnings: tuple[str, ...] = ()
    # every line the first error's message points at (p4c cites a declaration first and the
    # use after it, or the origin of a type mismatch): ours must be one of them
    error_lines: tuple[int, ...] = ()


@dataclass
class Verdict:
    job: Job
    status: str  # "agree" | "accept-reject" | "p4info" | "error-line"
    detail: str = ""
    # warnings of WARNING_KINDS only one side printed (p4c's order of visiting differs, so
    # sets)
    warnings_only_p4c: list[str] = field(default_factory=list)
    warnings_only_ours: list[str] = field(default_factory=list)
    ours: str = field(default="")  # "accept" or the first error line
    p4c: str = field(default="")
    p4c_warnings: list[str] = field(default_factory=list)  # every kind, when both accept


# ------------------------------------------------------------------ which programs


def _includes(text: str) -> list[str]:
    return _INCLUDE.findall(text)


def discover(root: Path = ROOT) -> list[Job]:
    """Every program of the repository with the flags it is compiled with (module doc)."""
    files = sorted(
        p
        for d in PROGRAM_DIRS
        if (root / d).is_dir()
        for p in (root / d).rglob("*.p4")
        if "/p4include/" not in p.as_posix()
    )
    included: set[Path] = set()
    for path in files:
        for name in _includes(path.read_text(encoding="utf-8", errors="replace")):
            target = (path.parent / name).resolve()
            if target.exists():
                included.add(target)
            for cand in (root / "p4src" / "include" / name,):
                if cand.exists():
                    included.add(cand.resolve())
    jobs: list[Job] = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.resolve() in included and not _MAIN.search(text):
            continue  # a part of other programs, not a program
        rel = path.relative_to(root).as_posix()
        if rel.startswith("p4src/"):
            for defs in P4SRC_DEFINES:
                jobs.append(Job(rel, ("p4src/include",), tuple(sorted(defs.items()))))
            continue
        incs = ("bmv2_tests",) if rel.startswith("bmv2_tests/") else ()
        jobs.append(Job(rel, incs))
        if _USER_EXTERN.search(text):
            jobs.append(Job(rel, incs, emit_externs=True))
    return jobs


RULES_MODULE = Path("tests") / "frontend" / "rules" / "programs.py"
RULES_DIR = Path("build") / "p4c_rules"


def rule_jobs(root: Path = ROOT) -> list[Job]:
    """The programs generated per spec rule (tests/frontend/rules/programs.py), written
    under build/p4c_rules; their first errors are compared by line too."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("p4c_rule_programs", root / RULES_MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    paths = module.write_all(root / RULES_DIR)
    return [Job(p.relative_to(root).as_posix(), error_line=True) for p in paths]


# ------------------------------------------------------------------ running p4c


def p4c_version() -> str:
    exe = p4lang.find(P4C)
    if exe is None:
        return ""
    run = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30)
    return (run.stdout + run.stderr).strip()


def _dependencies(path: Path, include_dirs: list[Path], seen: set[Path]) -> None:
    """``path`` and every repository file it includes, transitively (system headers such
    as core.p4 change only with p4c, whose version is in the key)."""
    path = path.resolve()
    if path in seen or not path.is_file():
        return
    seen.add(path)
    for name in _includes(path.read_text(encoding="utf-8", errors="replace")):
        for base in (path.parent, *include_dirs):
            if (base / name).is_file():
                _dependencies(base / name, include_dirs, seen)
                break


def cache_key(job: Job, version: str, root: Path = ROOT) -> str:
    seen: set[Path] = set()
    _dependencies(root / job.program, [root / d for d in job.include_dirs], seen)
    h = hashlib.sha256()
    h.update(f"{version}\nformat {CACHE_FORMAT}".encode())
    h.update(json.dumps(job.flags()).encode())
    h.update(job.program.encode())
    base = root.resolve()
    for dep in sorted(seen):
        # the name relative to the checkout, so a clone elsewhere reuses the cache
        name = dep.relative_to(base) if dep.is_relative_to(base) else dep
        h.update(name.as_posix().encode())
        h.update(hashlib.sha256(dep.read_bytes()).digest())
    return h.hexdigest()


def _first_error(stderr: str, returncode: int) -> str:
    for line in stderr.splitlines():
        if "error" in line.lower():
            return line.strip()
    return f"exit status {returncode}" + (
        f": {stderr.strip().splitlines()[0]}" if stderr.strip() else ""
    )


_DIAG = re.compile(r"^\S.*\b(error|warning):")
_POS = re.compile(r"\((\d+)\)")


def _error_lines(stderr: str) -> tuple[int, ...]:
    """The lines named in the first error's block: its first line and the indented or
    position-only lines after it, up to the next diagnostic."""
    lines = stderr.splitlines()
    start = next((i for i, ln in enumerate(lines) if "error" in ln.lower()), None)
    if start is None:
        return ()
    block = [lines[start]]
    for ln in lines[start + 1 :]:
        if _DIAG.match(ln):
            break
        block.append(ln)
    found: list[int] = []
    for ln in block:
        for m in _POS.finditer(ln):
            if int(m.group(1)) not in found:
                found.append(int(m.group(1)))
    return tuple(found)


def _warnings(stderr: str, root: Path) -> tuple[str, ...]:
    prefix = f"{root.resolve().as_posix()}/"
    return tuple(
        line.strip().removeprefix(prefix) for line in stderr.splitlines() if _WARNING.search(line)
    )


def warning_kind(line: str) -> str:
    m = _WARNING.search(line)
    return m.group(1) if m else ""


def compared(warnings: Iterable[str]) -> set[str]:
    return {w for w in warnings if warning_kind(w) in WARNING_KINDS}


def run_p4c(job: Job, root: Path = ROOT) -> Outcome:
    exe = p4lang.find(P4C)
    if exe is None:
        raise RuntimeError(p4lang.missing_reason(P4C))
    with tempfile.TemporaryDirectory(prefix="p4c_diff_") as tmp:
        info = Path(tmp) / "p4info.bin"
        cmd = [exe, "--arch", "v1model", *job.flags(), "-o", str(Path(tmp) / "out.json"),
               "--p4runtime-files", str(info), job.program]  # fmt: skip
        try:
            run = subprocess.run(cmd, cwd=root, env=p4lang.env(), capture_output=True,
                                 text=True, timeout=P4C_TIMEOUT_S)  # fmt: skip
        except subprocess.TimeoutExpired:
            return Outcome(False, error=f"{TIMED_OUT} after {P4C_TIMEOUT_S:.0f} s")
        warns = _warnings(run.stderr, root)
        if run.returncode != 0:
            return Outcome(False, error=_first_error(run.stderr, run.returncode),
                           warnings=warns, error_lines=_error_lines(run.stderr))  # fmt: skip
        data = info.read_bytes() if info.exists() else b""
        return Outcome(True, p4info=data, warnings=warns)


def run_p4c_cached(job: Job, version: str, cache: Path | None, root: Path = ROOT) -> Outcome:
    if cache is None:
        return run_p4c(job, root)
    entry = cache / f"{cache_key(job, version, root)}.json"
    try:
        data = json.loads(entry.read_text())
        return Outcome(
            data["accepted"],
            base64.b64decode(data["p4info"]),
            data["error"],
            tuple(data["warnings"]),
            tuple(data["error_lines"]),
        )
    except (OSError, ValueError, KeyError):
        pass  # absent or unreadable: compute it again
    outcome = run_p4c(job, root)
    if outcome.error.startswith(TIMED_OUT):
        return outcome  # the machine's state, not p4c's answer
    cache.mkdir(parents=True, exist_ok=True)
    tmp = entry.with_suffix(".tmp")
    tmp.write_text(json.dumps({"accepted": outcome.accepted, "error": outcome.error,
                               "p4info": base64.b64encode(outcome.p4info).decode(),
                               "warnings": list(outcome.warnings),
                               "error_lines": list(outcome.error_lines)}))  # fmt: skip
    tmp.replace(entry)
    return outcome


# ------------------------------------------------------------------ running ours


def run_ours(job: Job, root: Path = ROOT) -> Outcome:
    """Our front end in process, with exactly what ``p4reduce-p4c`` passes it."""
    from p4reduce.switch.frontend.cli import TARGET_DEFINES, run_compile
    from p4reduce.switch.frontend.compiler import CompileOptions
    from p4reduce.switch.frontend.errors import CompileError

    defines: dict[str, str | None] = {TARGET_DEFINES["bmv2"]: None, **dict(job.defines)}
    options = CompileOptions(
        include_dirs=[root / d for d in job.include_dirs],
        defines=defines,
        emit_externs=job.emit_externs,
    )
    try:
        program = run_compile(root / job.program, options)
    except CompileError as exc:  # MissingMainError included: p4c exits 1 for it as well
        return Outcome(False, error=exc.format().splitlines()[0])
    prefix = f"{root.resolve().as_posix()}/"
    warns = tuple(w.head().removeprefix(prefix) for w in program.warnings)
    return Outcome(True, p4info=program.p4info.SerializeToString(), warnings=warns)


# ------------------------------------------------------------------ comparing


def normalised_text(data: bytes) -> str:
    """The P4Info as protobuf text, for comparing and diffing.

    Both sides are parsed from the binary message and printed by the same text_format, so
    the two printers' layouts do not matter. Nothing else is normalised: on every program
    of the repository p4c and we write the same pkg_info, doc strings, ids and the same
    order of every repeated field (p4c's order is deterministic: declaration order, tables
    and actions as its passes meet them), so sorting would only hide real differences."""
    from google.protobuf import text_format

    from p4reduce.proto import p4info_pb2

    info = p4info_pb2.P4Info()
    info.ParseFromString(data)
    return text_format.MessageToString(info)


def compare(job: Job, ours: Outcome, theirs: Outcome) -> Verdict:
    verdict = _compare(job, ours, theirs)
    if ours.accepted and theirs.accepted:
        verdict.warnings_only_p4c = sorted(compared(theirs.warnings) - compared(ours.warnings))
        verdict.warnings_only_ours = sorted(compared(ours.warnings) - compared(theirs.warnings))
        verdict.p4c_warnings = list(theirs.warnings)
    return verdict


_LINE = re.compile(r"\((\d+)\):")


def _line(error: str) -> int | None:
    """The line of a ``FILE(LINE): ...`` error; None for one without a position."""
    m = _LINE.search(error)
    return int(m.group(1)) if m else None


def _compare(job: Job, ours: Outcome, theirs: Outcome) -> Verdict:
    ours_s = "accept" if ours.accepted else ours.error
    p4c_s = "accept" if theirs.accepted else theirs.error
    if ours.accepted != theirs.accepted:
        detail = f"    ours: {ours_s}\n    p4c:  {p4c_s}"
        return Verdict(job, "accept-reject", detail, ours=ours_s, p4c=p4c_s)
    if (
        not ours.accepted
        and job.error_line
        and theirs.error_lines  # p4c gave a position
        and _line(ours.error) not in theirs.error_lines
    ):
        detail = f"    ours: {ours_s}\n    p4c:  {p4c_s}"
        return Verdict(job, "error-line", detail, ours=ours_s, p4c=p4c_s)
    if ours.accepted:
        a, b = normalised_text(theirs.p4info), normalised_text(ours.p4info)
        if a != b:
            diff = difflib.unified_diff(
                a.splitlines(), b.splitlines(), "p4c", "p4reduce-p4c", lineterm=""
            )
            return Verdict(job, "p4info", "\n".join(diff), ours=ours_s, p4c=p4c_s)
    return Verdict(job, "agree", "", ours=ours_s, p4c=p4c_s)


def run_all(
    jobs: Iterable[Job],
    *,
    workers: int = 2,
    cache: Path | None = DEFAULT_CACHE,
    root: Path = ROOT,
    progress: Callable[[Verdict], None] | None = None,
) -> list[Verdict]:
    """p4c on a pool of ``workers`` threads (each runs a child process) while our front end
    compiles the same jobs in this process, so the two share the cores."""
    jobs = list(jobs)
    version = p4c_version()
    if not version:
        raise RuntimeError(p4lang.missing_reason(P4C))
    verdicts: list[Verdict] = []
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [pool.submit(run_p4c_cached, j, version, cache, root) for j in jobs]
        for job, fut in zip(jobs, futures, strict=True):
            ours = run_ours(job, root)
            verdict = compare(job, ours, fut.result())
            verdicts.append(verdict)
            if progress is not None:
                progress(verdict)
    return verdicts


def summary(verdicts: list[Verdict]) -> str:
    kinds = ("agree", "accept-reject", "p4info", "error-line")
    counts = {s: sum(v.status == s for v in verdicts) for s in kinds}
    both_refuse = sum(v.status == "agree" and v.ours != "accept" for v in verdicts)
    warn = sum(bool(v.warnings_only_p4c or v.warnings_only_ours) for v in verdicts)
    accepted_both = [v for v in verdicts if v.ours == "accept" and v.p4c == "accept"]
    same_outcome = sum((v.ours == "accept") == (v.p4c == "accept") for v in verdicts)
    same_info = sum(v.status == "agree" for v in accepted_both)
    return (
        f"{len(verdicts)} compilations: {counts['agree']} agree ({both_refuse} refused by both), "
        f"{counts['accept-reject']} accept/reject mismatches, {counts['p4info']} P4Info diffs, "
        f"{counts['error-line']} first errors on other lines; "
        f"warnings ({', '.join(WARNING_KINDS)}) differ for {warn}\n"
        f"accept/refuse agreement {same_outcome}/{len(verdicts)} ({_pct(same_outcome, len(verdicts))}); "
        f"P4Info identical {same_info}/{len(accepted_both)} of those both accept "
        f"({_pct(same_info, len(accepted_both))})"
    )


def warning_figures(verdicts: list[Verdict]) -> str:
    """p4c's warnings by kind over the programs both accept, and how many of them we print
    too (the same line: place, kind and wording)."""
    by_kind: dict[str, list[int]] = {}
    for v in verdicts:
        ours = set(v.p4c_warnings) - set(v.warnings_only_p4c)
        for w in v.p4c_warnings:
            counts = by_kind.setdefault(warning_kind(w), [0, 0])
            counts[0] += 1
            counts[1] += warning_kind(w) in WARNING_KINDS and w in ours
    parts = [f"{k} {n[1]}/{n[0]}" for k, n in sorted(by_kind.items())]
    return "p4c's warnings on programs both accept (ours/p4c's): " + (", ".join(parts) or "none")


def _pct(n: int, total: int) -> str:
    return f"{100.0 * n / total:.1f} %" if total else "n/a"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="print one JSON document instead")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="p4c processes at once (2)")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help="p4c result cache dir")
    ap.add_argument("--no-cache", action="store_true", help="always run p4c")
    ap.add_argument("--only", default="", help="only programs whose path contains this")
    which = ap.add_mutually_exclusive_group()
    which.add_argument(
        "--rules",
        action="store_true",
        help="the programs generated per spec rule instead of the repository's",
    )
    which.add_argument("--all", action="store_true", help="the repository's and the rules'")
    ap.add_argument(
        "--warnings",
        action="store_true",
        help="also count p4c's warnings by kind, and ours among them",
    )
    args = ap.parse_args(argv)
    if p4lang.find(P4C) is None:
        print(f"p4c_diff: {p4lang.missing_reason(P4C)}", file=sys.stderr)
        return 2
    base = [] if args.rules else discover()
    jobs = [
        j for j in base + (rule_jobs() if args.rules or args.all else []) if args.only in j.program
    ]

    def show(v: Verdict) -> None:
        if args.json:
            return
        print(f"{v.status:<13} {v.job.label}", flush=True)
        if v.detail:
            print(v.detail, flush=True)
        for w in v.warnings_only_p4c:
            print(f"    warning only from p4c: {w}", flush=True)
        for w in v.warnings_only_ours:
            print(f"    warning only from ours: {w}", flush=True)

    verdicts = run_all(
        jobs, workers=args.jobs, cache=None if args.no_cache else args.cache, progress=show
    )
    if args.json:
        doc = {
            "summary": summary(verdicts),
            "results": [
                {"program": v.job.program, "label": v.job.label, "flags": v.job.flags(),
                 "status": v.status, "ours": v.ours, "p4c": v.p4c, "detail": v.detail,
                 "warnings_only_p4c": v.warnings_only_p4c,
                 "warnings_only_ours": v.warnings_only_ours}
                for v in verdicts
            ],
        }  # fmt: skip
        print(json.dumps(doc, indent=1))
    else:
        print(summary(verdicts))
        if args.warnings:
            print(warning_figures(verdicts))
    return 0 if all(v.status == "agree" for v in verdicts) else 1


if __name__ == "__main__":
    sys.exit(main())

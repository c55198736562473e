"""Run the documentation's examples (tests/docs/docblocks.py) in a scratch directory.

The scratch directory holds a link to every top-level entry of the checkout (so
``.venv/bin/...``, ``p4src/`` and ``make build`` work as written) except ``build/``, which
an example makes itself: nothing an example writes lands in the checkout (``make_scratch``
says how ``.venv`` is kept out of make's reach). Shell blocks run
command by command, each in its own ``bash -c`` (shell variables do not carry from one line
to the next); a command ending in ``&`` is a background process, kept until its group ends
and waited for until it prints its ``ready`` line. Every process an example starts is
stopped (its whole process group) when the group ends, however it ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import re
import shlex
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

import docapi
from docblocks import Block, commands

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TIMEOUT = 30.0
READY = re.compile(r"\bready\b")
OPTION = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")
LOCK = Path(tempfile.gettempdir()) / "p4reduce-agg-port-48864.lock"
"""The examples use the documented fixed ports (48864, 9559, 9560): a group with background
processes holds the aggregation port pool's lock of 48864 (testbed/local.py) so that no
stack of a parallel test run takes it meanwhile."""


class DocError(AssertionError):
    """An example that did not run as written: where, what, and the output's tail."""


@dataclass
class Outcome:
    """What the suite's summary line counts."""

    ran: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # where -> reason


OUTCOME = Outcome()


def make_scratch(path: Path) -> Path:
    """Links to the checkout's entries; ``.venv`` is a directory of links to the real one's
    entries with a fresh ``.installed`` stamp of its own, so that ``make build`` (whose
    ``install`` step runs pip when the stamp is older than the sources) never installs from
    here: pip would rewrite the shared .venv's scripts to this directory's path."""
    path.mkdir(parents=True, exist_ok=True)
    for entry in ROOT.iterdir():
        if entry.name == "build" or entry.name.startswith("."):
            continue
        (path / entry.name).symlink_to(entry)
    venv = path / ".venv"
    venv.mkdir()
    for entry in (ROOT / ".venv").iterdir():
        if entry.name != ".installed":
            (venv / entry.name).symlink_to(entry)
    (venv / ".installed").touch()
    return path


def _tail(text: str, lines: int = 25) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


class Scratch:
    """One group's scratch directory and background processes."""

    def __init__(self, path: Path) -> None:
        self.path = make_scratch(path)
        self.env = dict(os.environ)
        self.env["PATH"] = f"{self.path / '.venv' / 'bin'}{os.pathsep}{self.env.get('PATH', '')}"
        self.env.pop("P4REDUCE_JOB_SECRET", None)
        self.background: list[tuple[subprocess.Popen[bytes], Path, str]] = []
        self.lock_fd: int | None = None

    def __enter__(self) -> Scratch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def hold_ports(self, timeout: float = 120.0) -> None:
        """Take the fixed ports' lock (waiting at most ``timeout``), once per group."""
        if self.lock_fd is not None:
            return
        fd = os.open(LOCK, os.O_RDONLY | os.O_CREAT, 0o666)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() > deadline:
                    os.close(fd)
                    raise DocError(
                        f"port 48864's lock ({LOCK}) still held after {timeout:.0f} s"
                    ) from None
                time.sleep(0.2)
        self.lock_fd = fd

    def run(self, where: str, cmd: str, timeout: float) -> str:
        """Run one command line to its end; its output (stdout and stderr)."""
        proc = subprocess.Popen(
            ["bash", "-c", cmd], cwd=self.path, env=self.env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            raw, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the whole group: children hold the pipe
            raw, _ = proc.communicate()
            raise DocError(
                f"{where}: `{cmd}` still running after {timeout:.0f} s\n{_tail(raw.decode())}"
            ) from None
        out = raw.decode(errors="replace")
        if proc.returncode != 0:
            raise DocError(
                f"{where}: `{cmd}` exited {proc.returncode}\n{_tail(out)}\n{self.background_logs()}"
            )
        return out

    def start(self, where: str, cmd: str, timeout: float) -> str:
        """Start a background command and wait for its ``ready`` line; its output so far."""
        self.hold_ports()
        log = self.path / f"background-{len(self.background)}.log"
        with open(log, "wb") as f:
            proc = subprocess.Popen(
                ["bash", "-c", cmd], cwd=self.path, env=self.env, stdin=subprocess.DEVNULL,
                stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.background.append((proc, log, cmd))
        deadline = time.monotonic() + timeout
        while True:
            out = log.read_text(errors="replace")
            if READY.search(out):
                return out
            if proc.poll() is not None:
                raise DocError(f"{where}: `{cmd}` exited {proc.returncode}\n{_tail(out)}")
            if time.monotonic() > deadline:
                raise DocError(
                    f"{where}: `{cmd}` printed no ready line within {timeout:.0f} s\n{_tail(out)}"
                )
            time.sleep(0.05)

    def python(self, where: str, text: str, timeout: float) -> str:
        script = self.path / f"doc_{where.replace('.', '_').replace(':', '_')}.py"
        script.write_text(text)
        return self.run(where, f"python {shlex.quote(script.name)}", timeout)

    def background_logs(self) -> str:
        return "\n".join(
            f"[background `{cmd}`]\n{_tail(log.read_text(errors='replace'), 10)}"
            for _, log, cmd in self.background
        )

    def close(self) -> None:
        """Stop every background process group (SIGTERM, then SIGKILL after 5 s)."""
        for proc, _, _ in reversed(self.background):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc, _, _ in reversed(self.background):
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        self.background.clear()
        if self.lock_fd is not None:
            os.close(self.lock_fd)
            self.lock_fd = None


def synopsis_programs(text: str) -> list[str]:
    """The ``--help`` command lines a synopsis block needs: one per program line (not
    indented) and one per subcommand line (indented, starting with a bare word)."""
    helps: list[str] = []
    program = ""
    for raw in text.splitlines():
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        words = raw.split()
        if not raw[0].isspace():
            if words[0] == "sudo":
                words = words[1:]
            if words[0] == "make":
                continue  # a make target passes ARGS on; its program has its own line
            python = Path(words[0]).name.startswith("python")
            head = words[:2] if python else [words[0]]
            if len(words) > len(head) and re.fullmatch(r"[a-z][\w-]*", words[len(head)]):
                head.append(words[len(head)])  # p4reduce check, p4reduce-ctl job ...
            program = " ".join(head)
            helps.append(program)
        elif program and re.fullmatch(r"[a-z][\w-]*", words[0]):
            sub = [w for w in words[:2] if re.fullmatch(r"[a-z][\w-]*", w)]
            helps.append(f"{program.split()[0]} {' '.join(sub)}")
    return [f"{h} --help" for h in helps]


def help_text(where: str, cmd: str, scratch: Scratch, timeout: float) -> str:
    """The output of ``PROG [SUB...] --help``: a console script of the package runs in this
    process (its ``main(argv)``: no interpreter start-up and imports per synopsis), anything
    else in the scratch directory."""
    words = cmd.split()
    name = words[0].removeprefix(".venv/bin/")
    found = entry_points(group="console_scripts", name=name)
    if not found:
        return scratch.run(where, cmd, timeout)
    main = next(iter(found)).load()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            status = main(words[1:])
        except SystemExit as exc:
            status = exc.code
    if status not in (0, None):
        raise DocError(f"{where}: `{cmd}` exited {status}\n{_tail(out.getvalue())}")
    return out.getvalue()


def check_synopsis(block: Block, scratch: Scratch, timeout: float) -> None:
    """Every --option of the synopsis is in its programs' --help."""
    text = block.text.replace("\\\n", "")
    helps = synopsis_programs(text)
    if not helps:
        raise DocError(f"{block.where}: a synopsis without a program line")
    out = "".join(help_text(block.where, h, scratch, timeout) for h in helps)
    known = set(OPTION.findall(out))
    missing = sorted(set(OPTION.findall(text)) - known)
    if missing:
        raise DocError(
            f"{block.where}: the synopsis names {', '.join(missing)}, which "
            f"`{'`, `'.join(helps)}` does not know"
        )


def _background(cmd: str) -> bool:
    return cmd.endswith("&") and not cmd.endswith("&&")


def run_block(block: Block, scratch: Scratch) -> str:
    """Run one example (its marker's setup, background, the block, its expectations)."""
    timeout = float(block.option("timeout", str(DEFAULT_TIMEOUT)) or DEFAULT_TIMEOUT)
    lines = [] if block.lang != "sh" or "synopsis" in block.options else commands(block.text)
    if "background" in block.options or any(_background(cmd) for cmd in lines):
        scratch.hold_ports()  # waiting for another stack to let go is not the example's time
    deadline = time.monotonic() + timeout

    def left() -> float:
        rest = deadline - time.monotonic()
        if rest <= 0:
            raise DocError(f"{block.where}: over its {timeout:.0f} s")
        return rest

    out = ""
    for cmd in block.options.get("setup", []):
        out += scratch.run(block.where, cmd, left())
    for cmd in block.options.get("background", []):
        out += scratch.start(block.where, cmd, left())
    if "synopsis" in block.options:
        check_synopsis(block, scratch, left())
    elif "api" in block.options:
        try:
            docapi.check(block.text, str(block.option("api")))
        except (LookupError, ImportError, ValueError, TypeError) as exc:
            raise DocError(f"{block.where}: {exc}") from None
    elif "file" in block.options:
        (scratch.path / str(block.option("file"))).write_text(block.text)
    elif block.lang == "python":
        out += scratch.python(block.where, block.text, left())
    else:
        for cmd in lines:
            if _background(cmd):
                out += scratch.start(block.where, cmd[:-1].rstrip(), left())
            else:
                out += scratch.run(block.where, cmd, left())
    for pattern in block.options.get("expect", []):
        if not re.search(pattern, out, re.MULTILINE):
            raise DocError(f"{block.where}: no match for {pattern!r} in the output\n{_tail(out)}")
    return out

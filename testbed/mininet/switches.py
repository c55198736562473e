"""The two P4 switches the Mininet testbed can put in the middle, and how to build and start
each: the embedded ``p4reduce-switch`` (default) and BMv2's ``simple_switch_grpc``.

Both take the switch-side veths as raw ports (``-i N@p4r-ethN``) and serve P4Runtime on
127.0.0.1, where the controller (``p4reduce-ctl``) pushes the pipeline: the same controller
commands drive both (docs/controller.md, "simple_switch_grpc").

- ``embedded``: the program is compiled with ``p4reduce-p4c`` (our JSON IR) and loaded at
  start; the process prints a ``ready`` line with its P4Runtime address. Its engine
  (``--engine native|python``) is passed only where ``p4reduce-switch --help`` offers the
  option, so the testbed runs on builds from before the native engine too (the Python
  interpreter, named ``python`` in the tables).
- ``bmv2``: needs ``simple_switch_grpc`` and ``p4c`` (BMv2 loads only p4c's JSON), found by
  ``p4reduce.p4lang`` (/opt/p4lang, ``$P4LANG_ROOT`` or PATH); it starts with ``--no-p4``
  and ``--cpu-port`` (the programs' CPU port, for the controller's PacketOut/PacketIn)
  and gets the pipeline from ``p4reduce-ctl push``. It prints no ready line, so readiness
  is its gRPC port accepting connections. Nothing here pretends BMv2 is present: when a
  binary is missing, ``check`` names it.
"""

from __future__ import annotations

import functools
import re
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ... import contracts, netaddr, p4lang
from ...free_port import free_port
from ..local import StackError, command, find_p4src

KINDS = ("embedded", "bmv2")
K_CHOICES = contracts.K_CHOICES  # what the command line accepts; supported_ks() what p4src/ builds


def supported_ks() -> tuple[int, ...]:
    """The K values this checkout's programs compile for, from the guard in
    ``p4src/include/constants.p4`` (``#if K != 64 && K != 256 ...``), so the testbed runs
    on a checkout from before K = 1024 too."""
    try:
        text = (find_p4src() / "include" / "constants.p4").read_text()
    except (StackError, OSError):
        return (64,)
    m = re.search(r"#if\s+(K\s*!=\s*\d+(?:\s*&&\s*K\s*!=\s*\d+)*)", text)
    if m is None:
        return (64,)
    return tuple(sorted(int(v) for v in re.findall(r"\d+", m[1])))


LEGACY_CPU_PORT = 255  # what the programs used before they defined CPU_PORT_NUMBER


def cpu_port() -> int:
    """The CPU port the programs are built with (``CPU_PORT_NUMBER`` in
    ``p4src/include/constants.p4``), which ``simple_switch_grpc --cpu-port`` must name so
    that P4Runtime PacketOut enters the pipeline there."""
    try:
        text = (find_p4src() / "include" / "constants.p4").read_text()
    except (StackError, OSError):
        return LEGACY_CPU_PORT
    m = re.search(r"#define\s+CPU_PORT_NUMBER\s+(\d+)", text)
    return int(m[1]) if m else LEGACY_CPU_PORT


def accepts(addr: str) -> bool:
    try:
        with socket.create_connection(netaddr.split(addr), timeout=0.5):
            return True
    except OSError:
        return False


ENGINES = ("native", "python")


@functools.cache
def switch_engines() -> tuple[str, ...]:
    """The engines this checkout's ``p4reduce-switch`` offers (``--engine``); () when it
    has no such option (a build from before the native engine: the Python interpreter)."""
    try:
        done = subprocess.run(
            [command("p4reduce-switch"), "--help"], capture_output=True, text=True, timeout=60
        )
    except (StackError, OSError, subprocess.TimeoutExpired):
        return ()
    return tuple(e for e in ENGINES if "--engine" in done.stdout and e in done.stdout)


@dataclass(frozen=True)
class SwitchKind:
    name: str
    engine: str | None = None  # embedded: --engine (None: the switch's default, if any)

    @property
    def label(self) -> str:
        """The switch as the tables name it: ``embedded (native)``, ``bmv2``."""
        if self.name != "embedded":
            return self.name
        return f"embedded ({self.engine or 'python'})"

    def check(self) -> None:
        """StackError (one line) when this switch cannot run here."""
        if self.name == "embedded":
            command("p4reduce-switch")
            command("p4reduce-p4c")
            if self.engine is not None and self.engine not in switch_engines():
                have = ", ".join(switch_engines()) or "no --engine option"
                raise StackError(f"--engine {self.engine}: this p4reduce-switch offers {have}")
            return
        why = p4lang.missing_reason("simple_switch_grpc", "p4c")
        if why:
            raise StackError(f"--switch bmv2: {why}")

    def compile(self, program: str, k: int, out: Path) -> Path:
        """Compile p4src/PROGRAM.p4 into ``out``; the build prefix ``p4reduce-ctl push``
        takes (``out/PROGRAM`` for ``PROGRAM.json`` and ``PROGRAM.p4info.txtpb``)."""
        src = find_p4src()
        out.mkdir(parents=True, exist_ok=True)
        defines = [f"-DK={k}"] if k != 64 else []
        p4info = str(out / f"{program}.p4info.txtpb")
        if self.name == "embedded":
            args = [command("p4reduce-p4c"), "-I", str(src / "include"), *defines, "-o",
                    str(out), "--p4runtime-files", p4info]  # fmt: skip
        else:
            args = [p4lang.find("p4c") or "p4c", "--target", "bmv2", "--arch", "v1model", "-I", str(src / "include"),
                    *defines, "-o", str(out), "--p4runtime-files", p4info]  # fmt: skip
        args.append(str(src / f"{program}.p4"))
        # p4c runs its backend (p4c-bm2-ss) from its own prefix: the p4lang environment
        done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=p4lang.env())
        if done.returncode != 0:
            msg = (done.stderr.strip().splitlines() or ["no output"])[0]
            raise StackError(f"compiling {program}.p4 for the {self.name} switch failed: {msg}")
        return out / program

    def argv(self, prefix: Path, intfs: list[str], grpc_addr: str) -> list[str]:
        """The switch's command line: port i + 1 is ``intfs[i]``."""
        ports = [a for i, intf in enumerate(intfs, start=1) for a in ("-i", f"{i}@{intf}")]
        if self.name == "embedded":
            engine = ["--engine", self.engine] if self.engine else []
            return [command("p4reduce-switch"), str(prefix.with_suffix(".json")), *ports,
                    "--grpc-server-addr", grpc_addr, "--log-level", "warn", *engine]  # fmt: skip
        return [p4lang.find("simple_switch_grpc") or "simple_switch_grpc", "--device-id", "1",
                *ports, "--no-p4", "--", "--grpc-server-addr", grpc_addr, "--cpu-port",
                str(cpu_port())]  # fmt: skip

    def grpc_addr(self) -> str:
        """What to pass as ``--grpc-server-addr``: the embedded switch picks a free port
        itself and reports it; simple_switch_grpc needs a concrete one."""
        return "127.0.0.1:0" if self.name == "embedded" else f"127.0.0.1:{free_port('tcp')}"


def kind(name: str, engine: str | None = None) -> SwitchKind:
    """The switch ``name``; for ``embedded``, ``engine`` None picks the native engine where
    ``p4reduce-switch`` has one, else its only (Python) engine."""
    if name not in KINDS:
        raise StackError(f"switch {name!r}: one of {', '.join(KINDS)}")
    if name != "embedded":
        return SwitchKind(name)
    if engine is None:
        engines = switch_engines()
        engine = "native" if "native" in engines else ("python" if engines else None)
    return SwitchKind(name, engine)

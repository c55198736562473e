"""The two P4 switches the Mininet testbed can put in the middle, and how to build and start
each: the embedded ``p4reduce-switch`` (default) and BMv2's ``simple_switch_grpc``.

Both take the switch-side veths as raw ports (``-i N@p4r-ethN``) and serve P4Runtime on
127.0.0.1, where the controller (``p4reduce-ctl``) pushes the pipeline: the same controller
commands drive both (docs/controller.md, "simple_switch_grpc").

- ``embedded``: the program is compiled with ``p4reduce-p4c`` (our JSON IR) and loaded at
  start; the process prints a ``ready`` line with its P4Runtime address.
- ``bmv2``: needs ``simple_switch_grpc`` and ``p4c`` on PATH (BMv2 loads only p4c's JSON);
  it starts with ``--no-p4`` and gets the pipeline from ``p4reduce-ctl push``. It prints
  no ready line, so readiness is its gRPC port accepting connections. Nothing here
  pretends BMv2 is present: when a binary is missing, ``check`` names it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

from ...free_port import free_port
from ..local import StackError, command, find_p4src

KINDS = ("embedded", "bmv2")


def accepts(addr: str) -> bool:
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class SwitchKind:
    name: str

    def check(self) -> None:
        """StackError (one line) when this switch cannot run here."""
        if self.name == "embedded":
            command("p4reduce-switch")
            command("p4reduce-p4c")
            return
        missing = [b for b in ("simple_switch_grpc", "p4c") if shutil.which(b) is None]
        if missing:
            raise StackError(
                f"--switch bmv2 needs {' and '.join(missing)} on PATH, and "
                f"{'they are' if len(missing) > 1 else 'it is'} not installed here "
                "(use --switch embedded)"
            )

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
            args = ["p4c", "--target", "bmv2", "--arch", "v1model", "-I", str(src / "include"),
                    *defines, "-o", str(out), "--p4runtime-files", p4info]  # fmt: skip
        args.append(str(src / f"{program}.p4"))
        done = subprocess.run(args, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            msg = (done.stderr.strip().splitlines() or ["no output"])[0]
            raise StackError(f"compiling {program}.p4 for the {self.name} switch failed: {msg}")
        return out / program

    def argv(self, prefix: Path, intfs: list[str], grpc_addr: str) -> list[str]:
        """The switch's command line: port i + 1 is ``intfs[i]``."""
        ports = [a for i, intf in enumerate(intfs, start=1) for a in ("-i", f"{i}@{intf}")]
        if self.name == "embedded":
            return [command("p4reduce-switch"), str(prefix.with_suffix(".json")), *ports,
                    "--grpc-server-addr", grpc_addr, "--log-level", "warn"]  # fmt: skip
        return ["simple_switch_grpc", "--device-id", "1", *ports, "--no-p4", "--",
                "--grpc-server-addr", grpc_addr, "--cpu-port", "255"]  # fmt: skip

    def grpc_addr(self) -> str:
        """What to pass as ``--grpc-server-addr``: the embedded switch picks a free port
        itself and reports it; simple_switch_grpc needs a concrete one."""
        return "127.0.0.1:0" if self.name == "embedded" else f"127.0.0.1:{free_port('tcp')}"


def kind(name: str) -> SwitchKind:
    if name not in KINDS:
        raise StackError(f"switch {name!r}: one of {', '.join(KINDS)}")
    return SwitchKind(name)

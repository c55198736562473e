"""Run one STF file on BMv2 ``simple_switch`` through p4c's own STF runner, extended.

Usage (with the Python that runs p4c's runner, the one next to ``p4c-bmv2-stf``)::

    python3 bmv2_stf.py STF_ROOT BUILD_DIR PROGRAM.p4 TEST.stf WORK_DIR

STF_ROOT holds p4c's ``backends/bmv2/run-bmv2-test.py``, ``bmv2stf.py`` and ``tools/``
(``/opt/p4lang/share/p4c/stf``); BUILD_DIR holds ``p4c-bm2-ss`` and ``config.h``. Exit
status 0 when every expect matched, as run-bmv2-test.py's.

This script runs run-bmv2-test.py itself (compile with p4c-bm2-ss, start simple_switch on
pcap files, compare the output pcaps), with a subclass of its ``RunBMV2`` that changes four
things, each a way the unmodified runner loses or misreads a test (issue 32):

- **Our action-profile commands** (docs/stf.md): p4c's STF has no syntax for action
  profiles and selectors, and its parser rejects unknown words. Lines starting with
  ``act_prof_*`` go to simple_switch_CLI unchanged; ``table_indirect_add[_with_group]``
  get their ``KEY:VALUE`` keys rewritten as the runner rewrites ``add`` keys (ternary masks,
  ``*``-nibble prefixes, BMv2's reversed priority).
- **Control-plane commands finish before the first packet.** The runner writes them into
  a CLI process and sends packets one second later; on a loaded machine the CLI has not
  connected yet (a mirroring session or a table entry added after the packet it was meant
  for). Here they run through simple_switch_CLI to completion first, and its output (errors
  included) is printed. The runner's own CLI process, left without commands, is ``true``
  instead of a second simple_switch_CLI that would load the switch's JSON for nothing.
- **The thrift port is leased.** The runner picks ``9090 + random(0..1000)`` under lock
  directories in its working directory, so two runs in different directories can pick the
  same port. Here the number comes from a lock file shared by every run on the machine
  (``$P4REDUCE_BMV2_LOCKS``, default ``<tmp>/p4reduce-bmv2-ports``), held with flock so a
  crashed run leaves nothing behind, and the port must be free.
- **Waiting for the output.** The runner gives the switch a fixed 2 s after the last
  packet. Here it waits until simple_switch has logged the arrival of every packet it was
  sent and the sending of as many packets per port as the test expects, and its log has
  then been quiet for half a second (at most 30 s, and no longer once its thrift port is
  closed: it died), then stops it as the runner does.

This file imports nothing from p4reduce: it runs in p4c's Python environment.
"""

from __future__ import annotations

import fcntl
import importlib.util
import os
import random
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

# Our extension commands (docs/stf.md): simple_switch_CLI's, passed through unchanged.
PROFILE_COMMANDS = {
    "act_prof_create_member",
    "act_prof_modify_member",
    "act_prof_delete_member",
    "act_prof_create_group",
    "act_prof_delete_group",
    "act_prof_add_member_to_group",
    "act_prof_remove_member_from_group",
}
# ... and the entries pointing to a member or a group, whose keys are rewritten.
INDIRECT_ADD = {"table_indirect_add", "table_indirect_add_with_group"}
PORT_RANGE = 1000  # thrift port 9090 + n, device id n (as bmv2stf.ConcurrentInteger)
# Left to what other tools start with their defaults: thrift 9090.., P4Runtime 9559.
AVOIDED_PORTS = {*range(9090, 9100), 9559}
QUIET_S = 0.5  # the switch log must be this long unchanged after the last packet
OUTPUT_TIMEOUT_S = 30.0
CLI_TIMEOUT_S = 60.0
# simple_switch's log line for each packet it transmits (with --dump-packet-data)
SENT = re.compile(r"Sending packet of length \d+ on port (\d+)")


class PortLease:
    """Stands in for bmv2stf.ConcurrentInteger (same interface): a number n whose thrift
    port 9090 + n is free, held with an flock on a file shared by every run."""

    last: int | None = None

    def __init__(self, folder: str, maximum: int) -> None:
        self.maximum = min(maximum, PORT_RANGE)
        default = Path(tempfile.gettempdir()) / "p4reduce-bmv2-ports"
        self.dir = Path(os.environ.get("P4REDUCE_BMV2_LOCKS", default))
        self.fds: dict[int, int] = {}

    def generate(self) -> int | None:
        self.dir.mkdir(parents=True, exist_ok=True)
        for n in random.sample(range(self.maximum), self.maximum):
            if 9090 + n in AVOIDED_PORTS:
                continue
            fd = os.open(self.dir / f"{n}.lock", os.O_CREAT | os.O_RDWR, 0o666)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                os.close(fd)
                continue
            if _port_free(9090 + n):
                self.fds[n] = fd
                PortLease.last = n
                return n
            os.close(fd)
        return None

    def release(self, value: int) -> None:
        fd = self.fds.pop(value, None)
        if fd is not None:
            os.close(fd)  # closing drops the flock


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("0.0.0.0", port))  # simple_switch's thrift server binds every address
        except OSError:
            return False
    return True


class Clock:
    """Stands in for the ``time`` module inside bmv2stf: every sleep is real except the
    fixed 2 s wait for the output, which becomes ``runner.wait_for_output()``."""

    def __init__(self, runner_ref: list[Any]) -> None:
        self.runner_ref = runner_ref

    @staticmethod
    def time() -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        if seconds == 2 and self.runner_ref:
            self.runner_ref[0].wait_for_output()
        else:
            time.sleep(seconds)


def extend(bmv2stf: Any) -> type:
    """The RunBMV2 subclass (built here: bmv2stf is importable only once sys.path is set)."""

    class ExtendedRunBMV2(bmv2stf.RunBMV2):  # type: ignore[misc, name-defined]
        instances: list[Any] = []

        def __init__(self, folder: Path, options: Any, jsonfile: Path) -> None:
            super().__init__(folder, options, jsonfile)
            self.pending: list[str] = []
            self.packets_sent = 0
            ExtendedRunBMV2.instances[:] = [self]

        # ------------------------------------------------------------ parsing
        def parse_stf_file(self, testfile: Path) -> tuple[list[Any], int]:
            """p4c's parser on the standard lines; our extension lines kept in place as
            ("ext", words) entries. Each run of standard lines is parsed with the lines
            before it blanked, so the parser's line numbers stay the file's."""
            lines = testfile.read_text().splitlines()
            parser = bmv2stf.Bmv2StfParser()
            out: list[Any] = []
            errors = 0
            chunk: list[str] = []
            start = 0

            def flush() -> None:
                nonlocal errors
                if any(s.split("#", 1)[0].strip() for s in chunk):
                    ast, errors = parser.parse("\n" * start + "\n".join(chunk) + "\n")
                    out.extend(ast or [])

            for number, line in enumerate(lines):
                words = line.split("#", 1)[0].split()
                if words and words[0].lower() in PROFILE_COMMANDS | INDIRECT_ADD:
                    flush()
                    chunk, start = [], number + 1
                    out.append(("ext", words))
                else:
                    chunk.append(line)
            flush()
            return out, errors

        # ------------------------------------------------------------ commands
        def do_cli_command(self, cmd: str) -> None:
            self.pending.append(cmd)  # run to completion before the next packet

        def execute_stf_command(self, stf_entry: Any) -> Any:
            cmd = stf_entry[0] if stf_entry else ""
            if cmd == "flush":
                self.flush_cli()
                return None
            if cmd == "ext":
                self.do_cli_command(self.extension_command(stf_entry[1]))
                return None
            if cmd == "packet":
                self.flush_cli()
                self.packets_sent += 1
            return super().execute_stf_command(stf_entry)

        def extension_command(self, words: list[str]) -> str:
            name = words[0].lower()
            if name in PROFILE_COMMANDS:
                return " ".join([name, *words[1:]])
            # table_indirect_add[_with_group] TABLE [PRIO] KEY:VALUE... => HANDLE
            if "=>" not in words or words.index("=>") != len(words) - 2:
                raise ValueError(f"{' '.join(words)}: expected '... => HANDLE'")
            table = self.tableByName(words[1])
            rest = words[2 : words.index("=>")]
            prio = rest.pop(0) if rest and ":" not in rest[0] else None
            key = table.makeKeyInstance()
            for word in rest:
                field, _, value = word.partition(":")
                key.set(field, value)
            command = f"{name} {table.name} {key} => {words[-1]}"
            if table.match_type in ("ternary", "range") or prio is not None:
                # the runner's rule for add: BMv2 ranks a lower number first, STF a higher
                command += f" {10000 - int(prio or 0)}"
            return command

        def flush_cli(self) -> None:
            if not self.pending:
                return
            cli = shutil.which("simple_switch_CLI") or "simple_switch_CLI"
            port = 9090 + (PortLease.last or 0)
            text = "\n".join(self.pending) + "\n"
            self.pending = []
            r = subprocess.run(
                [cli, "--thrift-port", str(port)],
                input=text,
                capture_output=True,
                text=True,
                timeout=CLI_TIMEOUT_S,
                cwd=self.folder,
            )
            print(f"simple_switch_CLI (exit {r.returncode}):\n{text}{r.stdout}{r.stderr}")

        # ------------------------------------------------------------ output
        def run(self, stf_map: list[Any]) -> int:
            # control-plane lines after the last packet (or a file without packets)
            return super().run([*stf_map, ("flush",)])

        def wait_for_output(self) -> None:
            """Until the switch has logged the arrival of every packet sent and the sending
            of every packet expected, and then been quiet (which lets unexpected extra
            packets show). Its log is flushed line by line (--log-flush)."""
            log = self.folder / "switch.log.txt"
            want = {
                port: len(e.get("pkts", [])) or int(e.get("any", False))
                for port, e in self.expected.items()
            }
            deadline = time.monotonic() + OUTPUT_TIMEOUT_S
            size, since = -1, time.monotonic()
            while time.monotonic() < deadline:
                if _port_free(9090 + (PortLease.last or 0)):
                    return  # simple_switch is gone (it crashed): nothing more will come
                text = log.read_text(errors="replace") if log.exists() else ""
                now = time.monotonic()
                if len(text) != size:
                    size, since = len(text), now
                elif now - since >= QUIET_S and self.all_seen(text, want):
                    return
                time.sleep(0.05)
            print(f"warning: simple_switch still busy after {OUTPUT_TIMEOUT_S:.0f} s")

        def all_seen(self, log: str, want: dict[int, int]) -> bool:
            if log.count("Processing packet received on port") < self.packets_sent:
                return False
            sent = Counter(int(p) for p in SENT.findall(log))
            return all(sent[port] >= n for port, n in want.items())

    return ExtendedRunBMV2


def main(argv: list[str]) -> int:
    if len(argv) != 5:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    stf_root, build, p4, stf, work = argv
    script = Path(stf_root) / "backends" / "bmv2" / "run-bmv2-test.py"
    # run-bmv2-test.py parses sys.argv when it is loaded
    sys.argv = [str(script), stf_root, p4, "-tf", stf, "-td", work, "-bd", build]
    sys.path.insert(0, str(script.parent))  # where it finds bmv2stf.py, as its own sys.path[0]
    spec = importlib.util.spec_from_file_location("run_bmv2_test", script)
    assert spec is not None and spec.loader is not None
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    bmv2stf = sys.modules["bmv2stf"]
    bmv2stf.ConcurrentInteger = PortLease
    find_exe = bmv2stf.FindExe
    idle = shutil.which("true") or "/bin/true"
    bmv2stf.FindExe = lambda d, exe: idle if exe == "simple_switch_CLI" else find_exe(d, exe)
    cls = extend(bmv2stf)
    bmv2stf.time = Clock(cls.instances)
    runner.RunBMV2 = cls
    options = runner.create_options(runner.ARGS)
    if not options:
        return 1
    return int(runner.run_test(options))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

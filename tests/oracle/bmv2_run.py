"""Drive the real BMv2 ``simple_switch`` for one oracle case: compile, configure, send, read.

How (as p4c's STF runner does it, bmv2stf.py, but recording instead of expecting):

- the program is compiled once with ``p4c-bm2-ss``; the JSON is cached by the SHA-256 of the
  preprocessed source and the compiler's version (``cached_json``);
- each port is a pair of pcap files (``--use-files 0``): ``N_in.pcap`` is a FIFO we write,
  ``N_out.pcap`` the file BMv2 writes. BMv2 opens the FIFOs at start-up and blocks reading
  the first packet of each, so nothing is processed before we have configured the switch
  through ``simple_switch_CLI`` (one interactive session, one command at a time, each
  command's reply read up to the next prompt so that a refused command is seen);
- BMv2's pcap reader merges the input files by timestamp and replays them with their
  timing, so packets spaced ``SPACING_US`` apart enter the pipeline one at a time, in the
  case's order, as our run-to-completion engines see them;
- the run is over when every input packet has been logged as received and the log has been
  quiet for ``QUIET_S`` (the debug log records every step of every packet instance, drops
  included); then registers and counters are read through the same CLI session.
"""

from __future__ import annotations

import hashlib
import os
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from p4reduce import p4lang
from p4reduce.free_port import free_port

SPACING_US = 8000  # between two input packets: far longer than one packet's processing
QUIET_S = 0.15  # the log unchanged this long after the last input: the switch is idle
START_TIMEOUT_S = 60.0  # a 5 MB JSON (dense.p4 at K = 1024) loads in a few seconds
RUN_TIMEOUT_S = 60.0
PROMPT = b"RuntimeCmd: "
RECEIVED = re.compile(rb"Processing packet received on port")


class Bmv2Error(Exception):
    """BMv2 or p4c failed in a way that says nothing about the program (one line)."""


def cache_dir() -> Path:
    env = os.environ.get("P4REDUCE_BMV2_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "p4reduce" / "bmv2"


def _compile_args(program: Path, includes: list[Path], defines: dict[str, str]) -> list[str]:
    args = [str(p4lang.find("p4c-bm2-ss"))]
    for d in includes:
        args += ["-I", str(d)]
    for k, v in sorted(defines.items()):
        args.append(f"-D{k}={v}")
    return args + [str(program)]


def cached_json(program: Path, includes: list[Path], defines: dict[str, str]) -> Path:
    """The BMv2 JSON of ``program`` (compiling it on a cache miss)."""
    base = _compile_args(program, includes, defines)
    env = p4lang.env()
    pre = subprocess.run(base[:1] + ["-E"] + base[1:], capture_output=True, env=env, timeout=120)
    if not pre.stdout:  # p4c-bm2-ss -E exits 1 even when it printed the program
        raise Bmv2Error(f"p4c-bm2-ss -E {program}: {_first_error(pre.stderr)}")
    version = subprocess.run(base[:1] + ["--version"], capture_output=True, env=env, timeout=60)
    key = hashlib.sha256(version.stdout + b"\0" + pre.stdout).hexdigest()[:32]
    out = cache_dir() / f"{program.stem}_{key}.json"
    if out.exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        tmp_json = Path(tmp) / "out.json"
        done = subprocess.run(
            base + ["-o", str(tmp_json)], capture_output=True, env=env, timeout=900
        )
        if done.returncode != 0 or not tmp_json.exists():
            raise Bmv2Error(f"p4c-bm2-ss {program}: {_first_error(done.stderr)}")
        os.replace(tmp_json, out)  # atomic: a concurrent run never reads half a file
    return out


def _first_error(stderr: bytes) -> str:
    lines = stderr.decode(errors="replace").strip().splitlines()
    errors = [line.strip() for line in lines if "error" in line.lower()]
    return (errors or lines or ["failed"])[0]


def pcap_global_header() -> bytes:
    return struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)  # LINKTYPE_ETHERNET


def pcap_record(ts_us: int, data: bytes) -> bytes:
    return struct.pack("<IIII", ts_us // 1_000_000, ts_us % 1_000_000, len(data), len(data)) + data


def read_pcap(path: Path) -> list[bytes]:
    raw = path.read_bytes() if path.exists() else b""
    if len(raw) < 24:
        return []
    magic = struct.unpack("<I", raw[:4])[0]
    endian = "<" if magic in (0xA1B2C3D4, 0xA1B23C4D) else ">"
    out, pos = [], 24
    while pos + 16 <= len(raw):
        _s, _u, caplen, _len = struct.unpack(endian + "IIII", raw[pos : pos + 16])
        out.append(raw[pos + 16 : pos + 16 + caplen])
        pos += 16 + caplen
    return out


@dataclass
class Bmv2Result:
    outputs: dict[int, list[bytes]]
    replies: list[str]  # one per control command, as the CLI printed it
    registers: dict[str, list[int]] = field(default_factory=dict)  # per cell read
    counters: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # per cell read
    died: str | None = None  # the switch exited during the run (an assert, say)


class _Cli:
    """One interactive simple_switch_CLI session: a command in, its reply out."""

    def __init__(self, thrift_port: int) -> None:
        env = p4lang.env()
        env["PYTHONUNBUFFERED"] = "1"  # its prompt must reach the pipe at once
        self.proc = subprocess.Popen(
            [str(p4lang.find("simple_switch_CLI")), "--thrift-port", str(thrift_port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        self.buf = b""
        self._until_prompt(START_TIMEOUT_S)

    def _until_prompt(self, timeout: float) -> str:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while PROMPT not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise Bmv2Error("simple_switch_CLI did not answer in time")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise Bmv2Error(
                        "simple_switch_CLI exited: " + self.buf.decode(errors="replace")[-300:]
                    )
                self.buf += chunk
        reply, _, self.buf = self.buf.partition(PROMPT)
        return reply.decode(errors="replace").strip()

    def command(self, line: str, timeout: float = 60.0) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        return self._until_prompt(timeout)

    def batch(self, lines: list[str], timeout: float = 120.0) -> list[str]:
        """Many commands at once (thousands of counter cells): written from a thread, since
        the CLI's replies could fill its stdout pipe while we are still writing."""
        assert self.proc.stdin is not None
        stdin = self.proc.stdin
        blob = "".join(line + "\n" for line in lines).encode()

        def write() -> None:
            try:
                stdin.write(blob)
                stdin.flush()
            except OSError:
                pass  # the CLI died: the reads below say so

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        replies = [self._until_prompt(timeout) for _ in lines]
        writer.join(timeout=timeout)
        return replies

    def close(self) -> None:
        _stop(self.proc)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _open_fifo(path: Path, proc: subprocess.Popen[bytes], deadline: float) -> int:
    """Open a FIFO for writing once the switch has opened it for reading (non-blocking
    attempts: a switch that died must not leave us blocked in open())."""
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise Bmv2Error(f"simple_switch never opened {path.name}") from None
            time.sleep(0.002)
            continue
        os.set_blocking(fd, True)
        return fd


def _wait_thrift(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise Bmv2Error(f"simple_switch exited at start-up (status {proc.returncode})")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.01)
    raise Bmv2Error("simple_switch's Thrift server did not start in time")


def parse_register(reply: str) -> list[int]:
    _, _, values = reply.rpartition("= ")
    return [int(v) for v in values.replace(",", " ").split()] if values.strip() else []


COUNTER = re.compile(r"\((\d+) bytes, (\d+) packets\)")


def run_bmv2(
    json_path: Path,
    ports: list[int],
    commands: list[str],
    packets: list[tuple[int, bytes]],
    registers: dict[str, list[int] | None],
    counters: dict[str, list[int]],
) -> Bmv2Result:
    """Run one case: ``commands`` (CLI lines), then ``packets``; read the ``registers``
    (name -> cell indices, None for the whole array) and ``counters`` cells afterwards;
    outputs per port of ``ports``."""
    work = Path(tempfile.mkdtemp(prefix="p4r-bmv2-"))
    sw: subprocess.Popen[bytes] | None = None
    cli: _Cli | None = None
    fds: dict[int, int] = {}
    try:
        for p in ports:
            os.mkfifo(work / f"{p}_in.pcap")
        thrift = free_port("tcp")
        args = [str(p4lang.find("simple_switch")), "--use-files", "0"]
        args += ["--thrift-port", str(thrift), "--device-id", "0"]
        args += ["--notifications-addr", f"ipc://{work}/notify.ipc"]
        args += ["--log-file", str(work / "switch"), "--log-flush", "-L", "debug"]
        for p in ports:
            args += ["-i", f"{p}@{work}/{p}"]
        args.append(str(json_path))
        sw = subprocess.Popen(
            args, cwd=work, stdout=subprocess.DEVNULL, stderr=open(work / "stderr", "wb")
        )
        deadline = time.monotonic() + START_TIMEOUT_S
        for p in sorted(ports):  # the order BMv2 opens them in (it blocks on each)
            fds[p] = _open_fifo(work / f"{p}_in.pcap", sw, deadline)
            os.write(fds[p], pcap_global_header())
        _wait_thrift(thrift, sw, deadline)
        cli = _Cli(thrift)
        replies = cli.batch(commands)
        _send(fds, packets)
        fds = {}
        died = _wait_idle(work / "switch.txt", sw, len(packets))
        result = Bmv2Result({}, replies, died=died)
        if died is None:
            for r, which in registers.items():
                if which is None:
                    result.registers[r] = parse_register(cli.command(f"register_read {r}"))
                else:
                    replies = cli.batch([f"register_read {r} {i}" for i in which])
                    result.registers[r] = [(parse_register(v) or [-1])[0] for v in replies]
            for c, cells in counters.items():
                replies = cli.batch([f"counter_read {c} {i}" for i in cells])
                vals = []
                for reply in replies:
                    m = COUNTER.search(reply)
                    vals.append((int(m.group(2)), int(m.group(1))) if m else (-1, -1))
                result.counters[c] = vals
        cli.close()
        _stop(sw)
        result.outputs = {p: read_pcap(work / f"{p}_out.pcap") for p in ports}
        return result
    finally:
        for fd in fds.values():
            os.close(fd)
        if cli is not None:
            cli.close()
        if sw is not None:
            _stop(sw)
        shutil.rmtree(work, ignore_errors=True)


def _send(fds: dict[int, int], packets: list[tuple[int, bytes]]) -> None:
    """Write every port's packets from its own thread (BMv2 reads the heads of all files
    before it replays any, so one blocked FIFO must not stall the others), then close."""
    per_port: dict[int, bytearray] = {p: bytearray() for p in fds}
    for i, (port, data) in enumerate(packets):
        per_port[port] += pcap_record(1_000_000 + i * SPACING_US, data)

    def write(fd: int, blob: bytes) -> None:
        try:
            _write_all(fd, blob)
        finally:
            os.close(fd)

    threads = [
        threading.Thread(target=write, args=(fd, bytes(per_port[p]))) for p, fd in fds.items()
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=RUN_TIMEOUT_S)


def _write_all(fd: int, blob: bytes) -> None:
    view = memoryview(blob)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _wait_idle(log: Path, sw: subprocess.Popen[bytes], n_packets: int) -> str | None:
    """Wait until every input was received and the log has been quiet for QUIET_S."""
    deadline = time.monotonic() + RUN_TIMEOUT_S + n_packets * SPACING_US / 1e6
    size, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        if sw.poll() is not None:
            return f"simple_switch exited with status {sw.returncode} during the run"
        now = time.monotonic()
        cur = log.stat().st_size if log.exists() else 0
        if cur != size:
            size, since = cur, now
        elif now - since >= QUIET_S:
            text = log.read_bytes() if log.exists() else b""
            if len(RECEIVED.findall(text)) >= n_packets:
                return None
        time.sleep(0.01)
    raise Bmv2Error(f"simple_switch did not finish the case within {RUN_TIMEOUT_S:.0f} s")

"""BMv2 side by side: the embedded switch's native engine next to BMv2 on the same program,
the same ports and the same load (docs/results.md, "BMv2 side by side").

Every switch gets its own set of veth pairs (one per worker); the load generator (the C
client of bench/c/reflector.c, here on AF_PACKET sockets) sends whole Ethernet frames into
the far ends, one worker per interface, with one window of rounds in flight per worker, and
counts the frames that come back. All switches run at once, each on its own veths (an idle
one waits in poll), so the repeats interleave them and drift in this machine's load falls on
all alike. Rows:

- ``floor``: ``reflector rawserve`` (C, recvmmsg/sendmmsg on the switch-side veths, no P4):
  every N-th frame out of all N interfaces (aggregation) or each frame back out of its own
  (forwarding). The baseline every ratio is taken to.
- ``p4reduce native``: ``p4reduce-switch --engine native -i N@veth``, configured over
  P4Runtime.
- ``BMv2 perf``: ``simple_switch_perf`` (BMv2's speed build: no logging, no P4Runtime), and
  ``BMv2 default``: ``simple_switch`` (the default build, started with ``--log-level off``),
  each configured with simple_switch_CLI over thrift.

Both kinds of switch get the same entries: the controller's own builders (static_config and
jobs.install) write into a recorder, the recorded updates go to p4reduce-switch over
P4Runtime and, through bench/bmv2_cli.py, to BMv2 as CLI commands. The programs are
p4src/dense.p4 (with -DK) and tests/process/fwd.p4, compiled by p4reduce-p4c and by p4c
(cached by content hash). Needs root (veths, raw sockets) and a C compiler; without BMv2
its rows are left out with one line saying why.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import select
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bmv2_cli
import floor
from p4reduce.controller import jobs, static_config
from p4reduce.controller.jobs import Member
from p4reduce.controller.p4info import Schema
from p4reduce.controller.p4rt import INSERT, Connection
from p4reduce.controller.pipeline import read_p4info
from p4reduce.switch.ports.ipudp import Endpoints, build_frame
from p4reduce.testbed.cpu import proc_times
from p4reduce.testbed.local import command

from p4reduce import contracts, p4lang

ROOT = Path(__file__).resolve().parents[1]
DENSE = ROOT / "p4src" / "dense.p4"
FWD = ROOT / "tests" / "process" / "fwd.p4"
SWITCH_IP, SWITCH_MAC = "10.0.0.254", "02:00:00:00:00:fe"
AGG_PORT = contracts.AGG_PORT  # the programs' default (p4reduce/contracts/spec.py)
JOB_ID, JOB_KEY = 1, 0x5EC2E7AB
MTU = 4500  # K = 1024 frames are 4,186 bytes (an IP MTU of 4,172); BMv2 sizes its ring by it
FWD_FRAME = 64  # bytes of the forwarding workload's frames (a minimum Ethernet frame)

FLOOR, NATIVE, PERF, DEFAULT = "floor", "p4reduce native", "BMv2 perf", "BMv2 default"
BMV2_BINARY = {PERF: "simple_switch_perf", DEFAULT: "simple_switch"}


class Unavailable(RuntimeError):
    """The side-by-side cannot run here at all (one line: why)."""


# ------------------------------------------------------------------------------ veths
@contextlib.contextmanager
def veth_sets(sets: int, per_set: int) -> Iterator[list[list[tuple[str, str]]]]:
    """``sets`` lists of ``per_set`` veth pairs (generator end, switch end), named with a
    random tag so that concurrent runs never collide; all deleted on the way out."""
    tag = secrets.token_hex(3)
    pairs = [[(f"p4b{tag}{s}g{i}", f"p4b{tag}{s}s{i}") for i in range(per_set)]
             for s in range(sets)]  # fmt: skip
    made: list[str] = []
    try:
        for a, b in (p for group in pairs for p in group):
            _ip("link", "add", a, "type", "veth", "peer", "name", b)
            made.append(a)
            for name in (a, b):
                # no IPv6 (its neighbour discovery would add frames), MTU for K = 1024, up
                Path(f"/proc/sys/net/ipv6/conf/{name}/disable_ipv6").write_text("1")
                _ip("link", "set", name, "mtu", str(MTU), "up")
                offloads_off(name)
        yield pairs
    finally:
        for a in made:  # deleting one end deletes the pair
            subprocess.run(["ip", "link", "del", a], capture_output=True, timeout=30)


def offloads_off(name: str) -> None:
    """Offloads off, as docs/ports.md says for any switch interface. It matters to BMv2: with
    them on, it processed 33 of a burst of 64 frames into one port and the run stalled (as
    libpcap's ring sizing predicts: on an interface that may merge frames, 64 KiB slots, 32
    of them in its 2 MiB ring). Without ethtool the bench refuses to run."""
    done = subprocess.run(
        ["ethtool", "-K", name, "rx", "off", "tx", "off", "tso", "off", "gso", "off", "gro", "off"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if done.returncode != 0:
        raise Unavailable(f"ethtool -K {name}: {done.stderr.strip() or done.returncode}")


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise Unavailable(f"ip {' '.join(args)}: {done.stderr.strip() or done.returncode}")


def raw_socket(ifname: str) -> socket.socket:
    """An AF_PACKET socket bound to ``ifname`` (every EtherType), 8 MiB buffers, its own
    transmissions' outgoing copies ignored."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE
    s.setsockopt(socket.SOL_SOCKET, 32, 8 << 20)  # SO_SNDBUFFORCE
    with contextlib.suppress(OSError):  # PACKET_IGNORE_OUTGOING, Linux 4.20+
        s.setsockopt(263, 23, 1)
    s.bind((ifname, 0x0003))  # ETH_P_ALL
    return s


def drain(socks: Sequence[socket.socket]) -> None:
    """Drop what a failed earlier run left queued."""
    for s in socks:
        with contextlib.suppress(BlockingIOError):
            while True:
                s.recv(65536, socket.MSG_DONTWAIT)


# ------------------------------------------------------------------------------ programs
def _cache_dir() -> Path:
    env = os.environ.get("P4REDUCE_CACHE_DIR")
    return (Path(env) if env else Path.home() / ".cache" / "p4reduce" / "native") / "sidebyside"


def compile_program(compiler: str, src: Path, defines: Sequence[str]) -> tuple[Path, Path]:
    """(JSON, P4Info) of ``src`` built by ``compiler`` (p4c or p4reduce-p4c), cached by the
    SHA-256 of the compiler, the defines and every source file beside the program."""
    exe = command("p4reduce-p4c") if compiler == "p4reduce-p4c" else p4lang.find("p4c")
    if exe is None:
        raise Unavailable(p4lang.missing_reason("p4c"))
    include = src.parent / "include"
    files = sorted([src, *include.glob("*.p4")]) if include.is_dir() else [src]
    h = hashlib.sha256(f"{exe} {os.path.getmtime(exe)} {' '.join(defines)}".encode())
    for f in files:
        h.update(f.name.encode() + f.read_bytes())
    out = _cache_dir() / f"{src.stem}-{compiler}-{h.hexdigest()[:24]}"
    json_path, info = out / f"{src.stem}.json", out / f"{src.stem}.p4info.txtpb"
    if json_path.exists() and info.exists():
        return json_path, info
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent))
    args = [exe, "-I", str(include), *defines, "-o", str(tmp),
            "--p4runtime-files", str(tmp / info.name), str(src)]  # fmt: skip
    if compiler == "p4c":
        args[1:1] = ["--target", "bmv2", "--arch", "v1model"]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300, env=p4lang.env())
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no output"])[0]
        raise Unavailable(f"{compiler} failed on {src.name}: {first}")
    with contextlib.suppress(OSError):  # a concurrent run built it first: either is fine
        tmp.rename(out)
    return json_path, info


# ------------------------------------------------------------------------------ entries, frames
def member(rank: int) -> Member:
    return Member(rank, f"10.0.0.{rank + 1}", 5000 + rank, f"02:00:00:00:01:{rank + 1:02x}",
                  rank + 1)  # fmt: skip


def aggregation_updates(schema: Schema, workers: int, slots: int) -> list[tuple[int, Any]]:
    """What the controller writes for the switch's address and one job of ``workers``."""
    rec = bmv2_cli.Recorder()
    static_config.install(rec, schema, static_config.StaticConfig(SWITCH_IP, SWITCH_MAC))  # type: ignore[arg-type]
    job = jobs.JobTable().plan(JOB_ID, [member(r) for r in range(workers)], slots, 0,
                               workers, JOB_KEY)  # fmt: skip
    jobs.install(rec, schema, job)  # type: ignore[arg-type]
    return rec.updates


def forwarding_updates(schema: Schema, workers: int) -> list[tuple[int, Any]]:
    """fwd.p4: every port back to itself (each worker's frames come back to it)."""
    return [(INSERT, schema.table_entry("I.fwd", {"sm.ingress_port": p}, "I.to_port",
                                        {"port": p})) for p in range(1, workers + 1)]  # fmt: skip


def aggregation_frames(workers: int, slots: int, k: int) -> list[list[bytes]]:
    """One cycle of each worker's dense packets (bench/floor.py) as the frames its host
    would put on its link to the switch."""
    out = []
    for rank, payloads in enumerate(floor.dense_packets(workers, JOB_ID, slots, k, JOB_KEY)):
        m = member(rank)
        ends = Endpoints(bytes.fromhex(SWITCH_MAC.replace(":", "")),
                         bytes.fromhex(m.mac.replace(":", "")), m.ip, SWITCH_IP, m.udp_port,
                         AGG_PORT)  # fmt: skip
        out.append([build_frame(p, ends, t) for t, p in enumerate(payloads)])
    return out


def forwarding_frames(workers: int) -> list[list[bytes]]:
    """One 64-byte UDP frame per worker (fwd.p4 forwards by ingress port, whatever it holds)."""
    out = []
    for rank in range(workers):
        m = member(rank)
        ends = Endpoints(b"\x02\0\0\0\0\x01", bytes.fromhex(m.mac.replace(":", "")), m.ip,
                         "10.0.0.200", m.udp_port, 9)  # fmt: skip
        out.append([build_frame(bytes(FWD_FRAME - 42), ends, 0)])
    return out


# ------------------------------------------------------------------------------ switches
@dataclass
class Running:
    """One switch process on its veth set (``socks``: the generator ends)."""

    kind: str
    proc: subprocess.Popen[bytes]
    socks: list[socket.socket]
    keep: list[socket.socket] = field(default_factory=list)  # the floor's own sockets
    files: list[Path] = field(default_factory=list)  # removed after the process ends

    def stop(self) -> None:
        if self.proc.poll() is None:
            if self.proc.stdin is not None:
                with contextlib.suppress(OSError):
                    self.proc.stdin.close()  # the floor's signal to exit
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        for s in self.socks + self.keep:
            s.close()
        for f in self.files:
            f.unlink(missing_ok=True)


def _stderr() -> Any:
    """A file for a child's stderr: a pipe nobody reads could fill and stall it."""
    return tempfile.TemporaryFile()


def _failed(proc: subprocess.Popen[bytes], err: Any, what: str) -> RuntimeError:
    """The error for a child that did not come up: its last line on stderr."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    err.seek(0)
    lines = err.read().decode(errors="replace").strip().splitlines()
    return RuntimeError(f"{what}: {lines[-1] if lines else 'no ready line'}")


def _wait(proc: subprocess.Popen[bytes], ready: Any, err: Any, what: str, timeout: float) -> Any:
    """Poll ``ready()`` until it returns a value; RuntimeError if the process exits first."""
    deadline = time.monotonic() + timeout
    while (got := ready()) is None:
        if proc.poll() is not None:
            raise _failed(proc, err, f"{what} exited")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} not ready within {timeout:g} s")
        time.sleep(0.05)
    return got


def _ready_line(proc: subprocess.Popen[bytes], err: Any, what: str, timeout: float) -> str:
    """The child's first stdout line, which says it is ready; RuntimeError past ``timeout``
    or when it exits instead."""
    assert proc.stdout is not None
    if not select.select([proc.stdout], [], [], timeout)[0]:
        raise RuntimeError(f"{what} not ready within {timeout:g} s")
    line = proc.stdout.readline().decode(errors="replace")
    if "ready" not in line:
        raise _failed(proc, err, f"{what} did not start")
    return line


def _accepts(port: int) -> bool | None:
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
        return True
    return None


def start_bmv2(kind: str, prog: Path, info: Path, ifaces: list[str],
               updates: list[tuple[int, Any]], tag: str) -> tuple[subprocess.Popen[bytes], Path]:  # fmt: skip
    """BMv2 on ``ifaces`` (port i + 1 = ifaces[i]), configured over thrift with the CLI;
    the process and its notification socket's file (BMv2 leaves it behind)."""
    from p4reduce.free_port import free_port

    exe = p4lang.find(BMV2_BINARY[kind])
    assert exe is not None
    thrift = free_port("tcp")
    ports = [a for i, name in enumerate(ifaces, 1) for a in ("-i", f"{i}@{name}")]
    err = _stderr()
    ipc = Path(tempfile.gettempdir()) / f"p4reduce-bench-{tag}-{thrift}.ipc"
    proc = subprocess.Popen(
        [exe, *ports, "--thrift-port", str(thrift), "--device-id", str(thrift),
         "--notifications-addr", f"ipc://{ipc}",
         *(["--log-level", "off"] if kind == DEFAULT else []), str(prog)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
    )  # fmt: skip
    try:
        _wait(proc, lambda: _accepts(thrift), err, BMV2_BINARY[kind], 30)
        lines = bmv2_cli.commands(Schema(read_p4info(info)), updates) + ["set_queue_depth 4096"]
        cli = p4lang.find("simple_switch_CLI")
        assert cli is not None
        done = subprocess.run([cli, "--thrift-port", str(thrift)], input="\n".join(lines),
                              capture_output=True, text=True, timeout=120, env=p4lang.env())  # fmt: skip
        bad = bmv2_cli.errors(done.stdout + done.stderr)
        if done.returncode != 0 or bad:
            raise RuntimeError(f"simple_switch_CLI: {(bad or [str(done.returncode)])[0]}")
    except BaseException:
        proc.kill()
        proc.wait()
        ipc.unlink(missing_ok=True)
        raise
    return proc, ipc


def start_native(prog: Path, ifaces: list[str],
                 updates: list[tuple[int, Any]]) -> subprocess.Popen[bytes]:  # fmt: skip
    """p4reduce-switch with the native engine, configured over P4Runtime."""
    ports = [a for i, name in enumerate(ifaces, 1) for a in ("-i", f"{i}@{name}")]
    err = _stderr()
    proc = subprocess.Popen(
        [command("p4reduce-switch"), str(prog), *ports, "--engine", "native",
         "--grpc-server-addr", "127.0.0.1:0", "--log-level", "warn"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
    )  # fmt: skip
    try:
        # the native engine is compiled before the ready line on a cache miss
        line = _ready_line(proc, err, "p4reduce-switch", 300)
        addr = line.split("P4Runtime ", 1)[1].split(")")[0].split(",")[0]
        with Connection(addr, election_id=1).connect() as conn:
            conn.write(updates, "side-by-side entries")
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc


def start(kind: str, mode: str, prog: tuple[Path, Path], ifaces: list[tuple[str, str]],
          updates: list[tuple[int, Any]], tag: str) -> Running:  # fmt: skip
    gen = [raw_socket(a) for a, _ in ifaces]
    sw = [b for _, b in ifaces]
    try:
        if kind == FLOOR:
            keep = [raw_socket(b) for b in sw]
            fds = [s.fileno() for s in keep]
            err = _stderr()
            proc = subprocess.Popen(
                [str(floor.build()), "rawserve", mode, ",".join(map(str, fds))], pass_fds=fds,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
            )  # fmt: skip
            running = Running(kind, proc, gen, keep)
            try:
                _ready_line(proc, err, "reflector rawserve", 30)
            except BaseException:
                running.stop()
                raise
            return running
        if kind == NATIVE:  # the switch loads the program with its P4Info
            return Running(kind, start_native(prog[0], sw, updates), gen)
        proc, ipc = start_bmv2(kind, *prog, sw, updates, tag)
        return Running(kind, proc, gen, files=[ipc])
    except BaseException:
        for s in gen:
            s.close()
        raise


# ------------------------------------------------------------------------------ measuring
@dataclass
class Row:
    workload: str  # "aggregation" or "forwarding"
    k: int | None
    workers: int
    switch: str
    pps: float | None = None  # median packets/s in (worker frames), None when it failed
    runs: list[int] = field(default_factory=list)  # each timed run's packets/s
    cpu_us: float | None = None  # median CPU µs of the switch process per packet in
    cpu_runs: list[float] = field(default_factory=list)
    error: str = ""


def cpu_ns(pid: int) -> int:
    """The scheduler run time of every thread of ``pid`` (ns; testbed/cpu.py)."""
    times = proc_times(pid)
    if times is None:
        raise RuntimeError(f"process {pid} is gone")
    return times[0]


def measure(running: Running, frames: list[list[bytes]], window: int, cycle: int,
            target_s: float, rate: float) -> tuple[float, float, float]:  # fmt: skip
    """One run sized to about ``target_s`` at ``rate`` (one cycle when the rate is not
    known yet); whole cycles, so the slots' sets stay in step. (packets/s in, seconds, the
    switch process's CPU µs per packet in: the figure this shared machine's load disturbs
    least.)"""
    workers = len(frames)
    rounds = cycle
    if rate:
        rounds = max(cycle, round(rate * target_s / workers / cycle) * cycle)
    drain(running.socks)
    before = cpu_ns(running.proc.pid)
    r = floor.run_client(None, running.socks, frames, rounds, window, timeout=120)
    cpu_us = (cpu_ns(running.proc.pid) - before) / 1e3 / r["packets_in"]
    return r["packets_in"] / r["seconds"], r["seconds"], cpu_us


def kinds_here() -> tuple[list[str], str]:
    """The switches this machine can run, and one line on any BMv2 build left out."""
    kinds = [FLOOR, NATIVE]
    gone = p4lang.missing("p4c", "simple_switch_CLI")
    note = ""
    for kind in (PERF, DEFAULT):
        if not gone and p4lang.find(BMV2_BINARY[kind]) is not None:
            kinds.append(kind)
    left = [BMV2_BINARY[k] for k in (PERF, DEFAULT) if k not in kinds]
    if left:
        note = f"BMv2 rows skipped: {p4lang.missing_reason(*left, *gone)}"
    return kinds, note


@contextlib.contextmanager
def sigterm_unwinds() -> Iterator[None]:
    """SIGTERM raises SystemExit while the block runs, so that its ``finally`` clauses stop
    the switches and delete the veths (Python's default would end the process on the spot).
    Only in the main thread, where Python runs signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def check_here() -> None:
    from p4reduce.switch.ports.raw import have_raw_socket_privilege

    if not have_raw_socket_privilege():
        raise Unavailable("needs root (veth pairs and raw sockets)")
    for tool in ("ip", "ethtool"):
        if shutil.which(tool) is None:
            raise Unavailable(f"needs the {tool} command")
    try:
        floor.build()
    except floor.FloorUnavailable as err:
        raise Unavailable(str(err)) from None


def run(ks: Sequence[int], workers: int, slots: int, repeat: int, target_s: float,
        forwarding: bool, default_ks: Sequence[int] = (64,)) -> tuple[list[Row], str]:  # fmt: skip
    """Every workload on every switch here; the rows (medians of ``repeat`` timed runs of
    about ``target_s``, after a sizing run) and the note on what was left out. BMv2's
    default build runs aggregation only at ``default_ks`` (and forwarding): at K = 1024 the
    one cycle of slots a run needs at least takes it seconds (100-500 packets/s here)."""
    check_here()
    kinds, note = kinds_here()
    workloads: list[tuple[str, int | None]] = [("aggregation", k) for k in ks]
    if forwarding:
        workloads.append(("forwarding", None))
    rows: list[Row] = []
    tag = secrets.token_hex(3)
    with sigterm_unwinds(), veth_sets(len(kinds), workers) as sets:
        for workload, k in workloads:
            here = [kind for kind in kinds if kind != DEFAULT or k is None or k in default_ks]
            rows += _one_workload(workload, k, workers, slots, repeat, target_s, here,
                                  [sets[kinds.index(kind)] for kind in here], tag)  # fmt: skip
    return rows, note


def _one_workload(workload: str, k: int | None, workers: int, slots: int, repeat: int,
                  target_s: float, kinds: list[str], sets: list[list[tuple[str, str]]],
                  tag: str) -> list[Row]:  # fmt: skip
    src, defines = (DENSE, [f"-DK={k}"]) if workload == "aggregation" else (FWD, [])
    if workload == "aggregation":  # one window of slots per worker, the slots' two sets
        frames, cycle, window = aggregation_frames(workers, slots, k or 64), 2 * slots, slots
    else:
        frames, cycle, window = forwarding_frames(workers), 1, 64
    mode = "mcast" if workload == "aggregation" else "echo"
    rows = {kind: Row(workload, k, workers, kind) for kind in kinds}
    running: dict[str, Running] = {}
    try:
        for kind, ifaces in zip(kinds, sets, strict=True):
            try:
                compiler = "p4c" if kind in (PERF, DEFAULT) else "p4reduce-p4c"
                prog = compile_program(compiler, src, defines) if kind != FLOOR else (src, src)
                schema = Schema(read_p4info(prog[1])) if kind != FLOOR else None
                updates = [] if schema is None else (
                    aggregation_updates(schema, workers, slots) if workload == "aggregation"
                    else forwarding_updates(schema, workers))  # fmt: skip
                running[kind] = start(kind, mode, prog, ifaces, updates, tag)
            except (RuntimeError, OSError, ValueError) as err:
                rows[kind].error = f"did not start: {str(err).splitlines()[0]}"
        rate = dict.fromkeys(running, 0.0)
        for _ in range(repeat + 1):  # interleaved; a first run shorter than target_s sizes
            for kind, sw in running.items():
                row = rows[kind]
                if row.error or len(row.runs) >= repeat:
                    continue
                try:
                    pps, secs, cpu = measure(sw, frames, window, cycle, target_s, rate[kind])
                except (RuntimeError, subprocess.TimeoutExpired) as err:
                    row.error = f"failed: {str(err).splitlines()[0]}"
                    continue
                if rate[kind] or secs >= target_s:  # a slow switch's first cycle counts
                    row.runs.append(round(pps))
                    row.cpu_runs.append(round(cpu, 3))
                rate[kind] = pps
        for row in rows.values():
            if not row.error and row.runs:
                row.pps = statistics.median(row.runs)
                row.cpu_us = statistics.median(row.cpu_runs)
    finally:
        for sw in running.values():
            sw.stop()
    return list(rows.values())


# ------------------------------------------------------------------------------ reporting
def figures(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """The rows as plain dicts, each with its ratio to the floor of the same workload (and
    the BMv2 rows with the native engine's speed over theirs)."""
    by = {(r.workload, r.k, r.switch): r for r in rows}
    out = []
    for r in rows:
        base, native = by.get((r.workload, r.k, FLOOR)), by.get((r.workload, r.k, NATIVE))
        d: dict[str, Any] = {"workload": r.workload, "k": r.k, "workers": r.workers,
                             "switch": r.switch, "pps": None if r.pps is None else round(r.pps),
                             "runs": r.runs, "ratio_to_floor": None, "cpu_us": r.cpu_us,
                             "cpu_runs": r.cpu_runs, "cpu_ratio_to_floor": None}  # fmt: skip
        if r.pps and base is not None and base.pps:
            d["ratio_to_floor"] = round(r.pps / base.pps, 4)
        if r.cpu_us and base is not None and base.cpu_us:  # floor's CPU over this one's
            d["cpu_ratio_to_floor"] = round(base.cpu_us / r.cpu_us, 4)
        if r.switch in (PERF, DEFAULT) and r.pps and native is not None and native.pps:
            d["native_over_this"] = round(native.pps / r.pps, 1)
            if r.cpu_us and native.cpu_us:
                d["native_cpu_over_this"] = round(r.cpu_us / native.cpu_us, 1)
        if r.error:
            d["error"] = r.error
        out.append(d)
    return out


def table(figs: Sequence[dict[str, Any]], workers: int, slots: int, repeat: int) -> str:
    """Two text tables, one line per workload and one column per switch: packets/s in
    (ratio to the floor's), then the switch process's CPU µs per packet (ratio: the floor's
    CPU over the switch's, so that higher is better in both)."""
    if not figs:
        return "BMv2 side by side: no rows"
    switches = list(dict.fromkeys(f["switch"] for f in figs))
    lines = [
        f"BMv2 side by side on veth pairs: {workers} workers, one raw-socket load generator, "
        f"{slots} frames in flight per worker; medians of {repeat} "
        f"run{'s' * (repeat != 1)}; (ratio to the C floor of the same run)"
    ]
    blocks = (("packets/s in", "pps", "ratio_to_floor", "native_over_this", "{:,}"),
              ("switch CPU us per packet", "cpu_us", "cpu_ratio_to_floor",
               "native_cpu_over_this", "{:.2f}"))  # fmt: skip
    for title, value, ratio, over_key, fmt in blocks:
        lines.append(f"  {title:<21}" + "".join(f"{s:>16}{'':9}" for s in switches)
                     + f"{'native/BMv2 perf':>17}")  # fmt: skip
        for key in dict.fromkeys((f["workload"], f["k"]) for f in figs):
            row = {f["switch"]: f for f in figs if (f["workload"], f["k"]) == key}
            name = key[0] if key[1] is None else f"{key[0]} K={key[1]}"
            cells = []
            for s in switches:
                f = row.get(s)
                if f is None or f[value] is None:
                    cells.append(f"{'-' if f is None else 'failed':>16}{'':9}")
                    continue
                r = f" ({f[ratio]:.3g})" if s != FLOOR and f[ratio] is not None else ""
                cells.append(f"{fmt.format(f[value]):>16}{r:<9}")
            over = row.get(PERF, {}).get(over_key)
            lines.append(f"  {name:<21}" + "".join(cells)
                         + (f"{over:>16}x" if over else f"{'-':>17}"))  # fmt: skip
    for f in figs:
        if f.get("error"):
            lines.append(f"  {f['switch']}, {f['workload']} K={f['k']}: {f['error']}")
    return "\n".join(lines)

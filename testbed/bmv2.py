"""The whole stack on the real BMv2 (``simple_switch_grpc``), for ``p4reduce check --switch
bmv2`` and ``p4reduce demo --switch bmv2``: ``Bmv2Stack``.

BMv2 has no UDP ports, only network interfaces, so the workers cannot sit on loopback as
with the embedded switch. Instead (root needed) the stack builds a small private network
out of network namespaces it creates, with names unique to this process and stack:

- a **switch namespace** holding ``simple_switch_grpc`` (ports ``sw-eth1..N``, P4Runtime on
  its own 127.0.0.1:9559), the controller's one-shot commands and ``p4reduce-ctl serve``
  (on a bridge ``br0``, 10.254.0.254);
- one **host namespace** per worker: ``eth0`` (10.0.0.I/24, MAC 02:00:0a:00:00:II), the
  peer of switch port I, and ``mgmt0`` (10.254.0.I/24) on the switch namespace's bridge,
  for the registration service and torch's rendezvous only.

Everything measured crosses BMv2: a worker binds its UDP socket on 10.0.0.I and sends to the
switch's address 10.0.0.254, which the P4 program answers ARP for (the same addresses as the
Mininet testbed, docs/testbed.md). Because every address lives inside namespaces of its own,
parallel stacks never clash; only the namespace names are global (``p4rb<pid>x<seq>-…``).

The program is compiled by the real ``p4c`` (BMv2 JSON and P4Info) and pushed by
``p4reduce-ctl push``, as for any P4Runtime switch. Teardown (normal end, error, Ctrl-C,
SIGTERM; a signal meanwhile waits for it) stops the workers, the service and the switch,
then deletes the namespaces, which removes every veth and the bridge with them. Namespaces
left by a process that died outright (SIGKILL) are deleted by the next stack's start.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .. import contracts, netaddr, p4lang
from ..controller.credentials import JOB_SECRET_ENV, new_secret
from .local import (
    Proc,
    Stack,
    StackError,
    WorkerResult,
    command,
    die_with_parent_preexec,
    failed,
    find_p4src,
    last_line,
    last_line_of,
    run_ctl,
    stop_signals_held,
    terminate,
)
from .mininet import topology
from .mininet.switches import SwitchKind, cpu_port

NETNS_DIR = Path("/run/netns")
NS_PREFIX = "p4rb"
SWITCH_IP = "10.0.0.254"
SWITCH_MAC = "02:00:00:00:00:fe"
MGMT_IP = "10.254.0.254"
GRPC_ADDR = "127.0.0.1:9559"  # inside the switch namespace: no other process can hold it
AGG_PORT = contracts.AGG_PORT  # the programs' default (private network: no clash)
# Jumbo frames on every data link: K = 1024 frames are 4,162 bytes (docs/testbed.md)
MTU = 9000
# BMv2 turns around about 1,200 aggregation packets/s here (K = 64, 2 workers, the default
# build on 2 cores), so 64 slots per worker keep more in flight than it answers within the
# first retransmission timeout (200 ms): every packet of a 5,000-element call went twice.
# 16 slots measured none; check and demo use this unless told otherwise.
DEFAULT_SLOTS = 16
_CLONE_NEWNET = 0x40000000
_seq = itertools.count(1)
T = TypeVar("T")


def missing() -> str:
    """Why this machine cannot run the stack ('' when it can): the tools, then root."""
    why = p4lang.missing_reason("simple_switch_grpc", "p4c")
    if why:
        return why
    if os.geteuid() != 0:
        return "--switch bmv2 needs root (it creates network namespaces and veths for BMv2's ports): run it with sudo"
    for tool in ("ip", "nsenter"):
        if shutil.which(tool) is None:
            return f"--switch bmv2 needs {tool} (iproute2 / util-linux), which is not installed"
    return ""


def cache_root() -> Path:
    """Where p4c's outputs are kept between runs (``$P4REDUCE_CACHE_DIR/bmv2``, else
    ``~/.cache/p4reduce/bmv2``)."""
    env = os.environ.get("P4REDUCE_CACHE_DIR")
    return (Path(env) if env else Path.home() / ".cache" / "p4reduce") / "bmv2"


def compiled(program: str, k: int) -> tuple[Path, bool]:
    """``p4src/PROGRAM.p4`` compiled by p4c for BMv2 with K; the prefix ``p4reduce-ctl push``
    takes, and whether it came from the cache. p4c takes 3-5 s, so its outputs are kept,
    keyed by the content of every file under p4src/, the options and p4c's own binary."""
    src = find_p4src()
    h = hashlib.sha256(f"{program}\0{k}\0".encode())
    for f in sorted(src.rglob("*")):
        if f.is_file():
            h.update(str(f.relative_to(src)).encode() + b"\0" + f.read_bytes() + b"\0")
    p4c = p4lang.find("p4c")
    if p4c is not None:
        st = Path(p4c).resolve().stat()
        h.update(f"{p4c}\0{st.st_size}\0{st.st_mtime_ns}".encode())
    out = cache_root() / h.hexdigest()[:24]
    prefix = out / program
    if prefix.with_suffix(".json").is_file() and Path(f"{prefix}.p4info.txtpb").is_file():
        return prefix, True
    cache_root().mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="build-", dir=cache_root()))
    try:
        SwitchKind("bmv2").compile(program, k, tmp)
        try:
            tmp.rename(out)  # atomic: a parallel compile of the same key may have won
        except OSError:
            if not prefix.with_suffix(".json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return prefix, False


def in_netns(ns: str, fn: Callable[[], T]) -> T:
    """``fn()`` run in a fresh thread that has joined network namespace ``ns``: setns(2)
    changes only the calling thread, so no other thread of this process moves. A socket
    made there stays in that namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            try:
                fd = os.open(NETNS_DIR / ns, os.O_RDONLY)
            except OSError as err:
                raise StackError(f"network namespace {ns}: {err.strerror}") from None
            try:
                if libc.setns(fd, _CLONE_NEWNET) != 0:
                    raise StackError(f"setns {ns}: {os.strerror(ctypes.get_errno())}")
            finally:
                os.close(fd)
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["error"] = exc

    t = threading.Thread(target=run, name=f"netns-{ns}")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        msg = last_line_of(done.stderr) or f"exit status {done.returncode}"
        raise StackError(f"ip {' '.join(args)}: {msg}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale() -> list[str]:
    """Delete namespaces of ours whose creating process is gone (killed outright); their
    names."""
    gone = []
    if not NETNS_DIR.is_dir():
        return gone
    for p in NETNS_DIR.iterdir():
        m = re.fullmatch(rf"{NS_PREFIX}(\d+)x\d+-\w+", p.name)
        if m and not _alive(int(m[1])):
            subprocess.run(["ip", "netns", "delete", p.name], capture_output=True, timeout=30)
            gone.append(p.name)
    return gone


def ours() -> list[str]:
    """The namespaces of this module that exist now (for tests: nothing may be left)."""
    if not NETNS_DIR.is_dir():
        return []
    return sorted(p.name for p in NETNS_DIR.iterdir() if p.name.startswith(NS_PREFIX))


@dataclass(frozen=True)
class NsHost:
    """Worker rank's place on the private network."""

    rank: int
    ns: str
    ip: str
    mac: str
    mgmt_ip: str
    switch_port: int

    def enter(self) -> list[str]:
        """The command prefix that runs a program inside this host's namespace."""
        return ["nsenter", f"--net={NETNS_DIR / self.ns}", "--"]


class Bmv2Stack(Stack):
    """BMv2 with N worker namespaces, the controller and its registration service.

    The same surface as ``LocalStack`` where ``check`` and ``demo`` use it: ``dir``,
    ``timings``, ``url``, ``switch``, ``serve``, ``ctl``, ``spawn_workers``, ``wait_workers``;
    plus ``hosts`` (where each rank lives) for processes started by others (torch ranks).
    ``loss``: every data link drops each frame with this probability in each direction (a
    tc filter on both ends, as the Mininet testbed does; BMv2 cannot run the embedded
    switch's loss simulator because its P4Runtime server writes no registers).
    """

    def __init__(
        self,
        ports: int,
        program: str = "dense",
        *,
        k: int = 64,
        slots: int = DEFAULT_SLOTS,
        loss: float = 0.0,
        join_timeout: float = 60.0,
        initial_timeout_ms: int | None = None,
        workdir: str | Path | None = None,
        log: Callable[[str], None] | None = None,
        start_timeout: float = 60.0,
    ) -> None:
        if program not in ("dense", "sparse"):
            raise StackError(f"program {program!r}: one of dense, sparse")
        if not 1 <= ports <= 32:
            raise StackError(f"{ports} worker ports: 1 .. 32")
        self.ports = ports
        self.program = program
        self.k = k
        self.slots = slots
        self.loss = loss
        self.join_timeout = join_timeout
        self.initial_timeout_ms = initial_timeout_ms
        self.start_timeout = start_timeout
        self._workdir_arg = workdir
        self._log = log or (lambda _m: None)
        self.dir: Path | None = None
        self._own_dir = False
        tag = f"{NS_PREFIX}{os.getpid()}x{next(_seq)}"
        self.switch_ns = f"{tag}-sw"
        self.hosts = [
            NsHost(r, f"{tag}-h{r + 1}", f"10.0.0.{r + 1}", f"02:00:0a:00:00:{r + 1:02x}",
                   f"10.254.0.{r + 1}", r + 1)
            for r in range(ports)
        ]  # fmt: skip
        self.namespaces: list[str] = []
        self.procs: list[Proc] = []
        self.switch: Proc | None = None
        self.serve: Proc | None = None
        self.grpc_addr = GRPC_ADDR
        self.url = ""
        self.timings: dict[str, float] = {}
        self._preexec = die_with_parent_preexec()
        self._worker_seq = 0

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        why = missing()
        if why:
            raise StackError(why)
        if self._workdir_arg is None:
            self.dir = Path(tempfile.mkdtemp(prefix="p4reduce-bmv2-"))
            self._own_dir = True
        else:
            self.dir = Path(self._workdir_arg)
            self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "logs").mkdir(exist_ok=True)
        for name in sweep_stale():
            self._log(f"deleted namespace {name} left by a process that is gone")
        t0 = time.perf_counter()
        prefix, cached = compiled(self.program, self.k)
        self.timings["compile"] = time.perf_counter() - t0
        how = "p4c's output cached" if cached else "compiled with p4c"
        self._log(f"{self.program}.p4 (K = {self.k}): {how}")
        t0 = time.perf_counter()
        self._network()
        self.timings["network"] = time.perf_counter() - t0
        self._log(f"network namespaces: switch {self.switch_ns}, {self.ports} hosts")
        self._start_switch()
        t0 = time.perf_counter()
        self.ctl("push", str(prefix), "--switch-ip", SWITCH_IP, "--switch-mac", SWITCH_MAC,
                 *[f"--host={h.switch_port}:{h.mac}" for h in self.hosts], election_id=1)  # fmt: skip
        self.timings["configure"] = time.perf_counter() - t0
        if self.loss > 0:
            self.set_loss(self.loss)
            self._log(f"loss {self.loss:g} per frame on both ends of every data link")
        self._start_serve()

    def stop(self) -> None:
        """Stop every process (workers first, the switch last), delete the namespaces;
        idempotent. A Ctrl-C or SIGTERM meanwhile waits until it has finished."""
        with stop_signals_held():
            infra = [p for p in (self.serve, self.switch) if p is not None]
            terminate([p.popen for p in reversed(self.procs) if p not in infra], 10.0)
            for part in infra:  # the service's stream first: BMv2 then stops at once
                terminate([part.popen], 10.0)
            for ns in reversed(self.namespaces):
                subprocess.run(["ip", "netns", "delete", ns], capture_output=True, timeout=30)
            self.namespaces = []
            if self._own_dir and self.dir is not None:
                shutil.rmtree(self.dir, ignore_errors=True)
                self.dir = None

    # ------------------------------------------------------------------ network
    def _add_ns(self, ns: str) -> None:
        _ip("netns", "add", ns)
        self.namespaces.append(ns)
        _ip("-n", ns, "link", "set", "lo", "up")
        # no IPv6: neighbour discovery and router solicitations would cross BMv2 too
        for key in ("all", "default"):
            self._sysctl(ns, f"net.ipv6.conf.{key}.disable_ipv6=1")

    @staticmethod
    def _sysctl(ns: str, setting: str) -> None:
        done = subprocess.run(
            ["nsenter", f"--net={NETNS_DIR / ns}", "--", "sysctl", "-q", "-w", setting],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        if done.returncode != 0:
            raise StackError(f"sysctl {setting} in {ns}: {last_line_of(done.stderr)}")

    def _network(self) -> None:
        sw = self.switch_ns
        self._add_ns(sw)
        _ip("-n", sw, "link", "add", "br0", "type", "bridge")
        _ip("-n", sw, "addr", "add", f"{MGMT_IP}/24", "dev", "br0")
        _ip("-n", sw, "link", "set", "br0", "up")
        ethtool = shutil.which("ethtool")
        for h in self.hosts:
            self._add_ns(h.ns)
            port = f"sw-eth{h.switch_port}"
            _ip("-n", sw, "link", "add", port, "type", "veth", "peer", "name", "eth0",
                "netns", h.ns)  # fmt: skip
            _ip("-n", sw, "link", "set", port, "mtu", str(MTU), "up")
            _ip("-n", h.ns, "link", "set", "eth0", "address", h.mac, "mtu", str(MTU), "up")
            _ip("-n", h.ns, "addr", "add", f"{h.ip}/24", "dev", "eth0")
            mport = f"m{h.switch_port}"
            _ip("-n", sw, "link", "add", mport, "type", "veth", "peer", "name", "mgmt0",
                "netns", h.ns)  # fmt: skip
            _ip("-n", sw, "link", "set", mport, "master", "br0", "up")
            _ip("-n", h.ns, "addr", "add", f"{h.mgmt_ip}/24", "dev", "mgmt0")
            _ip("-n", h.ns, "link", "set", "mgmt0", "up")
            if ethtool is not None:
                # BMv2 reads and writes whole frames on packet sockets: it must see them as
                # they are on the wire (no partial checksums, no 64 KiB GSO frames)
                for ns, dev in ((sw, port), (h.ns, "eth0")):
                    subprocess.run(
                        ["nsenter", f"--net={NETNS_DIR / ns}", "--", ethtool, "-K", dev,
                         "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off"],
                        capture_output=True, timeout=30,
                    )  # fmt: skip

    def set_loss(self, p: float) -> None:
        """Drop each frame leaving either end of every data link with probability ``p``
        (``topology.loss_filter``: a classic-BPF tc filter; 0 removes it)."""
        for h in self.hosts:
            for ns, dev in ((self.switch_ns, f"sw-eth{h.switch_port}"), (h.ns, "eth0")):
                tc = ["nsenter", f"--net={NETNS_DIR / ns}", "--", "tc"]
                subprocess.run([*tc, "qdisc", "add", "dev", dev, "clsact"], capture_output=True)
                subprocess.run([*tc, "filter", "del", "dev", dev, "egress"], capture_output=True)
                if p > 0:
                    done = subprocess.run(
                        [*tc, "filter", "add", "dev", dev, "egress", "bpf", "da", "bytecode",
                         topology.loss_filter(p)], capture_output=True, text=True,
                    )  # fmt: skip
                    if done.returncode != 0:
                        raise StackError(f"tc loss filter on {dev}: {last_line_of(done.stderr)}")

    # ------------------------------------------------------------------ processes
    def enter_switch(self) -> list[str]:
        return ["nsenter", f"--net={NETNS_DIR / self.switch_ns}", "--"]

    def _spawn(self, name: str, args: Sequence[str], **kw: Any) -> Proc:
        assert self.dir is not None
        out, err = self.dir / "logs" / f"{name}.out", self.dir / "logs" / f"{name}.err"
        with open(out, "wb") as fo, open(err, "wb") as fe:
            popen = subprocess.Popen(
                list(args), stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                preexec_fn=self._preexec, **kw,
            )  # fmt: skip
        proc = Proc(name, popen, out, err)
        self.procs.append(proc)
        return proc

    def _start_switch(self) -> None:
        t0 = time.perf_counter()
        binary = p4lang.find("simple_switch_grpc")
        assert binary is not None  # missing() said so otherwise
        ports = [a for h in self.hosts for a in ("-i", f"{h.switch_port}@sw-eth{h.switch_port}")]
        args = [*self.enter_switch(), binary, "--device-id", "1", *ports, "--no-p4", "--",
                "--grpc-server-addr", GRPC_ADDR, "--cpu-port", str(cpu_port())]  # fmt: skip
        self.switch = self._spawn("switch", args, env=p4lang.env())
        host, port = netaddr.split(GRPC_ADDR)

        def accepts() -> bool:
            with contextlib.suppress(OSError):
                with socket.create_connection((host, port), timeout=0.5):
                    return True
            return False

        deadline = time.monotonic() + self.start_timeout
        while not in_netns(self.switch_ns, accepts):
            if not self.switch.alive():
                raise StackError(f"simple_switch_grpc did not start: {self.switch.error()}")
            if time.monotonic() > deadline:
                raise StackError(
                    f"simple_switch_grpc did not open its P4Runtime port within {self.start_timeout:g} s"
                )
            time.sleep(0.05)
        self.timings["switch"] = time.perf_counter() - t0
        self._log(f"simple_switch_grpc ready (P4Runtime {GRPC_ADDR} in {self.switch_ns}, "
                  f"{self.ports} worker ports, CPU port {cpu_port()})")  # fmt: skip

    def ctl(self, *args: str, election_id: int | None = None) -> dict[str, Any]:
        """A one-shot ``p4reduce-ctl --json`` command in the switch namespace; its answer."""
        return run_ctl(
            GRPC_ADDR, *args, election_id=election_id, timeout=120, prefix=self.enter_switch()
        )

    def _start_serve(self) -> None:
        t0 = time.perf_counter()
        args = [
            *self.enter_switch(), command("p4reduce-ctl"), "--grpc-addr", GRPC_ADDR,
            "--election-id", "3", "--json", "serve", "--listen", f"{MGMT_IP}:0",
            "--switch-ip", SWITCH_IP, "--switch-mac", SWITCH_MAC, "--agg-port", str(AGG_PORT),
            "--slots", str(self.slots), "--join-timeout", f"{self.join_timeout:g}",
        ]  # fmt: skip
        if self.initial_timeout_ms is not None:
            args += ["--initial-timeout-ms", str(self.initial_timeout_ms)]
        self.serve = self._spawn("serve", args)
        deadline = time.monotonic() + self.start_timeout
        while True:
            lines = self.serve.stdout.read_text(errors="replace").splitlines()
            line = next((ln for ln in lines if "ready" in ln), None)
            if line is not None:
                break
            if not self.serve.alive():
                raise StackError(f"p4reduce-ctl serve did not start: {self.serve.error()}")
            if time.monotonic() > deadline:
                raise StackError(
                    f"p4reduce-ctl serve did not start within {self.start_timeout:g} s"
                )
            time.sleep(0.02)
        try:
            self.url = json.loads(line)["url"]
        except (ValueError, KeyError):
            raise StackError(f"p4reduce-ctl serve: unexpected ready line {line!r}") from None
        self.timings["serve"] = time.perf_counter() - t0
        self._log(f"registration service ready at {self.url} (management bridge)")

    def rank_env(self, rank: int) -> dict[str, str]:
        """What a torch rank in host ``rank`` needs: where it reaches BMv2
        (``P4ReduceOptions``), and gloo's own connections (torch's helper groups) on the
        management interface, since the host name resolves to a loopback address that
        differs per namespace."""
        h = self.hosts[rank]
        return {"P4REDUCE_BIND_IP": h.ip, "P4REDUCE_MAC": h.mac,
                "P4REDUCE_SWITCH_PORT": str(h.switch_port), "GLOO_SOCKET_IFNAME": "mgmt0"}  # fmt: skip

    def check_alive(self) -> str | None:
        """Why the stack can no longer serve (a part exited), or None."""
        for part in (self.switch, self.serve):
            if part is not None and not part.alive():
                return f"{part.name} exited unexpectedly: {part.error()}"
        return None

    # ------------------------------------------------------------------ workers
    def spawn_workers(
        self, job_id: int, n: int, plan: Sequence[dict[str, Any]], *, timeout: float = 60.0,
        extra: Sequence[str] = (),
    ) -> list[Proc]:  # fmt: skip
        """n worker processes for job ``job_id``, rank r inside host r's namespace, bound on
        its data address (switch port r + 1); each runs ``plan`` (testbed/worker.py)."""
        if not 1 <= n <= self.ports:
            raise StackError(f"{n} workers: this stack has {self.ports} worker ports")
        self._worker_seq += 1
        env = {**os.environ, JOB_SECRET_ENV: new_secret()}  # environment, never argv
        text = json.dumps(list(plan))
        procs = []
        for h in self.hosts[:n]:
            args = [
                *h.enter(), sys.executable, "-m", "p4reduce.testbed.worker", "--url", self.url,
                "--job", str(job_id), "--rank", str(h.rank), "--n", str(n), "--bind", h.ip,
                "--mac", h.mac, "--switch-port", str(h.switch_port), "--slots", str(self.slots),
                "--timeout", f"{timeout:g}", "--plan", text, *extra,
            ]  # fmt: skip
            procs.append(self._spawn(f"worker{self._worker_seq}-{h.rank}", args, env=env))
        return procs

    def wait_workers(
        self,
        procs: Sequence[Proc],
        timeout: float,
        *,
        progress: Callable[[float, int], None] | None = None,
        progress_every: float = 5.0,
        overall: float | None = None,
    ) -> list[WorkerResult]:
        """As ``LocalStack.wait_workers``: StackError (the others stopped) when a worker
        fails, the switch or the service dies, or the timeout passes."""
        t0 = time.monotonic()
        next_report = t0 + progress_every
        failure: str | None = None
        while failure is None:
            running = [p for p in procs if p.alive()]
            failure = next(
                (f"worker {r} failed: {p.error()}" for r, p in enumerate(procs)
                 if failed(p.popen)), None,
            ) or self.check_alive()  # fmt: skip
            if failure is not None or not running:
                break
            now = time.monotonic()
            if now - t0 > timeout:
                failure = (f"timed out after {overall or timeout:g} s ({len(running)} of "
                           f"{len(procs)} workers still running)")  # fmt: skip
                break
            if progress is not None and now >= next_report:
                progress(now - t0, len(procs) - len(running))
                next_report = now + progress_every
            time.sleep(0.02)
        if failure is not None:
            terminate([p.popen for p in procs], 5.0)
            raise StackError(failure)
        results = []
        for rank, p in enumerate(procs):
            lines = [json.loads(t) for t in p.stdout.read_text(errors="replace").splitlines()
                     if t.strip().startswith("{")]  # fmt: skip
            results.append(WorkerResult(rank, p.popen.returncode, lines))
        return results


__all__ = ["Bmv2Stack", "NsHost", "in_netns", "last_line", "missing", "ours", "sweep_stale"]

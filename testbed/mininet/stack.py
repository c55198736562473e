"""One Mininet testbed, up and torn down: ``MininetStack``.

Start (each part through its command, as docs/architecture.md asks):

1. the P4 program is compiled (``switches.SwitchKind.compile``), once per build directory;
2. the topology driver (``topology.py`` under the system Python, where mininet lives)
   builds N hosts, the shaped data links and the management bridge, and reports the
   addresses on one JSON line;
3. the switch process (``p4reduce-switch`` or ``simple_switch_grpc``) runs in the root
   namespace with the switch-side veths as its ports and P4Runtime on 127.0.0.1;
4. ``p4reduce-ctl push`` installs the pipeline, the switch's address and the hosts' MACs
   (L2 forwarding and flooding, so that ordinary traffic such as gloo's crosses the P4
   switch too), then ``p4reduce-ctl serve`` runs the registration service on the
   management bridge's address, where the hosts reach it;
5. processes run inside a host through ``nsenter --net`` (``spawn_in``).

Teardown (``stop``; leaving the ``with`` block however it is left, Ctrl-C included): the
workers, then the service, then the switch get SIGTERM (SIGKILL after a grace period); then
the driver's stdin is closed, and it kills whatever still runs in a host's namespace, stops
Mininet and deletes the bridge. If the driver did not finish, ``topology.clean_if_free``
does its work here. A Ctrl-C or SIGTERM meanwhile waits for it. Children also get SIGTERM if this
process dies outright (PR_SET_PDEATHSIG), and the driver sees its stdin close, so nothing
outlives a killed orchestrator.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ... import contracts
from ...controller.credentials import JOB_SECRET_ENV, new_secret
from ..local import (
    Proc,
    Stack,
    StackError,
    WorkerResult,
    command,
    die_with_parent_preexec,
    failed,
    last_line,
    run_ctl,
    stop_signals_held,
    terminate,
)
from ..restart import kill_switch
from ..worker import CPU_INTF_ENV, CPU_WATCH_ENV
from . import topology
from .switches import SwitchKind, accepts

SYSTEM_PYTHON = "/usr/bin/python3"
AGG_PORT = contracts.AGG_PORT  # the aggregation UDP port compiled into the programs by default
JOB_ID = 1
# The switch process runs at this nice value. It stands for a switch ASIC, which never waits
# for the hosts' CPUs; here it shares two cores with up to 16 worker processes, and at equal
# priority the scheduler gives it 1/(N+1) of the CPU when all are runnable, so that at 8
# workers it fell behind while cores sat idle between bursts (docs/results.md). Workers and
# gloo's ranks run at the default priority alike, so the comparison stays fair.
SWITCH_NICE = -10


@dataclass(frozen=True)
class LinkShape:
    """What every data link does, in each direction: rate, one-way delay, loss."""

    bw: float | None = None  # Mbit/s (HTB); None: unshaped
    delay_ms: float | None = None  # netem delay; None or 0: none
    loss: float = 0.0  # drop probability per frame and direction

    def label(self) -> str:
        parts = [f"{self.bw:g} Mbit/s" if self.bw else "unshaped"]
        if self.delay_ms:
            parts.append(f"{self.delay_ms:g} ms")
        if self.loss:
            parts.append(f"loss {self.loss:g}")
        return ", ".join(parts)


@dataclass(frozen=True)
class Host:
    name: str
    pid: int  # the Mininet host shell; its network namespace is the host's
    rank: int
    ip: str
    mac: str
    intf: str
    mgmt_ip: str
    switch_port: int
    switch_intf: str


def data_link_mtu(k: int) -> int:
    """The data links' MTU for a K-element build: 1500 while an aggregation packet fits
    (IPv4 + UDP + 24-byte header + 4 K bytes: 308 for K = 64, 1,076 for K = 256), else a
    jumbo 9000 (K = 1024: 4,148 bytes, a 4,162-byte frame)."""
    ip_packet = 20 + 8 + 24 + 4 * k
    return 1500 if ip_packet <= 1500 else 9000


def mininet_missing() -> str | None:
    """Why the Mininet testbed cannot run here (one line), or None."""
    if os.geteuid() != 0:
        return "needs root (Mininet creates network namespaces and veths): run it with sudo"
    if shutil.which("mn") is None or not Path(SYSTEM_PYTHON).exists():
        return "Mininet is not installed (apt-get install mininet)"
    if shutil.which("nsenter") is None:
        return "nsenter is not installed (apt-get install util-linux)"
    r = subprocess.run([SYSTEM_PYTHON, "-c", "import mininet.net"], capture_output=True)
    if r.returncode != 0:
        return f"{SYSTEM_PYTHON} cannot import mininet (apt-get install mininet)"
    return None


class MininetStack(Stack):
    """N Mininet hosts around one P4 switch, the controller and its registration service."""

    def __init__(
        self,
        hosts: int,
        shape: LinkShape,
        program: str = "dense",
        *,
        switch: SwitchKind,
        k: int = 64,
        slots: int = 64,
        workdir: Path,
        build_dir: Path | None = None,
        log: Callable[[str], None] | None = None,
        start_timeout: float = 60.0,
        join_timeout: float = 120.0,
        initial_timeout_ms: int | None = None,
    ) -> None:
        self.n = hosts
        self.shape = shape
        self.program = program
        self.switch_kind = switch
        self.k = k
        self.slots = slots
        self.dir = workdir
        self.build_dir = build_dir or workdir
        self._log = log or (lambda _m: None)
        self.start_timeout = start_timeout
        self.join_timeout = join_timeout
        self.initial_timeout_ms = initial_timeout_ms
        self.procs: list[Proc] = []
        self.driver: Proc | None = None
        self.switch: Proc | None = None
        self.serve: Proc | None = None
        self.hosts: list[Host] = []
        self.net: dict[str, Any] = {}
        self.grpc_addr = ""
        self.url = ""
        # processes are only spawned from the main thread, whose end is the process's
        self._preexec = die_with_parent_preexec()
        self._seq = 0

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        t0 = time.perf_counter()
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        prefix = self._compiled()
        self._start_topology()
        self._start_switch(prefix)
        self._configure(prefix)
        self._start_serve()
        self._log(f"testbed up in {time.perf_counter() - t0:.1f} s")

    def stop(self) -> None:
        """Stop everything (workers, service and switch, then the topology); idempotent."""
        with stop_signals_held():
            # workers first, then the service (its P4Runtime stream), then the switch: the
            # switch stops fastest once no controller is connected
            infra = (self.driver, self.serve, self.switch)
            self._stop_processes([p for p in self.procs if p not in infra])
            for part in (self.serve, self.switch):
                if part is not None:
                    self._stop_processes([part])
            finished = self._stop_driver()
            if not finished or topology.our_links():
                # the driver died or could not finish: do its work here
                topology.clean_if_free()

    def _stop_processes(self, procs: Sequence[Proc], grace: float = 10.0) -> None:
        terminate([p.popen for p in reversed(procs)], grace)

    def _stop_driver(self) -> bool:
        """Close the driver's stdin and wait for its teardown; whether it finished it."""
        d = self.driver
        if d is None:
            return True
        if d.popen.stdin is not None:
            with contextlib.suppress(OSError):
                d.popen.stdin.close()
        try:
            d.popen.wait(timeout=60)
        except subprocess.TimeoutExpired:
            d.popen.send_signal(signal.SIGTERM)
            try:
                d.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                d.popen.kill()
                d.popen.wait()
        self.driver = None
        return '"stopped"' in d.stdout.read_text(errors="replace")

    # ------------------------------------------------------------------ processes
    def _spawn(
        self,
        name: str,
        args: Sequence[str],
        *,
        stdin: Any = subprocess.DEVNULL,
        nice: int = 0,
        **kw: Any,
    ) -> Proc:
        logs = self.dir / "logs"
        out, err = logs / f"{name}.out", logs / f"{name}.err"
        preexec = self._preexec
        if nice:

            def preexec() -> None:  # before exec: every thread the process starts inherits it
                self._preexec()
                os.setpriority(os.PRIO_PROCESS, 0, nice)

        with open(out, "wb") as fo, open(err, "wb") as fe:
            popen = subprocess.Popen(
                list(args), stdin=stdin, stdout=fo, stderr=fe, preexec_fn=preexec, **kw
            )
        proc = Proc(name, popen, out, err)
        self.procs.append(proc)
        return proc

    def spawn_in(
        self, host: Host, name: str, args: Sequence[str], env: dict[str, str] | None = None
    ) -> Proc:
        """Run ``args`` inside ``host``'s network namespace (the file system is shared)."""
        ns = ["nsenter", f"--net=/proc/{host.pid}/ns/net", "--"]
        return self._spawn(name, [*ns, *args], env={**os.environ, **(env or {})})

    def _wait_line(self, proc: Proc, what: str, pattern: str) -> str:
        deadline = time.monotonic() + self.start_timeout
        while True:
            for line in proc.stdout.read_text(errors="replace").splitlines():
                if pattern in line:
                    return line
            if not proc.alive():
                raise StackError(f"{what} did not start: {proc.error()}")
            if time.monotonic() > deadline:
                raise StackError(f"{what} did not start within {self.start_timeout:g} s")
            time.sleep(0.05)

    # ------------------------------------------------------------------ steps
    def _compiled(self) -> Path:
        out = self.build_dir / f"build-{self.switch_kind.name}-k{self.k}"
        prefix = out / self.program
        if not prefix.with_suffix(".json").exists():
            t0 = time.perf_counter()
            prefix = self.switch_kind.compile(self.program, self.k, out)
            self._log(f"compiled {self.program}.p4 in {time.perf_counter() - t0:.1f} s")
        return prefix

    def _start_topology(self, extra: dict[str, Any] | None = None) -> None:
        """``extra``: more of the driver's spec (the leaf-spine stack's ``racks``)."""
        spec = {"hosts": self.n, "bw": self.shape.bw, "delay_ms": self.shape.delay_ms,
                "loss": self.shape.loss, "mtu": data_link_mtu(self.k), **(extra or {})}  # fmt: skip
        script = Path(topology.__file__)
        # its own session: a Ctrl-C at the terminal reaches this process, which then tears
        # down in order (processes first), rather than the driver pulling links away early
        self.driver = self._spawn(
            "topology", [SYSTEM_PYTHON, str(script), json.dumps(spec)],
            stdin=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        line = self._wait_line(self.driver, "the Mininet topology", '"ready"')
        self.net = json.loads(line)
        self.hosts = [
            Host(h["name"], h["pid"], h["rank"], h["ip"], h["mac"], h["intf"], h["mgmt_ip"],
                 h["switch_port"], h["switch_intf"])
            for h in self.net["hosts"]
        ]  # fmt: skip
        self._log(f"topology: {self.n} hosts, links {self.shape.label()}")

    def _start_switch(self, prefix: Path) -> None:
        kind = self.switch_kind
        addr = kind.grpc_addr()
        argv = kind.argv(prefix, [h.switch_intf for h in self.hosts], addr)
        self.switch = self._spawn("switch", argv, nice=SWITCH_NICE)
        self._await_switch(addr)

    def _await_switch(self, addr: str) -> None:
        """Wait for ``self.switch`` to serve P4Runtime; set ``grpc_addr``."""
        kind = self.switch_kind
        assert self.switch is not None
        if kind.name == "embedded":
            self.grpc_addr = self._embedded_ready(self.switch, "p4reduce-switch")
        else:
            deadline = time.monotonic() + self.start_timeout
            while not accepts(addr):
                if not self.switch.alive():
                    raise StackError(f"simple_switch_grpc did not start: {self.switch.error()}")
                if time.monotonic() > deadline:
                    raise StackError("simple_switch_grpc did not open its P4Runtime port")
                time.sleep(0.1)
            self.grpc_addr = addr
        self._log(f"{kind.name} switch ready (P4Runtime {self.grpc_addr})")

    def _embedded_ready(self, proc: Proc, what: str) -> str:
        """The P4Runtime address an embedded switch's ready line names, once it prints it."""
        line = self._wait_line(proc, what, "ready")
        m = re.search(r"P4Runtime ([\d.]+:\d+)", line)
        if m is None:
            raise StackError(f"{what}: unexpected ready line {line!r}")
        return m[1]

    def restart_switch(self) -> Proc:
        """kill -9 the switch process and start it again with the same arguments and
        P4Runtime address (``restart.kill_switch``), as a crash and an operator's restart
        do; the registration service's reconciliation puts the jobs back
        (docs/failures.md). The new process replaces ``self.switch``."""
        args = kill_switch(self)
        restarts = sum(p.name.startswith("switch") for p in self.procs)
        self.switch = self._spawn(f"switch{restarts}", args, nice=SWITCH_NICE)
        self._await_switch(self.grpc_addr)
        return self.switch

    def ctl(self, *args: str, election_id: int | None = None) -> dict[str, Any]:
        """A one-shot ``p4reduce-ctl --json`` command; its JSON answer."""
        return run_ctl(self.grpc_addr, *args, election_id=election_id, timeout=120)

    def _configure(self, prefix: Path) -> None:
        hosts = [f"--host={h.switch_port}:{h.mac}" for h in self.hosts]
        self.ctl(
            "push", str(prefix), "--switch-ip", self.net["switch_ip"],
            "--switch-mac", self.net["switch_mac"], *hosts, election_id=1,
        )  # fmt: skip

    def _start_serve(self) -> None:
        args = [
            command("p4reduce-ctl"), "--grpc-addr", self.grpc_addr, "--election-id", "2",
            "--json", "serve", "--listen", f"{self.net['mgmt_ip']}:0",
            "--switch-ip", self.net["switch_ip"], "--switch-mac", self.net["switch_mac"],
            "--agg-port", str(AGG_PORT), "--slots", str(self.slots),
            "--join-timeout", f"{self.join_timeout:g}",
        ]  # fmt: skip
        if self.initial_timeout_ms is not None:
            args += ["--initial-timeout-ms", str(self.initial_timeout_ms)]
        self.serve = self._spawn("serve", args)
        line = self._wait_line(self.serve, "p4reduce-ctl serve", "ready")
        try:
            self.url = json.loads(line)["url"]
        except (ValueError, KeyError):
            raise StackError(f"p4reduce-ctl serve: unexpected ready line {line!r}") from None
        self._log(f"registration service at {self.url} (management network)")

    def set_loss(self, p: float) -> None:
        """Replace the loss filter on both ends of every data link (``topology.loss_filter``:
        drop probability ``p`` per frame and direction; 0 removes it), so one topology
        serves several loss rates."""
        for h in self.hosts:
            ns = ["nsenter", f"--net=/proc/{h.pid}/ns/net", "--"]
            for prefix, dev in ((ns, h.intf), ([], h.switch_intf)):
                self._replace_loss(prefix, dev, p)
        self.shape = replace(self.shape, loss=p)

    def _replace_loss(self, prefix: list[str], dev: str, p: float) -> None:
        """The loss filter on ``dev``'s egress (run through ``prefix``, e.g. nsenter)."""
        tc = [*prefix, "tc"]
        shown = subprocess.run([*tc, "qdisc", "show", "dev", dev], capture_output=True,
                               text=True).stdout  # fmt: skip
        if "clsact" not in shown:
            self._tc([*tc, "qdisc", "add", "dev", dev, "clsact"])
        subprocess.run([*tc, "filter", "del", "dev", dev, "egress"], capture_output=True)
        if p > 0:
            self._tc([*tc, "filter", "add", "dev", dev, "egress", "bpf", "da",
                      "bytecode", topology.loss_filter(p)])  # fmt: skip

    @staticmethod
    def _tc(args: list[str]) -> None:
        done = subprocess.run(args, capture_output=True, text=True)
        if done.returncode != 0:
            raise StackError(f"{' '.join(args)}: {last_line_of(done.stderr) or done.returncode}")

    # ------------------------------------------------------------------ workers
    def spawn_p4reduce(
        self, plan: Sequence[dict[str, Any]], *, job_id: int = JOB_ID, timeout: float = 120.0,
        hosts: Sequence[Host] | None = None,
    ) -> list[Proc]:  # fmt: skip
        """One ``p4reduce.testbed.worker`` per host, rank r in host r + 1, bound on the
        host's data address (so its traffic crosses the P4 switch). ``hosts``: a job on
        these hosts only (ranks in their order), beside others on the same switch."""
        self._seq += 1
        text = json.dumps(list(plan))
        procs = []
        members = list(self.hosts if hosts is None else hosts)
        env = {JOB_SECRET_ENV: new_secret()}  # the job's secret: environment, never argv
        for rank, h in enumerate(members):
            args = [
                sys.executable, "-m", "p4reduce.testbed.worker", "--url", self.url,
                "--job", str(job_id), "--rank", str(rank), "--n", str(len(members)),
                "--bind", h.ip, "--mac", h.mac, "--switch-port", str(h.switch_port),
                "--slots", str(self.slots), "--timeout", f"{timeout:g}", "--plan", text,
            ]  # fmt: skip
            procs.append(self.spawn_in(h, f"p4reduce{self._seq}-{rank}", args, env=env))
        return procs

    def spawn_p4reduce_jobs(
        self, jobs: Sequence[tuple[int, int, Sequence[dict[str, Any]]]], *, timeout: float = 120.0
    ) -> list[Proc]:
        """Several p4reduce jobs one after another, ``(job_id, n, plan)`` each on the first
        n hosts, with one ``jobs_worker`` process per host for all of them (rank i in host
        i + 1); the processes of the largest job's hosts."""
        self._seq += 1
        hosts = self.hosts[: max(n for _, n, _ in jobs)]
        # one secret for the batch's jobs (each registers with it): environment, never argv
        env = {JOB_SECRET_ENV: new_secret()}
        procs = []
        for i, h in enumerate(hosts):
            mine = [{"job": j, "rank": i, "n": n, "plan": list(plan)} for j, n, plan in jobs
                    if i < n]  # fmt: skip
            args = [
                sys.executable, "-m", "p4reduce.testbed.mininet.jobs_worker", "--url",
                self.url, "--host", str(i), "--bind", h.ip, "--mac", h.mac,
                "--switch-port", str(h.switch_port), "--slots", str(self.slots),
                "--timeout", f"{timeout:g}", "--jobs", json.dumps(mine),
            ]  # fmt: skip
            procs.append(
                self.spawn_in(
                    h, f"p4reduce{self._seq}-{i}", args, env={**env, **self._cpu_env(i, h)}
                )
            )
        return procs

    def _cpu_env(self, i: int, h: Host) -> dict[str, str]:
        """Where host i's worker reads its CPU windows (``testbed.cpu``): its data interface;
        rank 0 also the switch process and the machine."""
        env = {CPU_INTF_ENV: h.intf}
        if i == 0 and self.switch is not None:
            env[CPU_WATCH_ENV] = f"switch={self.switch.pid}"
        return env

    def spawn_gloo(
        self, plan: Sequence[dict[str, Any]], *, port: int = 29500, timeout: float = 120.0,
        hosts: Sequence[Host] | None = None,
    ) -> list[Proc]:  # fmt: skip
        """One gloo worker per host (``gloo_worker``): rendezvous at rank 0's management
        address, all-reduce traffic on the data interfaces, through the P4 switch.
        ``hosts``: a group of these hosts only (ranks in their order)."""
        self._seq += 1
        text = json.dumps(list(plan))
        members = list(self.hosts if hosts is None else hosts)
        master = f"{members[0].mgmt_ip}:{port}"
        procs = []
        for rank, h in enumerate(members):
            args = [
                sys.executable, "-m", "p4reduce.testbed.mininet.gloo_worker",
                "--master", master, "--rank", str(rank), "--n", str(len(members)),
                "--iface", h.intf, "--timeout", f"{timeout:g}", "--plan", text,
            ]  # fmt: skip
            procs.append(self.spawn_in(h, f"gloo{self._seq}-{rank}", args))
        return procs

    def watched(self) -> list[Proc | None]:
        """The parts whose death fails a wait (None: not started)."""
        return [self.switch, self.serve, self.driver]

    def wait(self, procs: Sequence[Proc], timeout: float) -> list[WorkerResult]:
        """Wait for the workers; StackError (the others stopped) as soon as one fails, the
        switch, the service or the topology dies, or the timeout passes."""
        t0 = time.monotonic()
        failure: str | None = None
        while True:
            for p in procs:
                if failed(p.popen):
                    failure = f"{p.name} failed: {p.error()}"
                    break
            if failure is None:
                for what in self.watched():
                    if what is not None and not what.alive():
                        failure = f"{what.name} exited unexpectedly: {what.error()}"
                        break
            if failure is None and not any(p.alive() for p in procs):
                break
            if failure is None and time.monotonic() - t0 > timeout:
                running = sum(p.alive() for p in procs)
                failure = f"timed out after {timeout:g} s ({running} of {len(procs)} still running)"
            if failure is not None:
                self._stop_processes(procs, grace=5.0)
                raise StackError(failure)
            time.sleep(0.05)
        results = []
        for p in procs:
            lines = []
            for text in p.stdout.read_text(errors="replace").splitlines():
                if text.strip().startswith("{"):
                    lines.append(json.loads(text))
            results.append(WorkerResult(len(results), p.popen.returncode, lines))
        return results


def last_line_of(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def make_workdir(out: Path) -> Path:
    """A fresh work directory for one run's logs and results, inside the output directory
    (``--out``), so that a run killed before it could clean up leaves it there, not in
    /tmp."""
    out.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="run-", dir=out))


__all__ = ["Host", "LinkShape", "MininetStack", "last_line", "make_workdir", "mininet_missing"]

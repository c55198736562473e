"""Where the CPU goes during a measured window: ``snapshot()`` before, ``window()`` after.

A worker of the Mininet testbed takes one snapshot before its timed calls and one after
them (``testbed.worker.run_plan``), and reports the difference on its last line:

- its own CPU time (``getrusage``: user and system, all threads);
- the packets and bytes its data interface moved (``/proc/self/net/dev``: the interface of
  the worker's own network namespace);
- its voluntary context switches (``ru_nvcsw``): the times it slept and was woken, each
  wakeup a cost to the waker too;
- where asked (rank 0 of the testbed), the CPU time of watched processes (the switch):
  ``/proc/PID/task/*/schedstat`` (nanoseconds, every thread), the user/system split of
  ``/proc/PID/stat`` and the voluntary context switches of ``/proc/PID/task/*/status``; and the whole machine's CPU time by kind from ``/proc/stat`` (user,
  system, softirq, irq, steal, idle) with the softirq counts of ``/proc/softirqs``.

Accounting on the kernels this runs on (tick-based, ``CONFIG_IRQ_TIME_ACCOUNTING`` off):
a softirq is charged to whatever task it interrupts, so the network stack's receive work
(veth, HTB, UDP and AF_PACKET delivery) appears both in the system-wide ``softirq`` figure
and in the system time of the processes (or the idle task) it ran on top of. The machine's
figures include every other process on it: on a shared machine, ``other`` (busy time that
neither the switch nor the workers account for) is mostly other people's load.

CPU times are meaningful on a loaded machine; wall times are not.
"""

from __future__ import annotations

import os
import resource
import time
from dataclasses import dataclass, field
from pathlib import Path

TICK = 1.0 / os.sysconf("SC_CLK_TCK")  # seconds per /proc/stat tick
STAT_KINDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
SOFTIRQ_KINDS = ("NET_RX", "NET_TX", "TIMER", "HRTIMER", "SCHED")


@dataclass(frozen=True)
class Snapshot:
    t: float  # time.monotonic()
    user: float  # this process, seconds
    sys: float
    link: tuple[int, int, int, int] | None  # rx packets, tx packets, rx bytes, tx bytes
    # ns, utime, stime, voluntary context switches (sleeps: each a wakeup by someone)
    procs: dict[str, tuple[int, int, int, int]] = field(default_factory=dict)
    stat: tuple[int, ...] | None = None  # /proc/stat's cpu line, ticks, STAT_KINDS order
    softirqs: dict[str, int] = field(default_factory=dict)  # counts summed over CPUs
    sleeps: int = 0  # this process's voluntary context switches (getrusage ru_nvcsw)


def link_counters(intf: str, text: str | None = None) -> tuple[int, int, int, int] | None:
    """(rx packets, tx packets, rx bytes, tx bytes) of ``intf`` in this network namespace."""
    if text is None:
        try:
            text = Path("/proc/self/net/dev").read_text()
        except OSError:
            return None
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if sep and name.strip() == intf:
            f = rest.split()
            return int(f[1]), int(f[9]), int(f[0]), int(f[8])
    return None


def proc_times(pid: int) -> tuple[int, int, int, int] | None:
    """(runtime ns over every thread, utime ticks, stime ticks, voluntary context switches
    over every thread) of process ``pid``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ns = sleeps = 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                ns += int((task / "schedstat").read_text().split()[0])
                for line in (task / "status").read_text().splitlines():
                    if line.startswith("voluntary_ctxt_switches:"):
                        sleeps += int(line.split()[1])
            except (OSError, ValueError, IndexError):
                pass  # a thread that just ended
    except OSError:
        return None
    # the command name (field 2) may hold spaces: count fields after its closing ')'
    f = stat.rpartition(")")[2].split()
    return ns, int(f[11]), int(f[12]), sleeps


def machine_stat(text: str | None = None) -> tuple[int, ...] | None:
    try:
        text = text if text is not None else Path("/proc/stat").read_text()
    except OSError:
        return None
    first = text.splitlines()[0].split()
    if first[0] != "cpu":
        return None
    return tuple(int(x) for x in first[1 : 1 + len(STAT_KINDS)])


def softirq_counts(text: str | None = None) -> dict[str, int]:
    try:
        text = text if text is not None else Path("/proc/softirqs").read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines()[1:]:
        name, _, rest = line.partition(":")
        if name.strip() in SOFTIRQ_KINDS:
            out[name.strip()] = sum(int(x) for x in rest.split())
    return out


def snapshot(intf: str | None = None, watch: dict[str, int] | None = None,
             machine: bool = False) -> Snapshot:  # fmt: skip
    ru = resource.getrusage(resource.RUSAGE_SELF)
    procs = {}
    for name, pid in (watch or {}).items():
        t = proc_times(pid)
        if t is not None:
            procs[name] = t
    return Snapshot(
        t=time.monotonic(), user=ru.ru_utime, sys=ru.ru_stime,
        link=link_counters(intf) if intf else None, procs=procs,
        stat=machine_stat() if machine else None,
        softirqs=softirq_counts() if machine else {}, sleeps=ru.ru_nvcsw,
    )  # fmt: skip


def window(a: Snapshot, b: Snapshot) -> dict[str, float]:
    """The JSON-able difference from ``a`` to ``b``: milliseconds of CPU, packets, bytes."""
    out: dict[str, float] = {
        "start": a.t,  # CLOCK_MONOTONIC seconds (e.g. for ``perf report --time``)
        "wall_ms": (b.t - a.t) * 1e3,
        "user_ms": (b.user - a.user) * 1e3,
        "sys_ms": (b.sys - a.sys) * 1e3,
        "sleeps": b.sleeps - a.sleeps,
    }
    if a.link and b.link:
        for key, x, y in zip(("rx_packets", "tx_packets", "rx_bytes", "tx_bytes"), a.link,
                             b.link, strict=True):  # fmt: skip
            out[key] = y - x
    for name, (ns, ut, st, sl) in b.procs.items():
        if name in a.procs:
            ns0, ut0, st0, sl0 = a.procs[name]
            ticks = (ut - ut0) + (st - st0)
            out[f"{name}_ms"] = (ns - ns0) / 1e6
            out[f"{name}_sleeps"] = sl - sl0
            # the tick samples only split the precise runtime into user and system
            out[f"{name}_sys_share"] = (st - st0) / ticks if ticks else 0.0
    if a.stat and b.stat:
        for kind, x, y in zip(STAT_KINDS, a.stat, b.stat, strict=True):
            out[f"machine_{kind}_ms"] = (y - x) * TICK * 1e3
    for kind, n in b.softirqs.items():
        out[f"softirq_{kind}"] = n - a.softirqs.get(kind, 0)
    return out


def combine(windows: list[dict[str, float]]) -> dict[str, float]:
    """Several windows of one worker (``window``, e.g. one per interleaved round) as one:
    counts and milliseconds added, the first start, the process ids of the first, and each
    process's system share weighted by its milliseconds. ``start`` + ``wall_ms`` is then no
    longer one stretch of time: ``cpu_window_start`` only locates the first round."""
    if not windows:
        return {}
    out: dict[str, float] = {}
    for w in windows:
        for key, v in w.items():
            if key == "start":
                out[key] = min(out.get(key, v), v)
            elif key.endswith("_pid"):
                out.setdefault(key, v)
            elif key.endswith("_sys_share"):
                continue
            else:
                out[key] = out.get(key, 0.0) + v
    for key in {k for w in windows for k in w if k.endswith("_sys_share")}:
        ms = key[: -len("_sys_share")] + "_ms"
        total = sum(w.get(ms, 0.0) for w in windows)
        out[key] = (
            sum(w[key] * w.get(ms, 0.0) for w in windows if key in w) / total if total else 0.0
        )
    return out


def per_call(rank_windows: list[dict[str, float]], calls: int) -> dict[str, float]:
    """The per-call figures of one point from its workers' windows (``window``) over
    ``calls`` timed calls: CPU milliseconds per call of the workers (sum, and the busiest),
    the watched processes and the machine by kind; frames per second on the busiest link."""
    if not rank_windows or calls <= 0:
        return {}
    c = float(calls)
    out: dict[str, float] = {}
    own = [w["user_ms"] + w["sys_ms"] for w in rank_windows]
    out["cpu_workers_ms"] = sum(own) / c
    out["cpu_worker_max_ms"] = max(own) / c
    out["cpu_workers_sys_ms"] = sum(w["sys_ms"] for w in rank_windows) / c
    out["sleeps_workers"] = sum(w.get("sleeps", 0) for w in rank_windows) / c
    walls = [w["wall_ms"] for w in rank_windows if w.get("wall_ms")]
    for key in ("rx_packets", "tx_packets"):
        rates = [w[key] / (w["wall_ms"] / 1e3) for w in rank_windows
                 if key in w and w.get("wall_ms")]  # fmt: skip
        if rates:
            out[f"link_{key[:2]}_fps"] = max(rates)
    first = rank_windows[0]  # rank 0 reads the machine and the watched processes
    if "start" in first:
        out["cpu_window_start"] = first["start"]
        out["cpu_window_ms"] = first["wall_ms"]
    for key, v in first.items():
        if key.endswith("_sys_share"):
            out[f"cpu_{key}"] = v
        elif key.endswith("_pid"):
            out[f"cpu_{key}"] = v  # which process it was (bench/testbed_profile.py)
        elif key.endswith("_sleeps"):
            out[f"sleeps_{key[: -len('_sleeps')]}"] = v / c
        elif key.endswith("_ms") and key not in ("wall_ms", "user_ms", "sys_ms"):
            out[f"cpu_{key}"] = v / c
    if "machine_idle_ms" in first and walls:
        busy = sum(first.get(f"machine_{k}_ms", 0.0) for k in STAT_KINDS
                   if k not in ("idle", "iowait", "steal"))  # fmt: skip
        out["cpu_machine_busy_ms"] = busy / c
        watched = sum(v for k, v in first.items() if k.endswith("_ms") and k not in
                      ("wall_ms", "user_ms", "sys_ms") and not k.startswith("machine_"))  # fmt: skip
        out["cpu_other_ms"] = (busy - watched - sum(own)) / c
        out["cpu_capacity_ms"] = (os.cpu_count() or 1) * first["wall_ms"] / c
    return out

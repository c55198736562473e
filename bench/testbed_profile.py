"""Where the switch's CPU goes in one Mininet scaling point: ``perf`` samples of the switch
process over exactly the timed calls, grouped by what they do.

    sudo .venv/bin/python bench/testbed_profile.py            # 8 workers, 100 Mbit/s, K = 1024
    sudo .venv/bin/python bench/testbed_profile.py --workers 4 --repeat 20

It runs ``perf record -a -g -k CLOCK_MONOTONIC`` (software cpu-clock event: it works in a VM
without a PMU) around ``p4reduce testbed -e scaling`` for one point, takes the CPU window of
the timed calls from the row (``cpu_window_start``, ``cpu_window_ms``: testbed/cpu.py,
CLOCK_MONOTONIC), and prints the share of the switch's samples in that window per group:
the generated engine's Accumulate control (the K register updates per packet), its parser
and deparser, the rest of the engine, the copies of emitted frames into the send batches
(libc memmove), the kernel's scheduler (waking the workers, sleeping), the kernel's packet
path (AF_PACKET receive and send, veth, HTB), the I/O loop. Beside it, the row's CPU
figures per call (switch, workers, softirq, other load). Shares and CPU times are
meaningful on a loaded machine; wall times are not. Needs root and ``perf``.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

SCHEDULER = {
    "_raw_spin_unlock_irqrestore", "finish_task_switch.isra.0", "__schedule", "schedule",
    "try_to_wake_up", "_raw_spin_unlock_irq", "ttwu_do_activate", "enqueue_task_fair",
    "dequeue_task_fair", "select_task_rq_fair", "__wake_up_common", "ep_poll_callback",
    "pick_next_task_fair", "update_curr", "psi_task_change", "__wake_up_sync_key",
}  # fmt: skip
LINE = re.compile(r"\s+([\d.]+)%\s+(\S+)\s+\[(.)\]\s+(\S+)")


def group(dso: str, kind: str, sym: str) -> str:
    if dso.startswith("p4r_"):
        if "Accumulate" in sym:
            return "engine: Accumulate (register updates)"
        if "Pars" in sym or "Deparser" in sym:
            return "engine: parser and deparser"
        return "engine: other"
    if dso.startswith("ioloop"):
        return "I/O loop"
    if dso.startswith("libc") and "mem" in sym:
        return "copies of emitted frames into send batches (memmove)"
    if kind == "k":
        return "kernel: scheduler (wakeups, sleeps)" if sym in SCHEDULER else (
            "kernel: packet path (AF_PACKET, veth, HTB, UDP)")  # fmt: skip
    return f"other: {dso}"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--bw", default="100")
    p.add_argument("--k", default="1024")
    p.add_argument("--repeat", type=int, default=30)
    p.add_argument("--elements", type=int, default=None)
    p.add_argument("--keep", metavar="DIR", help="keep perf.data and the rows in DIR")
    p.add_argument("--symbols", type=int, default=0, metavar="N",
                   help="also print the N symbols with the most samples")  # fmt: skip
    a = p.parse_args(argv)
    if shutil.which("perf") is None:
        print("testbed_profile: error: perf is not installed", file=sys.stderr)
        return 1
    p4reduce = Path(sys.executable).with_name("p4reduce")
    with tempfile.TemporaryDirectory(prefix="p4r-profile-") as scratch:
        tmp = a.keep or scratch
        Path(tmp).mkdir(parents=True, exist_ok=True)
        data = Path(tmp) / "perf.data"
        perf = subprocess.Popen(
            ["perf", "record", "-q", "-k", "CLOCK_MONOTONIC", "-e", "cpu-clock", "-F", "999",
             "-a", "-g", "-o", str(data)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            cmd = [str(p4reduce), "testbed", "-e", "scaling", "--workers", str(a.workers),
                   "--bw", a.bw, "--k", a.k, "--no-gloo", "--repeat", str(a.repeat), "--json",
                   "--out", str(Path(tmp) / "out")]  # fmt: skip
            if a.elements:
                cmd += ["--elements", str(a.elements)]
            run = subprocess.run(cmd, capture_output=True, text=True)
        finally:
            perf.send_signal(2)
            perf.wait(timeout=120)
        if run.returncode != 0:
            print(f"testbed_profile: error: {run.stderr.strip().splitlines()[-1:]}",
                  file=sys.stderr)  # fmt: skip
            return 1
        row = next(
            r for r in map(json.loads, run.stdout.splitlines()) if r["backend"] == "p4reduce"
        )
        t0, t1 = row["cpu_window_start"], row["cpu_window_start"] + row["cpu_window_ms"] / 1e3
        if "cpu_switch_pid" not in row:
            print("testbed_profile: error: the row names no switch process", file=sys.stderr)
            return 1
        rep = subprocess.run(
            ["perf", "report", "-i", str(data), "--time", f"{t0:.6f},{t1:.6f}", "--pid", str(int(row["cpu_switch_pid"])),
             "--sort", "dso,sym", "--stdio", "--no-children", "-g", "none", "--percentage",
             "relative"], capture_output=True, text=True,
        ).stdout  # fmt: skip
    shares: Counter[str] = Counter()
    top: list[str] = []
    for line in rep.splitlines():
        if (x := LINE.match(line)) is not None:
            shares[group(x[2], x[3], x[4])] += float(x[1])
            top.append(f"  {float(x[1]):5.1f} %  {x[4]} ({x[2]})")
    print(f"{a.workers} workers, {a.bw} Mbit/s, K = {a.k}: {row['calls']} timed calls, "
          f"{row['packets']:.0f} packets per call, median {row['seconds'] * 1e3:.1f} ms "
          f"(wall time: meaningful on a quiet machine only)")  # fmt: skip
    print("CPU ms per call: " + ", ".join(
        f"{k[4:]} {row[k]:.1f}" for k in ("cpu_switch_ms", "cpu_workers_ms",
        "cpu_workers_sys_ms", "cpu_machine_softirq_ms", "cpu_other_ms", "cpu_capacity_ms")
        if k in row))  # fmt: skip
    print(f"the switch's samples in the window, by what they do ({time.strftime('%H:%M')}):")
    for name, share in shares.most_common():
        print(f"  {share:5.1f} %  {name}")
    if a.symbols:
        print(f"the {a.symbols} symbols with the most samples:")
        print("\n".join(top[: a.symbols]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

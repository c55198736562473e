"""Where the time of a call goes on one worker's link: one Mininet scaling point, host 1's
data link watched from the switch's side with a packet socket, each timed call cut into
phases.

    sudo .venv/bin/python bench/testbed_timeline.py            # 8 workers, 100 Mbit/s, K = 1024
    sudo .venv/bin/python bench/testbed_timeline.py --workers 2 --json
    sudo .venv/bin/python bench/testbed_timeline.py --elements 262144   # 1 MiB calls

A float32 call starts with a priming exchange (docs/protocol.md: one header-only packet
per slot; a slot's data can go once every worker's priming for it reached the switch), then
streams its data packets at the link's rate, and ends when the last result comes back. Per
call, from the frames' kernel timestamps (SO_TIMESTAMPNS) on ``p4r-eth1``:

- ``start``: from host 1's first priming frame to its first data frame (the priming round
  trip: it waits for the slowest worker's primings);
- ``stream``: host 1's data frames, first to last, against the time they need at the link
  rate (a gap here means host 1 had nothing queued);
- ``tail``: from host 1's last data frame to the last result it gets (the other workers
  still sending);
- ``between``: from the last result of the previous call to this call's first priming
  frame (the worker's own time between calls).

The wall-clock figures mean something only on a quiet machine; the phases' proportions
also on a loaded one. Needs root (the packet socket, Mininet).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from p4reduce.testbed.mininet.runner import wire_frame_bytes

IFACE = "p4r-eth1"  # host 1's data link, the switch's end (testbed/mininet/topology.py)
SO_TIMESTAMPNS = 35
SO_RCVBUFFORCE = 33
PACKET_OUTGOING = 4
SMALL = 200  # bytes: header-only frames (priming and its results) are below, data above
SNAP = 256  # bytes kept of each frame (more than SMALL)


def capture(stop: threading.Event, frames: list[tuple[float, bool, int]]) -> None:
    """(kernel time, leaving toward host 1, frame length up to SNAP) of every frame on
    IFACE."""
    path = Path(f"/sys/class/net/{IFACE}/operstate")
    while not stop.is_set():
        if path.exists() and path.read_text().strip() == "up":
            break
        time.sleep(0.02)
    else:
        return
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.bind((IFACE, 3))
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 1 << 24)
    s.settimeout(0.2)
    with s:
        while not stop.is_set():
            try:
                # the first SNAP bytes are enough: a frame that fills them is a data frame
                data, anc, _, addr = s.recvmsg(SNAP, 256)
            except TimeoutError:
                continue
            except OSError:
                return  # the link went away with the topology
            frames.append((kernel_time(anc), addr[2] == PACKET_OUTGOING, len(data)))


def kernel_time(ancillary: list[tuple[int, int, bytes]]) -> float:
    """The frame's SO_TIMESTAMPNS (seconds), or now when the kernel gave none."""
    for _, kind, data in ancillary:
        if kind == SO_TIMESTAMPNS:
            sec, nsec = struct.unpack("qq", data[:16])
            return sec + nsec * 1e-9
    return time.time()


def phases(frames: list[tuple[float, bool, int]], line_s: float) -> list[dict[str, float]]:
    """The calls in the capture, each cut into phases (ms). ``line_s``: one data frame's
    time at the link rate."""
    up = [(t, n) for t, out, n in frames if not out]
    down = [(t, n) for t, out, n in frames if out]
    calls: list[dict[str, float]] = []
    prev_end: float | None = None
    i = 0
    while i < len(up):
        if up[i][1] >= SMALL:  # a call starts with its primings
            i += 1
            continue
        first_prime = up[i][0]
        j = i
        while j < len(up) and up[j][1] < SMALL:
            j += 1
        k = j
        while k < len(up) and up[k][1] >= SMALL:
            k += 1
        data = [t for t, _ in up[j:k]]
        if not data:
            break
        nxt = up[k][0] if k < len(up) else float("inf")
        results = [t for t, n in down if data[0] <= t < nxt and n >= SMALL]
        if results:
            end = results[-1]
            calls.append({
                "between_ms": (first_prime - prev_end) * 1e3 if prev_end else float("nan"),
                "start_ms": (data[0] - first_prime) * 1e3,
                "stream_ms": (data[-1] - data[0]) * 1e3,
                "stream_line_ms": (len(data) - 1) * line_s * 1e3,
                "tail_ms": (end - data[-1]) * 1e3,
                "call_ms": (end - first_prime) * 1e3,
                "data_frames": len(data),
            })  # fmt: skip
            prev_end = end
        i = k
    return calls


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--bw", type=float, default=100.0)
    p.add_argument("--k", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=15)
    p.add_argument(
        "--elements",
        type=int,
        default=None,
        help="float32 elements per call (default: the scaling experiment's)",
    )
    p.add_argument("--json", action="store_true", help="one JSON object per call")
    a = p.parse_args(argv)
    if os.geteuid() != 0:
        print("testbed_timeline: error: needs root (a packet socket and Mininet)", file=sys.stderr)
        return 1
    frames: list[tuple[float, bool, int]] = []
    stop = threading.Event()
    watcher = threading.Thread(target=capture, args=(stop, frames), daemon=True)
    watcher.start()
    p4reduce = Path(sys.executable).with_name("p4reduce")
    with tempfile.TemporaryDirectory(prefix="p4r-timeline-") as out:
        cmd = [str(p4reduce), "testbed", "-e", "scaling", "--workers", str(a.workers),
               "--bw", f"{a.bw:g}", "--k", str(a.k), "--repeat", str(a.repeat), "--no-gloo",
               "--json", "--out", out]  # fmt: skip
        if a.elements:
            cmd += ["--elements", str(a.elements)]
        run = subprocess.run(cmd, capture_output=True, text=True)
    stop.set()
    watcher.join(timeout=5)
    if run.returncode != 0:
        print(f"testbed_timeline: error: {run.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return 1
    calls = phases(sorted(frames), wire_frame_bytes(a.k) * 8 / (a.bw * 1e6))
    calls = calls[-a.repeat :]  # the timed calls (the warm-up call came first)
    if not calls:
        print("testbed_timeline: error: no call seen on the link", file=sys.stderr)
        return 1
    if a.json:
        for c in calls:
            print(json.dumps(c))
        return 0
    print(f"{a.workers} workers, {a.bw:g} Mbit/s, K = {a.k}: host 1's link, {len(calls)} calls, "
          f"medians in ms (wall time: meaningful on a quiet machine only)")  # fmt: skip
    for key, what in (
        ("between_ms", "between calls (last result -> first priming)"),
        ("start_ms", "start (first priming -> first data frame)"),
        ("stream_ms", "stream (first -> last data frame)"),
        ("stream_line_ms", "  the same frames at the link rate"),
        ("tail_ms", "tail (last data frame -> last result)"),
        ("call_ms", "call on the link (first priming -> last result)"),
    ):
        vals = [c[key] for c in calls if c[key] == c[key]]
        if vals:
            print(f"  {statistics.median(vals):7.1f}  {what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How fast one worker's host side runs: the protocol core, the runner and the UDP
transport against a reflector process (a one-worker switch stand-in that answers each
packet at once), so the switch's own cost is out of the picture. Prints packets per
second (sent + received) and the worker's CPU time per packet.

    .venv/bin/python tests/host_e2e/bench_host.py [M] [SLOTS]
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from p4reduce.host import UdpTransport, run_call
from p4reduce.host.protocol import Done, Session
from p4reduce.host.wire import MSG_DENSE, MSG_SPARSE

KEY = 0x5EC2E7  # the job key every packet carries


def main() -> None:
    m = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_003
    slots = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    here = Path(__file__).parent
    proc = subprocess.Popen(
        [sys.executable, str(here / "reflector.py")], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        host, port = proc.stdout.readline().split()[1].split(":")
        rng = np.random.default_rng(0)
        print(f"M = {m:,}, {slots} slots, n = 1, reflector process")
        for name, msg, x in (
            ("dense float32", MSG_DENSE, rng.standard_normal(m).astype(np.float32)),
            ("dense int32", MSG_DENSE, rng.integers(-1000, 1000, m).astype(np.int32)),
            ("sparse float32 100%", MSG_SPARSE, rng.standard_normal(m).astype(np.float32)),
        ):
            ses = Session(rank=0, n=1, job_id=1, job_key=KEY, slots=slots, msg_type=msg)
            with UdpTransport((host, int(port))) as t:
                run_call(ses.allreduce(x[:100_000]), t)  # warm up
                best = None
                for _ in range(3):
                    c0, t0 = time.process_time(), time.perf_counter()
                    end = run_call(ses.allreduce(x), t)
                    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
                    assert isinstance(end, Done)
                    if best is None or wall < best[0]:
                        best = (wall, cpu, end.stats)
            wall, cpu, st = best
            pkts = st.packets_sent + st.packets_received
            print(
                f"{name:20s} {wall * 1e3:7.1f} ms  {pkts / wall / 1e3:6.1f} k packets/s "
                f"(sent + received)  {cpu / pkts * 1e6:5.1f} us CPU per packet  "
                f"{m * 32 / wall / 1e9:5.2f} Gbit/s goodput"
            )
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()

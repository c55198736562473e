"""One embedded switch (Device + P4Runtime server) as a process, driven over stdin/stdout.

The p4runtime-shell scenarios run in the shell's own virtual environment (old protobuf, its
pins), where p4reduce is not installed: as a user runs the shell against a switch. This
process runs with p4reduce's Python and gives the scenarios what they check besides
P4Runtime: frames injected on a port and what came out, and whether a pipeline is loaded.

    python switch_agent.py CPU_PORT     -> prints ``ready PORT``, then one JSON reply per line

Requests, one JSON object per line: ``{"op": "inject", "port": P, "frame": HEX}`` -> the
(port, hex) pairs that came out; ``{"op": "sent"}`` -> frames sent by packet-out so far;
``{"op": "has_pipeline"}`` -> bool; ``{"op": "stop"}`` -> stops the server and exits.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from p4reduce.switch.p4runtime import Device, P4RuntimeServer


def main(argv: list[str]) -> int:
    sent: list[tuple[int, bytes]] = []
    device = Device(1, cpu_port=int(argv[1]), transmit=lambda p, f: sent.append((p, f)))
    server = P4RuntimeServer(device, "127.0.0.1:0")
    print(f"ready {server.start()}", flush=True)
    try:
        for line in sys.stdin:
            req = json.loads(line)
            op = req["op"]
            reply: Any
            if op == "inject":
                out = device.inject(int(req["port"]), bytes.fromhex(req["frame"]))
                reply = [[p, f.hex()] for p, f in out]
            elif op == "sent":
                reply = [[p, f.hex()] for p, f in sent]
            elif op == "has_pipeline":
                reply = device.state is not None
            elif op == "stop":
                break
            else:
                reply = {"error": f"unknown op {op!r}"}
            print(json.dumps(reply), flush=True)
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Interpreter speed: packets per second through the embedded v1model switch, in process.

Runs, with no I/O, (a) an IPv4 LPM router with three tables (``bench/programs/ipv4_lpm.p4``,
1,000 random prefixes) and (b) a generated program that reads, adds and writes 64 32-bit
registers per packet (the shape of the aggregation program), and, as a baseline measured in
the same run, a loop that only parses the same packet bytes with ``struct``. The ratios to
the baseline are what compare across machines. Targets on one core: (a) >= 20,000 pps,
(b) >= 10,000 pps.

    python bench/interpreter.py [--packets N] [--repeat R] [--json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import struct
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.matches import Exact, Lpm
from p4reduce.switch.interp.switch import V1Switch
from p4reduce.switch.native.select import make_switch

# BMv2's own published figure for simple_switch running its simple router with an optimised
# build (behavioral-model's performance notes): printed as a reference, not measured here.
BMV2_SIMPLE_ROUTER_PPS = 80_000

HERE = Path(__file__).resolve().parent
REGISTERS = 64


def ipv4_packet(dst: int, payload: int = 64) -> bytes:
    eth = bytes.fromhex("0000000000010000000000020800")
    total = 20 + 8 + payload
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        total,
        1,
        0,
        64,
        17,
        0,
        bytes([1, 2, 3, 4]),
        dst.to_bytes(4, "big"),
    )
    return eth + ip + struct.pack("!HHHH", 1, 2, 8 + payload, 0) + b"x" * payload


def router() -> tuple[V1Switch, bytes, Callable[[bytes], object]]:
    sw = V1Switch(load_pipeline(HERE / "programs" / "ipv4_lpm.p4"))
    _SOURCES[id(sw.pipeline)] = HERE / "programs" / "ipv4_lpm.p4"
    tables = sw.pipeline.tables
    rng = random.Random(1)
    lpm = tables["ingress.ipv4_lpm"]
    while len(lpm.entries) < 1000:
        plen = rng.choice((8, 16, 24, 32))
        value = rng.getrandbits(32) & (((1 << plen) - 1) << (32 - plen))
        if value >> 24 != 10 and lpm.find((Lpm(value, plen),), 0) is None:
            lpm.add_entry([Lpm(value, plen)], "ingress.set_nhop", [len(lpm.entries) % 64, 1])
    lpm.add_entry([Lpm(0x0A000000, 8)], "ingress.set_nhop", [7, 3])
    for i in range(64):
        tables["ingress.forward"].add_entry([Exact(i)], "ingress.set_dmac", [0x020000000000 + i])
    for port in range(16):
        tables["egress.send_frame"].add_entry(
            [Exact(port)], "egress.rewrite_mac", [0x0A0000000000 + port]
        )
    packet = ipv4_packet(0x0A010203)

    def parse(data: bytes) -> object:  # the baseline: unpack the same headers, nothing else
        return struct.unpack_from("!6s6sHBBHHHBBH4s4s", data)

    return sw, packet, parse


def register_program(n: int = REGISTERS) -> str:
    fields = "\n".join(f"    bit<32> v{i};" for i in range(n))
    regs = "\n".join(f"    register<bit<32>>(8192) r{i};" for i in range(n))
    body = "\n".join(
        f"        r{i}.read(x, idx); x = x + hdr.agg.v{i}; r{i}.write(idx, x); hdr.agg.v{i} = x;"
        for i in range(n)
    )
    return f"""#include <core.p4>
#include <v1model.p4>
header agg_t {{
    bit<32> slot;
{fields}
}}
struct headers_t {{ agg_t agg; }}
struct metadata_t {{ }}
parser P(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.agg); transition accept; }}
}}
control V(inout headers_t hdr, inout metadata_t meta) {{ apply {{ }} }}
control I(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {{
{regs}
    apply {{
        bit<32> x;
        bit<32> idx = hdr.agg.slot;
{body}
        sm.egress_spec = 1;
    }}
}}
control E(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout headers_t hdr, inout metadata_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers_t hdr) {{ apply {{ pkt.emit(hdr.agg); }} }}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def registers() -> tuple[V1Switch, bytes, Callable[[bytes], object]]:
    tmp = Path(tempfile.mkdtemp(prefix="p4reduce-bench-"))
    path = tmp / "registers64.p4"
    path.write_text(register_program())
    sw = V1Switch(load_pipeline(path))
    _SOURCES[id(sw.pipeline)] = path
    packet = struct.pack(f"!I{REGISTERS}I", 5, *range(REGISTERS))
    fmt = struct.Struct(f"!I{REGISTERS}I")
    return sw, packet, fmt.unpack_from


def native_rates(sw: V1Switch, packet: bytes, packets: int, repeat: int) -> dict[str, object]:
    """The same program on the native engine, built from the same pipeline's program text.

    The Python switch's pipeline is rebuilt for the native engine (it takes over the control
    plane objects it is given), with the same entries copied over.
    """
    pipeline = sw.pipeline
    nsw = make_switch(_rebuild(pipeline), "native", notice=None)
    if nsw.engine != "native":
        return {"native_pps": None, "native_batch_pps": None}
    fresh = V1Switch(_rebuild(pipeline))  # the interpreter from the same state, to compare
    for name, t in pipeline.tables.items():
        for target in (nsw, fresh):
            nt = target.pipeline.tables[name]
            for e in t.entries:
                if not e.is_const:
                    nt.add_entry(list(e.matches), e.action, list(e.args), e.priority or None)
    if nsw.process(1, packet) != fresh.process(1, packet):
        raise SystemExit("the native engine disagrees with the interpreter on the bench packet")
    one = rate(lambda: nsw.process(1, packet), packets, repeat)
    # the native batch API: process_batch, 1,000 packets per call into C
    batch = [(1, packet)] * 1000
    rates, cpu_rates = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(max(packets // 1000, 1)):
            nsw.process_batch(batch)
        done = max(packets // 1000, 1) * 1000
        rates.append(done / (time.perf_counter() - t0))
        cpu_rates.append(done / max(time.process_time() - c0, 1e-9))
    return {
        "native_pps": round(one),
        "native_batch_pps": round(statistics.median(rates)),
        "native_batch_cpu_pps": round(statistics.median(cpu_rates)),
    }


_SOURCES: dict[int, Path] = {}


def _rebuild(pipeline: object) -> object:
    return load_pipeline(_SOURCES[id(pipeline)])


def rate(fn: Callable[[], object], packets: int, repeat: int) -> float:
    """Median packets per second over ``repeat`` runs of ``packets`` calls; the median per
    CPU second of this process goes to CPU_RATE[0] (the wall clock of a loaded machine counts
    other processes' time too)."""
    rates, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(packets):
            fn()
        rates.append(packets / (time.perf_counter() - t0))
        cpu.append(packets / max(time.process_time() - c0, 1e-9))
    CPU_RATE[0] = statistics.median(cpu)
    return statistics.median(rates)


CPU_RATE = [0.0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packets", type=int, default=20000, help="packets per run (default 20000)")
    ap.add_argument("--repeat", type=int, default=5, help="runs per figure; the median is kept")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    results = {}
    for name, setup, target in (
        ("ipv4_lpm_3_tables", router, 20000),
        ("registers_64x32", registers, 10000),
    ):
        sw, packet, parse = setup()
        if not sw.process(1, packet):
            print(f"{name}: the benchmark packet was dropped; the setup is broken", file=sys.stderr)
            return 1
        pps = rate(lambda sw=sw, packet=packet: sw.process(1, packet), args.packets, args.repeat)
        cpu_pps = CPU_RATE[0]
        base = rate(lambda parse=parse, packet=packet: parse(packet), args.packets * 5, args.repeat)
        native = native_rates(sw, packet, args.packets, args.repeat)
        results[name] = {
            **native,
            "pps": round(pps),
            "cpu_pps": round(cpu_pps),
            "baseline_struct_parse_pps": round(base),
            "ratio_to_baseline": round(pps / base, 4),
            "target_pps": target,
            "meets_target": pps >= target,
        }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        f"{'program':<22} {'packets/s':>10} {'struct parse/s':>15} {'ratio':>8} {'target':>8}"
        f" {'native/s':>10} {'native batch/s':>15} {'native/python':>14} {'(CPU time)':>10}"
    )
    for name, r in results.items():
        if r["native_pps"] is None:
            native = "  native engine not available"
        else:
            native = (
                f" {r['native_pps']:>10,} {r['native_batch_pps']:>15,} "
                f"{r['native_batch_pps'] / r['pps']:>13.1f}x"
                f" {r['native_batch_cpu_pps'] / r['cpu_pps']:>9.1f}x"
            )
        print(
            f"{name:<22} {r['pps']:>10,} {r['baseline_struct_parse_pps']:>15,} "
            f"{r['ratio_to_baseline']:>8.4f} {r['target_pps']:>8,}"
            f"{'' if r['meets_target'] else '  (below target)'}{native}"
        )
    print(
        "(native batch/s: the native batch API, process_batch, 1,000 packets per call into C;"
        " native/python: batch over the interpreter's packets/s of the same run, and the same"
        " ratio per CPU second of this process, which other processes' load does not inflate)"
    )
    print(
        f"reference: BMv2 simple_switch, simple router, optimised build: about "
        f"{BMV2_SIMPLE_ROUTER_PPS:,} packets/s (published figure, not measured here)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

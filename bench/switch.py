"""Switch-process speed: aggregation packets/s of ``p4reduce-switch`` against the kernel's
floor, packets/s through the loopback UDP adapter and P4Runtime writes/s.

- aggregation: ``p4reduce-switch`` as a process (the local stack: dense.p4 with K elements,
  N workers registered through the controller) fed by a batched C load generator
  (bench/c/reflector.c, ``client``) with one window of slots in flight per worker; baseline:
  the same client against the C reflector (``serve``), which does the switch's receives and
  multicast sends with recvmmsg/sendmmsg and no P4 (the kernel's floor here). One row per
  engine: ``--engine python|native`` when p4reduce-switch offers the option, else its default;
  and where the kernel has UDP GSO/GRO a second row per engine (``ENGINE_gso``) with the
  client and the reflector on it (reflector.c -g: the GSO floor).

The rest runs in this process on 127.0.0.1 (the switch's data-plane thread, its UDP adapter
and its gRPC server), with same-run baselines so the ratios compare across machines:

- forwarding: the port-to-port program (tests/process/fwd.p4) relays datagrams from peer A
  to peer B through the adapter, 32 in flight; baseline: a plain Python UDP relay thread
  (recvfrom, sendto) measured the same way.
- P4Runtime: table inserts with one update per Write RPC and in batches of 100; baseline: a
  no-op RPC (Capabilities) on the same channel.

And BMv2 side by side (bench/sidebyside.py; root): aggregation packets/s of dense.p4 at each
K and port-to-port forwarding, on veth pairs with one raw-socket load generator, for a C
floor (the baseline of every ratio), ``p4reduce-switch --engine native`` and BMv2's
``simple_switch_perf`` and ``simple_switch``, all in the same run. Without root, a C
compiler or BMv2, one line says what was left out.

    python bench/switch.py [--packets N] [--writes N] [--agg-workers N] [--agg-k K]
        [--agg-rounds R] [--engines E,E] [--bmv2-ks K,K] [--bmv2-default-ks K,K]
        [--bmv2-repeat R] [--bmv2-seconds S]
        [--only aggregation,forwarding,p4runtime,bmv2] [--json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import floor
import grpc
import sidebyside
from google.protobuf import text_format
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.interp.matches import Exact
from p4reduce.switch.p4runtime import Device, P4RuntimeServer
from p4reduce.switch.ports import UdpAdapter
from p4reduce.switch.process.dataplane import Dataplane

from p4reduce.proto import p4info_pb2, p4runtime_pb2, p4runtime_pb2_grpc

PROGRAM = Path(__file__).resolve().parents[1] / "tests" / "process" / "fwd.p4"
WINDOW = 32


def udp() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
    s.settimeout(5)
    return s


def relay_rate(a: socket.socket, b: socket.socket, target: tuple[str, int], n: int) -> float:
    """Datagrams/s from a to b through ``target``, keeping WINDOW in flight."""
    payload = b"x" * 64
    sent = got = 0
    t0 = time.perf_counter()
    while got < n:
        while sent < n and sent - got < WINDOW:
            a.sendto(payload, target)
            sent += 1
        b.recvfrom(2048)
        got += 1
    return n / (time.perf_counter() - t0)


def echo_baseline(n: int) -> float:
    relay = udp()
    a, b = udp(), udp()
    stop = threading.Event()

    def run() -> None:
        relay.settimeout(0.2)
        while not stop.is_set():
            try:
                data, _ = relay.recvfrom(2048)
            except TimeoutError:
                continue
            relay.sendto(data, b.getsockname())

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        return relay_rate(a, b, relay.getsockname(), n)
    finally:
        stop.set()
        t.join()
        for s in (relay, a, b):
            s.close()


class Rig:
    """An in-process switch: device, data plane over a UDP adapter, P4Runtime server."""

    def __init__(self, tmp: Path) -> None:
        info = tmp / "fwd.p4info.txtpb"
        assert p4c_main([str(PROGRAM), "-o", str(tmp), "--p4runtime-files", str(info)]) == 0
        self.info = text_format.Parse(info.read_text(), p4info_pb2.P4Info())
        self.a, self.b = udp(), udp()
        self.device = Device(1)
        self.device.load_file(tmp / "fwd.json", info)
        peers = {1: self.a.getsockname(), 2: self.b.getsockname()}
        self.adapter = UdpAdapter(("127.0.0.1", 0), peers)
        self.dataplane = Dataplane(self.device, dict(self.adapter.ports))
        self.server = P4RuntimeServer(self.device, "127.0.0.1:0")
        self.port = self.server.start()
        self.dataplane.start()

    def close(self) -> None:
        self.server.stop(grace=1)
        self.dataplane.stop()
        self.a.close()
        self.b.close()


def table_ids(info: p4info_pb2.P4Info) -> tuple[int, int, int, int]:
    t = next(t for t in info.tables if t.preamble.name == "I.fwd")
    a = next(x for x in info.actions if x.preamble.name == "I.to_port")
    return t.preamble.id, t.match_fields[0].id, a.preamble.id, a.params[0].id


def update(
    ids: tuple[int, int, int, int], key: int, port: int, kind: int = p4runtime_pb2.Update.INSERT
) -> p4runtime_pb2.Update:
    tid, fid, aid, pid = ids
    u = p4runtime_pb2.Update(type=kind)
    e = u.entity.table_entry
    e.table_id = tid
    m = e.match.add()
    m.field_id = fid
    m.exact.value = key.to_bytes(2, "big")
    e.action.action.action_id = aid
    p = e.action.action.params.add()
    p.param_id = pid
    p.value = bytes([port])
    return u


def p4runtime_rates(rig: Rig, n: int) -> dict[str, float]:
    ids = table_ids(rig.info)
    with grpc.insecure_channel(f"127.0.0.1:{rig.port}") as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        done = threading.Event()

        def requests() -> Iterator[p4runtime_pb2.StreamMessageRequest]:
            r = p4runtime_pb2.StreamMessageRequest()
            r.arbitration.device_id = 1
            r.arbitration.election_id.low = 1
            yield r
            done.wait(300)

        stream = stub.StreamChannel(requests())
        next(stream)
        try:

            def write(updates: list[p4runtime_pb2.Update]) -> None:
                req = p4runtime_pb2.WriteRequest(device_id=1, updates=updates)
                req.election_id.low = 1
                stub.Write(req, timeout=30)

            def timed(fn: Callable[[], None], count: int) -> float:
                t0 = time.perf_counter()
                fn()
                return count / (time.perf_counter() - t0)

            noop = timed(
                lambda: [stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()) for _ in range(n)],
                n,
            )
            # the key is 9 bits: alternate inserting and deleting keys 100..299
            ins, dele = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.DELETE
            singles = [
                update(ids, 100 + (k // 2) % 200, 2, ins if k % 2 == 0 else dele) for k in range(n)
            ]
            single = timed(lambda: [write([u]) for u in singles], n)
            batches = []
            for b in range(n // 100):
                kind = ins if b % 2 == 0 else dele
                batches.append([update(ids, 100 + k, 2, kind) for k in range(100)])
            batched = timed(lambda: [write(b) for b in batches], len(batches) * 100)
        finally:
            done.set()
            stream.cancel()
    return {"noop_rpc_per_s": noop, "writes_single_per_s": single, "writes_batched_per_s": batched}


def join_job(stack: Any, workers: int, slots: int) -> tuple[list[Any], list[str]]:
    """Register job 1's workers (rank r on the stack's socket r) as real sessions do, so the
    switch accepts their packets; the sessions and any errors."""
    from p4reduce.controller.credentials import new_secret
    from p4reduce.host.api import AllreduceSession

    sessions: list[Any] = [None] * workers
    errors: list[str] = []
    secret = new_secret()  # the job's, shared by its ranks

    def join(rank: int) -> None:
        try:
            sessions[rank] = AllreduceSession.join(
                stack.url, 1, rank, workers, sock=stack.sockets[rank].dup(),
                switch_port=rank + 1, slots=slots, timeout=60, secret=secret,
            )  # fmt: skip
        except Exception as err:  # noqa: BLE001 - reported by the caller
            errors.append(f"rank {rank}: {err}")

    threads = [threading.Thread(target=join, args=(r,)) for r in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sessions, errors


def aggregation_rates(
    workers: int, k: int, rounds: int, slots: int, engines: list[str | None], repeat: int = 3
) -> dict[str, float | str]:
    """Aggregation packets/s into p4reduce-switch per engine and into the C reflector: the
    best of ``repeat`` runs each, the reflector's interleaved with the engine's (this
    machine's load drifts; the best run is the one least disturbed by it). ``rounds`` is
    rounded up to whole cycles of both sets of every slot, so that runs follow each other
    on the same switch with the slots' sets where the packets expect them."""
    from p4reduce.testbed.local import LocalStack

    results: dict[str, float | str] = {}
    cycle = 2 * slots
    rounds = -(-rounds // cycle) * cycle

    def reflector_pps(gso: bool) -> float:
        socks = floor.worker_sockets(workers)
        try:
            with floor.reflector([s.getsockname() for s in socks], gso=gso) as addr:
                packets = floor.dense_packets(workers, 1, slots, k)
                r = floor.run_client(addr, socks, packets, rounds, slots, gso=gso)
            return r["packets_in"] / r["seconds"]
        finally:
            for s in socks:
                s.close()

    offloads = [False, True] if floor.gso_available() else [False]
    for engine in engines:
        extra = ["--engine", engine] if engine else []
        with LocalStack(workers, "dense", k=k, slots=slots, switch_args=extra) as stack:
            sessions, errors = join_job(stack, workers, slots)
            try:
                if errors:
                    raise RuntimeError(f"joining the job failed: {errors[0]}")
                first = sessions[0]
                assert first is not None
                packets = floor.dense_packets(
                    workers, first.job_id, slots, k, first.session.job_key
                )
                for gso in offloads:  # per datagram; then UDP GSO/GRO (client -g, reflector -g)
                    label = (engine or "default") + ("_gso" if gso else "")
                    floor_best = switch_best = 0.0
                    for _ in range(repeat):
                        floor_best = max(floor_best, reflector_pps(gso))
                        try:
                            r = floor.run_client(
                                first.switch, stack.sockets, packets, rounds, slots, gso=gso
                            )
                        except RuntimeError as err:
                            results[f"switch_{label}_pps"] = f"failed: {err}"
                            break
                        switch_best = max(switch_best, r["packets_in"] / r["seconds"])
                        results[f"switch_{label}_pps"] = switch_best
                    results[f"reflector_{label}_pps"] = floor_best or reflector_pps(gso)
            finally:
                for ses in sessions:
                    if ses is not None:
                        with contextlib.suppress(Exception):  # the stack stops anyway
                            ses.close()
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packets", type=int, default=20000, help="datagrams per figure")
    ap.add_argument("--writes", type=int, default=1000, help="table writes per figure (>= 100)")
    ap.add_argument("--agg-workers", type=int, default=4, help="aggregation: workers (4)")
    ap.add_argument("--agg-k", type=int, default=64, help="aggregation: K, 64/256/1024 (64)")
    ap.add_argument("--agg-rounds", type=int, default=5000, help="aggregation: packets per worker")
    ap.add_argument("--agg-slots", type=int, default=64, help="aggregation: slots = window (64)")
    ap.add_argument("--agg-repeat", type=int, default=3, help="aggregation: best of R runs (3)")
    ap.add_argument("--engines", default=None, help="p4reduce-switch engines (default: all)")
    ap.add_argument("--bmv2-ks", default="64,256,1024", help="BMv2 side by side: K values")
    ap.add_argument(
        "--bmv2-default-ks",
        default="64",
        help="K values for BMv2's default build too (64; it needs ~12 s a run at 1024)",
    )
    ap.add_argument("--bmv2-repeat", type=int, default=3, help="BMv2 side by side: median of R")
    ap.add_argument("--bmv2-seconds", type=float, default=0.3, help="BMv2 side by side: s a run")
    ap.add_argument(
        "--only", default="aggregation,forwarding,p4runtime,bmv2", help="figures to run"
    )
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    if "bmv2" in only:
        side_by_side(args)
    agg: dict[str, float | str] = {}
    if "aggregation" in only:
        engines = floor.switch_engines() if args.engines is None else args.engines.split(",")
        agg = aggregation_rates(args.agg_workers, args.agg_k, args.agg_rounds, args.agg_slots,
                                engines, args.agg_repeat)  # fmt: skip
    if not only & {"forwarding", "p4runtime"}:
        return print_aggregation(agg, args)
    base = echo_baseline(args.packets)
    with tempfile.TemporaryDirectory() as tmp:
        rig = Rig(Path(tmp))
        try:
            with rig.device.lock:  # the forwarding entry 1 -> 2, set up directly
                table = rig.device.switch.pipeline.tables["I.fwd"]
                table.add_entry([Exact(1)], "I.to_port", [2])
            pps = relay_rate(rig.a, rig.b, rig.adapter.listen, args.packets)
            writes = p4runtime_rates(rig, max(100, args.writes))
        finally:
            rig.close()
    print_aggregation(agg, args)
    results = {
        "forwarding_pps": round(pps),
        "udp_relay_baseline_pps": round(base),
        "forwarding_ratio": round(pps / base, 4),
        **{k: round(v) for k, v in writes.items()},
        "writes_single_ratio": round(writes["writes_single_per_s"] / writes["noop_rpc_per_s"], 4),
        "writes_batched_ratio": round(writes["writes_batched_per_s"] / writes["noop_rpc_per_s"], 4),
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        f"forwarding through the UDP adapter: {results['forwarding_pps']:>9,} packets/s "
        f"(plain UDP relay {results['udp_relay_baseline_pps']:,}/s, ratio {results['forwarding_ratio']})"
    )
    print(
        f"P4Runtime writes, one per RPC:      {results['writes_single_per_s']:>9,} /s "
        f"(no-op RPC {results['noop_rpc_per_s']:,}/s, ratio {results['writes_single_ratio']})"
    )
    print(
        f"P4Runtime writes, 100 per RPC:      {results['writes_batched_per_s']:>9,} /s "
        f"(ratio to the no-op RPC {results['writes_batched_ratio']})"
    )
    return 0


def side_by_side(args: argparse.Namespace) -> None:
    """The BMv2 side by side (bench/sidebyside.py), printed as a table or as JSON."""
    ks = [int(k) for k in args.bmv2_ks.split(",") if k]
    default_ks = [int(k) for k in args.bmv2_default_ks.split(",") if k]
    try:
        rows, note = sidebyside.run(ks, args.agg_workers, args.agg_slots, args.bmv2_repeat,
                                    args.bmv2_seconds, True, default_ks)  # fmt: skip
    except sidebyside.Unavailable as err:
        rows, note = [], f"BMv2 side by side skipped: {err}"
    figures = sidebyside.figures(rows)
    if args.json:
        print(json.dumps({"bmv2_side_by_side": {"rows": figures, "note": note}}, indent=2))
        return
    if figures:
        print(sidebyside.table(figures, args.agg_workers, args.agg_slots, args.bmv2_repeat))
    if note:
        print(note)


def print_aggregation(agg: dict[str, float | str], args: argparse.Namespace) -> int:
    if not agg:
        return 0
    if args.json:
        print(json.dumps({"aggregation": agg}, indent=2))
        return 0
    print(
        f"aggregation into p4reduce-switch (dense.p4, K = {args.agg_k}, {args.agg_workers} "
        f"workers, {args.agg_slots} slots in flight, {args.agg_rounds} packets per worker; "
        f"best of {args.agg_repeat} runs, the C reflector's interleaved with each engine's; "
        "ENGINE_gso: the client and the reflector on UDP GSO/GRO, the switch with its "
        "default offload):"
    )
    for key, value in agg.items():
        if not key.startswith("switch_"):
            continue
        name = key[len("switch_") : -len("_pps")]
        floor_pps = float(agg[f"reflector_{name}_pps"])
        if isinstance(value, str):
            print(f"  p4reduce-switch, {name:<12} {value}")
        else:
            print(f"  p4reduce-switch, {name:<12} {value:>9,.0f} packets/s in; C reflector "
                  f"{floor_pps:>9,.0f}/s; ratio to the floor {value / floor_pps:.3f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

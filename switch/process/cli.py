"""``p4reduce-switch``: the embedded v1model switch as a process, like simple_switch_grpc.

    p4reduce-switch [PROG.p4 | PROG.json | --no-p4] [-i N@IFACE] [-i N@udp:HOST:PORT]
                    [--udp-listen HOST:PORT] [--grpc-server-addr ADDR] [--device-id D]
                    [--cpu-port P] [--log-level LEVEL]

Runs until SIGINT or SIGTERM, then stops the gRPC server, the data-plane thread and every
port, and exits 0. Errors in the command line or the program: one line, exit 1.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from p4reduce import netaddr
from p4reduce.cli_common import OneLineArgumentParser, StopSignals

from ..frontend.cli import in_deep_thread
from ..frontend.compiler import CompileOptions, compile_file
from ..frontend.errors import CompileError
from ..p4runtime.tls import ServerTls
from ..ports import DEFAULT_LISTEN, UdpPort, open_ports, parse_host_port, parse_port_spec
from .dataplane import make_dataplane
from .portinfo import UnknownSenderReport, port_map

PROG = "p4reduce-switch"
log = logging.getLogger("p4reduce.switch")


def _parser() -> argparse.ArgumentParser:
    p = OneLineArgumentParser(
        prog=PROG,
        description="The embedded v1model switch with a P4Runtime server (simple_switch_grpc's "
        "conventions). Ports: -i N@IFACE (raw frames, root) or -i N@udp:HOST:PORT (the "
        "loopback UDP adapter; docs/ports.md).",
    )
    p.add_argument(
        "program", nargs="?", help="PROG.p4 (compiled here) or PROG.json (p4reduce-p4c -o)"
    )
    p.add_argument(
        "--no-p4", action="store_true", help="start without a program; wait for one over P4Runtime"
    )
    p.add_argument(
        "-i",
        "--interface",
        dest="ports",
        action="append",
        default=[],
        metavar="N@IFACE",
        help="bind switch port N to a Linux interface or to a UDP peer (N@udp:HOST:PORT)",
    )
    p.add_argument(
        "-I",
        dest="include_dirs",
        action="append",
        default=[],
        metavar="DIR",
        help="include directory when PROG.p4 is given",
    )
    p.add_argument(
        "--udp-listen",
        default=f"{DEFAULT_LISTEN[0]}:{DEFAULT_LISTEN[1]}",
        metavar="HOST:PORT",
        help="the UDP adapter's own address (default %(default)s)",
    )
    p.add_argument(
        "--grpc-server-addr",
        default="127.0.0.1:9559",
        metavar="ADDR",
        help="P4Runtime server address (default %(default)s)",
    )
    p.add_argument(
        "--grpc-tls-cert", metavar="FILE", help="serve P4Runtime over TLS with this certificate"
    )
    p.add_argument("--grpc-tls-key", metavar="FILE", help="the TLS certificate's private key")
    p.add_argument(
        "--grpc-tls-client-ca",
        metavar="FILE",
        help="require client certificates signed by this CA (mutual TLS)",
    )
    p.add_argument("--device-id", type=int, default=1, help="P4Runtime device id (default 1)")
    p.add_argument(
        "--cpu-port",
        type=int,
        default=None,
        metavar="P",
        help="port for packet-in/packet-out with the controller (1..510)",
    )
    p.add_argument(
        "--engine",
        choices=("native", "python"),
        default="native",
        help="the data-plane engine: native (generated C, the default; falls back to python "
        "with one line when the program or the machine cannot run it) or python (the "
        "interpreter; also used with --log-level trace)",
    )
    p.add_argument(
        "--udp-offload",
        choices=("on", "off"),
        default=None,
        help="UDP GSO/GRO on the UDP adapter's socket in the native I/O loop: on where the "
        "kernel has it (the default, unless P4REDUCE_UDP_OFFLOAD=0) or off (one datagram per "
        "system-call entry; docs/ports.md)",
    )
    p.add_argument(
        "--log-level",
        default="info",
        choices=["trace", "debug", "info", "warn", "error", "off"],
        help="trace: also log the tables hit and actions run for every packet",
    )
    return p


def _configure_logging(level: str) -> bool:
    levels = {
        "trace": logging.DEBUG,
        "debug": logging.DEBUG,
        "info": logging.INFO,
        "warn": logging.WARNING,
        "error": logging.ERROR,
        "off": logging.CRITICAL + 1,
    }
    logging.basicConfig(
        level=levels[level],
        format="%(asctime)s %(name)s %(levelname)s %(message)s",
        stream=sys.stderr,
    )
    return level == "trace"


def _device_config(program: Path, include_dirs: list[Path]) -> bytes:
    if program.suffix == ".json":
        return program.read_bytes()
    compiled = in_deep_thread(
        lambda: compile_file(program, CompileOptions(include_dirs=include_dirs))
    )
    return json.dumps(compiled.ir).encode()


def grpc_address(text: str) -> str:
    """Check a gRPC listen address: ``HOST:PORT`` or ``[IPV6]:PORT`` (``p4reduce.netaddr``).
    gRPC itself takes a bare host and serves on port 443, which nobody means."""
    netaddr.split(text, what="--grpc-server-addr", allow_port_zero=True)
    return text


def main(argv: list[str] | None = None) -> int:
    from ..p4runtime import Device, P4RTError, P4RuntimeServer

    args = _parser().parse_args(argv)
    trace = _configure_logging(args.log_level)
    if (args.program is None) == (not args.no_p4):
        print(f"{PROG}: error: give a program (PROG.p4 or PROG.json) or --no-p4", file=sys.stderr)
        return 1
    try:
        grpc_address(args.grpc_server_addr)
        specs = [parse_port_spec(s) for s in args.ports]
        listen = parse_host_port(args.udp_listen, what="--udp-listen", allow_port_zero=True)
        device = Device(args.device_id, args.cpu_port, engine=args.engine)
    except ValueError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 1
    device.trace = trace
    if args.program is not None:
        path = Path(args.program)
        try:
            device.load(_device_config(path, [Path(d) for d in args.include_dirs] + [path.parent]))
        except CompileError as e:
            print(e.format(), file=sys.stderr)
            return 1
        except (OSError, P4RTError) as e:
            print(f"{PROG}: error: {path}: {e}", file=sys.stderr)
            return 1
    try:
        ports = open_ports(specs, listen)
    except (OSError, ValueError) as e:
        # an OSError's str() leads with "[Errno N]"; its strerror is the sentence
        text = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        print(f"{PROG}: error: {text}", file=sys.stderr)
        return 1
    tls = None
    if args.grpc_tls_cert or args.grpc_tls_key or args.grpc_tls_client_ca:
        if not (args.grpc_tls_cert and args.grpc_tls_key):
            print(f"{PROG}: error: --grpc-tls-cert and --grpc-tls-key go together", file=sys.stderr)
            return 1
        tls = ServerTls(args.grpc_tls_cert, args.grpc_tls_key, args.grpc_tls_client_ca)
    offload = None if args.udp_offload is None else args.udp_offload == "on"
    dataplane = make_dataplane(device, ports, udp_offload=offload)
    device.port_map = lambda: port_map(ports, dataplane)  # what controllers check members by
    # the Python UDP adapter logs unknown senders itself; the native loop only counts them
    report = UnknownSenderReport(ports, dataplane) if hasattr(dataplane, "loop") else None
    server = P4RuntimeServer(device, args.grpc_server_addr, tls=tls)
    try:
        bound = server.start()
    except Exception as e:  # noqa: BLE001 - e.g. the address is in use: one line, exit 1
        dataplane.stop()
        print(
            f"{PROG}: error: cannot serve P4Runtime on {args.grpc_server_addr}: {e}",
            file=sys.stderr,
        )
        return 1
    stop = StopSignals()
    dataplane.start()
    if report is not None:
        report.start()
    grpc_bound = netaddr.join(netaddr.split(args.grpc_server_addr)[0], bound)
    log.info(
        "%s: P4Runtime on %s, device %d, ports %s%s",
        PROG,
        grpc_bound,
        args.device_id,
        ", ".join(str(s) for s in specs) or "none",
        f", program {args.program}" if args.program else ", waiting for a pipeline",
    )
    udp = next((p.adapter.listen for p in ports.values() if isinstance(p, UdpPort)), None)
    udp_text = f", UDP adapter {udp[0]}:{udp[1]}" if udp else ""
    # one line scripts and tests wait for: the real addresses when port 0 was asked for
    print(f"{PROG}: ready (P4Runtime {grpc_bound}{udp_text})", flush=True)
    while not stop.wait(3600.0):  # polls (StopSignals says why a lock cannot be used)
        pass
    log.info("%s: stopping", PROG)
    server.stop(grace=1.0)
    if report is not None:
        report.stop()
    dataplane.stop()
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

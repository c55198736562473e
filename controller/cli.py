"""``p4reduce-ctl``: the controller's command line (docs/controller.md).

    p4reduce-ctl [--grpc-addr A] [--device-id D] [--election-id E] [--timeout S]
                 [--slot-access auto|registers|packets] [--json] COMMAND
      push [PROGRAM] [--switch-ip IP --switch-mac MAC] [--host PORT:MAC]... [--route R]...
      serve [--listen HOST:PORT] [--program PROGRAM] [--switch-ip IP --switch-mac MAC]
            [--operator-token-file FILE] ...
      job create --job ID --slots S [--slot-base B] [--n N] [--secret-file FILE]
                 --member RANK:IP:UDP_PORT:MAC:PORT ...
      job list
      job delete --job ID
      stats [--job ID]
      slots --job ID [--range A[:B]] [--all] [--values]
      loss [P] [--port N]... [--direction in|out|both]
      reset
      tree create --file TREE.json | tree show|delete --job ID --tor HOST:PORT...

Errors are one line, ``p4reduce-ctl: error: ...``, on stderr: exit 1 (2 for a bad command line).

Secrets never come from argv: the operator token from ``--operator-token-file`` or
``$P4REDUCE_OPERATOR_TOKEN``, a job secret from ``--secret-file`` or ``$P4REDUCE_JOB_SECRET``
(docs/controller.md, "Credentials").
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from ..cli_common import OneLineArgumentParser as _OneLineParser
from ..cli_common import StopSignals, internal_error, stdout_gone
from . import addr, credentials, pipeline, program, render, slots, tree_cli
from .api import Controller
from .errors import ControllerError, InvalidArgument, NoPipeline
from .http_server import Limits, TlsConfig
from .jobs import Member
from .p4rt import (
    DEFAULT_ADDR,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_DEVICE_ID,
    DEFAULT_ELECTION_ID,
    DEFAULT_TIMEOUT,
    TIMEOUT_ENV,
    ClientTls,
)
from .service import DEFAULT_LISTEN, RegistrationService, Timeouts
from .state import StateError, StateStore
from .static_config import Host, Route, StaticConfig

PROG = "p4reduce-ctl"


class OneLineArgumentParser(_OneLineParser):
    """Usage errors of every subcommand read ``p4reduce-ctl: error: ...``, exit status 2."""

    exit_status = 2
    error_prog = PROG


# ---------------------------------------------------------------------- argument types
def _typed(fn: Any, name: str) -> Any:
    def conv(text: str) -> Any:
        try:
            return fn(text)
        except ControllerError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    conv.__name__ = name
    return conv


def _election(text: str) -> int:
    if ":" in text:
        high, low = text.split(":", 1)
        return (addr.number(high, "election id high", 0, 2**64 - 1) << 64) | addr.number(
            low, "election id low", 0, 2**64 - 1
        )
    return addr.number(text, "election id", 1, 2**128 - 1)


def _probability(text: str) -> float:
    try:
        p = float(text)
    except ValueError:
        raise InvalidArgument(f"bad loss probability {text!r} (want a number in 0..1)") from None
    if not 0.0 <= p <= 1.0:
        raise InvalidArgument(f"loss probability {p:g} is outside 0..1")
    return p


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise InvalidArgument(f"bad number of seconds {text!r}") from None
    if not v > 0:
        raise InvalidArgument(f"seconds must be > 0, got {text}")
    return v


def _range(text: str) -> tuple[int, int | None]:
    first, sep, last = text.partition(":")
    a = addr.number(first, "first slot", 0, program.POOL_SLOTS - 1)
    if not sep:
        return a, 1
    b = addr.number(last, "last slot", 0, program.POOL_SLOTS - 1)
    if b < a:
        raise InvalidArgument(f"slot range {text!r} ends before it starts")
    return a, b - a + 1


T_JOB = _typed(lambda t: addr.number(t, "job id", 1, program.MAX_JOB_ID), "job id")
T_MEMBER = _typed(Member.parse, "member")
T_HOST = _typed(Host.parse, "host")
T_ROUTE = _typed(Route.parse, "route")
T_SLOTS = _typed(lambda t: addr.number(t, "slot count", 1, program.POOL_SLOTS), "slot count")
T_BASE = _typed(lambda t: addr.number(t, "slot base", 0, program.POOL_SLOTS - 1), "slot base")
T_N = _typed(lambda t: addr.number(t, "worker count n", 1, program.MAX_WORKERS), "n")
T_PORT = _typed(addr.switch_port, "switch port")
T_UDP = _typed(addr.udp_port, "UDP port")
T_IP = _typed(lambda t: addr.ipv4_str(addr.ipv4(t, "switch IPv4 address")), "IPv4 address")
T_MAC = _typed(lambda t: addr.mac_str(addr.mac(t, "switch MAC address")), "MAC address")
T_ELECTION = _typed(_election, "election id")
T_DEVICE = _typed(lambda t: addr.number(t, "device id", 0, 2**64 - 1), "device id")
T_P = _typed(_probability, "probability")
T_SECONDS = _typed(_positive_float, "seconds")
T_RANGE = _typed(_range, "slot range")
T_LISTEN = _typed(lambda t: addr.hostport(t, "listen address"), "listen address")
# the string itself, checked: gRPC would take a bare host as port 443
T_GRPC_ADDR = _typed(lambda t: (addr.hostport(t, "switch address"), t)[1], "switch address")
T_MS = _typed(lambda t: addr.number(t, "milliseconds", 1, 3_600_000), "milliseconds")
T_RETRIES = _typed(lambda t: addr.number(t, "retries", 0, 1_000_000), "retries")
T_LIMIT = _typed(lambda t: addr.number(t, "limit", 1, 1 << 30), "limit")


# ---------------------------------------------------------------------- the parser
def _common(p: argparse.ArgumentParser, defaults: bool) -> None:
    def d(value: Any) -> Any:
        return value if defaults else argparse.SUPPRESS

    g = p.add_argument_group("switch connection and output")
    g.add_argument(
        "--grpc-addr",
        type=T_GRPC_ADDR,
        default=d(DEFAULT_ADDR),
        metavar="HOST:PORT",
        help=f"the switch's P4Runtime server (default {DEFAULT_ADDR})",
    )
    g.add_argument(
        "--device-id",
        type=T_DEVICE,
        default=d(DEFAULT_DEVICE_ID),
        metavar="D",
        help=f"P4Runtime device id (default {DEFAULT_DEVICE_ID}, as p4reduce-switch)",
    )
    g.add_argument(
        "--election-id",
        type=T_ELECTION,
        default=d(DEFAULT_ELECTION_ID),
        metavar="E",
        help=f"election id for primary arbitration, N or HIGH:LOW (default {DEFAULT_ELECTION_ID})",
    )
    g.add_argument(
        "--timeout",
        type=T_SECONDS,
        default=d(None),
        metavar="S",
        help=f"seconds to wait for each P4Runtime answer (default ${TIMEOUT_ENV}, else "
        f"{DEFAULT_TIMEOUT:g}; connecting waits at most {DEFAULT_CONNECT_TIMEOUT:g} s unless given)",
    )
    g.add_argument(
        "--slot-access",
        choices=slots.ACCESS,
        default=d("auto"),
        help="how slot state is cleared and read: RegisterEntry (registers), control messages "
        "through the switch's CPU port (packets; simple_switch_grpc --cpu-port "
        f"{program.CPU_PORT}), or registers where the switch serves them (auto, the default)",
    )
    g.add_argument(
        "--grpc-ca",
        default=d(None),
        metavar="FILE",
        help="connect to P4Runtime over TLS, checking the switch's certificate with this CA",
    )
    g.add_argument(
        "--grpc-cert", default=d(None), metavar="FILE", help="client certificate (mutual TLS)"
    )
    g.add_argument(
        "--grpc-key", default=d(None), metavar="FILE", help="the client certificate's key"
    )
    g.add_argument(
        "--json", action="store_true", default=d(False), help="machine-readable JSON output"
    )


def _static_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--switch-ip", type=T_IP, metavar="IP", help="the switch's IPv4 address")
    p.add_argument("--switch-mac", type=T_MAC, metavar="MAC", help="the switch's MAC address")
    p.add_argument(
        "--host",
        type=T_HOST,
        action="append",
        default=[],
        metavar="PORT:MAC",
        help="a host behind a switch port: L2 entry and flood-group member (repeatable)",
    )
    p.add_argument(
        "--route",
        type=T_ROUTE,
        action="append",
        default=[],
        metavar="PREFIX/LEN:PORT:SRC_MAC:DST_MAC",
        help="an IPv4 route for ordinary traffic (repeatable)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineArgumentParser(
        prog=PROG,
        description="p4reduce controller: pipeline, jobs, worker registration, counters, slot "
        "state and the loss simulator of a P4Runtime switch (p4reduce-switch or "
        "simple_switch_grpc).",
    )
    _common(parser, True)
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=OneLineArgumentParser
    )
    sub.required = True

    def cmd(name: str, help: str) -> argparse.ArgumentParser:  # noqa: A002
        p = sub.add_parser(name, help=help, description=help)
        _common(p, False)
        return p

    p = cmd("push", "push a compiled pipeline (make build) and the static configuration")
    p.add_argument(
        "program",
        nargs="?",
        default=None,
        metavar="PROGRAM",
        help="build prefix: build/dense stands for build/dense.json + build/dense.p4info.txtpb "
        "(default build/dense)",
    )
    p.add_argument("--device-config", metavar="FILE", help="device config file (with --p4info)")
    p.add_argument("--p4info", metavar="FILE", help="P4Info text file (with --device-config)")
    _static_options(p)

    p = cmd("serve", "run the worker registration service, holding the switch as primary")
    p.add_argument(
        "--listen",
        type=T_LISTEN,
        default=addr.hostport(DEFAULT_LISTEN),
        metavar="HOST:PORT",
        help=f"HTTP listen address (default {DEFAULT_LISTEN}; port 0 picks a free one)",
    )
    p.add_argument("--program", metavar="PROGRAM", help="push this pipeline first (build/dense)")
    p.add_argument(
        "--state",
        metavar="PATH",
        help="keep the desired state (pipeline, jobs, pending joins) in this SQLite file and "
        "resume from it after a restart (docs/failures.md)",
    )
    _static_options(p)
    p.add_argument(
        "--agg-port",
        type=T_UDP,
        default=program.AGG_PORT,
        metavar="N",
        help=f"the switch's aggregation UDP port told to workers (default {program.AGG_PORT})",
    )
    p.add_argument(
        "--slots",
        type=T_SLOTS,
        default=64,
        metavar="S",
        help="slots per job when the workers do not ask (default 64)",
    )
    p.add_argument(
        "--join-timeout",
        type=T_SECONDS,
        default=120.0,
        metavar="S",
        help="default wait of a join or barrier for the other workers (default 120)",
    )
    p.add_argument(
        "--initial-timeout-ms",
        type=T_MS,
        default=Timeouts.initial_ms,
        metavar="MS",
        help=f"workers' first retransmission timeout (default {Timeouts.initial_ms})",
    )
    p.add_argument(
        "--max-timeout-ms",
        type=T_MS,
        default=Timeouts.max_ms,
        metavar="MS",
        help=f"workers' largest retransmission timeout (default {Timeouts.max_ms})",
    )
    p.add_argument(
        "--retries",
        type=T_RETRIES,
        default=Timeouts.retries,
        metavar="N",
        help=f"workers' retransmissions of one packet before failing (default {Timeouts.retries}; "
        f"the defaults give up after {Timeouts().give_up_seconds():g} s)",
    )
    g = p.add_argument_group("credentials, TLS and limits (docs/controller.md)")
    g.add_argument(
        "--operator-token-file",
        metavar="FILE",
        help=f"the operator token, first line of FILE (default ${credentials.OPERATOR_ENV}; "
        "without one, listing all jobs is refused)",
    )
    g.add_argument(
        "--http-tls-cert", metavar="FILE", help="serve HTTPS with this certificate (PEM)"
    )
    g.add_argument("--http-tls-key", metavar="FILE", help="the certificate's private key (PEM)")
    g.add_argument(
        "--http-tls-client-ca",
        metavar="FILE",
        help="require client certificates signed by this CA (mutual TLS)",
    )
    d = Limits()
    g.add_argument(
        "--max-body",
        type=T_LIMIT,
        default=d.max_body,
        metavar="BYTES",
        help=f"largest request body (default {d.max_body}; larger: 413)",
    )
    g.add_argument(
        "--max-waiting",
        type=T_LIMIT,
        default=d.max_waiting_per_client,
        metavar="N",
        help=f"joins/barriers/recoveries waiting per client address (default "
        f"{d.max_waiting_per_client}; more: 429)",
    )
    g.add_argument(
        "--max-jobs",
        type=T_LIMIT,
        default=d.max_jobs,
        metavar="N",
        help=f"jobs tracked at once (default {d.max_jobs}; more: 507)",
    )
    g.add_argument(
        "--max-connections",
        type=T_LIMIT,
        default=d.max_connections,
        metavar="N",
        help=f"requests in progress at once (default {d.max_connections}; more: 503)",
    )

    p = cmd("job", "create, list or delete jobs")
    jsub = p.add_subparsers(
        dest="job_command", metavar="ACTION", parser_class=OneLineArgumentParser
    )
    jsub.required = True
    jc = jsub.add_parser(
        "create",
        help="install a job",
        description="install a job: its workers, replicas, multicast group and a free slot range",
    )
    _common(jc, False)
    jc.add_argument("--job", type=T_JOB, required=True, metavar="ID", help="job id, 1..65535")
    jc.add_argument(
        "--member",
        type=T_MEMBER,
        action="append",
        required=True,
        metavar="RANK:IP:UDP_PORT:MAC:SWITCH_PORT",
        help="one worker (repeat for each rank 0..n-1)",
    )
    jc.add_argument("--slots", type=T_SLOTS, required=True, metavar="S", help="slot count")
    jc.add_argument("--slot-base", type=T_BASE, metavar="B", help="first slot (default: first fit)")
    jc.add_argument("--n", type=T_N, metavar="N", help="worker count (default: the members given)")
    jc.add_argument(
        "--secret-file",
        metavar="FILE",
        help=f"the job's secret, first line of FILE (default ${credentials.JOB_SECRET_ENV}, "
        "else a fresh one, printed once); the registration service answers the job's workers "
        "only with it",
    )
    jl = jsub.add_parser(
        "list",
        help="list jobs and workers",
        description="list jobs and their workers, read from the switch",
    )
    _common(jl, False)
    jd = jsub.add_parser(
        "delete",
        help="delete a job",
        description="delete a job: its entries and multicast group; its slots cleared",
    )
    _common(jd, False)
    jd.add_argument("--job", type=T_JOB, required=True, metavar="ID", help="job id")

    p = cmd("tree", "jobs spanning a spine (--grpc-addr) and its ToRs (controller/tree_cli.py)")
    tree_cli.add_arguments(p, _common, T_JOB, T_GRPC_ADDR)

    p = cmd("stats", "per-job counters")
    p.add_argument("--job", type=T_JOB, metavar="ID", help="one job only")

    p = cmd("slots", "a job's slot state")
    p.add_argument("--job", type=T_JOB, required=True, metavar="ID", help="job id")
    p.add_argument(
        "--range", type=T_RANGE, metavar="A[:B]", help="slots A..B of the job (relative)"
    )
    p.add_argument("--all", action="store_true", help="show empty cells too (human output)")
    p.add_argument("--values", action="store_true", help="also read the K lanes of each cell")

    p = cmd("loss", "set or show the loss simulator")
    p.add_argument(
        "p", nargs="?", type=T_P, metavar="P", help="drop probability 0..1 (omit to show)"
    )
    p.add_argument(
        "--port",
        type=T_PORT,
        action="append",
        metavar="N",
        help="switch port (repeatable; default all)",
    )
    p.add_argument(
        "--direction",
        choices=("in", "out", "both"),
        default="both",
        help="arrival, departure or both (default both)",
    )

    cmd("reset", "remove every job; zero slot state, loss and counters (static config kept)")
    return parser


# ---------------------------------------------------------------------- output
def _emit(args: argparse.Namespace, data: Any, human: str) -> None:
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        print(human)


# ---------------------------------------------------------------------- commands
def _controller(args: argparse.Namespace, arbitrate: bool) -> Controller:
    tls = None
    if args.grpc_ca or args.grpc_cert or args.grpc_key:
        if not args.grpc_ca:
            raise InvalidArgument("--grpc-cert and --grpc-key need --grpc-ca (TLS)")
        if (args.grpc_cert is None) != (args.grpc_key is None):
            raise InvalidArgument("--grpc-cert and --grpc-key go together")
        tls = ClientTls(args.grpc_ca, args.grpc_cert, args.grpc_key)
    ctl = Controller(
        args.grpc_addr,
        args.device_id,
        args.election_id,
        args.timeout,
        arbitrate,
        tls=tls,
        slot_access=args.slot_access,
    )
    ctl.connect(connect_timeout=args.timeout)
    return ctl


def _static(args: argparse.Namespace) -> StaticConfig | None:
    if (args.switch_ip is None) != (args.switch_mac is None):
        raise InvalidArgument("give --switch-ip and --switch-mac together")
    if args.switch_ip is None and not args.host and not args.route:
        return None
    return StaticConfig(args.switch_ip, args.switch_mac, tuple(args.host), tuple(args.route))


def cmd_push(args: argparse.Namespace, ctl: Controller) -> None:
    if args.device_config or args.p4info:
        if args.program or not (args.device_config and args.p4info):
            raise InvalidArgument("give --device-config and --p4info together, without PROGRAM")
        prog = pipeline.load(device_config=args.device_config, p4info=args.p4info)
    else:
        prog = pipeline.load(args.program or "build/dense")
    cfg = _static(args)
    info = ctl.push(prog)
    if cfg is not None:
        ctl.install_static(cfg)
    info["static"] = cfg.to_dict() if cfg is not None else None
    human = (
        f"pushed {info['program']} ({info['kind']}, K = {info['k']}) to device "
        f"{ctl.conn.device_id} at {ctl.conn.addr}"
    )
    if cfg is not None:
        human += (
            f"\nstatic: switch {cfg.switch_ip or '-'} {cfg.switch_mac or ''}".rstrip()
            + f", {len(cfg.hosts)} host(s), {len(cfg.routes)} route(s)"
        )
    _emit(args, info, human)


def cmd_job(args: argparse.Namespace, ctl: Controller) -> None:
    if args.job_command == "create":
        secret = credentials.from_file_or_env(
            args.secret_file, credentials.JOB_SECRET_ENV, "job secret"
        )
        drawn = secret is None
        if secret is None:
            secret = credentials.new_secret()
        job = ctl.create_job(
            args.job,
            args.member,
            args.slots,
            args.slot_base,
            args.n,
            verifier=credentials.verifier(secret),
        )
        data = job.to_dict_with_key()
        human = f"created job {job.job_id} (key 0x{job.key:08x})\n" + render.jobs([job])
        if drawn:  # the operator must hand it to the workers: shown once, never stored
            data["job_secret"] = secret
            human += f"\njob secret (shown once; give it to the job's workers): {secret}"
        _emit(args, data, human)
    elif args.job_command == "list":
        jobs = ctl.list_jobs()
        _emit(
            args,
            {"jobs": [j.to_dict_with_key() for j in jobs], "free_slots": ctl.jobs().free_slots()},
            render.jobs(jobs),
        )
    else:
        job = ctl.delete_job(args.job)
        _emit(
            args,
            {"deleted": job.to_dict()},
            f"deleted job {job.job_id} (slots {job.slot_base}..{job.slot_end - 1} cleared)",
        )


def cmd_stats(args: argparse.Namespace, ctl: Controller) -> None:
    items = ctl.stats(args.job)
    data: dict[str, Any] = {"jobs": [s.to_dict() for s in items]}
    human = render.stats(items)
    ports = ctl.port_map()  # p4reduce-switch's UDP adapter: datagrams no port stands for
    if ports is not None and ports.listen is not None:
        data["udp_adapter"] = {"listen": ports.listen, "unknown_sender": ports.unknown_sender}
        human += (
            f"\nUDP adapter {ports.listen}: {ports.unknown_sender} datagram(s) dropped from "
            f"unknown senders (no -i N@udp:HOST:PORT names them)"
        )
    _emit(args, data, human)


def cmd_slots(args: argparse.Namespace, ctl: Controller) -> None:
    first, count = args.range if args.range else (0, None)
    job, states = ctl.slots(args.job, first, count, args.values)
    data = {"job": job.to_dict(), "kind": ctl.kind, "slots": [s.to_dict() for s in states]}
    human = render.slots(job, states, first, ctl.kind == "sparse", args.all)
    _emit(args, data, human)


def cmd_loss(args: argparse.Namespace, ctl: Controller) -> None:
    if args.p is not None:
        t = ctl.set_loss(args.p, args.port, args.direction)
        ports = (
            "every port"
            if args.port is None
            else "port(s) " + ", ".join(map(str, sorted(set(args.port))))
        )
        _emit(
            args,
            {
                "p": args.p,
                "threshold": t,
                "direction": args.direction,
                "ports": sorted(set(args.port)) if args.port else "all",
            },
            f"loss {args.p:g} ({args.direction}) on {ports} (threshold {t})",
        )
        return
    got = ctl.loss(args.port)
    _emit(args, {"ports": {str(p): v for p, v in got.items()}}, render.loss(got))


def cmd_tree(args: argparse.Namespace, ctl: Controller) -> None:
    def connect(grpc_addr: str, arbitrate: bool) -> Controller:
        return _controller(argparse.Namespace(**{**vars(args), "grpc_addr": grpc_addr}), arbitrate)

    data, human = tree_cli.run(args, ctl, connect)
    _emit(args, data, human)


def cmd_reset(args: argparse.Namespace, ctl: Controller) -> None:
    r = ctl.reset()
    removed = ", ".join(map(str, r["jobs_removed"])) or "none"
    _emit(args, r, f"reset: jobs removed: {removed}; slot state, loss and counters zeroed")


def cmd_serve(args: argparse.Namespace) -> int:
    ctl = _controller(args, arbitrate=True)
    stop: StopSignals | None = None
    svc = None
    store = None
    try:
        if args.state is not None:
            store = StateStore(args.state)
            store.bind_switch(ctl.conn.addr, ctl.conn.device_id)
        if args.program:
            prog = pipeline.load(args.program)
            stored = store.pipeline() if store is not None else None
            if stored is not None and stored.ident != prog.cookie:
                raise StateError(
                    f"state database {args.state} holds another pipeline ({stored.ident:#018x}) "
                    f"than --program {args.program} ({prog.cookie:#018x})"
                )
            if store is None or not _runs(ctl, prog.cookie):
                ctl.push(prog)  # with --state, a restart keeps the running jobs
        cfg = _static(args)
        if cfg is not None:
            ctl.install_static(cfg)
        host, port = args.listen
        token = credentials.from_file_or_env(
            args.operator_token_file, credentials.OPERATOR_ENV, "operator token"
        )
        if (args.http_tls_cert is None) != (args.http_tls_key is None):
            raise InvalidArgument("--http-tls-cert and --http-tls-key go together")
        if args.http_tls_client_ca is not None and args.http_tls_cert is None:
            raise InvalidArgument("--http-tls-client-ca needs --http-tls-cert and --http-tls-key")
        tls = (
            TlsConfig(args.http_tls_cert, args.http_tls_key, args.http_tls_client_ca)
            if args.http_tls_cert is not None
            else None
        )
        limits = Limits(
            max_body=args.max_body,
            max_waiting_per_client=args.max_waiting,
            max_jobs=args.max_jobs,
            max_connections=args.max_connections,
        )
        svc = RegistrationService(
            ctl,
            host,
            port,
            switch_ip=args.switch_ip,
            switch_mac=args.switch_mac,
            agg_port=args.agg_port,
            default_slots=args.slots,
            join_timeout=args.join_timeout,
            timeouts=Timeouts(args.initial_timeout_ms, args.max_timeout_ms, args.retries),
            operator_token=token,
            limits=limits,
            tls=tls,
            store=store,
        )
        stop = StopSignals()
        try:
            svc.start()
        except OSError as err:
            raise ControllerError(
                f"cannot listen on {host}:{port}: {err.strerror or err}"
            ) from None
        _print_warnings(ctl)
        if args.json:
            print(
                json.dumps(
                    {
                        "ready": True,
                        "url": svc.url,
                        "grpc_addr": ctl.conn.addr,
                        "device_id": ctl.conn.device_id,
                    }
                ),
                flush=True,
            )
        else:
            print(
                f"{PROG}: ready (registration {svc.url}, P4Runtime {ctl.conn.addr}, device {ctl.conn.device_id})",
                flush=True,
            )
        while not stop.wait(0.2):  # never an Event set by a handler: see StopSignals
            _print_warnings(ctl)
        return 0
    finally:
        if svc is not None:
            svc.stop()
        ctl.close()
        if store is not None:
            store.close()
        if stop is not None:
            stop.restore()


def _runs(ctl: Controller, ident: int) -> bool:
    """Does the switch already run the pipeline with this identity?"""
    try:
        _, config = ctl.pipeline_config()
    except NoPipeline:
        return False
    return pipeline.pipeline_id(config) == ident


def _print_warnings(ctl: Controller) -> None:
    while ctl.warnings:
        print(f"{PROG}: warning: {ctl.warnings.pop(0)}", file=sys.stderr, flush=True)


COMMANDS = {
    "push": cmd_push,
    "job": cmd_job,
    "stats": cmd_stats,
    "slots": cmd_slots,
    "loss": cmd_loss,
    "reset": cmd_reset,
    "tree": cmd_tree,
}
READ_ONLY = {"stats", "slots"}


def run(args: argparse.Namespace) -> int:
    if args.command == "serve":
        return cmd_serve(args)
    read_only = (
        args.command in READ_ONLY
        or (args.command == "job" and args.job_command == "list")
        or (args.command == "loss" and args.p is None)
        or (args.command == "tree" and tree_cli.read_only(args))
    )
    ctl = _controller(args, arbitrate=not read_only)
    try:
        COMMANDS[args.command](args, ctl)
        _print_warnings(ctl)
    finally:
        ctl.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help (0) or a usage error (2, already printed)
        return done.code if isinstance(done.code, int) else 2
    try:
        return run(args)
    except ControllerError as err:
        print(f"{PROG}: error: {err}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return stdout_gone()
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # noqa: BLE001 - one line, never a traceback
        print(internal_error(PROG, err), file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

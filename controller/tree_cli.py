"""``p4reduce-ctl tree``: jobs spanning a spine and its ToRs (controller/tree.py).

    p4reduce-ctl --grpc-addr SPINE tree create --file TREE.json
    p4reduce-ctl --grpc-addr SPINE tree show --job ID --tor HOST:PORT [--tor HOST:PORT]...
    p4reduce-ctl --grpc-addr SPINE tree delete --job ID --tor HOST:PORT [--tor HOST:PORT]...

``--grpc-addr`` is the spine's P4Runtime address; each ToR is reached over its own
connection, with the same device id, election id, timeout and TLS options. TREE.json:

    {"job_id": 7, "slots": 64, "key": null,
     "spine": {"ip": "10.0.0.1", "mac": "02:00:00:00:00:01", "udp_port": 48864},
     "racks": [{"grpc_addr": "127.0.0.1:9560", "ip": "10.0.1.254",
                "mac": "02:00:00:00:01:fe", "spine_port": 1, "uplink_port": 9,
                "udp_port": 48864, "members": ["0:10.0.1.1:5000:02:00:00:00:01:01:1", ...]},
               ...]}

Members are written as for ``job create --member`` (RANK:IP:UDP_PORT:MAC:PORT, with the
global rank and the ToR's port); ``udp_port`` fields and ``agg_port`` (the port the
programs were compiled with) default to the aggregation port, ``key`` to a fresh one. The
answer (``--json``) carries every worker's assignment, as the registration service's join
would give it (``Assignment.from_dict``): the operator hands them out.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from . import addr, program, tree
from .api import Controller
from .errors import InvalidArgument
from .jobs import Member

Connect = Callable[[str, bool], Controller]  # (gRPC address, arbitrate) -> a connected one


def add_arguments(
    p: argparse.ArgumentParser,
    common: Callable[[argparse.ArgumentParser, bool], None],
    t_job: Callable[[str], int],
    t_grpc: Callable[[str], str],
) -> None:
    sub = p.add_subparsers(dest="tree_command", metavar="TREE_COMMAND", parser_class=type(p))
    sub.required = True
    c = sub.add_parser(
        "create",
        help="create a job on a spine and its ToRs",
        description="create a job spanning a spine (--grpc-addr) and its ToRs, from a JSON "
        "description (docs/controller.md, 'Jobs across switches')",
    )
    common(c, False)
    c.add_argument("--file", required=True, metavar="TREE.json", help="the tree, as JSON")
    for name, what in (("show", "show a job's tree"), ("delete", "delete a job's tree")):
        s = sub.add_parser(name, help=what, description=f"{what}, read from every switch")
        common(s, False)
        s.add_argument("--job", type=t_job, required=True, metavar="ID", help="job id")
        s.add_argument("--tor", type=t_grpc, action="append", required=True,
                       metavar="HOST:PORT", help="a ToR's P4Runtime address (once per rack)")  # fmt: skip


def read_only(args: argparse.Namespace) -> bool:
    return args.tree_command == "show"


def _field(d: dict[str, Any], key: str, where: str) -> Any:
    if key not in d:
        raise InvalidArgument(f"{where}: no {key!r}")
    return d[key]


def load(path: str) -> dict[str, Any]:
    """TREE.json, with its shape checked (the values are checked where they are used)."""
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except OSError as e:
        raise InvalidArgument(f"{path}: {e.strerror or e}") from None
    except ValueError as e:
        raise InvalidArgument(f"{path}: not JSON ({e})") from None
    if not isinstance(d, dict):
        raise InvalidArgument(f"{path}: a JSON object expected")
    racks = _field(d, "racks", path)
    if not isinstance(racks, list) or not racks:
        raise InvalidArgument(f"{path}: 'racks' must be a non-empty list")
    for i, r in enumerate(racks):
        if not isinstance(r, dict):
            raise InvalidArgument(f"{path}: rack {i} must be an object")
        if not isinstance(_field(r, "members", f"{path}: rack {i}"), list):
            raise InvalidArgument(f"{path}: rack {i}: 'members' must be a list")
    if not isinstance(_field(d, "spine", path), dict):
        raise InvalidArgument(f"{path}: 'spine' must be an object")
    return d


def _create(args: argparse.Namespace, spine: Controller, connect: Connect) -> dict[str, Any]:
    d = load(args.file)
    s = d["spine"]
    agg = program.AGG_PORT
    parent = tree.Parent(
        addr.ipv4_str(addr.ipv4(_field(s, "ip", "spine"), "spine IPv4 address")),
        addr.mac_str(addr.mac(_field(s, "mac", "spine"), "spine MAC address")),
        addr.udp_port(s.get("udp_port", agg), "spine UDP port"),
    )
    with ExitStack() as stack:
        racks = []
        for i, r in enumerate(d["racks"]):
            where = f"rack {i}"
            grpc = str(_field(r, "grpc_addr", where))
            addr.hostport(grpc, f"{where}: ToR address")
            members = [Member.parse(str(m)) for m in r["members"]]
            ctl = connect(grpc, True)
            stack.callback(ctl.close)
            racks.append(
                tree.Rack(
                    ctl, members, _field(r, "ip", where), _field(r, "mac", where),
                    _field(r, "spine_port", where), _field(r, "uplink_port", where),
                    addr.udp_port(r.get("udp_port", agg), f"{where}: UDP port"),
                )
            )  # fmt: skip
        job = tree.create_tree(
            spine, parent, racks, _field(d, "job_id", args.file),
            _field(d, "slots", args.file), d.get("key"),
        )  # fmt: skip
        shown = tree.show_tree(spine, [r.ctl for r in racks], job.job_id)
        given = tree.assignments(job, racks, addr.udp_port(d.get("agg_port", agg), "agg_port"))
    return {**shown, "job_key": job.key, "assignments": given}


def run(args: argparse.Namespace, spine: Controller, connect: Connect) -> tuple[Any, str]:
    """The command's JSON answer and its text."""
    if args.tree_command == "create":
        got = _create(args, spine, connect)
        return got, tree.render_tree(got) + f"\njob key {got['job_key']:#010x}"
    with ExitStack() as stack:
        tors = []
        for a in args.tor:
            ctl = connect(a, args.tree_command != "show")
            stack.callback(ctl.close)
            tors.append(ctl)
        if args.tree_command == "show":
            got = tree.show_tree(spine, tors, args.job)
            return got, tree.render_tree(got)
        tree.delete_tree(spine, tors, args.job)
        return {"deleted": args.job}, f"job {args.job} deleted from the spine and {len(tors)} ToRs"

"""One host's p4reduce worker for several jobs in a row: ``python -m
p4reduce.testbed.mininet.jobs_worker --jobs JSON ...`` (started by ``MininetStack``).

The JSON is a list of ``{"job": J, "rank": R, "n": N, "plan": [...]}``: for each entry in
turn, the worker joins job J as rank R of N, runs the plan (``testbed.worker.run_plan``:
a barrier, warm-up and timed calls, one JSON line per timed call, with ``"job": J`` added)
and leaves. A host takes part only in the jobs whose N covers it, so the hosts of a large
job wait at its join while the smaller jobs before it run; the jobs never overlap in time
for any host. Why one process for all jobs: on a loaded 2-core machine, starting a Python
process with numpy and the client takes seconds, more than many of the measurements.
Errors: one line on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys

from ...cli_common import OneLineArgumentParser, rank_main
from ..worker import run_plan

PROG = "p4reduce-jobs-worker"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineArgumentParser(exit_status=2, prog=PROG, description="a worker of several jobs")
    p.add_argument("--url", required=True)
    p.add_argument("--host", dest="rank", type=int, required=True, help="this host's index")
    p.add_argument("--bind", required=True, metavar="IP")
    p.add_argument("--mac", required=True)
    p.add_argument("--switch-port", type=int, required=True)
    p.add_argument("--slots", type=int, default=None)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--jobs", required=True, help="JSON list of {job, rank, n, plan}")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    for entry in json.loads(args.jobs):
        job = int(entry["job"])

        def emit(line: dict, job: int = job) -> None:
            print(json.dumps({**line, "job": job}), flush=True)

        run_plan(
            args.url, job, int(entry["rank"]), int(entry["n"]), None, args.switch_port,
            entry["plan"], bind_ip=args.bind, mac=args.mac, slots=args.slots,
            timeout=args.timeout, emit=emit,
        )  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    return rank_main(PROG, parse, run, argv)


if __name__ == "__main__":
    sys.exit(main())

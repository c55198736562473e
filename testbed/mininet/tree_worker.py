"""One host's p4reduce worker on the leaf-spine testbed: ``python -m
p4reduce.testbed.mininet.tree_worker --jobs JSON --bind IP`` (started by
``leafspine.LeafSpineStack``).

The JSON is a list of ``{"job": J, "assignment": {...}, "plan": [...]}``: the assignment is
the worker's entry of ``controller.tree.assignments`` (its own ToR's address, the job's
total n, its global rank), which the orchestrator installed on every switch before starting
the workers. There is no registration service in a multi-switch job (it places workers on
one switch), so the session is opened from the assignment directly, and the plan's barrier
is an all-reduce of one int32 element through the switches: it returns to a worker only
once every worker has sent its contribution. Each timed call prints one JSON line
(``testbed.worker.run_plan``) with ``"job": J`` added. Errors: one line on stderr, exit 1.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from ...cli_common import OneLineArgumentParser, rank_main
from ...controller.client import Assignment
from ...host.api import AllreduceSession
from ..worker import run_plan

PROG = "p4reduce-tree-worker"


class TreeSession(AllreduceSession):
    """A session whose barrier is a one-element all-reduce (no registration service)."""

    def barrier(self, name: str = "default") -> None:
        self.allreduce(np.zeros(1, dtype=np.int32), mode="dense")


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = OneLineArgumentParser(exit_status=2, prog=PROG, description="a leaf-spine worker")
    p.add_argument("--bind", required=True, metavar="IP", help="the host's data address")
    p.add_argument("--jobs", required=True, help="JSON list of {job, assignment, plan}")
    return p.parse_args(argv)


def run(args: argparse.Namespace) -> None:
    for entry in json.loads(args.jobs):
        job = int(entry["job"])
        a = Assignment.from_dict(entry["assignment"])

        def emit(line: dict, job: int = job) -> None:
            print(json.dumps({**line, "job": job}), flush=True)

        session = TreeSession(a, bind_ip=args.bind, transparent_retry=False)
        run_plan("", job, a.rank, a.n, None, 0, entry["plan"], emit=emit, session=session)


def main(argv: list[str] | None = None) -> int:
    return rank_main(PROG, parse, run, argv)


if __name__ == "__main__":
    sys.exit(main())

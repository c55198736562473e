"""The registration service killed (-9) and started again with its state file (serve
--state): the running job goes on (its data path never needed the service), a pending join
survives (the worker's join is retried and finds its registration), and the job's ranks
leave through the restarted service (docs/failures.md)."""

from __future__ import annotations

import concurrent.futures
import sys
import time
from pathlib import Path

import numpy as np
from p4reduce.controller import RegistrationClient
from p4reduce.host import AllreduceSession
from p4reduce.testbed.local import LocalStack
from p4reduce.testbed.restart import restart_serve

sys.path.insert(0, str(Path(__file__).resolve().parent))
from job_ranks import SECRET, Job, contribution, expected  # noqa: E402


def _join(stack: LocalStack, job_id: int, rank: int, sock_index: int) -> AllreduceSession:
    return AllreduceSession.join(
        stack.url, job_id, rank, 2, sock=stack.sockets[sock_index],
        switch_port=sock_index + 1, secret=SECRET, timeout=60,
    )  # fmt: skip


def test_service_killed_and_restarted(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    with LocalStack(ports=4, join_timeout=60) as stack:
        # the stack's service, replaced by one that keeps its state in a file
        serve = restart_serve(stack, tmp_path / "serve1.log", extra=("--state", str(db)))
        pool = concurrent.futures.ThreadPoolExecutor(1)
        sessions: list[AllreduceSession] = []
        try:
            job = Job(stack, 1, 2, 40).start()
            pending = pool.submit(_join, stack, 2, 0, 2)  # job 2 waits for its rank 1
            client = RegistrationClient(stack.url, secret=SECRET)
            deadline = time.monotonic() + 30
            while True:
                try:
                    if client.job(2)["joined"] == [0]:
                        break
                except Exception:  # noqa: BLE001 - not there yet
                    pass
                assert time.monotonic() < deadline
                time.sleep(0.05)
            job.wait_progress(6)
            serve = restart_serve(stack, tmp_path / "serve2.log", serve=serve)
            assert client.job(1)["state"] == "ready"  # resumed from the file
            sessions.append(_join(stack, 2, 1, 3))
            sessions.append(pending.result(60))  # rank 0's join, retried, is answered
            with concurrent.futures.ThreadPoolExecutor(2) as both:
                outs = list(both.map(lambda s: s.allreduce(contribution(s.rank, 0)), sessions))
            for y in outs:
                assert np.array_equal(y, expected(2, 0))
            job.finish()  # every call of job 1 exact: the service's death cost it nothing
        finally:
            for s in sessions:
                s.close()
            pool.shutdown(cancel_futures=True)
            serve.kill()
            serve.wait(10)
        assert all(s.left is not None for s in sessions)  # the restarted service took them

"""A job keeps aggregating, exactly, while other jobs are created and deleted beside it.

Creating or deleting a job clears its slot range on the switch (one RegisterEntry per
cell). The native engine once did each of those writes as a read of the whole register
array and a write-back, undoing the running job's updates made in between: its bitmaps went
back to an earlier use, the next use of that set was taken as a duplicate and answered with
a stale result (the tenants experiment's "carries exponent 129 for block 128"; silent wrong
sums where no check catches it). Deterministic cover: tests/dataplane/test_register_clear_race.py;
this is the same race end to end (it failed within a few calls before the fix).
"""

from __future__ import annotations

import threading

import numpy as np
from conftest import Jobs
from p4reduce.host import AllreduceSession
from stack import RETRY, check

CALLS = 60


def test_a_job_stays_exact_while_others_come_and_go(dense: Jobs) -> None:
    st = dense.stack
    x = (np.random.default_rng(1).standard_normal(64 * 300) * 3).astype(np.float32)
    secret = "test-secret-of-the-churn-jobs"

    def session(job: int, port: int) -> AllreduceSession:
        return AllreduceSession.join(
            st.url, job, 0, 1, sock=st.pool[port].dup(), switch_port=port + 1, slots=64,
            timeout=30.0, retry=RETRY, secret=secret, auto_recover=False,
        )  # fmt: skip

    steady = session(951, 0)
    stop = threading.Event()
    churned = [0]
    failures: list[BaseException] = []

    def churn() -> None:
        try:
            while not stop.is_set():
                session(952 + churned[0] % 2, 1).close()  # create, then delete: two clears
                churned[0] += 1
        except BaseException as err:  # noqa: BLE001 - reported by the test below
            failures.append(err)

    t = threading.Thread(target=churn, name="churn")
    t.start()
    try:
        for _ in range(CALLS):
            check(steady.allreduce(x), [x])
    finally:
        stop.set()
        t.join(60.0)
        steady.close()
    assert not t.is_alive()
    assert not failures, failures
    assert churned[0] > 0, "no job was created and deleted during the calls"

"""Action profile updates are safe while packets flow through the native engine.

Packets run in batches in another thread (``process_batch`` releases the GIL over the
batch, as the native I/O loop runs without it) while this thread rewrites members, groups
and entries. The engine builds each new profile aside and swaps it in under its mutex, so
every packet sees a whole member: each member's action data pairs a port with a tag equal
to it, and a packet that saw half of one change would leave on a port that does not match
the tag in its header. (The ASan/UBSan build runs the same race: test_sanitizers.py.)
"""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.matches import Exact
from p4reduce.switch.native.build import compiler
from p4reduce.switch.native.select import make_switch

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "native" / "p4" / "profile_ops.p4"
DST = 0x0A0000000001
pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler")


@pytest.mark.timeout(120)
def test_profile_writes_while_batches_run() -> None:
    sw = make_switch(
        load_pipeline(PROGRAM, CompileOptions(include_dirs=[ROOT / "bmv2_tests"])), "native"
    )
    assert sw.engine == "native"
    ecmp = sw.pipeline.tables["I.ecmp"]
    prof = ecmp.profile
    rng = random.Random(3)

    def member(mid: int) -> None:
        port = rng.randrange(1, 200)
        prof.members[mid] = prof.make_member("I.fwd", [port, port])  # as the P4Runtime server

    for mid in range(6):
        member(mid)
    prof.set_group(1, [0, 1, 2])
    prof.set_group(2, [3, 4, 5, 5])
    ecmp.add_entry([Exact(DST)], "", [], group=1)
    rest = bytes.fromhex("0800") + bytes(5)
    batch = [(1, DST.to_bytes(6, "big") + rng.randbytes(6) + rest) for _ in range(64)]
    ports: set[int] = set()
    torn: list[tuple[int, str]] = []
    count = [0]
    errors: list[BaseException] = []
    stop = threading.Event()

    def flood() -> None:
        try:
            while not stop.is_set():
                for port, frame in sw.process_batch(batch):
                    count[0] += 1
                    ports.add(port)
                    if frame[5] != port & 0xFF:  # not the tag of the member that set the port
                        torn.append((port, frame.hex()))
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    th = threading.Thread(target=flood)
    th.start()
    try:
        for i in range(300):
            member(rng.randrange(6))
            r = rng.random()
            if r < 0.3:
                prof.set_group(
                    rng.choice([1, 2]), [rng.randrange(6) for _ in range(rng.randint(1, 4))]
                )
            elif r < 0.4:
                ecmp.modify_entry([Exact(DST)], None, "", [], group=rng.choice([1, 2]))
            elif r < 0.45:
                ecmp.modify_entry([Exact(DST)], None, "", [], member=rng.randrange(6))
            if i % 50 == 0 and not th.is_alive():
                break
            time.sleep(0.0002)  # let the flood thread take the GIL and start a batch
    finally:
        stop.set()
        th.join(timeout=60)
    assert not th.is_alive() and not errors, errors
    assert not torn, torn[:5]
    assert count[0] and len(ports) > 1  # packets ran, and saw changes
    sw.close()

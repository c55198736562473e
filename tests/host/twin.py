"""Both protocol cores in lockstep: a ``TwinSession`` looks like a ``Session`` to the
simulator (agg_sim) but holds a Python-core session and a native-core one; every event
goes to both calls, and their actions (packets, timers, results, errors), states, sets,
deadlines and counters must be identical. The Python core's actions drive the run."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
from p4reduce.host.protocol import Done, Failed, Send, Session, SetTimer
from p4reduce.host.protocol.native import available

assert available(), "the native core (host/_engine/) is not built: make install"


def same_actions(py: list, nat: list, where: str) -> None:
    assert len(py) == len(nat), f"{where}: {py!r} vs {nat!r}"
    for a, b in zip(py, nat, strict=True):
        assert type(a) is type(b), f"{where}: {a!r} vs {b!r}"
        if isinstance(a, Send):
            assert (a.data, a.slot, a.retransmit) == (b.data, b.slot, b.retransmit), where
        elif isinstance(a, SetTimer):
            assert a.deadline == b.deadline, f"{where}: {a} vs {b}"
        elif isinstance(a, Done):
            assert a.result.dtype == b.result.dtype and a.result.shape == b.result.shape
            assert a.result.tobytes() == b.result.tobytes(), f"{where}: results differ"
            assert a.stats.as_dict() == b.stats.as_dict(), where
        elif isinstance(a, Failed):
            ea, eb = a.error, b.error
            assert type(ea) is type(eb) and str(ea) == str(eb), f"{where}: {ea} vs {eb}"
            assert getattr(ea, "stuck", None) == getattr(eb, "stuck", None), where
            assert getattr(ea, "in_flight", None) == getattr(eb, "in_flight", None), where
            assert a.stats.as_dict() == b.stats.as_dict(), where
        else:  # pragma: no cover
            raise AssertionError(f"unknown action {a!r}")


class TwinCall:
    def __init__(self, py: Any, nat: Any, twin: TwinSession) -> None:
        self.py, self.nat, self.twin = py, nat, twin
        self.events = 0

    def __getattr__(self, name: str) -> Any:  # call_id, state, stats, result, error, …
        return getattr(self.py, name)

    def _both(self, what: str, now: float, *args: Any) -> list:
        self.events += 1
        where = f"rank {self.twin.rank} call {self.py.call_id} event {self.events} {what}"
        a = getattr(self.py, what)(*args)
        b = getattr(self.nat, what)(*args)
        same_actions(a, b, where)
        assert self.py.state == self.nat.state, f"{where}: {self.py.state} vs {self.nat.state}"
        assert self.py.stats.as_dict() == self.nat.stats.as_dict(), where
        assert self.py.next_deadline() == self.nat.next_deadline(), where
        assert self.py.outstanding(now) == self.nat.outstanding(now), where
        assert np.array_equal(self.twin.py.sets, self.twin.nat.sets), where
        return a

    def start(self, now: float) -> list:
        return self._both("start", now, now)

    def on_packet(self, data: bytes, now: float) -> list:
        for bad in self.twin.garbled(data):
            assert self._both("on_packet", now, bad, now) == []  # counted and dropped
        return self._both("on_packet", now, data, now)

    def on_timer(self, now: float) -> list:
        return self._both("on_timer", now, now)

    def resume(self, now: float) -> list:
        return self._both("resume", now, now)


class TwinSession:
    """``Session(**kw)`` twice, one per engine. ``garble``: the share of results that are
    preceded by garbled copies (which both cores must count and drop alike)."""

    def __init__(self, *, garble: float = 0.0, seed: int = 0, **kw: Any) -> None:
        self.py = Session(engine="python", **kw)
        self.nat = Session(engine="native", **kw)
        assert self.nat.engine == "native"
        self.rank = kw["rank"]
        self.garble = garble
        self.rng = random.Random(seed)
        self.current: TwinCall | None = None

    @property
    def sets(self) -> np.ndarray:
        return self.py.sets

    def allreduce(self, tensor: np.ndarray) -> TwinCall:
        self.current = TwinCall(self.py.allreduce(tensor), self.nat.allreduce(tensor), self)
        return self.current

    def garbled(self, data: bytes) -> list[bytes]:
        """Copies of a result that no core may take for a result it waits for: wrong
        length, flags, type, job, job key, call, slot or block, or random bytes."""
        rng = self.rng
        if rng.random() >= self.garble or len(data) < 24:
            return []
        out = []
        for _ in range(rng.randint(1, 3)):
            b = bytearray(data)
            how = rng.randrange(10)
            if how == 0:
                b = b[: rng.randrange(len(b))]  # truncated
            elif how == 1:
                b += bytes(rng.randrange(1, 9))  # too long
            elif how == 2:
                b[0] ^= 0x01  # FLAG_RESULT
            elif how == 3:
                b[0] ^= rng.choice([0x02, 0x08, 0x10, 0x20, 0x40, 0x80])  # length/END/type
            elif how == 4:
                b[2 + rng.randrange(2)] ^= 1 << rng.randrange(8)  # job id
            elif how == 5:
                b[8 + rng.randrange(4)] ^= 1 << rng.randrange(8)  # packetId
            elif how == 6:
                # slot: another slot waits for another block (block = slot mod S). Not the
                # set bit: a priming result with the set flipped is a well-formed result
                # of the slot's next use (nothing in the header can tell them apart)
                i = 4 + rng.randrange(2)
                b[i] ^= 1 << rng.randrange(7 if i == 4 else 8)
            elif how == 7:
                b[12 + rng.randrange(4)] ^= 1 << rng.randrange(8)  # block
            elif how == 8:
                b[20 + rng.randrange(4)] ^= 1 << rng.randrange(8)  # job key
            else:
                b = bytearray(rng.randbytes(rng.randrange(0, 2 * len(data) + 1)))
            out.append(bytes(b))
        return out

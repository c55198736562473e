"""A model of the aggregation switch for one job, written from docs/protocol.md alone
("Aggregation header", "Switch state", "Update rules", "Job isolation and admission"), not
from the P4 programs and not with p4reduce.host.wire: it parses and builds the header with
its own struct layout, so an encoding mistake on the host side shows up as a mismatch.

``receive(rank, data)`` takes a worker's UDP payload and returns the results it causes, as
``(destination rank, UDP payload)`` pairs: all ranks for a multicast, the sender for a
unicast answer, none when the packet is absorbed or dropped.
"""

from __future__ import annotations

import struct
from collections import Counter

import numpy as np

RESULT, NO_PAYLOAD, RETRANSMIT, END = 0x1, 0x2, 0x4, 0x8
NEXT_END = 0xFFFFFFFF
# type|flags rank job set|slot exp nonfinite pid block next key
HDR = struct.Struct(">BBHHBBIIII")


class ModelSwitch:
    def __init__(
        self, *, n: int, k: int, job_id: int, slots: int, msg_type: int, key: int = 0
    ) -> None:
        self.n, self.k, self.job_id, self.slots, self.msg_type = n, k, job_id, slots, msg_type
        self.key = key
        self.counters: Counter[str] = Counter()
        self.clear()

    def clear(self) -> None:
        """What the controller does on job create/delete: bitmaps and counts to zero (the
        other registers keep stale values, which ``first`` overwrites)."""
        self.bitmap = [[0, 0] for _ in range(self.slots)]  # per slot: set 0, set 1
        self.count = [[0, 0] for _ in range(self.slots)]
        self.has_data = [[False, False] for _ in range(self.slots)]
        self.exponent = [[0, 0] for _ in range(self.slots)]
        self.nonfinite = [[0, 0] for _ in range(self.slots)]
        self.next_min = [[0, 0] for _ in range(self.slots)]
        self.lanes = np.zeros((self.slots, 2, self.k), dtype=np.uint32)

    def receive(self, rank: int, data: bytes) -> list[tuple[int, bytes]]:
        if len(data) < HDR.size:
            self.counters["malformed"] += 1
            return []
        tf, prank, job, ss, exp, nf, pid, block, nxt, key = HDR.unpack_from(data)
        mtype, flags = tf >> 4, tf & 0xF
        if job != self.job_id:
            self.counters["unknown_sender"] += 1
            return []
        if key != self.key:
            self.counters["bad_key"] += 1
            return []
        has_payload = not flags & NO_PAYLOAD
        want = HDR.size + 4 * self.k if has_payload else HDR.size
        if mtype != self.msg_type or flags & (RESULT | RETRANSMIT | END) or len(data) != want:
            self.counters["malformed"] += 1
            return []
        if prank != rank:
            self.counters["wrong_rank"] += 1
            return []
        st, slot = ss >> 15, ss & 0x7FFF
        if slot >= self.slots:
            self.counters["slot_range"] += 1
            return []
        bit = 1 << rank
        pair = self.bitmap[slot]
        mine = pair[st]
        first = mine == 0
        dup = bool(mine & bit)
        pair[st] = mine | bit
        pair[1 - st] &= ~bit  # the implicit reset
        payload = (
            np.frombuffer(data, dtype=">u4", count=self.k, offset=HDR.size) if has_payload else None
        )
        if first:
            self.count[slot][st] = 1
            self.has_data[slot][st] = has_payload
            self.exponent[slot][st] = exp
            self.nonfinite[slot][st] = nf
            self.next_min[slot][st] = nxt
            self.lanes[slot, st] = payload if has_payload else 0
        elif not dup:
            self.count[slot][st] += 1
            self.has_data[slot][st] |= has_payload
            self.exponent[slot][st] = max(self.exponent[slot][st], exp)
            self.nonfinite[slot][st] |= nf
            self.next_min[slot][st] = min(self.next_min[slot][st], nxt)
            if has_payload:
                self.lanes[slot, st] += payload  # uint32: wraps modulo 2^32
        complete = self.count[slot][st] == self.n
        if not complete:
            self.counters["duplicate" if dup else "contribution"] += 1
            return []
        out_flags = RESULT
        if not self.has_data[slot][st]:
            out_flags |= NO_PAYLOAD
        if dup:
            out_flags |= RETRANSMIT
        sparse = self.msg_type == 2
        out_next = self.next_min[slot][st] if sparse else nxt
        if sparse and out_next == NEXT_END:
            out_flags |= END
        hdr = HDR.pack(
            (self.msg_type << 4) | out_flags,
            rank,
            self.job_id,
            (st << 15) | slot,
            self.exponent[slot][st],
            self.nonfinite[slot][st],
            pid,
            block,
            out_next,
            key,
        )
        result = (
            hdr if out_flags & NO_PAYLOAD else hdr + self.lanes[slot, st].astype(">u4").tobytes()
        )
        if dup:
            self.counters["retransmit_answered"] += 1
            return [(rank, result)]
        self.counters["completion"] += 1
        return [(r, result) for r in range(self.n)]

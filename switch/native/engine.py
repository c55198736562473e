"""``NativeSwitch``: the V1Switch interface over a generated, compiled engine.

It offers what ``V1Switch`` offers its callers (``process``, ``pipeline`` with its tables,
registers and counters, ``pre``, ``digests``, ``clock``), so the STF runner, the P4Runtime
server and tests drive either engine the same way; plus ``process_batch`` (many packets per
call, for in-process speed) and ``native_handler()`` (the C entry point of p4r_handler.h for
the native I/O loop).
"""

from __future__ import annotations

import ctypes
import itertools
import logging
import struct
import time
from array import array
from collections.abc import Callable, Sequence
from typing import Any

from ..interp.builder import Pipeline
from ..interp.pre import PacketReplicationEngine, PreStore
from .build import build, load
from .cprogram import NativeProgram
from .cwide import join_words, split_args, split_key
from .mirror import (
    EngineCounterStore,
    EnginePreStore,
    EngineRegisterStore,
    EngineTableStore,
    EngineValueSetStore,
    cell_of,
    lookup_order,
)
from .mirror_externs import (
    KIND_INDEXED,
    assign_cells,
    attach_crcs,
    attach_meter_cell,
    bind_events,
    cell_index,
    detach_meter_cell,
    drain_events,
)
from .mirror_externs import bind as bind_externs
from .mirror_externs import release_all as release_cells
from .mirror_profiles import attach_profile, detach_profile, entry_ref, profile_words
from .mirror_profiles import bind as bind_profiles

try:  # the in-process packet path in C (setup.py builds it); else the ctypes path below
    from . import _batch
except ImportError:  # pragma: no cover - an install without a compiler
    _batch = None  # type: ignore[assignment]

U64, U32 = ctypes.c_uint64, ctypes.c_uint32
log = logging.getLogger("p4reduce.switch")
KIND_MASK, KIND_RANGE, KIND_ANY = 0, 1, 2
_HEAD = struct.Struct("=II")


def _bind(lib: ctypes.CDLL) -> None:
    vp = ctypes.c_void_p
    lib.p4r_new.restype = vp
    lib.p4r_new.argtypes = []
    lib.p4r_free.argtypes = [vp]
    lib.p4r_table_load.argtypes = [vp, U32, U32, ctypes.POINTER(U64)]
    lib.p4r_table_load.restype = ctypes.c_int
    lib.p4r_table_default.argtypes = [vp, U32, U32, ctypes.POINTER(U64)]
    lib.p4r_group_set.argtypes = [vp, U32, U32, ctypes.POINTER(U32), ctypes.POINTER(U32)]
    lib.p4r_group_set.restype = ctypes.c_int
    lib.p4r_sessions_set.argtypes = [vp, U32, ctypes.POINTER(U64), U64]
    lib.p4r_sessions_set.restype = ctypes.c_int
    lib.p4r_rng_seed.argtypes = [vp, ctypes.POINTER(U32), ctypes.c_int]
    lib.p4r_reg_get.argtypes = [vp, U32, U32]
    lib.p4r_reg_get.restype = U64
    lib.p4r_reg_set.argtypes = [vp, U32, U32, U64]
    lib.p4r_reg_bulk.argtypes = [vp, U32, U32, ctypes.POINTER(U64), ctypes.POINTER(U64)]
    lib.p4r_ctr_bulk.argtypes = [vp, U32, U32] + [ctypes.POINTER(U64)] * 4
    lib.p4r_vs_set.argtypes = [vp, U32, U32, ctypes.POINTER(U64)]
    lib.p4r_vs_set.restype = ctypes.c_int
    lib.p4r_process_batch.argtypes = [
        vp,
        U32,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_char_p,
        U64,
        ctypes.c_void_p,
        U32,
        ctypes.POINTER(U32),
        ctypes.POINTER(ctypes.c_void_p),
    ]
    lib.p4r_process_batch.restype = ctypes.c_int64
    lib.p4r_buf_free.argtypes = [vp]
    lib.p4r_ctr_get.argtypes = [vp, U32, U32, ctypes.POINTER(U64), ctypes.POINTER(U64)]
    lib.p4r_ctr_set.argtypes = [vp, U32, U32, U64, U64]
    lib.p4r_process_one.argtypes = [
        vp,
        U32,
        ctypes.c_char_p,
        U32,
        U64,
        ctypes.c_void_p,
        U32,
        ctypes.POINTER(U32),
        ctypes.POINTER(ctypes.c_void_p),
    ]
    lib.p4r_process_one.restype = ctypes.c_int64
    lib.p4r_faults.argtypes = [vp]
    lib.p4r_faults.restype = U64
    bind_externs(lib)
    bind_events(lib)
    bind_profiles(lib)


class NativeError(RuntimeError):
    """The engine failed on a packet (out of memory); the packet was dropped."""


class NativeSwitch:
    engine = "native"

    def __init__(
        self,
        pipeline: Pipeline,
        program: NativeProgram,
        clock: Callable[[], int] | None = None,
        sanitize: bool = False,
    ) -> None:
        self.pipeline = pipeline
        self.program = program
        self.lib = load(build(program.source, sanitize))
        _bind(self.lib)
        self._E = self.lib.p4r_new()
        if not self._E:
            raise MemoryError("the native engine could not allocate its state")
        start = time.monotonic()
        self.clock = clock or (lambda: int((time.monotonic() - start) * 1e6))
        self.trace = False  # the native engine does not trace (use --engine python)
        # digests and log_msg text arrive from C as events (mirror_externs.drain_events)
        self._digests: list[tuple[str, tuple[Any, ...]]] = []
        self._pending_digests: list[tuple[str, tuple[Any, ...]]] = []
        self._log_messages: list[str] = []
        # (a program that clones, resubmits or recirculates may report a packet that looped)
        self._events = bool(program.objects.event_sites) or program.objects.passes
        self.last_trace: list[str] = []
        self._out_max = program.objects.emit_total + 64
        self._buf = ctypes.create_string_buffer(1 << 16)
        self._used = U32(0)
        self._used_ref = ctypes.byref(self._used)
        self._one = self.lib.p4r_process_one
        # p4r_run_vec and the engine, for _batch (no ctypes conversions per packet)
        self._vec = ctypes.cast(self.lib.p4r_run_vec, ctypes.c_void_p).value
        objs = program.objects
        for i, m in enumerate(objs.meter_list):
            for j, cell in enumerate(m.array.cells):
                attach_meter_cell(cell, self, KIND_INDEXED, i, j)
        for k, prof in enumerate(objs.profile_list):  # before the entries that use them
            attach_profile(prof, self, k)
        for i, t in enumerate(objs.table_list):
            t.use_store(EngineTableStore(self, i))  # pushes the entries and the default
        for i, r in enumerate(objs.register_list):
            values = list(r.values)
            r.use_store(EngineRegisterStore(r, self, i))
            if any(values):  # the engine starts with zeroed cells
                self.reg_bulk(i, r.size, [cell_of(r, v) for v in values])
        for i, v in enumerate(objs.vset_list):
            v.use_store(EngineValueSetStore(self, i))  # pushes the members into the engine
        for i, c in enumerate(objs.counter_list):
            pk, by = list(c.packets), list(c.bytes)
            c.use_store(EngineCounterStore(c.size, self, i))
            if any(pk) or any(by):
                self.ctr_bulk(i, c.size, pk, by)
        attach_crcs(self, self.lib)
        rng = pipeline.namespace.get("RNG")
        if rng is not None:
            state = rng.getstate()[1]
            words = (U32 * 624)(*state[:624])
            self.lib.p4r_rng_seed(self._E, words, int(state[624]))
        self._pre: PacketReplicationEngine | None = None
        self._pre_store: EnginePreStore | None = None
        self.pre = PacketReplicationEngine()

    # ------------------------------------------------------------------ events
    @property
    def digests(self) -> list[tuple[str, tuple[Any, ...]]]:
        """Digests of finished ingresses, oldest first (the caller clears the list)."""
        self._drain_quietly()
        return self._digests

    @property
    def log_messages(self) -> list[str]:
        """log_msg output, newest last (bounded), as V1Switch.log_messages."""
        self._drain_quietly()
        return self._log_messages

    def notify_events(self, fd: int | None) -> None:
        """Have the engine write to the eventfd ``fd`` when a digest (at the end of its
        ingress), a log_msg or a fault is waiting to be drained; None stops it. The native
        I/O loop's packets run without Python, so this is how their digests get out."""
        if self._E and self._events:
            self.lib.p4r_events_notify(self._E, -1 if fd is None else fd)

    def _drain_quietly(self) -> None:
        # packets of the native I/O loop leave their events in C until someone asks
        if self._events and (fault := drain_events(self)) is not None:
            log.warning("native engine: a packet stopped on %s", fault)

    # ------------------------------------------------------------------ the PRE
    @property
    def pre(self) -> PacketReplicationEngine:
        assert self._pre is not None
        return self._pre

    @pre.setter
    def pre(self, pre: PacketReplicationEngine) -> None:
        if self._pre is not None and self._pre_store is not None:
            if self._pre is not pre:  # the old PRE's groups leave the engine
                self._pre_store.clear()
                self._pre.use_store(PreStore())
        store = EnginePreStore(self)  # a fresh store: its sync replaces the engine's sessions
        self._pre, self._pre_store = pre, store
        pre.use_store(store)

    def max_replicas(self) -> int:
        """The most copies a multicast group makes (the ctypes path sizes its buffer)."""
        assert self._pre_store is not None
        return self._pre_store.max_replicas()

    # ------------------------------------------------------------------ mirroring (C side)
    def push_entries(self, i: int, t: Any) -> None:
        nk = len(t.keys)
        maxargs = max([len(s.params) for s in t.actions.values()] + [1])
        maxargs = self._max_args()
        ids = self.program.objects.actions
        flat: list[int] = []
        entries = lookup_order(t)
        assign_cells(self, i, t, entries)  # direct counter and meter cells
        for e in entries:
            ref = entry_ref(e)
            if ref is not None:  # a member or group of the table's action profile
                kind, rid = ref
                flat += [kind << 32, 1 | (cell_index(e) << 1), rid, *[0] * (maxargs - 1)]
            else:
                args = split_args(e.args, self.program.objects.arg_words.get(e.action))
                args += [0] * (maxargs - len(args))
                flat += [ids[e.action], 1 | (cell_index(e) << 1), *args]
            kinds = [(KIND_ANY, 0, 0)] * nk
            for k, kind, a, b in t.compile_checks(e):
                kinds[k] = (KIND_MASK if kind == 0 else KIND_RANGE, a, b)
            if i in self.program.objects.key_words:  # keys over 64 bits: a column per word
                kinds = split_key(kinds, self.program.objects.key_words[i])
            for x in kinds:
                flat += x
        arr = (U64 * max(len(flat), 1))(*flat)
        if self.lib.p4r_table_load(self._E, i, len(entries), arr) != 0:
            raise MemoryError(f"{t.name}: the native engine could not store the entries")

    def _max_args(self) -> int:
        return self.program.objects.arg_columns()  # words: a wide argument takes several

    def push_default(self, i: int, t: Any) -> None:
        d = t.default_entry
        args = split_args(d.args, self.program.objects.arg_words.get(d.action))
        args += [0] * (self._max_args() - len(args))
        arr = (U64 * len(args))(*args)
        self.lib.p4r_table_default(self._E, i, self.program.objects.action_id(d.action), arr)

    def push_profile(self, k: int, prof: Any) -> None:
        nm, mflat, ng, gflat = profile_words(prof, self.program.objects.actions, self._max_args())
        marr = (U64 * max(len(mflat), 1))(*mflat)
        garr = (U64 * max(len(gflat), 1))(*gflat)
        rc = self.lib.p4r_profile_load(self._E, k, nm, marr, ng, garr)
        if rc == -1:
            raise MemoryError(f"{prof.name}: the native engine could not store the profile")
        if rc != 0:
            raise ValueError(f"{prof.name}: a group names a member the profile does not hold")

    def group_set(self, g: int, reps: Sequence[tuple[int, int]]) -> None:
        ports = (U32 * max(len(reps), 1))(*[p for p, _ in reps])
        rids = (U32 * max(len(reps), 1))(*[r for _, r in reps])
        if self.lib.p4r_group_set(self._E, g, len(reps), ports, rids) != 0:
            raise MemoryError(f"multicast group {g}: the native engine could not store it")

    def sessions_set(self, n: int, flat: Sequence[int]) -> None:
        words = (U64 * max(len(flat), 1))(*flat)
        if self.lib.p4r_sessions_set(self._E, n, words, len(flat)) != 0:
            raise MemoryError("clone sessions: the native engine could not store them")

    def vs_set(self, i: int, members: Sequence[tuple[tuple[int, int], ...]]) -> None:
        flat = [x for member in members for pair in member for x in pair]
        data = (U64 * max(len(flat), 1))(*flat)
        if self.lib.p4r_vs_set(self._E, i, len(members), data) != 0:
            raise ValueError(f"value set {i}: more members than its size")

    def reg_get(self, r: int, i: int) -> int:
        w = self.program.objects.reg_words.get(r, 1)  # a wide register: words per cell
        if w > 1:
            return join_words(self._reg_words(r, i, w))
        return int(self.lib.p4r_reg_get(self._E, r, i))

    def reg_set(self, r: int, i: int, v: int) -> None:
        w = self.program.objects.reg_words.get(r, 1)
        if w > 1:
            self._reg_words(r, i, w, split_args([v], [w]))
            return
        self.lib.p4r_reg_set(self._E, r, i, v)

    def _reg_words(self, r: int, i: int, w: int, src: list[int] | None = None) -> list[int]:
        """Cell i of wide register r: its w words in one engine call (runtime/p4r_wide.c)."""
        f = self.lib.p4r_reg_words
        f.argtypes = [ctypes.c_void_p, U32, U64, U32, ctypes.POINTER(U64), ctypes.POINTER(U64)]
        dst = (U64 * w)()
        f(self._E, r, i * w, w, dst, (U64 * w)(*src) if src is not None else None)
        return list(dst)

    def reg_bulk(self, r: int, n: int, values: list[int] | None = None) -> list[int]:
        w = self.program.objects.reg_words.get(r, 1)
        if w > 1:
            flat = None
            if values is not None:
                flat = [x for v in values for x in split_args([v], [w])]
            got = self._reg_bulk_words(r, n * w, flat)
            return [join_words(got[k * w : (k + 1) * w]) for k in range(n)]
        return self._reg_bulk_words(r, n, values)

    def _reg_bulk_words(self, r: int, n: int, values: list[int] | None) -> list[int]:
        dst = array("Q", bytes(8 * max(n, 1)))
        src = array("Q", values) if values is not None else None
        self.lib.p4r_reg_bulk(
            self._E,
            r,
            n,
            (U64 * len(dst)).from_buffer(dst),
            (U64 * len(src)).from_buffer(src) if src is not None and len(src) else None,
        )
        return dst.tolist()[:n]

    def ctr_bulk(
        self, c: int, n: int, pk: list[int] | None = None, by: list[int] | None = None
    ) -> tuple[list[int], list[int]]:
        m = max(n, 1)
        dpk, dby = array("Q", bytes(8 * m)), array("Q", bytes(8 * m))
        spk = array("Q", pk) if pk is not None and n else None
        sby = array("Q", by) if by is not None and n else None

        def ptr(a: array | None) -> Any:
            return (U64 * len(a)).from_buffer(a) if a is not None else None

        self.lib.p4r_ctr_bulk(self._E, c, n, ptr(dpk), ptr(dby), ptr(spk), ptr(sby))
        return dpk.tolist()[:n], dby.tolist()[:n]

    def ctr_get(self, c: int, i: int) -> tuple[int, int]:
        pk, by = U64(0), U64(0)
        self.lib.p4r_ctr_get(self._E, c, i, ctypes.byref(pk), ctypes.byref(by))
        return int(pk.value), int(by.value)

    def ctr_set(self, c: int, i: int, pk: int, by: int) -> None:
        self.lib.p4r_ctr_set(self._E, c, i, pk, by)

    # ------------------------------------------------------------------ the packet path
    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet arriving on ``port``; return the (port, bytes) it produced."""
        if _batch is not None:
            out, r = _batch.run_one(self._vec, self._E, port, data, self.clock())
            if self._events and (fault := drain_events(self)) is not None and r < 0:
                raise fault
            if r < 0:
                raise NativeError("the native engine failed on the packet")
            return out
        n = len(data)
        cap = (self.max_replicas() + 1) * (n + self._out_max + 8) + 64
        if len(self._buf) < cap:
            self._buf = ctypes.create_string_buffer(max(cap, 2 * len(self._buf)))
        used, spill = self._used, ctypes.c_void_p()
        r = self._one(
            self._E,
            port,
            data,
            n,
            self.clock(),
            self._buf,
            cap,
            self._used_ref,
            ctypes.byref(spill),
        )
        raw = self._take(self._buf, used.value, spill)
        if self._events and (fault := drain_events(self)) is not None and r < 0:
            raise fault
        if r < 0:
            raise NativeError("the native engine failed on the packet")
        return _frames(raw)

    def _take(self, buf: Any, used: int, spill: ctypes.c_void_p) -> bytes:
        """The records the engine wrote: in buf, or in its own buffer when they did not fit."""
        if spill.value:
            try:
                return ctypes.string_at(spill.value, used)
            finally:
                self.lib.p4r_buf_free(spill)
        return ctypes.string_at(buf, used)

    def process_batch(self, packets: Sequence[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
        """Run packets in order in one call; return every frame that left, in order."""
        if _batch is not None:
            out, r = _batch.run(self._vec, self._E, packets, self.clock())
            if self._events and (fault := drain_events(self)) is not None and r < 0:
                raise fault
            if r < 0:
                raise NativeError(f"the native engine failed on packet {-1 - r} of the batch")
            return out
        n = len(packets)
        if n == 0:
            return []
        ports = array("I", [p for p, _ in packets]).tobytes()
        lens_list = [len(d) for _, d in packets]
        lens = array("I", lens_list)
        offs = array("I", itertools.accumulate(lens_list, initial=0))
        total = offs.pop()
        blob = b"".join([d for _, d in packets])
        copies = self.max_replicas() + 1
        cap = copies * (total + n * (self._out_max + 8)) + 64
        if len(self._buf) < cap:
            self._buf = ctypes.create_string_buffer(max(cap, 2 * len(self._buf)))
        buf = self._buf
        used, spill = U32(0), ctypes.c_void_p()
        r = self.lib.p4r_process_batch(
            self._E,
            n,
            ports,
            blob,
            offs.tobytes(),
            lens.tobytes(),
            self.clock(),
            buf,
            cap,
            ctypes.byref(used),
            ctypes.byref(spill),
        )
        out = _frames(self._take(buf, used.value, spill))
        if self._events and (fault := drain_events(self)) is not None and r < 0:
            raise fault
        if r < 0:
            raise NativeError(f"the native engine failed on packet {-1 - r} of the batch")
        return out

    def native_handler(self) -> tuple[int, int]:
        """(address of a p4r_handler_fn, its context) for the native I/O loop."""
        fn = ctypes.cast(self.lib.p4r_handle, ctypes.c_void_p).value
        assert fn is not None and self._E
        return int(fn), int(self._E)

    def close(self) -> None:
        if self._E:
            # direct counts and meter state go back into the Python objects first
            for t in self.program.objects.table_list:
                release_cells(t)
            for m in self.program.objects.meter_list:
                for cell in m.array.cells:
                    detach_meter_cell(cell)
            for prof in self.program.objects.profile_list:
                detach_profile(prof)
            self.lib.p4r_free(self._E)
            self._E = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


def _frames(raw: bytes) -> list[tuple[int, bytes]]:
    """[u32 port][u32 len][bytes] records as [(port, bytes)]."""
    out: list[tuple[int, bytes]] = []
    pos = 0
    end = len(raw)
    unpack = _HEAD.unpack_from
    while pos < end:
        p, ln = unpack(raw, pos)
        pos += 8
        out.append((p, raw[pos : pos + ln]))
        pos += ln
    return out

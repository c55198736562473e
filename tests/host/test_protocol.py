"""The protocol core's rules, one at a time: packets it sends, result filtering, timers and
back-off, failure and recovery, set alternation across calls, statistics."""

from __future__ import annotations

import numpy as np
import pytest
from agg_model import ModelSwitch
from agg_ref import first_transmissions, reference
from agg_sim import Sim
from p4reduce.host import quantize as Q
from p4reduce.host import wire
from p4reduce.host.protocol import (
    CallTimeout,
    Done,
    Failed,
    ProtocolError,
    RetryPolicy,
    Send,
    Session,
    SessionBusy,
    SetTimer,
)

JOB = 9
KEY = 0xC0FFEE01  # the job key every packet carries
K = 8


def session(rank: int = 0, n: int = 1, slots: int = 3, msg_type: int = wire.MSG_DENSE, **kw):
    return Session(
        rank=rank, n=n, job_id=JOB, job_key=KEY, slots=slots, k=K, msg_type=msg_type, **kw
    )


def sends(actions) -> list[Send]:
    return [a for a in actions if isinstance(a, Send)]


def headers(actions) -> list[wire.AggHeader]:
    return [wire.decode_request(a.data, K).header for a in sends(actions)]


def result_bytes(h: wire.AggHeader, payload=None, **over) -> bytes:
    fields = dict(
        msg_type=h.msg_type,
        flags=wire.FLAG_RESULT | (wire.FLAG_NO_PAYLOAD if payload is None else 0),
        rank=h.rank,
        job_id=h.job_id,
        set=h.set,
        slot=h.slot,
        exponent=h.exponent,
        packet_id=h.packet_id,
        block=h.block,
        next=h.next,
        key=h.key,
    )
    fields.update(over)
    return wire.encode(wire.AggHeader(**fields), payload, K)


def drive_alone(sess: Session, tensor: np.ndarray, switch: ModelSwitch, now: float = 0.0):
    """One worker (n = 1) through the model switch, no loss."""
    call = sess.allreduce(tensor)
    todo = list(call.start(now))
    out = None
    while todo:
        a = todo.pop(0)
        if isinstance(a, Send):
            for _, res in switch.receive(sess.rank, a.data):
                todo.extend(call.on_packet(res, now))
        elif isinstance(a, Done | Failed):
            out = a
    return call, out


# ------------------------------------------------------------------ sessions


def test_session_checks_its_parameters() -> None:
    with pytest.raises(ValueError, match="rank"):
        Session(rank=3, n=3, job_id=1, job_key=KEY, slots=4)
    with pytest.raises(ValueError, match="workers"):
        Session(rank=0, n=33, job_id=1, job_key=KEY, slots=4)
    with pytest.raises(ValueError, match="job id"):
        Session(rank=0, n=1, job_id=0, job_key=KEY, slots=4)
    with pytest.raises(ValueError, match="slots"):
        Session(rank=0, n=1, job_id=1, job_key=KEY, slots=8193)
    with pytest.raises(ValueError, match="message type"):
        Session(rank=0, n=1, job_id=1, job_key=KEY, slots=4, msg_type=3)
    with pytest.raises(ValueError, match="multiplier"):
        RetryPolicy(multiplier=0.5)


def test_other_dtypes_are_refused() -> None:
    s = session()
    with pytest.raises(TypeError, match="float64"):
        s.allreduce(np.zeros(4))
    assert s.next_call == 0 and s.current is None


def test_non_finite_input_raises_before_anything_and_keeps_the_session() -> None:
    """nonfinite="raise", the strict mode."""
    for mt in (wire.MSG_DENSE, wire.MSG_SPARSE):
        s = session(msg_type=mt, nonfinite="raise")
        x = np.ones(20, np.float32)
        x[13] = np.nan
        with pytest.raises(Q.NonFiniteError, match="index 13"):
            s.allreduce(x)
        assert s.next_call == 0 and s.current is None and not s.sets.any()
        call, out = drive_alone(
            s,
            np.ones(20, np.float32),
            ModelSwitch(n=1, k=K, job_id=JOB, slots=3, msg_type=mt, key=KEY),
        )
        assert isinstance(out, Done) and call.call_id == 0
        assert np.array_equal(out.result, np.ones(20, np.float32))


@pytest.mark.parametrize("mt", [wire.MSG_DENSE, wire.MSG_SPARSE])
def test_non_finite_blocks_travel_as_zeros_with_their_bits(mt: int) -> None:
    """The default, nonfinite="propagate" (docs/protocol.md, "Non-finite values"): a block
    with NaN/±Inf goes header-only with exponent 0 and its bits, a zero block elsewhere
    in the tensor stays zero (sparse: the non-finite block travels although its other
    elements are 0), and the whole block comes back non-finite."""
    s = session(msg_type=mt, slots=2)
    x = np.zeros(5 * K, np.float32)
    x[0 * K + 1] = np.nan  # block 0: NaN
    x[1 * K + 2], x[1 * K + 3] = np.inf, 7.0  # block 1: +Inf
    x[2 * K], x[2 * K + 1] = np.inf, -np.inf  # block 2: both -> NaN
    x[3 * K + K - 1] = -np.inf  # block 3: -Inf
    x[4 * K] = 2.5  # block 4: finite
    call, out = drive_alone(s, x, ModelSwitch(n=1, k=K, job_id=JOB, slots=2, msg_type=mt, key=KEY))
    assert isinstance(out, Done)
    r = out.result.reshape(5, K)
    assert np.isnan(r[0]).all() and (r[1] == np.inf).all() and np.isnan(r[2]).all()
    assert (r[3] == -np.inf).all() and r[4][0] == 2.5 and not r[4][1:].any()
    assert call._nf.tolist() == [wire.NF_NAN, wire.NF_POS_INF, 6, wire.NF_NEG_INF, 0]
    with pytest.raises(ValueError, match="nonfinite='maybe'"):
        session(nonfinite="maybe")


def test_empty_tensor_is_done_at_start_and_uses_a_call_number() -> None:
    s = session()
    call = s.allreduce(np.zeros((0, 3), np.float32))
    acts = call.start(0.0)
    assert len(acts) == 1 and isinstance(acts[0], Done)
    assert acts[0].result.shape == (0, 3) and acts[0].result.dtype == np.float32
    assert s.next_call == 1


def test_call_copies_the_tensor() -> None:
    s = session(slots=1)
    x = np.arange(16, dtype=np.int32)
    call = s.allreduce(x)
    x[:] = 0  # the caller reuses its buffer while the call runs
    sw = ModelSwitch(n=1, k=K, job_id=JOB, slots=1, msg_type=wire.MSG_DENSE, key=KEY)
    todo, res = list(call.start(0.0)), None
    while todo:
        a = todo.pop(0)
        if isinstance(a, Send):
            for _, r in sw.receive(0, a.data):
                todo.extend(call.on_packet(r, 0.0))
        elif isinstance(a, Done):
            res = a.result
    assert list(res) == list(range(16))


# ------------------------------------------------------------------ what is sent


def test_dense_float_primes_every_slot_with_its_first_exponent() -> None:
    s = session(rank=1, n=2, slots=3)
    x = np.zeros(5 * K, np.float32)
    x[0], x[K], x[4 * K] = 1.0, 3.0, -0.5  # blocks 0, 1, 4; block 2 zero
    call = s.allreduce(x.reshape(5, K))
    acts = call.start(10.0)
    hs = headers(acts)
    assert [h.slot for h in hs] == [0, 1, 2]
    assert [h.block for h in hs] == [0, 1, 2]
    assert [h.exponent for h in hs] == [128, 129, 0]  # 1.0 -> 128, 3.0 -> 129, zero -> 0
    assert all(h.no_payload and h.set == 0 and h.rank == 1 and h.job_id == JOB for h in hs)
    assert all(h.packet_id == 0 and h.msg_type == wire.MSG_DENSE for h in hs)
    assert isinstance(acts[-1], SetTimer) and acts[-1].deadline == pytest.approx(10.02)
    assert list(s.sets) == [1, 1, 1]
    # the priming result of slot 1 brings E(1) = 130; block 1 goes out with the exponent of
    # block 4 (own: 127) and the next set
    more = call.on_packet(result_bytes(hs[1], exponent=130), 10.001)
    (h,) = headers(more)
    assert (h.slot, h.set, h.block, h.exponent, h.no_payload) == (1, 1, 1, 127, False)
    payload = wire.decode_request(sends(more)[0].data, K).payload
    assert (
        payload[0] == Q.quantize_row(x[K : 2 * K], 130, 2, 129)[0] == 3 * 2**27
    )  # 3 * 2^(158-130) / 2


def test_int32_sends_values_without_priming_and_zero_blocks_header_only() -> None:
    s = session(slots=4)
    x = np.zeros(3 * K, np.int32)
    x[:K] = np.arange(K) - 4
    x[2 * K] = -(2**31)
    call = s.allreduce(x)
    hs = headers(call.start(0.0))
    assert [h.block for h in hs] == [0, 1, 2]  # min(S, B) slots
    assert [h.no_payload for h in hs] == [False, True, False]
    assert all(h.exponent == 0 for h in hs)


def test_sparse_primes_with_first_nonzero_block_and_class_exponent() -> None:
    s = session(slots=2, msg_type=wire.MSG_SPARSE)
    x = np.zeros((7, K), np.float32)
    x[3, 0] = 1.0  # class 1: blocks 1, 3, 5
    x[5, 1] = 4.0
    call = s.allreduce(x)
    hs = headers(call.start(0.0))
    assert [(h.slot, h.block, h.next, h.exponent) for h in hs] == [
        (0, 0, wire.NEXT_END, 0),
        (1, 1, 3, 130),
    ]
    assert all(h.no_payload and h.msg_type == wire.MSG_SPARSE for h in hs)
    # switch says: class 1 starts at block 3, exponent 131
    more = call.on_packet(result_bytes(hs[1], exponent=131), 0.0)
    (h,) = headers(more)
    assert (h.slot, h.set, h.block, h.next, h.exponent, h.no_payload) == (1, 1, 3, 5, 131, False)


# ------------------------------------------------------------------ result filtering


def test_results_are_filtered_and_counted() -> None:
    s = session(slots=1)
    call = s.allreduce(np.arange(2 * K, dtype=np.int32))
    started = call.start(0.0)
    (h,) = headers(started)
    payload = np.arange(K, dtype=np.int32)
    assert call.on_packet(result_bytes(h, payload, job_id=JOB + 1), 0) == []
    assert call.on_packet(result_bytes(h, payload, key=KEY ^ 1), 0) == []  # another job key
    assert (
        call.on_packet(
            result_bytes(
                h,
                payload,
                msg_type=wire.MSG_SPARSE,
                next=wire.NEXT_END,
                flags=wire.FLAG_RESULT | wire.FLAG_END,
            ),
            0,
        )
        == []
    )
    assert call.on_packet(result_bytes(h, payload, packet_id=7), 0) == []
    assert call.on_packet(result_bytes(h, payload, set=1), 0) == []
    assert call.on_packet(result_bytes(h, payload, block=1), 0) == []
    assert call.on_packet(result_bytes(h, payload)[:-1], 0) == []
    assert call.on_packet(sends(started)[0].data, 0) == []  # a worker packet: no FLAG_RESULT
    st = call.stats
    assert (st.foreign, st.stale, st.duplicates, st.malformed, st.results) == (3, 1, 2, 2, 0)
    good = result_bytes(h, payload, flags=wire.FLAG_RESULT | wire.FLAG_RETRANSMIT)
    (nxt,) = headers(call.on_packet(good, 0))
    assert (nxt.block, nxt.set) == (1, 1)
    assert call.on_packet(good, 0) == []  # the multicast copy after the unicast answer
    assert (st.results, st.unicast_results, st.duplicates) == (1, 1, 3)
    done = call.on_packet(result_bytes(nxt, payload * 2), 0)
    assert isinstance(done[-1], Done)
    assert list(done[-1].result) == list(payload) + list(payload * 2)
    assert call.on_packet(result_bytes(nxt, payload * 2), 0) == []
    assert st.late == 1


# ------------------------------------------------------------------ timers


@pytest.mark.parametrize("msg_type", [wire.MSG_DENSE, wire.MSG_SPARSE])
def test_timeouts_resend_identical_packets_with_backoff_then_give_up(msg_type: int) -> None:
    pol = RetryPolicy(initial_timeout=0.01, multiplier=3.0, max_timeout=0.05, give_up_after=0.3)
    s = session(n=2, slots=2, retry=pol, msg_type=msg_type)
    call = s.allreduce(np.ones(3 * K, np.float32))
    first = {a.slot: a.data for a in sends(call.start(1.25))}
    assert call.next_deadline() == pytest.approx(1.26)
    assert call.on_timer(1.255) == []
    times, now = [], 1.25
    while True:
        now = call.next_deadline()
        acts = call.on_timer(now)
        if isinstance(acts[-1], Failed):
            break
        times.append(round(now - 1.25, 6))
        rs = sends(acts)
        assert len(rs) == 2 and all(a.retransmit and a.data == first[a.slot] for a in rs)
    assert times[:5] == [0.01, 0.04, 0.09, 0.14, 0.19]  # 0.01, 0.03, 0.05, 0.05, ...
    assert now == pytest.approx(1.55)  # exactly give_up_after after the first send
    err = acts[-1].error
    assert isinstance(err, CallTimeout) and isinstance(err, TimeoutError)
    assert err.stuck_slots == [0, 1] and err.stuck_blocks == [0, 1]
    assert all(x.priming and x.set == 0 for x in err.stuck)
    assert "2 of 2 slots got no result within 0.3 s" in str(err)
    assert "slot 0 (set 0, priming of block 0" in str(err)
    assert call.state == "failed" and call.next_deadline() is None
    assert call.stats.retransmissions == 2 * len(times)
    assert call.on_timer(5.0) == []


def test_max_attempts_limits_sends() -> None:
    pol = RetryPolicy(initial_timeout=0.01, multiplier=1.0, give_up_after=100, max_attempts=3)
    s = session(n=2, slots=1, retry=pol)
    call = s.allreduce(np.ones(K, np.int32))
    call.start(0.0)
    acts = call.on_timer(0.01) + call.on_timer(0.02)
    assert len(sends(acts)) == 2
    acts = call.on_timer(0.03)
    assert isinstance(acts[-1], Failed) and "3 sends" in str(acts[-1].error)
    assert acts[-1].error.stuck[0].attempts == 3


# ------------------------------------------------------------------ calls in a row


def test_sets_flip_per_use_and_carry_across_calls() -> None:
    sw = ModelSwitch(n=1, k=K, job_id=JOB, slots=2, msg_type=wire.MSG_DENSE, key=KEY)
    s = session(slots=2)
    # float, 3 blocks: slot 0 = priming, block 0, block 2; slot 1 = priming, block 1
    _, out = drive_alone(s, np.ones(3 * K, np.float32), sw)
    assert isinstance(out, Done) and list(s.sets) == [1, 0]
    # int32, 1 block: only slot 0, one use, in set 1
    call, out = drive_alone(s, np.ones(K, np.int32), sw)
    assert isinstance(out, Done) and list(s.sets) == [0, 0] and call.call_id == 1
    c = s.allreduce(np.ones(K, np.int32))  # created, not started: still the current call
    with pytest.raises(SessionBusy, match="call 2 is new"):
        s.allreduce(np.ones(K, np.int32))
    assert c.state == "new" and s.next_call == 3


def test_new_call_refused_until_the_previous_one_is_done() -> None:
    s = session(n=2, slots=1, retry=RetryPolicy(give_up_after=0.1))
    call = s.allreduce(np.ones(K, np.int32))
    call.start(0.0)
    with pytest.raises(SessionBusy, match="running"):
        s.allreduce(np.ones(K, np.int32))
    while call.state == "running":
        call.on_timer(call.next_deadline())
    with pytest.raises(SessionBusy, match="failed: dense call 0"):
        s.allreduce(np.ones(K, np.int32))
    with pytest.raises(RuntimeError, match="only a failed call resumes"):
        session().allreduce(np.ones(K, np.int32)).resume(0.0)


# ------------------------------------------------------------------ failure and recovery


def job(n: int, slots: int, msg_type: int, retry: RetryPolicy, seed: int = 0, **net):
    sw = ModelSwitch(n=n, k=K, job_id=JOB, slots=slots, msg_type=msg_type, key=KEY)
    ss = [session(rank=r, n=n, slots=slots, msg_type=msg_type, retry=retry) for r in range(n)]
    return sw, ss, Sim(sw, ss, seed=seed, **net)


def tensors(rng, n: int, m: int, dtype=np.float32) -> list[np.ndarray]:
    if dtype == np.int32:
        return [rng.integers(-(2**31), 2**31, m, dtype=np.int64).astype(np.int32) for _ in range(n)]
    return [rng.standard_normal(m).astype(np.float32) for _ in range(n)]


POL = RetryPolicy(initial_timeout=0.01, multiplier=2.0, max_timeout=0.08, give_up_after=0.5)


@pytest.mark.parametrize("msg_type", [wire.MSG_DENSE, wire.MSG_SPARSE])
def test_silent_worker_fails_the_call_in_time_and_resume_recovers(msg_type: int) -> None:
    n, slots, m = 3, 4, 10 * K
    sw, ss, sim = job(n, slots, msg_type, POL, loss_up=0.05, loss_down=0.05)
    rng = np.random.default_rng(5)
    call0, call1 = tensors(rng, n, m), tensors(rng, n, m)
    for r in (0, 1):  # worker 2 is silent: it has not started call 0
        sim.enqueue(r, [call0[r], call1[r]])
    sim.run(until=10.0)
    for r in (0, 1):
        (o,) = sim.workers[r].outcomes
        assert not o.done and isinstance(o.error, CallTimeout)
        assert o.time <= POL.give_up_after + 1e-9  # everything started at 0
        assert o.error.stuck_slots == [0, 1, 2, 3]
        assert o.error.stuck_blocks == [0, 1, 2, 3] and all(x.priming for x in o.error.stuck)
        with pytest.raises(SessionBusy):
            ss[r].allreduce(call1[r])
    # worker 2 comes back and runs call 0; the others resume it
    sim.enqueue(2, [call0[2], call1[2]])
    for r in (0, 1):
        sim.resume(r)
    sim.run(until=20.0)
    ref0 = reference(call0, K, slots, msg_type == wire.MSG_SPARSE)
    ref1 = reference(call1, K, slots, msg_type == wire.MSG_SPARSE)
    for r in range(n):
        outs = [o for o in sim.workers[r].outcomes if o.done]
        assert [o.call_id for o in outs] == [0, 1]
        assert np.array_equal(outs[0].result, ref0) and np.array_equal(outs[1].result, ref1)
    # each call's first transmissions are those of a loss-free call, failure or not
    first = first_transmissions(call0, K, slots, msg_type == wire.MSG_SPARSE)
    for r in range(n):
        st = [o for o in sim.workers[r].outcomes if o.call_id == 0][-1].stats
        assert st.packets_sent - st.retransmissions == first


@pytest.mark.parametrize("msg_type", [wire.MSG_DENSE, wire.MSG_SPARSE])
def test_partition_mid_call_fails_everyone_and_resume_finishes(msg_type: int) -> None:
    """Worker 1 drops off the network in the middle of a call (its own call times out
    too), comes back, and every worker resumes: the result is exact."""
    n, slots, m = 3, 2, 30 * K
    sw, ss, sim = job(n, slots, msg_type, POL, seed=2)
    rng = np.random.default_rng(8)
    call0 = tensors(rng, n, m, np.int32)
    for r in range(n):
        sim.enqueue(r, [call0[r]])
    sim.run(until=0.004)
    assert sim.busy()
    sim.workers[1].silent = True
    sim.run(until=5.0)
    for r in range(n):
        (o,) = sim.workers[r].outcomes
        assert not o.done and isinstance(o.error, CallTimeout)
    sim.workers[1].silent = False
    for r in range(n):
        sim.resume(r)
    sim.run(until=10.0)
    for r in range(n):
        o = sim.workers[r].outcomes[-1]
        assert o.done and np.array_equal(o.result, reference(call0, K, slots, False))


def test_reset_after_the_controller_clears_the_slots() -> None:
    n, slots = 2, 3
    sw, ss, sim = job(n, slots, wire.MSG_DENSE, POL)
    rng = np.random.default_rng(1)
    lost = tensors(rng, n, 7 * K)
    sim.enqueue(0, [lost[0]])  # worker 1 never takes part in this call
    sim.run(until=2.0)
    assert not sim.workers[0].outcomes[0].done
    # the job's recovery: the controller clears the range, every worker resets alike
    sw.clear()
    for s in ss:
        s.reset(next_call=100)
        assert s.current is None and not s.sets.any() and s.next_call == 100
    nxt = tensors(rng, n, 7 * K)
    for r in range(n):
        sim.enqueue(r, [nxt[r]])
    sim.run(until=4.0)
    for r in range(n):
        o = sim.workers[r].outcomes[-1]
        assert o.done and o.call_id == 100
        assert np.array_equal(o.result, reference(nxt, K, slots, False))


def test_workers_disagreeing_on_the_size_is_a_protocol_error() -> None:
    for msg_type in (wire.MSG_DENSE, wire.MSG_SPARSE):
        sw, ss, sim = job(2, 1, msg_type, POL)
        sim.enqueue(0, [np.ones(K, np.float32)])
        sim.enqueue(1, [np.ones(3 * K, np.float32)])
        sim.run(until=5.0)
        (o,) = sim.workers[0].outcomes
        assert isinstance(o.error, ProtocolError), o.error
        assert "disagree on the tensor's size" in str(o.error)
        assert ss[0].current.state == "broken"
        with pytest.raises(RuntimeError):
            ss[0].current.resume(5.0)
        with pytest.raises(SessionBusy, match="broken"):
            ss[0].allreduce(np.ones(K, np.float32))


def test_agreed_exponent_below_own_clamps_and_is_counted() -> None:
    s = session(n=2, slots=1)
    call = s.allreduce(np.full(K, 8.0, np.float32))  # own exponent 131
    (h,) = headers(call.start(0.0))
    (u,) = headers(more := call.on_packet(result_bytes(h, exponent=129), 0.0))
    q = wire.decode_request(sends(more)[0].data, K).payload
    assert list(q) == [(2**31 - 1) // 2] * K
    assert call.stats.clamped_blocks == 1


# ------------------------------------------------------------------ statistics


def test_statistics_of_a_loss_free_call() -> None:
    sw = ModelSwitch(n=1, k=K, job_id=JOB, slots=3, msg_type=wire.MSG_SPARSE, key=KEY)
    s = session(slots=3, msg_type=wire.MSG_SPARSE)
    x = np.zeros((10, K), np.float32)
    x[[1, 4, 8]] = 1.5
    call, out = drive_alone(s, x, sw)
    st = out.stats
    assert st is call.stats
    # 3 primings (header-only) + blocks 1, 4, 8
    assert st.packets_sent == 6 and st.retransmissions == 0
    assert st.bytes_sent == 3 * 24 + 3 * (24 + 4 * K)
    assert st.results == st.packets_received == 6 and st.duplicates == 0
    assert st.bytes_received == st.bytes_sent
    assert st.as_dict()["packets_sent"] == 6
    assert np.array_equal(out.result, x)


@pytest.mark.parametrize("msg_type", [wire.MSG_DENSE, wire.MSG_SPARSE])
def test_duplicate_priming_result_is_not_taken_for_the_first_use(msg_type: int) -> None:
    """Priming and the first use of slot s can carry the same packetId and block (s); only
    the set tells them apart, so results are matched on (packetId, slot, set, block)."""
    s = session(n=2, slots=1, msg_type=msg_type)
    x = np.full(K, 2.0, np.float32)
    call = s.allreduce(x)
    (prime,) = headers(call.start(0.0))
    prime_result = result_bytes(prime, exponent=130, next=0)  # sparse: m = block 0
    (use,) = headers(call.on_packet(prime_result, 0.0))
    assert (use.block, use.set, prime.block, prime.set) == (0, 1, 0, 0)
    assert call.on_packet(prime_result, 0.0) == []  # e.g. the unicast answer, late
    assert call.stats.duplicates == 1 and call.state == "running"
    assert [o.block for o in call.outstanding(0.0)] == [0]
    end = dict(next=wire.NEXT_END, flags=wire.FLAG_RESULT | wire.FLAG_END) if msg_type == 2 else {}
    done = call.on_packet(result_bytes(use, np.full(K, 2**28, np.int32), **end), 0.0)
    assert np.array_equal(done[-1].result, np.full(K, 2.0, np.float32))

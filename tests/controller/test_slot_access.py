"""Slot state through control messages (docs/protocol.md, "Control messages"): the clear and
the read the controller uses where the switch has no RegisterEntry, against the embedded
switch started with a CPU port. The registers (read directly from the switch) are the
reference; BMv2 itself is exercised in tests/bmv2_controller/."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import STATIC
from ctl_helpers import ROOT, Switch, agg_frame, key_of, members
from p4reduce.controller import Controller, SwitchError, cells, program
from p4reduce.controller.p4rt import WriteFailed, entity
from p4reduce.switch.p4runtime import Device

CPU = program.CPU_PORT
ALL_REGISTERS = ("BITMAPS", "COUNTS", "EXPONENTS", "NONFINITE")


@pytest.fixture
def cpu_switch() -> Iterator[Switch]:
    sw = Switch(Device(1, cpu_port=CPU)).start()
    try:
        yield sw
    finally:
        sw.stop()


def _controller(sw: Switch, prog: Path, access: str) -> Controller:
    c = Controller(sw.addr, slot_access=access).connect()
    c.push(prog)
    c.install_static(STATIC)
    return c


def _contribute(sw: Switch, kind: str) -> None:
    """Rank 0 of job 7 into slot 1 set 0 (payload, exponent 140, NaN bit, next 9) and into
    slot 2 set 1 (header-only); rank 1 completes nothing."""
    values = [i * 1000 - 7 for i in range(64)]
    f = agg_frame(7, 0, 1, 0, kind=kind, exponent=140, nonfinite=1, next_=9, values=values)
    assert sw.device.inject(1, f) == []
    assert sw.device.inject(1, agg_frame(7, 0, 2, 1, kind=kind, flags=2, next_=11)) == []


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_control_messages_read_what_the_registers_hold(
    cpu_switch: Switch, programs: dict[str, Path], kind: str
) -> None:
    ctl = _controller(cpu_switch, programs[kind], "packets")
    try:
        ctl.create_job(7, members(2), 4, key=key_of(7))
        _contribute(cpu_switch, kind)
        _, by_packets = ctl.slots(7, values=True)
        assert ctl.conn.register_access is False
        ctl.conn.register_access = True  # the same read through RegisterEntry
        _, by_registers = ctl.slots(7, values=True)
    finally:
        ctl.close()
    assert [s.to_dict() for s in by_packets] == [s.to_dict() for s in by_registers]
    cell = by_packets[1].sets[0]
    assert (cell.ranks, cell.count, cell.has_data, cell.exponent, cell.nonfinite) == (
        [0],
        1,
        True,
        140,
        1,
    )
    assert cell.values is not None and cell.values[:3] == [-7, 993, 1993]
    assert cell.next_min == (9 if kind == "sparse" else None)
    assert by_packets[2].sets[1].ranks == [0] and not by_packets[2].sets[1].has_data


def test_clear_by_control_messages_zeroes_whole_cells(
    cpu_switch: Switch, programs: dict[str, Path]
) -> None:
    """Creating a job again on the same range finds every cell zero: bitmap words, counts,
    exponents, non-finite bits, next_min and lanes (the register path only zeroes bitmaps
    and counts). A job next to it keeps its state."""
    ctl = _controller(cpu_switch, programs["sparse"], "packets")
    try:
        ctl.create_job(7, members(2), 4, slot_base=20, key=key_of(7))
        ctl.create_job(8, members(2, 6000), 2, slot_base=24, key=key_of(8))
        _contribute(cpu_switch, "sparse")
        assert cpu_switch.device.inject(1, agg_frame(8, 0, 0, udp_base=6000, kind="sparse")) == []
        ctl.delete_job(7)
        ctl.create_job(7, members(2), 4, slot_base=20, key=key_of(7))
        _, states = ctl.slots(7, values=True)
        assert all(s.empty for s in states)
        for name in ALL_REGISTERS + ("NEXT_MIN",):
            reg = getattr(program, name)
            size = 4 if name == "BITMAPS" else 8
            first = 20 if name == "BITMAPS" else 40
            assert [cpu_switch.register(reg, i) for i in range(first, first + size)] == [0] * size
        assert cpu_switch.register(program.ACC.format(0), 42) == 0  # slot 21 set 0's lane 0
        assert cpu_switch.register(program.BITMAPS, 24) == 1  # job 8's slot 0, untouched
        _, (slot0, _) = ctl.slots(8)
        assert slot0.sets[0].ranks == [0]
    finally:
        ctl.close()


def _readdressed(frame: bytes, dst: bytes) -> bytes:
    ip = bytearray(frame[14:34])
    ip[16:20], ip[10:12] = dst, b"\0\0"
    ip[10:12] = cells._ipv4_checksum(bytes(ip)).to_bytes(2, "big")
    return frame[:14] + bytes(ip) + frame[34:]


def test_workers_cannot_send_control_messages(
    cpu_switch: Switch, programs: dict[str, Path]
) -> None:
    """A clear from a worker port, addressed to the switch or to anyone, changes nothing and
    is never answered; from the CPU port the same frame clears."""
    ctl = _controller(cpu_switch, programs["dense"], "packets")
    try:
        ctl.create_job(7, members(2), 4, key=key_of(7))
        _contribute(cpu_switch, "dense")
        clear = cells.frame(program.CTL_CLEAR, 1, 0, 5, 0)
        to_switch = _readdressed(clear, bytes([10, 0, 0, 254]))  # the switch's IPv4 address
        for frame in (clear, to_switch):
            out = cpu_switch.device.inject(1, frame)
            assert all(port != CPU for port, _ in out)
        assert cpu_switch.register(program.BITMAPS, 1) == 1
        # the one addressed to the switch: job_counters[0 * 16 + EV_UNKNOWN_SENDER]
        (unknown,) = ctl.conn.read(
            [ctl.schema.counter_entry(program.JOB_COUNTERS, 8)], "read job_counters"
        )
        assert unknown.data.packet_count == 1
        cpu_switch.device.inject(CPU, clear)  # its answer goes to the controller's stream
        assert cpu_switch.register(program.BITMAPS, 1) == 0
    finally:
        ctl.close()


def test_auto_probes_once_and_falls_back(
    cpu_switch: Switch, programs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A switch that answers UNIMPLEMENTED to RegisterEntry (simple_switch_grpc): one refused
    update, then control messages for every clear and read; loss fails in one line and
    reset says it could not zero the thresholds."""
    ctl = _controller(cpu_switch, programs["dense"], "auto")
    refused: list[int] = []
    real_write, real_read = ctl.conn.write, ctl.conn.read

    def is_register(e: Any) -> bool:
        return entity(e).WhichOneof("entity") == "register_entry"

    def write(updates: Any, what: str = "write") -> None:
        updates = list(updates)
        if any(is_register(e) for _, e in updates):
            refused.append(len(updates))
            raise WriteFailed(
                f"{what}: UNIMPLEMENTED: Register writes are not supported yet",
                [("UNIMPLEMENTED", "no")] * len(updates),
            )
        real_write(updates, what)

    def read(entities: Any, what: str = "read") -> list[Any]:
        entities = list(entities)
        if any(is_register(e) for e in entities):
            refused.append(len(entities))
            raise WriteFailed(f"{what}: UNIMPLEMENTED: no", [("UNIMPLEMENTED", "no")])
        return real_read(entities, what)

    monkeypatch.setattr(ctl.conn, "write", write)
    monkeypatch.setattr(ctl.conn, "read", read)
    try:
        ctl.create_job(7, members(2), 64, key=key_of(7))
        assert refused == [1] and ctl.conn.register_access is False
        _contribute(cpu_switch, "dense")
        _, states = ctl.slots(7, 0, 3)
        assert states[1].sets[0].ranks == [0]
        ctl.delete_job(7)
        assert cpu_switch.register(program.BITMAPS, 1) == 0
        with pytest.raises(SwitchError, match=r"^set loss: UNIMPLEMENTED: Register writes"):
            ctl.set_loss(0.1)
        assert refused == [1, 1]  # the loss write probed with one update too
        # reset clears the whole pool by packets: 16,384 messages take ~12 s here, so this
        # test's pool is 256 slots (tests/bmv2_controller runs the full reset on BMv2)
        monkeypatch.setattr(program, "POOL_SLOTS", 256)
        got = ctl.reset()
        assert got["slots_cleared"] and got["slots_path"] == "packets"
        assert not got["loss_cleared"]
        assert ctl.warnings == [
            "the loss thresholds were not zeroed: set loss: UNIMPLEMENTED: Register writes "
            "are not supported yet"
        ]
        assert refused == [1, 1, 1]
    finally:
        ctl.close()


def test_a_switch_without_cpu_port_is_one_line(switch: Switch, programs: dict[str, Path]) -> None:
    ctl = _controller(switch, programs["dense"], "packets")
    try:
        with pytest.raises(SwitchError) as err:
            ctl.create_job(7, members(2), 4, key=key_of(7))
    finally:
        ctl.close()
    assert str(err.value) == (
        "clear slots 0..3: the switch refused a control message: FAILED_PRECONDITION: the "
        "switch has no CPU port"
    )


def test_control_constants_mirror_constants_p4() -> None:
    text = (ROOT / "p4src/include/constants.p4").read_text()

    def const(name: str) -> int:
        m = re.search(rf"const\s+bit<\d+>\s+{name}\s*=\s*(\w+)\s*;", text)
        assert m, name
        return int(m[1], 0)

    assert const("MSG_CONTROL") == program.MSG_CONTROL
    assert const("CTL_CLEAR") == program.CTL_CLEAR
    assert const("CTL_PEEK") == program.CTL_PEEK
    assert const("FLAG_RESULT") == program.FLAG_RESULT
    assert const("FLAG_NO_PAYLOAD") == program.FLAG_NO_PAYLOAD
    m = re.search(r"#define\s+CPU_PORT_NUMBER\s+(\d+)", text)
    assert m and int(m[1]) == program.CPU_PORT


def test_frame_and_answer_layout() -> None:
    f = cells.frame(program.CTL_PEEK, 8191, 1, 0xDEADBEEF, 64)
    assert len(f) == 14 + 20 + 8 + 24 + 256
    assert f[42] == program.MSG_CONTROL << 4 and f[43] == program.CTL_PEEK
    assert f[46:48] == bytes([0x80 | 0x1F, 0xFF])  # set 1, slot 8191
    assert cells._ipv4_checksum(f[14:34]) == 0  # a valid IPv4 checksum sums to 0xFFFF
    answer = bytearray(f)
    answer[42] |= program.FLAG_RESULT
    answer[54:58] = (5).to_bytes(4, "big")  # block: the bitmap word
    answer[62:66] = (0x82).to_bytes(4, "big")  # key: the count byte
    pid, op, cell = cells.parse_answer(bytes(answer), 64) or (0, 0, None)
    assert (pid, op) == (0xDEADBEEF, program.CTL_PEEK)
    assert cell == cells.Cell(8191, 1, 5, 0x82, 0, 0, 0, (0,) * 64)
    assert cells.parse_answer(f, 64) is None  # a request, not an answer
    assert cells.parse_answer(f[:50], 64) is None

"""Helpers of the controller tests: compiling the p4src programs, an embedded switch on an
ephemeral port, worker addresses and aggregation frames (docs/protocol.md, "Frame layout")."""

from __future__ import annotations

import ipaddress
import struct
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from p4reduce.controller import Member
from p4reduce.switch.p4runtime import Device, P4RuntimeServer

ROOT = Path(__file__).resolve().parents[2]
P4C = Path(sys.executable).parent / "p4reduce-p4c"
SWITCH_IP, SWITCH_MAC = "10.0.0.254", "02:00:00:00:00:fe"
AGG_PORT = 48864
MSG = {"dense": 1, "sparse": 2}
FLAG_NO_PAYLOAD = 0x2
FLAG_RESULT = 0x1
FLAG_RETRANSMIT = 0x4


def compile_program(name: str, out: Path) -> Path:
    """p4src/NAME.p4 -> OUT/NAME.json + OUT/NAME.p4info.txtpb; returns the prefix OUT/NAME."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            str(P4C),
            "-I",
            str(ROOT / "p4src" / "include"),
            "-o",
            str(out),
            "--p4runtime-files",
            str(out / f"{name}.p4info.txtpb"),
            str(ROOT / "p4src" / f"{name}.p4"),
        ],
        check=True,
        capture_output=True,
    )
    return out / name


@dataclass
class Switch:
    """An embedded switch with its P4Runtime server on 127.0.0.1:<free port>."""

    device: Device = field(default_factory=lambda: Device(1))
    server: P4RuntimeServer | None = None
    port: int = 0

    def start(self) -> Switch:
        self.server = P4RuntimeServer(self.device, "127.0.0.1:0")
        self.port = self.server.start()
        return self

    @property
    def addr(self) -> str:
        return f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None

    def register(self, name: str, index: int) -> int:
        return self.device.switch.pipeline.registers[name].cp_read(index)


def worker_ip(rank: int) -> str:
    return f"10.0.0.{rank + 1}"


def worker_mac(rank: int) -> str:
    return f"02:00:00:00:00:{rank + 1:02x}"


def member(rank: int, udp_base: int = 5000) -> Member:
    return Member.make(rank, worker_ip(rank), udp_base + rank, worker_mac(rank), rank + 1)


def members(n: int, udp_base: int = 5000) -> list[Member]:
    return [member(r, udp_base) for r in range(n)]


def _checksum(header: bytes) -> int:
    s = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _mac(text: str) -> bytes:
    return bytes(int(x, 16) for x in text.split(":"))


def key_of(job_id: int) -> int:
    """The job key the tests give a job (docs/protocol.md, "Job keys"): fixed per job id."""
    return ((0x9E3779B9 * job_id) | 0x01010101) & 0xFFFFFFFF


def agg_frame(
    job_id: int,
    rank: int,
    slot: int,
    set_: int = 0,
    *,
    k: int = 64,
    kind: str = "dense",
    src_rank: int | None = None,
    udp_base: int = 5000,
    exponent: int = 130,
    next_: int = 0,
    values: list[int] | None = None,
    flags: int = 0,
    packet_id: int = 1,
    block: int = 0,
    truncate: int = 0,
    key: int | None = None,
    nonfinite: int = 0,
) -> bytes:
    """A worker's aggregation frame; ``src_rank`` sends from another rank's addresses; ``key``
    defaults to ``key_of(job_id)``, the key the tests create their jobs with; ``nonfinite``:
    header byte 7 (the NF_* bits)."""
    s = rank if src_rank is None else src_rank
    header = struct.pack(
        "!BBHHBBIIII",
        (MSG[kind] << 4) | flags,
        rank,
        job_id,
        (set_ << 15) | slot,
        exponent,
        nonfinite,
        packet_id,
        block,
        next_,
        key_of(job_id) if key is None else key,
    )
    payload = b""
    if not flags & FLAG_NO_PAYLOAD:
        vals = values if values is not None else [rank + 1] * k
        payload = struct.pack(f"!{k}i", *vals)
    udp_payload = header + payload
    if truncate:
        udp_payload = udp_payload[:-truncate]
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        0x45,
        0,
        28 + len(udp_payload),
        0,
        0,
        64,
        17,
        0,
        ipaddress.IPv4Address(worker_ip(s)).packed,
        ipaddress.IPv4Address(SWITCH_IP).packed,
    )
    ip = ip[:10] + _checksum(ip).to_bytes(2, "big") + ip[12:]
    udp = struct.pack("!HHHH", udp_base + s, AGG_PORT, 8 + len(udp_payload), 0)
    eth = _mac(SWITCH_MAC) + _mac(worker_mac(s)) + b"\x08\x00"
    return eth + ip + udp + udp_payload


def result_header(frame: bytes) -> dict[str, int]:
    """The fields of a result frame the tests look at."""
    flags_type, rank, job_id, slot_word, exponent, _, packet_id, block, next_, key = struct.unpack(
        "!BBHHBBIIII", frame[42:66]
    )
    return {
        "type": flags_type >> 4,
        "flags": flags_type & 0xF,
        "rank": rank,
        "job_id": job_id,
        "set": slot_word >> 15,
        "slot": slot_word & 0x7FFF,
        "exponent": exponent,
        "next": next_,
        "key": key,
        "dst_ip": int.from_bytes(frame[30:34], "big"),
        "dst_port": int.from_bytes(frame[36:38], "big"),
    }


def first_value(frame: bytes) -> int:
    return struct.unpack("!i", frame[66:70])[0]

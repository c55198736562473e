"""The generated STF tests (bmv2_tests/p4reduce_*.stf and their .p4 wrappers) are current,
and every IPv4 frame in them is well formed by scapy's reading (lengths, checksums) except
the one that is broken on purpose. bmv2_tests/test_stf_suite.py runs them on the embedded
switch; bmv2_tests/test_p4reduce_programs.py runs them on BMv2 when it is installed.
"""

from __future__ import annotations

import pytest
import stf_gen
from fabric import ROOT, scapy_ip_checksum_ok


def test_generated_files_are_current() -> None:
    for path, text in stf_gen.files().items():
        assert path.is_file(), f"{path} is missing: run tests/dataplane/stf_gen.py"
        assert path.read_text() == text, f"{path} is stale: run tests/dataplane/stf_gen.py"


def test_frames_are_well_formed_for_scapy() -> None:
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import ARP, Ether

    bad_checksums, frames = 0, 0
    for path in sorted((ROOT / "bmv2_tests").glob("p4reduce_*.stf")):
        for line in path.read_text().splitlines():
            if not line.startswith(("packet ", "expect ")):
                continue
            data = bytes.fromhex("".join(line.split()[2:]).rstrip("$"))
            frames += 1
            pkt = Ether(data)
            if ARP in pkt:
                assert len(data) == 42 and pkt[ARP].hwlen == 6 and pkt[ARP].plen == 4
                continue
            assert IP in pkt and UDP in pkt, line
            assert pkt[IP].len == len(data) - 14
            assert pkt[UDP].len == len(data) - 34
            if not scapy_ip_checksum_ok(data):
                bad_checksums += 1
    assert frames >= 40
    assert bad_checksums == 1  # p4reduce_dense_two_workers, packet 4


def test_lpm_keys_are_written_with_star_nibbles() -> None:
    # p4c's STF runner accepts these; it crashes on VALUE/LEN (bmv2_tests/test_portability.py)
    assert stf_gen.lpm_key(0x0A090000, 16, 32) == "0x0A09****"
    assert stf_gen.lpm_key(0x0A090102, 32, 32) == "0x0A090102"
    assert stf_gen.lpm_key(0, 0, 32) == "0x********"
    with pytest.raises(ValueError, match="whole number of nibbles"):
        stf_gen.lpm_key(0x0A090000, 12 + 1, 32)

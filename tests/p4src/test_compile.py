"""The aggregation programs compile with p4reduce-p4c, keep Tofino's rules at K = 64, and
refuse a K other than 64, 256 or 1024 with a clear error (256 and 1024 are for software
targets: the Tofino profile refuses them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import CompileOptions, compile_file
from p4reduce.switch.frontend.errors import CompileError

ROOT = Path(__file__).resolve().parents[2]
INCLUDE = ROOT / "p4src" / "include"
PROGRAMS = ["dense", "sparse"]


def options(k: int | None = None, profile: str | None = None) -> CompileOptions:
    defines: dict[str, str | None] = {} if k is None else {"K": str(k)}
    return CompileOptions(include_dirs=[INCLUDE], defines=defines, target_profile=profile)


@pytest.mark.parametrize("program", PROGRAMS)
def test_tofino_profile_at_k64(program: str) -> None:
    compiled = compile_file(ROOT / "p4src" / f"{program}.p4", options(profile="tofino"))
    names = {t.preamble.name for t in compiled.p4info.tables}
    assert "SwitchIngress.admission.workers" in names
    assert "SwitchEgress.replica.replicas" in names
    registers = {r.preamble.name for r in compiled.p4info.registers}
    assert sum(name.startswith("SwitchIngress.accumulate.acc") for name in registers) == 64
    assert ("SwitchIngress.next_min.next_min" in registers) == (program == "sparse")
    # admission stays one exact match on (job id, source address, source port): the job
    # key is action data, compared after the lookup (docs/protocol.md, "Job keys")
    (workers,) = [t for t in compiled.p4info.tables if t.preamble.name.endswith(".workers")]
    assert [(f.name, f.match_type) for f in workers.match_fields] == [
        ("hdr.agg.jobId", 2),
        ("hdr.ipv4.srcAddr", 2),
        ("hdr.udp.srcPort", 2),
    ]  # 2 = EXACT
    (admit,) = [a for a in compiled.p4info.actions if a.preamble.name.endswith(".admit")]
    assert [(p.name, p.bitwidth) for p in admit.params][-1] == ("job_key", 32)


@pytest.mark.parametrize("k", [256, 1024])
@pytest.mark.parametrize("program", PROGRAMS)
def test_large_k_builds_but_exceeds_the_tofino_parse_budget(program: str, k: int) -> None:
    compiled = compile_file(ROOT / "p4src" / f"{program}.p4", options(k=k))
    registers = {r.preamble.name for r in compiled.p4info.registers}
    assert sum(name.startswith("SwitchIngress.accumulate.acc") for name in registers) == k
    bits = 8 * (66 + 4 * k)  # Ethernet, IPv4, UDP, aggregation header and K elements
    with pytest.raises(CompileError, match=f"{bits} bits .* over Tofino's parse budget"):
        compile_file(ROOT / "p4src" / f"{program}.p4", options(k=k, profile="tofino"))


@pytest.mark.parametrize("k", [0, 100, 128, 512, 2048])
def test_other_k_is_refused(k: int) -> None:
    with pytest.raises(CompileError, match="K \\(elements per packet\\) must be 64, 256 or 1024"):
        compile_file(ROOT / "p4src" / "dense.p4", options(k=k))

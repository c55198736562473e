"""Pipelines load from P4 source and from ``p4reduce-p4c -o`` output alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.frontend.errors import CompileError
from p4reduce.switch.interp.load import load_compiled, load_pipeline
from p4reduce.switch.interp.matches import Exact, Lpm
from p4reduce.switch.interp.switch import V1Switch

ROUTER = Path(__file__).parents[2] / "bench" / "programs" / "ipv4_lpm.p4"
PACKET = bytes.fromhex(
    "000000000001000000000002080045000024000100004011"
    "0000010203040a010203000100020010000078787878787878"
)


def configure(sw: V1Switch) -> None:
    t = sw.pipeline.tables
    t["ingress.ipv4_lpm"].add_entry([Lpm(0x0A000000, 8)], "ingress.set_nhop", [7, 3])
    t["ingress.forward"].add_entry([Exact(7)], "ingress.set_dmac", [0x020000000007])
    t["egress.send_frame"].add_entry([Exact(3)], "egress.rewrite_mac", [0x0A0000000003])


def test_compiled_pipeline_behaves_like_the_source(tmp_path: Path) -> None:
    assert p4c_main([str(ROUTER), "-o", str(tmp_path)]) == 0
    from_json = V1Switch(load_pipeline(tmp_path / "ipv4_lpm.json"))
    from_source = V1Switch(load_pipeline(ROUTER))
    for sw in (from_json, from_source):
        configure(sw)
    out = from_json.process(1, PACKET)
    assert out and out == from_source.process(1, PACKET)
    assert out[0][0] == 3


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"format": "other"}, "not a compiled pipeline"),
        ({"format": "p4reduce-ir", "version": 1}, "version 1 is not supported"),
        ({"format": "p4reduce-ir", "version": 2}, "has no source text"),
        ([], "not a compiled pipeline"),
    ],
)
def test_bad_documents_are_refused_with_a_reason(doc: object, message: str) -> None:
    with pytest.raises(CompileError, match=message):
        load_compiled(doc)


def test_a_file_that_is_not_json_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text("{not json")
    with pytest.raises(CompileError, match="not a compiled pipeline"):
        load_pipeline(bad)


def test_source_errors_keep_their_positions(tmp_path: Path) -> None:
    assert p4c_main([str(ROUTER), "-o", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "ipv4_lpm.json").read_text())
    doc["source"]["text"] = doc["source"]["text"].replace("hdr.ipv4.ttl - 1", "hdr.ipv4.nosuch")
    with pytest.raises(CompileError, match="ipv4_lpm.p4"):
        load_compiled(doc)

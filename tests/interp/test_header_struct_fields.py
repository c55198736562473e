"""Headers with struct-typed fields (issue 32): layout, control-plane names, both engines.

bmv2_tests/header_struct_field runs the program through STF on both engines (and on BMv2);
here: the flattened layout, the table key names p4c gives (STF and P4Info), and a table entry
inserted over P4Runtime by the P4Info's match field names, on the native engine and the
interpreter.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.interp.layout import HeaderL, Scalar, StructL
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.p4runtime import entities
from p4reduce.switch.p4runtime.device import Device

from p4reduce import p4lang
from p4reduce.proto import p4info_pb2
from p4reduce.proto import p4runtime_pb2 as p4rt

PROGRAM = Path(__file__).parents[2] / "bmv2_tests" / "header_struct_field.p4"
KEYS = ["hdr.h.p.a", "hdr.h.p.n.hi"]  # p4c 1.2.5's P4Info and BMv2 JSON key names


def _compile(tmp: Path) -> tuple[Path, Path]:
    """p4reduce-p4c -o tmp --p4runtime-files tmp/p4info.txtpb (in-process)."""
    p4info = tmp / "p4info.txtpb"
    assert p4c_main(["-o", str(tmp), "--p4runtime-files", str(p4info), str(PROGRAM)]) == 0
    return tmp / f"{PROGRAM.stem}.json", p4info


def test_struct_field_is_flattened_in_wire_order() -> None:
    pipeline = load_pipeline(PROGRAM)
    names = [n for n in pipeline.storage.names if n.startswith("hdr.h.")]
    assert names[:6] == [
        "hdr.h.$valid$",
        "hdr.h.p.a",
        "hdr.h.p.n.hi",
        "hdr.h.p.n.lo",
        "hdr.h.p.b",
        "hdr.h.hsh",
    ]
    assert [k.name for k in pipeline.tables["ingress.t"].keys] == KEYS


def test_header_layout_views_the_struct() -> None:
    from p4reduce.switch.frontend import types as T
    from p4reduce.switch.interp.layout import Storage

    inner = T.StructT("struct", "inner_t", {"hi": T.Bits(4), "lo": T.Bits(4)})
    pair = T.StructT("struct", "pair_t", {"a": T.Bits(8), "n": inner})
    h = T.StructT("header", "h_t", {"p": pair, "x": T.Bits(16)})
    lay = Storage().alloc(h, "h")
    assert isinstance(lay, HeaderL)
    assert list(lay.fields) == ["p.a", "p.n.hi", "p.n.lo", "x"]
    assert [T.width_of(f.type) for f in lay.fields.values()] == [8, 4, 4, 16]
    view = lay.structs["p"]
    assert isinstance(view, StructL) and isinstance(view.fields["n"], StructL)
    hi = view.fields["n"].fields["hi"]  # type: ignore[union-attr]
    assert isinstance(hi, Scalar) and hi is lay.fields["p.n.hi"]
    assert view.slots() == [lay.fields[k].slot for k in ("p.a", "p.n.hi", "p.n.lo")]


def _field_id(table: p4info_pb2.Table, name: str) -> int:
    return next(f.id for f in table.match_fields if f.name == name)


@pytest.mark.parametrize("engine", ["native", "python"])
def test_p4runtime_entry_by_p4info_key_names(engine: str, tmp_path: Path) -> None:
    json_path, p4info_path = _compile(tmp_path)
    info = text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info())
    (table,) = [t for t in info.tables if t.preamble.name == "ingress.t"]
    assert [f.name for f in table.match_fields] == KEYS
    action = next(a for a in info.actions if a.preamble.name == "ingress.set")
    dev = Device(engine=engine)
    dev.load_file(json_path, p4info_path)
    te = p4rt.TableEntry(table_id=table.preamble.id, priority=1)
    te.match.add(field_id=_field_id(table, "hdr.h.p.a")).exact.value = b"\x05"
    t = te.match.add(field_id=_field_id(table, "hdr.h.p.n.hi")).ternary
    t.value, t.mask = b"\x03", b"\x0f"
    te.action.action.action_id = action.preamble.id
    te.action.action.params.add(param_id=1, value=b"\x11")
    update = p4rt.Update(type=p4rt.Update.INSERT)
    update.entity.table_entry.CopyFrom(te)
    assert dev.state is not None
    entities.write(dev.state, update)
    assert dev.state.switch.engine == engine
    # a=05 n=31 b=07 -> hit set(11), as in header_struct_field.stf
    frame = bytes.fromhex("053107FFFFFFFFFF")
    assert dev.inject(0, frame) == [(1, bytes.fromhex("0511083105110101"))]
    # n.hi = 4 does not match the ternary 3/F -> miss (FF)
    assert dev.inject(0, bytes.fromhex("0542FFFFFFFFFFFF")) == [
        (1, bytes.fromhex("0522004205FF0001"))
    ]


def test_p4info_equals_p4c(tmp_path: Path) -> None:
    reason = p4lang.missing_reason("p4c-bm2-ss")
    if reason:
        pytest.skip(reason)
    _, ours = _compile(tmp_path)
    theirs = tmp_path / "p4c.p4info.txtpb"
    tool = p4lang.find("p4c-bm2-ss")
    assert tool is not None
    subprocess.run(
        [tool, "-o", str(tmp_path / "p4c.json"), "--p4runtime-files", str(theirs), str(PROGRAM)],
        check=True,
        env=p4lang.env(),
        timeout=120,
        capture_output=True,
    )
    assert ours.read_text() == theirs.read_text()

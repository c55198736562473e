"""p4reduce-p4c's contract under hostile input: exit 0 or 1, a p4c-style error line on 1, and
never a Python traceback, however broken, binary or deeply nested the program is.

The fuzz tests drive ``main([...])`` in-process; they are deterministic (derandomize) and
sized so the whole file runs in well under a minute.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from google.protobuf import json_format, text_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4reduce.switch.frontend import cli
from p4reduce.switch.frontend.errors import CompileError, SourcePos

from p4reduce.proto import p4info_pb2

VALID_PROGRAM = """\
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<8> hits;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x0800: accept;
            default: accept;
        }
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
        meta.hits = meta.hits + 1;
    }
    table dmac {
        key = {
            hdr.ethernet.dst_addr: exact;
        }
        actions = {
            forward;
            drop;
        }
        size = 1024;
        default_action = drop();
    }
    apply {
        if (hdr.ethernet.isValid()) {
            dmac.apply();
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
"""
VALID_BYTES = VALID_PROGRAM.encode()

P4_TOKENS = [
    "header", "struct", "control", "parser", "action", "table", "apply", "state", "transition",
    "select", "if", "else", "return", "exit", "const", "typedef", "extern", "bit", "int",
    "bool", "true", "false", "key", "actions", "exact", "ternary", "lpm", "default",
    "accept", "reject", "V1Switch", "main", "packet_in", "packet_out", "in", "out", "inout",
    "x", "y", "hdr", "meta", "8w5", "16w0xFFFF", "8s-3", "0x1F", "1", "0", "32",
    "{", "}", "(", ")", "[", "]", "<", ">", ";", ",", ".", ":", "=", "==", "!=", "+", "-",
    "*", "/", "&", "|", "^", "~", "!", "&&", "||", "&&&", "..", "++", "|+|", "<<", ">>",
    "@name", '"str"', "\n", "#define X 1\n", "#if X\n", "#endif\n", "#include <core.p4>\n",
    "#include <v1model.p4>\n", "/*", "*/", "//", "#", "\\\n",
]  # fmt: skip

ERROR_LINE = re.compile(r"^.+\(\d+\): error: |^(.+: )?error: ", re.MULTILINE)

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@dataclass
class Run:
    code: int
    out: str
    err: str


def run_cli(args: list[str]) -> Run:
    """main() in-process with stdout and stderr captured (works from hypothesis tests too)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    return Run(code, out.getvalue(), err.getvalue())


def compile_bytes(data: bytes, name: str = "prog.p4", extra: list[str] | None = None) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        return run_cli([str(path), "-o", str(Path(tmp) / "out"), *(extra or [])])


def assert_contract(run: Run) -> None:
    assert run.code in (0, 1), run
    assert "Traceback" not in run.out + run.err, run.err
    if run.code == 1:
        assert ERROR_LINE.search(run.err), run.err


# ------------------------------------------------------------------ fuzzing


@FUZZ
@given(st.binary(max_size=3000))
def test_random_bytes(data: bytes) -> None:
    assert_contract(compile_bytes(data))


@FUZZ
@given(st.lists(st.sampled_from(P4_TOKENS), max_size=300))
def test_random_p4_token_soup(tokens: list[str]) -> None:
    assert_contract(compile_bytes(" ".join(tokens).encode()))


@FUZZ
@given(st.integers(min_value=0, max_value=len(VALID_BYTES)))
def test_truncated_program(cut: int) -> None:
    assert_contract(compile_bytes(VALID_BYTES[:cut]))


@st.composite
def mutated_program(draw: st.DrawFn) -> bytes:
    """The valid program after a few byte flips, deletions and duplications."""
    data = bytearray(VALID_BYTES)
    for _ in range(draw(st.integers(min_value=1, max_value=5))):
        kind = draw(st.sampled_from(["flip", "delete", "duplicate"]))
        at = draw(st.integers(min_value=0, max_value=max(len(data) - 1, 0)))
        span = draw(st.integers(min_value=1, max_value=40))
        if kind == "flip" and data:
            data[at] = draw(st.integers(min_value=0, max_value=255))
        elif kind == "delete":
            del data[at : at + span]
        else:
            data[at:at] = data[at : at + span]
    return bytes(data)


@FUZZ
@given(mutated_program())
def test_mutated_program(data: bytes) -> None:
    assert_contract(compile_bytes(data))


# ------------------------------------------------------------------ pathological shapes


def test_ten_thousand_nested_parentheses() -> None:
    deep = "(" * 10_000 + "meta.hits" + ")" * 10_000
    source = VALID_PROGRAM.replace("meta.hits = meta.hits + 1;", f"meta.hits = {deep} + 1;")
    assert source != VALID_PROGRAM
    assert_contract(compile_bytes(source.encode()))


def test_ten_thousand_nested_blocks() -> None:
    deep = "{" * 10_000 + "dmac.apply();" + "}" * 10_000
    source = VALID_PROGRAM.replace("dmac.apply();", deep, 1)
    assert source != VALID_PROGRAM
    assert_contract(compile_bytes(source.encode()))


def test_ten_thousand_unclosed_parentheses() -> None:
    source = VALID_PROGRAM.replace("meta.hits + 1;", "(" * 10_000 + "meta.hits;")
    run = compile_bytes(source.encode())
    assert_contract(run)
    assert run.code == 1


def test_unknown_include() -> None:
    run = compile_bytes(b'#include "no_such_file.p4"\n' + VALID_BYTES)
    assert run.code == 1
    assert re.search(r"prog\.p4\(1\): error: .*no_such_file\.p4", run.err)
    assert "Traceback" not in run.err


def test_file_that_includes_itself() -> None:
    run = compile_bytes(b'#include "self.p4"\n' + VALID_BYTES, name="self.p4")
    assert run.code == 1
    assert re.search(r"self\.p4\(1\): error: .*nested depth", run.err)
    assert "Traceback" not in run.err


def test_deep_thread_survives_deep_recursion() -> None:
    def depth(n: int) -> int:
        return 0 if n == 0 else 1 + depth(n - 1)

    limit = sys.getrecursionlimit()
    assert cli.in_deep_thread(lambda: depth(200_000)) == 200_000
    assert sys.getrecursionlimit() == limit  # the main thread keeps its ordinary guard


def test_deep_thread_passes_exceptions_back() -> None:
    def fail() -> None:
        raise CompileError(None, "boom")

    with pytest.raises(CompileError, match="boom"):
        cli.in_deep_thread(fail)


# ------------------------------------------------------------------ plain command-line tests


@pytest.fixture
def program(tmp_path: Path) -> Path:
    path = tmp_path / "basic.p4"
    path.write_text(VALID_PROGRAM)
    return path


def test_output_dir_gets_name_json(program: Path, tmp_path: Path) -> None:
    out_dir = tmp_path / "build" / "nested"
    run = run_cli([str(program), "-o", str(out_dir)])
    assert run.code == 0, run.err
    assert isinstance(json.loads((out_dir / "basic.json").read_text()), dict)


def test_p4runtime_files_in_every_format(program: Path, tmp_path: Path) -> None:
    names = [tmp_path / n for n in ("p.txtpb", "p.txt", "p.json", "p.bin")]
    run = run_cli([str(program), "--p4runtime-files", ",".join(map(str, names))])
    assert run.code == 0, run.err
    infos = [
        text_format.Parse(names[0].read_text(), p4info_pb2.P4Info()),
        text_format.Parse(names[1].read_text(), p4info_pb2.P4Info()),
        json_format.Parse(names[2].read_text(), p4info_pb2.P4Info()),
        p4info_pb2.P4Info.FromString(names[3].read_bytes()),
    ]
    assert all(info == infos[0] for info in infos)
    assert any(t.preamble.name.endswith("dmac") for t in infos[0].tables)


def test_preprocess_only(program: Path) -> None:
    run = run_cli([str(program), "-E", "-D", "EXTRA=3"])
    assert run.code == 0, run.err
    assert f'"{program}"' in run.out and "V1Switch(" in run.out


def test_preprocess_only_defines_the_target_macro(tmp_path: Path) -> None:
    path = tmp_path / "t.p4"
    path.write_text("#ifdef __TARGET_BMV2__\nbmv2;\n#endif\n")
    assert "bmv2;" in run_cli([str(path), "-E"]).out
    assert "bmv2;" not in run_cli([str(path), "-E", "-U", "__TARGET_BMV2__"]).out


def test_missing_input_file(tmp_path: Path) -> None:
    run = run_cli([str(tmp_path / "absent.p4")])
    assert run.code == 1
    assert run.err.strip().count("\n") == 0
    assert "absent.p4: No such file or directory" in run.err


def test_directory_as_input(tmp_path: Path) -> None:
    run = run_cli([str(tmp_path)])
    assert (run.code, run.err.strip().count("\n")) == (1, 0)
    assert "is a directory" in run.err


def test_bad_std_is_one_line(program: Path) -> None:
    run = run_cli(["--std", "p4-14", str(program)])
    assert run.code == 1
    assert run.err.strip().count("\n") == 0
    assert ERROR_LINE.search(run.err)


@pytest.mark.parametrize(
    "args",
    [
        ["--arch", "psa"],
        ["--target", "tofino"],
        ["--bogus-flag"],
        ["--p4runtime-files", "p4info.yaml"],
    ],
)
def test_bad_options_exit_1(program: Path, args: list[str]) -> None:
    run = run_cli([*args, str(program)])
    assert run.code == 1
    assert ERROR_LINE.search(run.err)
    assert "Traceback" not in run.err


def test_no_program_exits_1() -> None:
    run = run_cli([])
    assert run.code == 1
    assert ERROR_LINE.search(run.err)


def test_help_and_version() -> None:
    help_run = run_cli(["--help"])
    assert help_run.code == 0 and "--p4runtime-files" in help_run.out
    version_run = run_cli(["--version"])
    assert version_run.code == 0 and version_run.out.startswith("p4reduce-p4c ")


def test_preprocessor_error_is_reported_like_p4c(tmp_path: Path) -> None:
    path = tmp_path / "e.p4"
    path.write_text("header h_t { bit<8> f; }\n#error stop here\n")
    run = run_cli([str(path), "-E"])
    assert run.code == 1
    assert run.err.splitlines() == [f"{path}(2): error: #error stop here", "#error stop here"]


# ------------------------------------------------------------------ with a stand-in compiler


@dataclass
class FakeProgram:
    name: str
    ir: dict[str, object]
    p4info: p4info_pb2.P4Info = field(default_factory=p4info_pb2.P4Info)
    warnings: list[object] = field(default_factory=list)  # CompiledProgram.warnings


@pytest.fixture
def fake_compiler(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    """Replace the compiler module so the CLI's own handling is tested on its own."""
    state = types.SimpleNamespace(behaviour=None, options=None)

    @dataclass
    class CompileOptions:
        include_dirs: list[Path]
        defines: dict[str, str | None]
        undefines: list[str]
        target_profile: str | None = None
        runtime_divmod: bool = False
        emit_externs: bool = False
        value_arrays: bool = False

    def compile_file(path: Path, options: CompileOptions) -> FakeProgram:
        state.options = options
        if state.behaviour is not None:
            raise state.behaviour
        info = p4info_pb2.P4Info()
        info.pkg_info.arch = "v1model"
        return FakeProgram(path.stem, {"program": str(path)}, info)

    module = types.ModuleType("p4reduce.switch.frontend.compiler")
    module.CompileOptions = CompileOptions  # type: ignore[attr-defined]
    module.compile_file = compile_file  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return state


def test_options_reach_the_compiler(program: Path, fake_compiler: types.SimpleNamespace) -> None:
    args = ["-I", "a", "-Ib", "-D", "X", "-DY=2", "-U", "Z", "--target-profile", "tofino"]
    run = run_cli([*args, str(program)])
    assert run.code == 0, run.err
    options = fake_compiler.options
    assert options.include_dirs == [Path("a"), Path("b")]
    assert options.defines == {"__TARGET_BMV2__": None, "X": None, "Y": "2"}
    assert (options.undefines, options.target_profile) == (["Z"], "tofino")
    assert options.runtime_divmod is False
    assert run_cli(["--runtime-divmod", str(program)]).code == 0
    assert fake_compiler.options.runtime_divmod is True
    assert options.value_arrays is False
    assert run_cli(["--value-arrays", str(program)]).code == 0
    assert fake_compiler.options.value_arrays is True
    assert options.emit_externs is False
    assert run_cli(["--emit-externs", str(program)]).code == 0
    assert fake_compiler.options.emit_externs is True


def test_compile_error_is_printed_with_the_source_line(
    program: Path, fake_compiler: types.SimpleNamespace
) -> None:
    fake_compiler.behaviour = CompileError(SourcePos(str(program), 4), "bad header")
    run = run_cli([str(program)])
    assert run.code == 1
    assert run.err.splitlines() == [f"{program}(4): error: bad header", "header ethernet_t {"]


@pytest.mark.parametrize(
    ("exc", "detail"),
    [
        (ValueError("boom\nsecond line"), "ValueError: boom second line"),
        (RecursionError("deep"), "RecursionError: program nested too deeply"),
        (MemoryError(), "MemoryError: out of memory"),
    ],
)
def test_unexpected_exceptions_are_internal_errors(
    program: Path, fake_compiler: types.SimpleNamespace, exc: BaseException, detail: str
) -> None:
    fake_compiler.behaviour = exc
    run = run_cli([str(program)])
    assert run.code == 1
    assert run.err == f"{program}: error: internal compiler error: {detail}\n"


def test_unwritable_output_is_one_line_error(
    program: Path, tmp_path: Path, fake_compiler: types.SimpleNamespace
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    run = run_cli([str(program), "-o", str(blocker)])
    assert run.code == 1
    assert run.err.startswith("p4reduce-p4c: error: cannot write ")
    assert run.err.strip().count("\n") == 0

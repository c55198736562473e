"""Front-end speed: compile a generated ~2,000-line v1model program in process.

Prints the median of several runs of the whole compile (preprocessing, parsing, checking,
P4Info and IR), per-stage medians, and as a same-run baseline the time to merely split the
same text into tokens with one regular expression; the ratio to that lower bound is what
compares across machines (docs/architecture.md: machines differ, ratios do not much).

    python bench/frontend.py [--lines N] [--repeat R] [--json] [--save FILE]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from p4reduce.switch.frontend.cli import run_compile
from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.p4include import INCLUDE_DIR

# Identifiers, numbers (with P4 width prefixes such as 8w5), the multi-character operators,
# then any other single character: as little work as a tokeniser can do.
_BASELINE_TOKEN = re.compile(
    r"[A-Za-z_]\w*|\d\w*|&&&|\|\+\||\|-\||\.\.|\+\+|<<|>>|<=|>=|==|!=|&&|\|\||\S"
)

_MATCH_KINDS = ("exact", "lpm", "ternary", "range")
_WIDTHS = (8, 16, 32, 48)


# ------------------------------------------------------------------ program generator


def generate_program(target_lines: int = 2000) -> str:
    """A valid v1model program of about ``target_lines`` lines.

    The fixed part (standard headers, parser entry, checksums, deparser) is joined by as many
    "units" as fit; each unit adds a header type, a parser state, two actions, a table with
    a different mix of match kinds, a register, a counter and a block of ingress logic.
    """
    fixed = _line_count(_program(0))
    per_unit = _line_count(_program(1)) - fixed
    units = max(1, round((target_lines - fixed) / per_unit))
    return _program(units)


def _line_count(text: str) -> int:
    return text.count("\n")


def _program(units: int) -> str:
    parts = [
        "#include <core.p4>",
        "#include <v1model.p4>",
        "",
        "const bit<16> TYPE_IPV4 = 0x0800;",
        "const bit<8> PROTO_UDP = 17;",
        "const bit<16> CHAIN_PORT = 9000;",
        "typedef bit<9> port_t;",
        "",
        *_standard_headers(),
        *(line for i in range(units) for line in _unit_header(i)),
        *_structs(units),
        *_parser(units),
        *_verify_checksum(),
        *_ingress(units),
        *_egress(),
        *_compute_checksum(),
        *_deparser(units),
        "V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(),",
        "         MyComputeChecksum(), MyDeparser()) main;",
    ]
    return "\n".join(parts) + "\n"


def _standard_headers() -> list[str]:
    return [
        "header ethernet_t {",
        "    bit<48> dst_addr;",
        "    bit<48> src_addr;",
        "    bit<16> ether_type;",
        "}",
        "",
        "header ipv4_t {",
        "    bit<4> version;",
        "    bit<4> ihl;",
        "    bit<8> diffserv;",
        "    bit<16> total_len;",
        "    bit<16> identification;",
        "    bit<3> flags;",
        "    bit<13> frag_offset;",
        "    bit<8> ttl;",
        "    bit<8> protocol;",
        "    bit<16> hdr_checksum;",
        "    bit<32> src_addr;",
        "    bit<32> dst_addr;",
        "}",
        "",
        "header udp_t {",
        "    bit<16> src_port;",
        "    bit<16> dst_port;",
        "    bit<16> length;",
        "    bit<16> checksum;",
        "}",
        "",
    ]


def _unit_header(i: int) -> list[str]:
    """h{i}_t: a next-header selector, then fields of assorted widths."""
    fields = [f"    bit<{_WIDTHS[(i + k) % len(_WIDTHS)]}> f{k};" for k in range(4)]
    return [f"header h{i}_t {{", "    bit<8> next;", *fields, "}", ""]


def _structs(units: int) -> list[str]:
    return [
        "struct headers_t {",
        "    ethernet_t ethernet;",
        "    ipv4_t ipv4;",
        "    udp_t udp;",
        *(f"    h{i}_t h{i};" for i in range(units)),
        "}",
        "",
        "struct metadata_t {",
        "    bit<32> acc;",
        "    bit<16> tag;",
        "    bit<8> depth;",
        "    bit<1> flag;",
        "}",
        "",
    ]


def _parser(units: int) -> list[str]:
    first = "parse_h0" if units else "accept"
    lines = [
        "parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,",
        "                inout standard_metadata_t standard_metadata) {",
        "    state start {",
        "        pkt.extract(hdr.ethernet);",
        "        transition select(hdr.ethernet.ether_type) {",
        "            TYPE_IPV4: parse_ipv4;",
        "            default: accept;",
        "        }",
        "    }",
        "",
        "    state parse_ipv4 {",
        "        pkt.extract(hdr.ipv4);",
        "        transition select(hdr.ipv4.protocol, hdr.ipv4.frag_offset) {",
        "            (PROTO_UDP, 0): parse_udp;",
        "            default: accept;",
        "        }",
        "    }",
        "",
        "    state parse_udp {",
        "        pkt.extract(hdr.udp);",
        "        transition select(hdr.udp.dst_port) {",
        f"            CHAIN_PORT: {first};",
        "            default: accept;",
        "        }",
        "    }",
    ]
    for i in range(units):
        after = f"parse_h{i + 1}" if i + 1 < units else "accept"
        lines += [
            "",
            f"    state parse_h{i} {{",
            f"        pkt.extract(hdr.h{i});",
            "        meta.depth = meta.depth + 1;",
            f"        transition select(hdr.h{i}.next) {{",
            f"            8w{(i + 1) % 256}: {after};",
            f"            8w0x{0xF0 | i % 16:X} &&& 8w0xF0: reject;",
            "            default: accept;",
            "        }",
            "    }",
        ]
    return [*lines, "}", ""]


def _checksum_control(control: str, extern: str) -> list[str]:
    """The IPv4 header checksum, verified or updated (the two controls differ only in names)."""
    return [
        f"control {control}(inout headers_t hdr, inout metadata_t meta) {{",
        "    apply {",
        f"        {extern}(hdr.ipv4.isValid(),",
        "            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,",
        "              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,",
        "              hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },",
        "            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);",
        "    }",
        "}",
        "",
    ]


def _verify_checksum() -> list[str]:
    return _checksum_control("MyVerifyChecksum", "verify_checksum")


def _ingress(units: int) -> list[str]:
    lines = [
        "control MyIngress(inout headers_t hdr, inout metadata_t meta,",
        "                  inout standard_metadata_t standard_metadata) {",
        "    action drop() {",
        "        mark_to_drop(standard_metadata);",
        "    }",
        "",
        "    action forward(port_t port) {",
        "        standard_metadata.egress_spec = port;",
        "        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;",
        "    }",
        "",
        "    table ipv4_lpm {",
        "        key = {",
        "            hdr.ipv4.dst_addr: lpm;",
        "        }",
        "        actions = {",
        "            forward;",
        "            drop;",
        "            NoAction;",
        "        }",
        "        size = 4096;",
        "        default_action = drop();",
        "    }",
        "",
    ]
    for i in range(units):
        lines += _unit_controls(i)
    lines += [
        "    apply {",
        "        meta.acc = 0;",
        "        if (hdr.ipv4.isValid()) {",
        "            ipv4_lpm.apply();",
        "        } else {",
        "            drop();",
        "        }",
    ]
    for i in range(units):
        lines += _unit_apply(i)
    return [*lines, "    }", "}", ""]


def _unit_controls(i: int) -> list[str]:
    """Register, counter, two actions and a table for unit i."""
    kind_a = _MATCH_KINDS[i % len(_MATCH_KINDS)]
    kind_b = _MATCH_KINDS[(i + 1) % len(_MATCH_KINDS)]
    return [
        f"    register<bit<32>>(1024) reg{i};",
        f"    counter(1024, CounterType.packets_and_bytes) ctr{i};",
        "",
        f"    action set_tag{i}(bit<16> tag, bit<8> shift) {{",
        f"        meta.tag = tag + (bit<16>)hdr.h{i}.next;",
        f"        meta.acc = meta.acc + ((bit<32>)hdr.h{i}.f0 << 2) - (bit<32>)shift;",
        "    }",
        "",
        f"    action accumulate{i}(bit<32> index) {{",
        "        bit<32> value;",
        f"        reg{i}.read(value, index);",
        f"        value = value + (bit<32>)hdr.h{i}.f1 + meta.acc;",
        f"        reg{i}.write(index, value);",
        f"        ctr{i}.count(index);",
        "    }",
        "",
        f"    table t{i} {{",
        "        key = {",
        f"            hdr.h{i}.f2: {kind_a};",
        f"            hdr.h{i}.next: {kind_b};",
        "        }",
        "        actions = {",
        f"            set_tag{i};",
        f"            accumulate{i};",
        "            drop;",
        "            NoAction;",
        "        }",
        f"        size = {256 * (1 + i % 4)};",
        "        default_action = NoAction();",
        "    }",
        "",
    ]


def _unit_apply(i: int) -> list[str]:
    return [
        f"        if (hdr.h{i}.isValid()) {{",
        f"            t{i}.apply();",
        f"            if (meta.acc > 32w{1000 + i} && meta.tag != 16w{i}) {{",
        "                meta.flag = 1;",
        "                meta.acc = (meta.acc & 0xFFFF) | ((bit<32>)meta.tag << 16);",
        "            } else {",
        "                meta.flag = 0;",
        f"                meta.tag = meta.tag ^ 16w0x{i:04X};",
        "            }",
        "        }",
    ]


def _egress() -> list[str]:
    return [
        "control MyEgress(inout headers_t hdr, inout metadata_t meta,",
        "                 inout standard_metadata_t standard_metadata) {",
        "    apply {",
        "        if (meta.flag == 1) {",
        "            hdr.ipv4.diffserv = hdr.ipv4.diffserv | 8w0x04;",
        "        }",
        "    }",
        "}",
        "",
    ]


def _compute_checksum() -> list[str]:
    return _checksum_control("MyComputeChecksum", "update_checksum")


def _deparser(units: int) -> list[str]:
    emits = ["ethernet", "ipv4", "udp", *(f"h{i}" for i in range(units))]
    return [
        "control MyDeparser(packet_out pkt, in headers_t hdr) {",
        "    apply {",
        *(f"        pkt.emit(hdr.{name});" for name in emits),
        "    }",
        "}",
        "",
    ]


# ------------------------------------------------------------------ measuring


def _median_time(action: Callable[[], object], repeat: int) -> tuple[float, list[object]]:
    times, results = [], []
    for _ in range(repeat):
        started = time.perf_counter()
        results.append(action())
        times.append(time.perf_counter() - started)
    return statistics.median(times), results


def _stage_medians(results: list[object]) -> dict[str, float]:
    """Per-stage medians from CompiledProgram.timings, or {} when the compiler has none."""
    runs = [getattr(r, "timings", None) for r in results]
    if not runs or not all(isinstance(t, dict) and t for t in runs):
        return {}
    return {stage: statistics.median(t.get(stage, 0.0) for t in runs) for stage in runs[0]}


def measure(lines: int, repeat: int, save: Path | None) -> dict[str, object]:
    text = generate_program(lines)
    include_text = "".join((INCLUDE_DIR / name).read_text() for name in ("core.p4", "v1model.p4"))
    with tempfile.TemporaryDirectory() as tmp:
        path = save or Path(tmp) / "bench_frontend.p4"
        path.write_text(text)
        options = CompileOptions(include_dirs=[], defines={}, undefines=[])
        run_compile(path, options)  # warm-up: imports and regex compilation
        median, results = _median_time(lambda: run_compile(path, options), repeat)
    # The compiler reads the includes too, so the baseline tokenises them as well.
    everything = include_text + text
    baseline, _ = _median_time(lambda: _BASELINE_TOKEN.findall(everything), max(repeat, 5))
    program_lines = _line_count(text)
    return {
        "lines": program_lines,
        "include_lines": _line_count(include_text),
        "runs": repeat,
        "median_s": median,
        "s_per_1000_lines": median * 1000 / program_lines,
        "lines_per_s": program_lines / median,
        "stages_s": _stage_medians(results),
        "baseline_tokenise_s": baseline,
        "ratio_to_baseline": median / baseline,
    }


def _print_report(r: dict[str, object]) -> None:
    print(f"program: {r['lines']} lines (+ {r['include_lines']} lines of core.p4/v1model.p4)")
    print(f"runs: {r['runs']}")
    print(
        f"compile median: {r['median_s']:.3f} s  ({r['s_per_1000_lines']:.3f} s per 1,000 "
        f"lines, {r['lines_per_s']:.0f} lines/s)"
    )
    stages = r["stages_s"]
    if isinstance(stages, dict) and stages:
        print("stages (median): " + ", ".join(f"{k} {v:.3f} s" for k, v in stages.items()))
    print(
        f"baseline (re tokenise, same text + includes): {r['baseline_tokenise_s']:.4f} s; "
        f"compile/baseline ratio: {r['ratio_to_baseline']:.1f}x"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=2000, help="program size (default 2000)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs (default 5)")
    parser.add_argument("--json", action="store_true", help="print one JSON line")
    parser.add_argument("--save", type=Path, help="also keep the generated program here")
    args = parser.parse_args(argv)
    if args.lines < 1 or args.repeat < 1:
        parser.error("--lines and --repeat must be positive")
    report = measure(args.lines, args.repeat, args.save)
    if args.json:
        print(json.dumps(report))
    else:
        _print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

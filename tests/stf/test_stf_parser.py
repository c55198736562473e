"""Tests for the STF parser (switch/stf/parser.py) against p4c's STF grammar."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from p4reduce.switch.stf.parser import (
    Add,
    CheckCounter,
    CliCommand,
    Expect,
    Ignored,
    Packet,
    SetDefault,
    StfError,
    parse_stf,
    parse_stf_file,
)


def one(text: str):
    """Parse a single statement and return it."""
    commands = parse_stf(text, "t.stf")
    assert len(commands) == 1
    return commands[0]


def error(text: str) -> StfError:
    with pytest.raises(StfError) as info:
        parse_stf(text, "t.stf")
    return info.value


# --- packet / expect ------------------------------------------------------------------------


def test_packet_groups_are_concatenated():
    cmd = one("packet 2 0102 03\t0405  ff")
    assert cmd == Packet(1, 2, bytes.fromhex("0102030405ff"))


def test_packet_digits_may_be_any_case_and_grouping():
    assert one("packet 0 a B c D").data == b"\xab\xcd"


def test_packet_without_data_is_an_empty_packet():
    # gauntlet_enum_assign-bmv2.stf in p4c's corpus is exactly "packet 0 ".
    assert one("packet 0 ") == Packet(1, 0, b"")


def test_packet_large_port():
    assert one("packet 511 00").port == 511


def test_expect_pattern_is_uppercased_with_wildcards():
    cmd = one("expect 1 0a **** 11 ** *")
    assert cmd == Expect(1, 1, "0A****11***", False)


def test_expect_exact_with_dollar():
    assert one("expect 3 02 1001 ** ** ** $") == Expect(1, 3, "021001******", True)


def test_expect_dollar_attached_to_data():
    assert one("expect 3 ab$") == Expect(1, 3, "AB", True)


def test_expect_without_data():
    assert one("expect 5") == Expect(1, 5, "", False)


def test_expect_only_dollar_is_an_exact_empty_pattern():
    assert one("expect 5 $") == Expect(1, 5, "", True)


def test_packet_and_expect_take_trailing_comments():
    cmds = parse_stf("packet 0 0102 # in\nexpect 0 01** # out $\n", "t.stf")
    assert cmds == [Packet(1, 0, b"\x01\x02"), Expect(2, 0, "01**", False)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("packet", "packet: missing port number"),
        ("packet x 00", "packet: bad port 'x' (expected a decimal)"),
        ("packet 0x1 00", "packet: bad port '0x1' (expected a decimal)"),
        ("packet -1 00", "packet: bad port '-1' (expected a decimal)"),
        ("packet 0ab", "packet: bad port '0ab' (expected a decimal)"),
        ("packet 0 0g", "packet: invalid character 'g' in packet data"),
        ("packet 0 0*", "packet: invalid character '*' in packet data"),
        ("packet 0 00$", "packet: invalid character '$' in packet data"),
        ("packet0 00", "unknown command 'packet0'"),
        ("expect", "expect: missing port number"),
        ("expect p 00", "expect: bad port 'p' (expected a decimal)"),
        ("expect 0 0z", "expect: invalid character 'z' in packet data"),
        ("expect 0 00 $ 11", "expect: '$' must be the last thing on the line"),
        ("expect 0 $$", "expect: '$' must be the last thing on the line"),
        ("expect(0) 00", "expect: expected whitespace after 'expect'"),
    ],
)
def test_packet_and_expect_errors(text, message):
    err = error(f"# header\n\n{text}\n")
    assert str(err) == f"t.stf:3: error: {message}"
    assert (err.filename, err.line, err.message) == ("t.stf", 3, message)


# --- add ------------------------------------------------------------------------------------


def test_add_full_form():
    cmd = one("add test1 10 data.f1:0x****0101 h.x:0b1*0 setb1(val:0x7f, port:2) = e1")
    assert cmd == Add(
        line=1,
        table="test1",
        priority=10,
        keys=[("data.f1", "0x****0101"), ("h.x", "0b1*0")],
        action="setb1",
        args=[("val", "0x7f"), ("port", "2")],
        entry_name="e1",
    )


def test_add_without_priority_or_name():
    cmd = one("add ipv4_da_lpm ipv4.dstAddr:0x0a010065 ingress.do_resubmit(new:0x0a010001)")
    assert cmd.priority is None
    assert cmd.entry_name is None
    assert cmd.action == "ingress.do_resubmit"


@pytest.mark.parametrize(
    "value", ["5", "007", "0x0a00****", "0XAbC*", "0b1*0", "0B01", "10/8", "0x0a000000/0x8"]
)
def test_add_key_value_notations_are_kept_raw(value):
    assert one(f"add t k:{value} a()").keys == [("k", value)]


def test_lpm_value_may_have_spaces_around_slash():
    assert one("add t k : 10 / 8 a ( )").keys == [("k", "10/8")]


@pytest.mark.parametrize(
    ("name", "parsed"),
    [
        ("data.$valid", "data.$valid"),
        ("hdr$0.f", "hdr$0.f"),
        ("$valid$", "$valid$"),
        ("_x1.y_2", "_x1.y_2"),
        ("stack[3]", "stack[3]"),
        ("stack[3].f", "stack[3].f"),
        ("h.stack[0].f", "h.stack[0].f"),
        ('"ingress.t.f"', "ingress.t.f"),
        ('"h".f', "h.f"),
        ('"with space"', "with space"),
    ],
)
def test_name_notations(name, parsed):
    cmd = one(f"add {name} {name}:1 {name}(x:2)")
    assert cmd.table == parsed
    assert cmd.keys == [(parsed, "1")]
    assert cmd.action == parsed
    assert one(f"check_counter {name}(0)").name == parsed
    assert one(f"register_reset {name}").args == [parsed]


def test_action_argument_names_are_plain_identifiers():
    assert one('add t k:1 a("x":1, $y:2)').args == [("x", "1"), ("$y", "2")]


def test_quoted_entry_name():
    assert one('add t k:1 a() = "my entry"').entry_name == "my entry"


def test_add_many_keys_and_tabs():
    cmd = one("add\tt\t1\ta:1\tb:2\tc:3\tact()")
    assert [k for k, _ in cmd.keys] == ["a", "b", "c"]


def test_add_trailing_comment_and_hash_in_quotes():
    cmd = one('add "t#1" k:1 a() # comment (with parens')
    assert cmd.table == "t#1"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("add", "add: expected a table name, found end of line"),
        ("add t", "add: missing action call, e.g. 'act(arg:1)'"),
        ("add t k:1", "add: missing action call, e.g. 'act(arg:1)'"),
        ("add t 10 k:1", "add: missing action call, e.g. 'act(arg:1)'"),
        ("add t a()", "add: expected at least one <key>:<value> before the action"),
        ("add t 0x10 k:1 a()", "add: priority must be a decimal integer, found '0x10'"),
        ("add t 1a k:1 a()", "add: priority must be a decimal integer, found '1a'"),
        ("add t k a()", "add: expected ':' or '(' after 'k', found 'a'"),
        ("add t k: a()", "add: expected a value for key 'k', found 'a'"),
        ("add t k:0xZZ a()", "add: malformed number '0xZZ' for a value for key 'k'"),
        ("add t k:12ab a()", "add: malformed number '12ab' for a value for key 'k'"),
        ("add t k:0b102 a()", "add: malformed number '0b102' for a value for key 'k'"),
        ("add t k:1* a()", "add: malformed number '1*' for a value for key 'k'"),
        ("add t k:-1 a()", "add: unexpected character '-'"),
        ("add t k:1/ a()", "add: expected a prefix length for key 'k', found 'a'"),
        ("add t k:0x1&&&0xf a()", "add: unexpected character '&'"),
        ("add t k:1..2 a()", "add: expected a key name or an action call, found '.'"),
        ("add t k:1->2 a()", "add: unexpected character '-'"),
        ("add t k:1 a(", "add: expected an argument name of action 'a', found end of line"),
        ("add t k:1 a(x)", "add: expected ':' after argument name 'x', found ')'"),
        ("add t k:1 a(x:1", "add: expected ',' or ')' after argument 'x', found end of line"),
        ("add t k:1 a(x:1,)", "add: expected an argument name of action 'a', found ')'"),
        ("add t k:1 a(x:1 y:2)", "add: expected ',' or ')' after argument 'x', found 'y'"),
        ("add t k:1 a(x.y:1)", "add: expected ':' after argument name 'x', found '.'"),
        ("add t k:1 a(x:1/8)", "add: expected ',' or ')' after argument 'x', found '/'"),
        ("add t k:1 a() =", "add: expected an entry name after '=', found end of line"),
        ("add t k:1 a() = 5", "add: expected an entry name after '=', found '5'"),
        ("add t k:1 a() == x", "add: unexpected '==' at end of statement"),
        ("add t k:1 a() x", "add: unexpected 'x' at end of statement"),
        ("add t.. k:1 a()", "add: expected a name after '.' in a table name, found '.'"),
        ("add t. k:1 a()", "add: expected a key name or an action call, found ':'"),
        ("add t[x] k:1 a()", "add: expected a decimal index after '[', found 'x'"),
        ("add t[1 k:1 a()", "add: expected ']' after the index, found 'k'"),
        ('add "t k:1 a()', 'add: unterminated quoted name "t k:1 a()'),
        ('add "" k:1 a()', "add: empty quoted name"),
        ("add 5 k:1 a()", "add: expected a table name, found '5'"),
        ("add; t k:1 a()", "add: unexpected character ';'"),
    ],
)
def test_add_errors(text, message):
    err = error(f"packet 0 00\n{text}")
    assert str(err) == f"t.stf:2: error: {message}"
    assert err.line == 2


# --- setdefault -----------------------------------------------------------------------------


def test_setdefault():
    assert one("setdefault ethertype_match l2_packet()") == SetDefault(
        1, "ethertype_match", "l2_packet", []
    )
    cmd = one("SETDEFAULT ingress.t ingress.fwd(port: 3, mac:0xAABB)")
    assert cmd == SetDefault(1, "ingress.t", "ingress.fwd", [("port", "3"), ("mac", "0xAABB")])


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("setdefault", "setdefault: expected a table name, found end of line"),
        ("setdefault t", "setdefault: expected an action name, found end of line"),
        ("setdefault t a", "setdefault: expected '(' after action name 'a', found end of line"),
        ("setdefault t k:1 a()", "setdefault: expected '(' after action name 'k', found ':'"),
        ("setdefault t a() = x", "setdefault: unexpected '=' at end of statement"),
    ],
)
def test_setdefault_errors(text, message):
    assert str(error(text)) == f"t.stf:1: error: {message}"


# --- check_counter, remove, wait, no_packet -------------------------------------------------


def test_check_counter_plain():
    assert one("check_counter cntDum(10)") == CheckCounter(1, "cntDum", "10")


def test_check_counter_entry_name_index():
    assert one("check_counter cntDum($A)") == CheckCounter(1, "cntDum", "$A")


@pytest.mark.parametrize("op", ["==", "!=", "<", "<=", ">", ">="])
def test_check_counter_comparisons(op):
    cmd = one(f"check_counter ingress.c(0x1) PACKETS {op} 0x10")
    assert cmd == CheckCounter(1, "ingress.c", "0x1", "packets", op, 16)


def test_check_counter_bytes():
    assert one("check_counter c(0) bytes == 0b101").value == 5
    assert one("check_counter c(0) Bytes==64").kind == "bytes"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("check_counter", "check_counter: expected a counter name, found end of line"),
        (
            "check_counter c",
            "check_counter: expected '(' after counter name 'c', found end of line",
        ),
        ("check_counter c()", "check_counter: expected a counter index or entry name, found ')'"),
        (
            "check_counter c(1",
            "check_counter: expected ')' after the counter index, found end of line",
        ),
        (
            "check_counter c(1) frames == 2",
            "check_counter: expected 'packets' or 'bytes', found 'frames'",
        ),
        (
            "check_counter c(1) packets 2",
            "check_counter: expected a comparison (== != <= < >= >), found '2'",
        ),
        (
            "check_counter c(1) packets ==",
            "check_counter: expected a packets count, found end of line",
        ),
        (
            "check_counter c(1) packets == 0x*",
            "check_counter: wildcard '*' not allowed in a packets count '0x*'",
        ),
        ("check_counter c(1) packets == 2 3", "check_counter: unexpected '3' at end of statement"),
    ],
)
def test_check_counter_errors(text, message):
    assert str(error(text)) == f"t.stf:1: error: {message}"


def test_ignored_statements():
    cmds = parse_stf("remove all\nREMOVE ALL\nwait\nWait\nno_packet\n", "t.stf")
    assert cmds == [
        Ignored(1, "remove"),
        Ignored(2, "remove"),
        Ignored(3, "wait"),
        Ignored(4, "wait"),
        Ignored(5, "no_packet"),
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("remove", "remove: only 'remove all' is supported, found end of line"),
        ("remove t 1", "remove: only 'remove all' is supported, found 't'"),
        ("remove all now", "remove: unexpected 'now' at end of statement"),
        ("wait 10", "wait: unexpected '10' at end of statement"),
        ("no_packet 0", "no_packet: unexpected '0' at end of statement"),
    ],
)
def test_ignored_statement_errors(text, message):
    assert str(error(text)) == f"t.stf:1: error: {message}"


# --- CLI pass-through -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "name", "args"),
    [
        ("mirroring_add 5 4", "mirroring_add", ["5", "4"]),
        ("mirroring_add_mc 5 0x10", "mirroring_add_mc", ["5", "0x10"]),
        ("mirroring_delete 5", "mirroring_delete", ["5"]),
        ("mirroring_get 5", "mirroring_get", ["5"]),
        ("mc_mgrp_create 1113", "mc_mgrp_create", ["1113"]),
        ("mc_mgrp_destroy 1113", "mc_mgrp_destroy", ["1113"]),
        ("mc_node_create 400 6", "mc_node_create", ["400", "6"]),
        ("mc_node_create 400 6 7 8", "mc_node_create", ["400", "6", "7", "8"]),
        ("mc_node_update 0 1 2", "mc_node_update", ["0", "1", "2"]),
        ("mc_node_destroy 0", "mc_node_destroy", ["0"]),
        ("mc_node_associate 1113 0", "mc_node_associate", ["1113", "0"]),
        ("mc_node_dissociate 1113 0", "mc_node_dissociate", ["1113", "0"]),
        ("counter_read ingress.c 3", "counter_read", ["ingress.c", "3"]),
        ("counter_write c 3 10 640", "counter_write", ["c", "3", "10", "640"]),
        ("counter_reset ingress.c", "counter_reset", ["ingress.c"]),
        ("register_read r 0", "register_read", ["r", "0"]),
        ("register_write MyIngress.r 1 0xff", "register_write", ["MyIngress.r", "1", "0xff"]),
        ("register_reset r", "register_reset", ["r"]),
        ("meter_get_rates m 2", "meter_get_rates", ["m", "2"]),
        (
            "meter_set_rates m 2 0.0001:1 0.0005:1",
            "meter_set_rates",
            ["m", "2", "0.0001:1", "0.0005:1"],
        ),
        ("meter_set_rates m 2 1 : 64", "meter_set_rates", ["m", "2", "1:64"]),
        ("meter_array_set_rates m 10:2 20.5:4", "meter_array_set_rates", ["m", "10:2", "20.5:4"]),
        ("table_clear ingress.t", "table_clear", ["ingress.t"]),
        ("MC_MGRP_CREATE 1 # group", "mc_mgrp_create", ["1"]),
    ],
)
def test_cli_commands(text, name, args):
    assert one(text) == CliCommand(1, name, args)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("mirroring_add 5", "missing arguments; usage: mirroring_add <number> <number>"),
        ("mirroring_add 5 4 3", "unexpected '3'; usage: mirroring_add <number> <number>"),
        ("mirroring_add x 4", "expected a number, found 'x'"),
        ("mirroring_add 0x* 4", "wildcard '*' not allowed in a number '0x*'"),
        ("mc_mgrp_create", "missing arguments; usage: mc_mgrp_create <number>"),
        ("mc_node_create 400", "missing arguments; usage: mc_node_create <number> <number>..."),
        ("mc_node_create 400 6 x", "expected a number, found 'x'"),
        ("mc_node_associate 1", "missing arguments; usage: mc_node_associate <number> <number>"),
        ("counter_read 3 c", "expected a name, found '3'"),
        (
            "counter_write c 1 2",
            "missing arguments; usage: counter_write <name> <number> <number> <number>",
        ),
        ("register_reset r 1", "unexpected '1'; usage: register_reset <name>"),
        (
            "meter_set_rates m 2",
            "missing arguments; usage: meter_set_rates <name> <number> <rate>:<burst>...",
        ),
        (
            "meter_set_rates m 2 5",
            "expected ':' after meter rate '5' (rates are <rate>:<burst>), found end of line",
        ),
        ("meter_set_rates m 2 5:", "expected a meter burst size, found end of line"),
        ("meter_set_rates m 2 0.:1", "expected the fraction digits of meter rate '0.'"),
        ("meter_set_rates m 2 1:2 x", "expected a meter rate, found 'x'"),
        (
            "meter_array_set_rates m",
            "missing arguments; usage: meter_array_set_rates <name> <rate>:<burst>...",
        ),
        ("table_clear", "missing arguments; usage: table_clear <name>"),
    ],
)
def test_cli_command_errors(text, message):
    command = text.split()[0]
    assert str(error(text)) == f"t.stf:1: error: {command}: {message}"


# --- lexical matters ------------------------------------------------------------------------


def test_keywords_are_case_insensitive():
    cmds = parse_stf("PACKET 0 00\nExpect 0 00\nAdd t k:1 a()\nSetDefault t a()\n", "t.stf")
    assert [type(c) for c in cmds] == [Packet, Expect, Add, SetDefault]


def test_names_keep_their_case():
    assert one("add Ingress.T K:1 Act(Arg:1)").table == "Ingress.T"


def test_comments_blank_lines_and_line_numbers():
    text = "# a test\n\n   \n\t# indented comment\npacket 0 00\n\nexpect 0 00 # trailing\n"
    assert parse_stf(text, "t.stf") == [Packet(5, 0, b"\x00"), Expect(7, 0, "00", False)]


def test_crlf_line_endings():
    cmds = parse_stf("packet 0 00\r\nexpect 0 0*\r\nadd t k:1 a()\r\n", "t.stf")
    assert cmds[1] == Expect(2, 0, "0*", False)
    assert cmds[2].keys == [("k", "1")]


def test_leading_whitespace():
    assert one("   \tpacket 1 00").port == 1


def test_empty_input():
    assert parse_stf("", "t.stf") == []
    assert parse_stf("\n# only comments\n", "t.stf") == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("frobnicate 1 2", "unknown command 'frobnicate'"),
        ("table_add t a 1 =>", "unknown command 'table_add'"),
        ("5 packet", "expected a command, found '5'"),
        ("*", "expected a command, found '*'"),
        ("add:t", "add: unexpected character ':'"),
    ],
)
def test_line_level_errors(text, message):
    assert str(error(f"packet 0 00\n\n{text}\n")) == f"t.stf:3: error: {message}"


def test_first_error_wins():
    err = error("packet 0 00\nbogus\npacket 0 0\n")
    assert err.line == 2


def test_stf_error_is_an_exception_with_fields():
    err = StfError("dir/x.stf", 12, "boom")
    assert isinstance(err, Exception)
    assert str(err) == "dir/x.stf:12: error: boom"
    assert (err.filename, err.line, err.message) == ("dir/x.stf", 12, "boom")


def test_parse_stf_file(tmp_path):
    path = tmp_path / "prog-bmv2.stf"
    path.write_text("# test\nadd t k:1 a()\npacket 0 AA\nexpect 0 AA $\n", encoding="utf-8")
    cmds = parse_stf_file(path)
    assert [c.line for c in cmds] == [2, 3, 4]
    assert cmds[2] == Expect(4, 0, "AA", True)
    path.write_text("\n\nbad line\n", encoding="utf-8")
    with pytest.raises(StfError, match=r"prog-bmv2\.stf:3: error: unknown command 'bad'"):
        parse_stf_file(str(path))


def test_realistic_file():
    text = """\
# v1model-special-ops style test
mirroring_add 5 4
mc_mgrp_create 1113
mc_node_create 400 6
mc_node_associate 1113 0
add ipv4_da_lpm ipv4.dstAddr:0x0a010065 ingress.do_resubmit(new_ipv4_dstAddr:0x0a010001)
add mac_da fwd.l2ptr:0xbeef ingress.set_bd_dmac_intf(bd:26, dmac:0x021357efbeff, intf:0)
packet 0 021357efbeff 001122334455 0800 4500 0014 0001 0000 4000 0000 0a000001 0a2f0101
expect 0 021357efbeff 001122335544 0800 4500 0014 0001 0000 3f** **** 0a000001 0a2f0101 $
"""
    cmds = parse_stf(text, "t.stf")
    assert [type(c).__name__ for c in cmds] == [
        "CliCommand",
        "CliCommand",
        "CliCommand",
        "CliCommand",
        "Add",
        "Add",
        "Packet",
        "Expect",
    ]
    assert len(cmds[6].data) == 34
    assert cmds[7].exact and len(cmds[7].pattern) == 68


# --- properties -----------------------------------------------------------------------------


@given(
    port=st.integers(min_value=0, max_value=1 << 16),
    data=st.binary(max_size=80),
    groups=st.lists(st.integers(min_value=1, max_value=6), min_size=1, max_size=5),
    upper=st.booleans(),
)
def test_packet_roundtrip_whatever_the_grouping(port, data, groups, upper):
    hex_text = data.hex().upper() if upper else data.hex()
    words, pos, i = [], 0, 0
    while pos < len(hex_text):
        size = groups[i % len(groups)]
        words.append(hex_text[pos : pos + size])
        pos += size
        i += 1
    assert one(f"packet {port} {' '.join(words)}") == Packet(1, port, data)


@given(pattern=st.text(alphabet="0123456789abcdefABCDEF*", max_size=40), exact=st.booleans())
def test_expect_roundtrip(pattern, exact):
    text = f"expect 7 {pattern}{' $' if exact else ''}"
    assert one(text) == Expect(1, 7, pattern.upper(), exact)


_STF_ALPHABET = st.sampled_from(
    list('addpacketexpect0123456789abcdefxX*$#:,./()[]=<>!"\t \r\n&-;\xa0\x00')
    + ["add ", "packet ", "expect ", "setdefault ", "check_counter ", "mc_node_create ", "\n"]
)


@given(st.lists(_STF_ALPHABET, max_size=60).map("".join))
def test_arbitrary_text_parses_or_raises_stf_error(text):
    try:
        commands = parse_stf(text, "fuzz.stf")
    except StfError as err:
        assert str(err).startswith("fuzz.stf:")
        assert 1 <= err.line <= text.count("\n") + 1
    else:
        assert all(c.line >= 1 for c in commands)


def test_odd_packet_digit_count_ends_in_a_low_nibble_byte():
    # p4c's runner converts two digits at a time: a lone last digit d becomes the byte 0d
    (cmd,) = parse_stf("packet 0 01 2", "t.stf")
    assert cmd.data == bytes([0x01, 0x02])

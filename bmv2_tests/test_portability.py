"""Every STF file here is one that p4c's own runner (``backends/bmv2/run-bmv2-test.py``) can run
on BMv2 ``simple_switch`` as written (issue 22 found three ways ours could not be):

- lpm keys use ``*`` nibbles (``0x0A01****``): the runner's ``makeLpm`` crashes on ``0xVAL/LEN``
  (``'tuple' object has no attribute 'find'``);
- no control-plane command follows a packet: the runner applies every command before the
  first packet is processed, so a packet cannot see a table or register before a later change;
- commands the runner hands to ``simple_switch_CLI`` unchanged (``register_write``,
  ``mc_node_create``, ...) carry decimal numbers: the CLI rejects ``0x...`` ("must be an
  integer");
- only commands the runner knows (it silently ignores others, so their effect would be lost),
  and our action-profile commands in the ``profile_*`` files (bmv2_stf.py runs those).

README.md says which parts were split into a test of their own for these reasons.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
CASES = sorted(p.stem for p in HERE.glob("*.stf"))

# What bmv2stf.py's execute_stf_command acts on; add and setdefault it rewrites itself.
RUNNER_REWRITES = {"add", "setdefault"}
RUNNER_PASSES_TO_CLI = {
    "mirroring_add",
    "mirroring_add_mc",
    "mirroring_delete",
    "mirroring_get",
    "mc_mgrp_create",
    "mc_node_create",
    "mc_node_associate",
    "counter_read",
    "counter_write",
    "register_read",
    "register_write",
    "register_reset",
    "meter_get_rates",
    "meter_set_rates",
    "meter_array_set_rates",
}


# Action profiles and selectors: p4c's STF has no syntax for them, so our runner takes
def _load_bmv2_stf():  # noqa: ANN202 - a module
    """bmv2_stf.py (standard library only), whose command sets are the ones it passes on."""
    spec = importlib.util.spec_from_file_location(
        "bmv2_stf", Path(__file__).with_name("bmv2_stf.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_bmv2_stf = _load_bmv2_stf()
# simple_switch_CLI's act_prof_* and table_indirect_add* commands (docs/stf.md). p4c's runner
# does not know them (bmv2_stf.py, which test_on_bmv2.py runs, passes them to the CLI): only
# the profile_* files may use them.
PROFILE_EXTENSION = _bmv2_stf.PROFILE_COMMANDS | _bmv2_stf.INDIRECT_ADD
NEEDS_PROFILE_EXTENSION = {name for name in CASES if name.startswith("profile_")}
# Commands whose second word is the name of a counter, register or meter.
NAMED = ("counter_", "register_", "meter_")
# A decimal integer, or a meter rate:burst pair (the rate may be a float).
DECIMAL = re.compile(r"^\d+$")
RATE = re.compile(r"^\d+(\.\d+)?([eE][-+]?\d+)?:\d+$")


def commands(name: str) -> list[tuple[int, list[str]]]:
    """(line number, words) of each non-empty line, comments removed."""
    out = []
    for number, line in enumerate((HERE / f"{name}.stf").read_text().splitlines(), start=1):
        words = line.split("#", 1)[0].split()
        if words:
            out.append((number, words))
    return out


@pytest.mark.parametrize("name", CASES)
def test_only_commands_the_runner_knows(name: str) -> None:
    known = {"packet", "expect"} | RUNNER_REWRITES | RUNNER_PASSES_TO_CLI
    if name in NEEDS_PROFILE_EXTENSION:
        known |= PROFILE_EXTENSION
    for number, words in commands(name):
        assert words[0] in known, f"{name}.stf:{number}: p4c's runner ignores {words[0]!r}"


@pytest.mark.parametrize("name", CASES)
def test_lpm_keys_use_star_nibbles(name: str) -> None:
    for number, words in commands(name):
        if words[0] != "add":
            continue
        for word in words:
            key, _, value = word.partition(":")
            if "(" in key:  # the action call: its arguments follow
                break
            assert "/" not in value, (
                f"{name}.stf:{number}: {word}: write the prefix with '*' nibbles "
                "(p4c's runner crashes on VALUE/LEN)"
            )


@pytest.mark.parametrize("name", CASES)
def test_no_control_plane_command_after_a_packet(name: str) -> None:
    seen_packet = False
    for number, words in commands(name):
        if words[0] == "packet":
            seen_packet = True
        elif words[0] != "expect":
            assert not seen_packet, (
                f"{name}.stf:{number}: {words[0]} after a packet; p4c's runner applies every "
                "command before the first packet"
            )


@pytest.mark.parametrize("name", CASES)
def test_cli_commands_carry_decimal_numbers(name: str) -> None:
    for number, words in commands(name):
        if words[0] not in RUNNER_PASSES_TO_CLI:
            continue
        numbers = words[2:] if words[0].startswith(NAMED) else words[1:]
        for word in numbers:
            ok = DECIMAL.match(word) or (words[0].startswith("meter_") and RATE.match(word))
            assert ok, f"{name}.stf:{number}: {word}: simple_switch_CLI wants a decimal number"


def test_a_split_off_test_runs_its_parent_program() -> None:
    # NAME.p4 files that only include another program (p4c pairs NAME.p4 with NAME.stf)
    for name in ("table_default_action_set", "table_lpm_default_route", "register_reset"):
        lines = [
            line
            for line in (HERE / f"{name}.p4").read_text().splitlines()
            if line and not line.startswith("//")
        ]
        assert len(lines) == 1 and lines[0].startswith('#include "'), name
        parent = lines[0].split('"')[1]
        assert (HERE / parent).is_file() and (HERE / parent).with_suffix(".stf").is_file()

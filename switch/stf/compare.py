"""Matching received packets against STF ``expect`` patterns, and reporting mismatches.

The rule is p4c's ``tools/testutils.py::compare_pkt``: the received packet is written as
upper-case hex and compared nibble by nibble with the pattern, where ``*`` matches any
nibble. Without a trailing ``$`` the pattern is a prefix: a longer packet passes, a shorter
one fails. With ``$`` (``exact``) a longer packet fails too.

The comparison is per nibble, so an odd-length pattern is a prefix ending in the middle of
a byte; with ``exact`` it can never match, as a packet always has an even number of nibbles.
"""

from __future__ import annotations

__all__ = ["first_difference", "format_mismatch", "normalize_pattern", "packet_matches"]

BYTES_PER_LINE = 32
_PATTERN_CHARS = frozenset("0123456789ABCDEF*")


def normalize_pattern(pattern: str) -> str:
    """Upper-case the pattern and drop whitespace, as compare_pkt does."""
    text = "".join(pattern.split()).upper()
    bad = sorted(set(text) - _PATTERN_CHARS)
    if bad:
        raise ValueError(f"invalid character {bad[0]!r} in expected packet pattern")
    return text


def first_difference(pattern: str, data: bytes, exact: bool = False) -> int | None:
    """The nibble index where ``data`` stops matching ``pattern``, or None when it matches.

    A received packet shorter than the pattern differs at its end (``len(data) * 2``); with
    ``exact``, a longer one differs just past the pattern (``len(pattern)``).
    """
    expected = normalize_pattern(pattern)
    received = data.hex().upper()
    for index, (want, got) in enumerate(zip(expected, received, strict=False)):
        if want != "*" and want != got:
            return index
    if len(received) < len(expected):
        return len(received)
    if exact and len(received) > len(expected):
        return len(expected)
    return None


def packet_matches(pattern: str, exact: bool, data: bytes) -> bool:
    """True when ``data`` matches the expect ``pattern`` (see the module docstring)."""
    return first_difference(pattern, data, exact) is None


# --- reporting ------------------------------------------------------------------------------


def format_mismatch(port: int, pattern: str, exact: bool, data: bytes | None) -> str:
    """A multi-line report of how ``data`` (None: nothing arrived) fails the expectation.

    Both packets are dumped in hex, ``BYTES_PER_LINE`` bytes per line with offsets, and a
    ``^^`` line marks the byte holding the first differing nibble in each dump.
    """
    expected = normalize_pattern(pattern)
    kind = "exact length" if exact else "prefix"
    expected_title = f"expected ({kind}, {_size(len(expected))}):"
    if data is None:
        lines = [f"port {port}: no packet received", f"  {expected_title}"]
        return "\n".join(lines + _dump(_pattern_cells(expected), None))
    nibble = first_difference(expected, data, exact)
    if nibble is None:
        return f"port {port}: packet matches the expectation"
    received = data.hex().upper()
    mark = nibble // 2
    lines = [f"port {port}: {_headline(expected, received, nibble, exact)}"]
    lines.append(f"  {expected_title}")
    lines.extend(_dump(_pattern_cells(expected), mark))
    lines.append(f"  received ({_size(len(received))}):")
    lines.extend(_dump(_pattern_cells(received), mark))
    return "\n".join(lines)


def _headline(expected: str, received: str, nibble: int, exact: bool) -> str:
    if nibble >= len(received):
        bound = "exactly" if exact else "at least"
        return (
            f"received packet too short: {_size(len(received))}, "
            f"expected {bound} {_size(len(expected))}"
        )
    if nibble >= len(expected):
        return (
            f"received packet too long: {_size(len(received))}, "
            f"expected exactly {_size(len(expected))}"
        )
    byte = nibble // 2
    want = expected[2 * byte : 2 * byte + 2]
    got = received[2 * byte : 2 * byte + 2]
    return f"packets differ at byte {byte} (hex digit {nibble}): expected {want}, received {got}"


def _size(nibbles: int) -> str:
    if nibbles % 2:
        return f"{nibbles} hex digits"
    count = nibbles // 2
    return f"{count} byte" if count == 1 else f"{count} bytes"


def _pattern_cells(hex_text: str) -> list[str]:
    """Two hex characters per byte; an odd pattern's last nibble is a cell of its own."""
    return [hex_text[i : i + 2] for i in range(0, len(hex_text), 2)]


def _dump(cells: list[str], mark: int | None) -> list[str]:
    """Hex-dump lines ``    OFFS  XX XX ...``, with a ``^^`` line under byte ``mark``.

    When ``mark`` lies past the end (a packet that is too short), the marker points at the
    first missing byte, on an otherwise empty line if need be.
    """
    end = len(cells) if mark is None else max(len(cells), mark + 1)
    if end == 0:
        return ["    (empty)"]
    lines = []
    for start in range(0, end, BYTES_PER_LINE):
        row = " ".join(cells[start : start + BYTES_PER_LINE])
        lines.append(f"    {start:04X}  {row}".rstrip())
        if mark is not None and start <= mark < start + BYTES_PER_LINE:
            lines.append(" " * (10 + 3 * (mark - start)) + "^^")
    return lines

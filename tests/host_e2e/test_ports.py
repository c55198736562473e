"""The end-to-end stacks' aggregation ports: leased from the pool for the session, and a
program whose port something outside the pool's locks holds moves to another one."""

from __future__ import annotations

import socket

from conftest import Builds, start_stack


def test_a_taken_aggregation_port_moves_the_program(builds: Builds) -> None:
    prefix, port = builds["dense"]
    assert builds.leases["dense"].port == port and builds["sparse"][1] != port
    pool = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
    squatter = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for s in pool:
            s.bind(("127.0.0.1", 0))
        try:
            squatter.bind(("127.0.0.1", port))  # as a stack of an older checkout would
        except OSError:
            pass  # another process took it already: the same situation
        stack = start_stack(builds, "dense", pool)
        try:
            moved_prefix, moved = builds["dense"]
            assert moved not in (port, builds["sparse"][1]) and moved_prefix != prefix
            assert builds.leases["dense"].port == moved
            assert [j["job_id"] for j in stack.ctl("job", "list")["jobs"]] == []  # it serves
        finally:
            stack.stop()
    finally:
        squatter.close()
        for s in pool:
            s.close()

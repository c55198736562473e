"""Digests of the native I/O loop's packets reach the P4Runtime stream at once
(``p4reduce-switch --engine native``): the engine signals an eventfd when a digest is ready,
and the switch delivers it whether more packets follow or traffic stops after it. Before,
they waited in the engine until some Python call drained it."""

from __future__ import annotations

import queue
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import text_format
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.native.build import compiler

from p4reduce.proto import p4info_pb2, p4runtime_pb2, p4runtime_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parent))
from switchproc import Switch  # noqa: E402

PROGRAM = Path(__file__).resolve().parent / "digest_udp.p4"  # digests each datagram's value
WAIT = 30.0  # seconds a digest may take on a loaded machine; one that comes is fast


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, p4info_pb2.P4Info]:
    if compiler() is None:
        pytest.skip("no C compiler: the native engine cannot run")
    out = tmp_path_factory.mktemp("digests")
    info = out / "digest_udp.p4info.txtpb"
    assert p4c_main([str(PROGRAM), "-o", str(out), "--p4runtime-files", str(info)]) == 0
    return out / "digest_udp.json", text_format.Parse(info.read_text(), p4info_pb2.P4Info())


class Controller:
    """The primary controller's stream: DigestLists arrive on ``digests``."""

    def __init__(self, addr: str) -> None:
        self.channel = grpc.insecure_channel(addr)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.out: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self.digests: queue.Queue[p4runtime_pb2.DigestList] = queue.Queue()
        self.arbitrated = threading.Event()
        self.call = self.stub.StreamChannel(iter(self.out.get, None))
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = 1
        req.arbitration.election_id.low = 1
        self.out.put(req)
        assert self.arbitrated.wait(WAIT), "no arbitration answer"

    def _read(self) -> None:
        try:
            for msg in self.call:
                if msg.HasField("arbitration"):
                    self.arbitrated.set()
                elif msg.HasField("digest"):
                    self.digests.put(msg.digest)
        except grpc.RpcError:
            pass  # cancelled by close()

    def configure(self, digest_id: int) -> None:
        req = p4runtime_pb2.WriteRequest(device_id=1)
        req.election_id.low = 1
        u = req.updates.add()
        u.type = p4runtime_pb2.Update.INSERT
        u.entity.digest_entry.digest_id = digest_id
        u.entity.digest_entry.config.max_list_size = 1  # one list per digest
        self.stub.Write(req, timeout=WAIT)

    def close(self) -> None:
        self.out.put(None)
        self.call.cancel()
        self.thread.join(10)
        self.channel.close()


@pytest.fixture
def switch(compiled: tuple[Path, p4info_pb2.P4Info]) -> Iterator[tuple[Switch, socket.socket]]:
    peer = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    peer.bind(("127.0.0.1", 0))
    sw = Switch(
        [
            str(compiled[0]), "--engine", "native",
            "-i", f"1@udp:127.0.0.1:{peer.getsockname()[1]}",
            "--udp-listen", "127.0.0.1:0", "--grpc-server-addr", "127.0.0.1:0",
        ]
    )  # fmt: skip
    try:
        yield sw, peer
    finally:
        code = sw.stop()
        err = sw.proc.stderr.read() if sw.proc.stderr else ""
        for f in (sw.proc.stdout, sw.proc.stderr):
            if f is not None:
                f.close()
        peer.close()
        assert code == 0, err
        # the program ran on the native engine, behind the native I/O loop
        assert "native engine not used" not in err and "data plane: native I/O loop" in err, err


def test_digests_of_native_loop_packets_reach_the_stream_at_once(
    switch: tuple[Switch, socket.socket], compiled: tuple[Path, p4info_pb2.P4Info]
) -> None:
    sw, peer = switch
    info = compiled[1]
    (digest_id,) = [d.preamble.id for d in info.digests]
    ctl = Controller(sw.grpc)
    try:
        ctl.configure(digest_id)
        # one packet, then nothing: its digest comes without another packet or call
        peer.sendto(bytes.fromhex("c0a80101"), sw.udp)
        dl = ctl.digests.get(timeout=WAIT)
        assert dl.digest_id == digest_id and dl.data[0].bitstring == bytes.fromhex("c0a80101")
        # a burst: every packet's digest, in order (each value distinct, so none is held
        # back as a duplicate of a list not yet acknowledged)
        values = [(0x0A000000 + i).to_bytes(4, "big") for i in range(1, 41)]
        for v in values:
            peer.sendto(v, sw.udp)
        assert [ctl.digests.get(timeout=WAIT).data[0].bitstring for _ in values] == values
        assert ctl.digests.empty()
    finally:
        ctl.close()

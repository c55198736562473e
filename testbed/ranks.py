"""Start the N ranks of a torch.distributed script on 127.0.0.1 the way torchrun does:
env:// rendezvous (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK), one process per
rank, and stop them all together.

``p4reduce demo`` and ``bench/torch_ddp.py`` use it to run ``examples/train_ddp.py``; unlike
torchrun it gives each rank its own extra environment (the UDP port the embedded switch's
loopback adapter knows that rank by), sends every rank's output to files (a chatty rank
never blocks on a pipe) and lets the caller follow rank 0's stdout line by line while the
ranks run.

    with Ranks(workdir) as ranks:
        ranks.start([sys.executable, "examples/train_ddp.py", ...], n=4,
                    rank_env=[{"P4REDUCE_UDP_PORT": "40001"}, ...])
        for line in ranks.follow(timeout=60):   # rank 0's stdout, as it is written
            ...
        ranks.wait(timeout=60)                   # RanksError if one failed
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..free_port import free_port
from .local import failed, last_line, stop_signals_held, terminate


class RanksError(Exception):
    """A rank failed, or the ranks did not finish in time: one line, naming the rank."""


@dataclass
class Rank:
    rank: int
    popen: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def error(self) -> str:
        """The rank's one-line error (its last stderr line), else its exit status."""
        code = self.popen.returncode
        return last_line(self.stderr) or f"exit status {code}"


class Ranks:
    """One group of N rank processes at a time; leaving the ``with`` block (normally, on an
    exception, on Ctrl-C) stops any rank still running: SIGTERM, then SIGKILL after
    ``grace`` seconds."""

    def __init__(self, workdir: str | Path, *, name: str = "rank", grace: float = 10.0) -> None:
        self.dir = Path(workdir)
        self.name = name
        self.grace = grace
        self.ranks: list[Rank] = []

    def __enter__(self) -> Ranks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(
        self,
        argv: Sequence[str],
        n: int,
        *,
        rank_env: Sequence[dict[str, str]] | None = None,
        env: dict[str, str] | None = None,
        rank_prefix: Sequence[Sequence[str]] | None = None,
        master_addr: str = "127.0.0.1",
    ) -> None:
        """Start ``argv`` as ranks 0..n-1, in ``env`` (default: ours) plus the rendezvous
        variables plus ``rank_env[r]``. ``rank_prefix[r]``: a command that rank r runs under
        (``nsenter --net=... --``: rank r in a network namespace of its own, with
        ``master_addr`` rank 0's address there, as ``p4reduce demo --switch bmv2`` does)."""
        if self.ranks:
            raise RanksError("ranks already started")
        if rank_env is not None and len(rank_env) != n:
            raise RanksError(f"{len(rank_env)} rank environments for {n} ranks")
        if rank_prefix is not None and len(rank_prefix) != n:
            raise RanksError(f"{len(rank_prefix)} rank command prefixes for {n} ranks")
        self.dir.mkdir(parents=True, exist_ok=True)
        port = free_port("tcp")  # in a namespace of rank 0's own, also free there
        base = dict(os.environ if env is None else env)
        base.update(MASTER_ADDR=master_addr, MASTER_PORT=str(port), WORLD_SIZE=str(n),
                    LOCAL_WORLD_SIZE=str(n))  # fmt: skip
        for r in range(n):
            e = dict(base, RANK=str(r), LOCAL_RANK=str(r))
            if rank_env is not None:
                e.update(rank_env[r])
            out, err = self.dir / f"{self.name}{r}.out", self.dir / f"{self.name}{r}.err"
            prefix = list(rank_prefix[r]) if rank_prefix is not None else []
            with open(out, "wb") as fo, open(err, "wb") as fe:
                popen = subprocess.Popen(
                    [*prefix, *argv], env=e, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe
                )
            self.ranks.append(Rank(r, popen, out, err))

    def pids(self) -> list[int]:
        return [r.popen.pid for r in self.ranks]

    def _failure(self) -> str | None:
        for r in self.ranks:
            if failed(r.popen):
                return f"rank {r.rank} failed: {r.error()}"
        return None

    def follow(
        self, timeout: float, *, check: Callable[[], str | None] | None = None
    ) -> Iterator[str]:
        """Rank 0's stdout lines as they come, until every rank has exited. Raises
        RanksError (after stopping the ranks) when a rank fails, ``check()`` returns a
        reason (a part the ranks depend on died), or ``timeout`` seconds pass."""
        deadline = time.monotonic() + timeout
        offset, pending = 0, b""
        while True:
            running = any(r.alive() for r in self.ranks)
            with open(self.ranks[0].stdout, "rb") as f:
                f.seek(offset)
                chunk = f.read()
            offset += len(chunk)
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for ln in lines:
                yield ln.decode(errors="replace")
            failure = self._failure() or (check() if check is not None else None)
            if failure is None and running and time.monotonic() > deadline:
                failure = f"timed out after {timeout:g} s"
            if failure is not None:
                self.stop()
                raise RanksError(failure)
            if not running:
                if pending:
                    yield pending.decode(errors="replace")
                return
            time.sleep(0.05)

    def wait(self, timeout: float, *, check: Callable[[], str | None] | None = None) -> None:
        """Wait for every rank (RanksError as in ``follow``)."""
        for _ in self.follow(timeout, check=check):
            pass

    def stop(self) -> None:
        """Stop every rank still running (idempotent). A Ctrl-C or SIGTERM meanwhile
        waits until the teardown has finished."""
        with stop_signals_held():
            self._stop()

    def _stop(self) -> None:
        terminate([r.popen for r in self.ranks], self.grace)

    def reset(self) -> None:
        """Forget the finished group so that ``start`` can run another."""
        self.stop()
        self.ranks = []

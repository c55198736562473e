"""Exchanging small JSON values between a group's ranks over its c10d store, every wait
bounded (a rank that never comes is named instead of hanging the others)."""

from __future__ import annotations

import datetime
import json
from typing import Any

import torch.distributed as dist

from .errors import P4ReduceError


class Rendezvous:
    """Keys under ``prefix`` in ``store``, for ``n`` ranks; ``what`` names the group in
    error messages."""

    def __init__(
        self, store: dist.Store, prefix: str, rank: int, n: int, timeout: float, what: str
    ) -> None:
        self.store = dist.PrefixStore(prefix, store)
        self.rank = rank
        self.n = n
        self.timeout = timeout
        self.what = what

    def set(self, key: str, value: Any) -> None:
        self.store.set(key, json.dumps(value))

    def get(self, key: str, purpose: str, timeout: float | None = None) -> Any:
        """The value at ``key``, waiting at most ``timeout`` (default: this rendezvous's)."""
        self._wait([key], purpose, timeout)
        return json.loads(self.store.get(key))

    def all_gather(self, key: str, value: Any, purpose: str) -> list[Any]:
        """Every rank's ``value``, by rank."""
        self.set(f"{key}/{self.rank}", value)
        keys = [f"{key}/{r}" for r in range(self.n)]
        self._wait(keys, purpose, None)
        return [json.loads(self.store.get(k)) for k in keys]

    def present(self, key: str) -> bool:
        return bool(self.store.check([key]))

    def _wait(self, keys: list[str], purpose: str, timeout: float | None) -> None:
        t = self.timeout if timeout is None else timeout
        try:
            self.store.wait(keys, datetime.timedelta(seconds=t))
        except RuntimeError as err:  # DistStoreError on timeout
            try:
                missing = [k for k in keys if not self.store.check([k])]
            except RuntimeError:
                missing = keys
            who = ", ".join(k.rsplit("/", 1)[-1] for k in missing) if len(keys) > 1 else ""
            from_whom = f" from ranks {who}" if who else ""
            raise P4ReduceError(
                f"{self.what}, rank {self.rank}: nothing{from_whom} within {t:g} s while "
                f"waiting for {purpose} ({err})"
            ) from err

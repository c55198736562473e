"""The registration service's durable desired state: one SQLite file (the standard library's
``sqlite3``, WAL journal, synchronous writes).

What the service installed or is about to install lives here, written *before* it acts
(docs/failures.md): the switch it belongs to (P4Runtime address and device id), the pipeline
(P4Info, device config and its identity), the static configuration (the switch's addresses,
hosts, routes), and every job the service tracks: joining ones with the members so far
(pending registrations), and installed ones with their index, slot range, multicast group,
key, the verifier of their secret, and the ranks that left. A restarted service resumes from
it (service.py), and the reconciler (reconcile.py) re-installs it on a switch that came back
empty.

Pure storage: no switch, no threads of its own (one lock around the connection, which the
service's threads share).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ControllerError
from .jobs import Job, Member
from .pipeline import pipeline_id
from .static_config import Host, Route, StaticConfig

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB);
CREATE TABLE IF NOT EXISTS jobs (
    job_id INTEGER PRIMARY KEY,
    state TEXT NOT NULL,
    n INTEGER NOT NULL,
    slot_count INTEGER NOT NULL,
    verifier BLOB,
    members TEXT NOT NULL,
    left_ranks TEXT NOT NULL,
    job TEXT
);
"""


class StateError(ControllerError):
    """The state database cannot be used (another switch's, another pipeline's, unreadable)."""

    status = 409


@dataclass
class StoredPipeline:
    p4info: bytes  # serialized P4Info
    device_config: bytes
    ident: int = field(init=False)  # pipeline_id(device_config)

    def __post_init__(self) -> None:
        self.ident = pipeline_id(self.device_config)


@dataclass
class StoredJob:
    """One row of ``jobs``: a joining job (``job`` None) or an installed/installing one."""

    job_id: int
    state: str
    n: int
    slot_count: int
    verifier: bytes | None
    members: list[Member]
    left: set[int]
    job: Job | None


def _job_json(job: Job) -> str:
    return json.dumps(
        {
            "job_index": job.job_index,
            "slot_base": job.slot_base,
            "mgid": job.mgid,
            "key": job.key,
        }
    )


class StateStore:
    """``path``: the database file (created with its tables when missing)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.db = sqlite3.connect(str(self.path), check_same_thread=False, timeout=10.0)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=FULL")
            self.db.executescript(_SCHEMA)
            version = self._meta("version")
            if version is None:
                self._set_meta("version", str(SCHEMA_VERSION).encode())
            elif int(version) != SCHEMA_VERSION:
                raise StateError(
                    f"state database {self.path}: schema version {int(version)}, this "
                    f"p4reduce-ctl writes {SCHEMA_VERSION}"
                )
            self.db.commit()
        except sqlite3.DatabaseError as err:
            raise StateError(f"state database {self.path}: {err}") from None
        self.lock = threading.Lock()

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------------ meta
    def _meta(self, key: str) -> bytes | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else bytes(row[0])

    def _set_meta(self, key: str, value: bytes) -> None:
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def _write(self, fn: Any, *args: Any) -> None:
        """Run ``fn`` and commit, as one transaction."""
        with self.lock:
            try:
                with self.db:
                    fn(*args)
            except sqlite3.DatabaseError as err:
                raise StateError(f"state database {self.path}: {err}") from None

    def bind_switch(self, grpc_addr: str, device_id: int) -> None:
        """Record the switch on first use; refuse a database written for another one."""
        want = f"{grpc_addr} device {device_id}".encode()
        with self.lock:
            have = self._meta("switch")
        if have is not None and have != want:
            raise StateError(
                f"state database {self.path} belongs to the switch at {have.decode()}, not "
                f"{want.decode()} (give each switch its own --state file)"
            )
        if have is None:
            self._write(self._set_meta, "switch", want)

    # ------------------------------------------------------------------ pipeline
    def pipeline(self) -> StoredPipeline | None:
        with self.lock:
            info, config = self._meta("p4info"), self._meta("device_config")
        if info is None or config is None:
            return None
        return StoredPipeline(info, config)

    def save_pipeline(self, p4info: bytes, device_config: bytes) -> None:
        def put() -> None:
            self._set_meta("p4info", p4info)
            self._set_meta("device_config", device_config)

        self._write(put)

    def static_config(self) -> StaticConfig | None:
        with self.lock:
            raw = self._meta("static")
        if raw is None:
            return None
        d = json.loads(raw)
        return StaticConfig(
            d["switch_ip"],
            d["switch_mac"],
            tuple(Host(**h) for h in d["hosts"]),
            tuple(Route(**r) for r in d["routes"]),
        )

    def save_static(self, cfg: StaticConfig) -> None:
        self._write(self._set_meta, "static", json.dumps(cfg.to_dict()).encode())

    # ------------------------------------------------------------------ jobs
    def save_job(
        self,
        job_id: int,
        state: str,
        n: int,
        slot_count: int,
        verifier: bytes | None,
        members: list[Member],
        left: set[int],
        job: Job | None,
    ) -> None:
        row = (
            job_id,
            state,
            n,
            slot_count,
            verifier,
            json.dumps([m.to_dict() for m in sorted(members, key=lambda m: m.rank)]),
            json.dumps(sorted(left)),
            None if job is None else _job_json(job),
        )
        self._write(
            self.db.execute,
            "INSERT OR REPLACE INTO jobs (job_id, state, n, slot_count, verifier, members, "
            "left_ranks, job) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            row,
        )

    def delete_job(self, job_id: int) -> None:
        self._write(self.db.execute, "DELETE FROM jobs WHERE job_id = ?", (job_id,))

    def jobs(self) -> list[StoredJob]:
        with self.lock:
            rows = self.db.execute(
                "SELECT job_id, state, n, slot_count, verifier, members, left_ranks, job "
                "FROM jobs ORDER BY job_id"
            ).fetchall()
        out = []
        for jid, state, n, count, stored_verifier, members_text, left_text, job_text in rows:
            members = [Member(**m) for m in json.loads(members_text)]
            verifier = None if stored_verifier is None else bytes(stored_verifier)
            job = None
            if job_text is not None:
                j = json.loads(job_text)
                job = Job(
                    jid,
                    j["job_index"],
                    n,
                    j["slot_base"],
                    count,
                    list(members),
                    j["mgid"],
                    j["key"],
                    verifier,
                )
            out.append(
                StoredJob(
                    jid,
                    state,
                    n,
                    count,
                    verifier,
                    members,
                    set(json.loads(left_text)),
                    job,
                )
            )
        return out

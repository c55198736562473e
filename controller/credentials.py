"""Credentials of the registration service (docs/controller.md, "Credentials").

Two kinds, both sent as ``Authorization: Bearer <credential>``:

- a **job secret**, one per job: chosen by the first worker that joins (the torch backend
  draws it on rank 0 and hands it to the other ranks through the rendezvous store), or by the
  operator (``p4reduce-ctl job create`` reads it from ``--secret-file`` or
  ``P4REDUCE_JOB_SECRET``, or draws one). Every request about the job must carry it.
- the **operator token**, one per service (``serve --operator-token-file`` or
  ``P4REDUCE_OPERATOR_TOKEN``): every request, including listing all jobs.

Neither is ever taken from a command line's argv (visible to every local user in
``/proc/*/cmdline``). The service keeps only a salted PBKDF2 verifier of a job secret, and
writes that verifier into the job's ``workers`` entries as P4Runtime entry ``metadata``, so
that a restarted service (or one that adopts a job created with ``p4reduce-ctl job create``)
checks the same secret without ever having stored it. Comparisons use
``hmac.compare_digest`` (constant time in the length of the compared digests).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path

from .errors import InvalidArgument

OPERATOR_ENV = "P4REDUCE_OPERATOR_TOKEN"
JOB_SECRET_ENV = "P4REDUCE_JOB_SECRET"
MIN_SECRET = 16  # characters: a secret or token shorter than this is refused
MAX_SECRET = 256
_TAG = b"p4r1"  # verifier format: tag | salt (16) | PBKDF2-SHA256 (32)
_SALT = 16
_ITERATIONS = 10_000  # cheap per request, still slows down guessing a weak operator choice
VERIFIER_BYTES = len(_TAG) + _SALT + 32


def new_secret() -> str:
    """A fresh job secret: 256 random bits, URL-safe text."""
    return secrets.token_urlsafe(32)


def check_secret(text: str, what: str = "job secret") -> str:
    """A usable secret or token: printable ASCII without spaces, 16..256 characters."""
    if not isinstance(text, str) or not text:
        raise InvalidArgument(f"empty {what}")
    if not MIN_SECRET <= len(text) <= MAX_SECRET:
        raise InvalidArgument(
            f"{what} of {len(text)} characters: {MIN_SECRET}..{MAX_SECRET} expected"
        )
    if not all(33 <= ord(c) <= 126 for c in text):
        raise InvalidArgument(f"{what} has characters other than printable ASCII without spaces")
    return text


def verifier(secret: str, salt: bytes | None = None) -> bytes:
    """The stored form of a job secret: a random salt and PBKDF2-SHA256 of the secret."""
    salt = os.urandom(_SALT) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha256", secret.encode(), salt, _ITERATIONS)
    return _TAG + salt + digest


def matches(secret: str | None, stored: bytes | None) -> bool:
    """Does ``secret`` match the verifier ``stored``? False when either is missing or the
    verifier is not one of ours (never an exception)."""
    if secret is None or stored is None or len(stored) != VERIFIER_BYTES:
        return False
    if not stored.startswith(_TAG):
        return False
    salt = stored[len(_TAG) : len(_TAG) + _SALT]
    return hmac.compare_digest(verifier(secret, salt), stored)


def same_token(given: str | None, token: str | None) -> bool:
    """Constant-time equality of two tokens (False when either is missing)."""
    if given is None or token is None:
        return False
    return hmac.compare_digest(given.encode(), token.encode())


def read_secret_file(path: str | Path, what: str) -> str:
    """The first line of ``path``, stripped; a one-line error naming the file otherwise."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise InvalidArgument(f"cannot read the {what} file {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise InvalidArgument(f"the {what} file {path} is not UTF-8 text") from None
    lines = text.strip().splitlines()
    if not lines:
        raise InvalidArgument(f"the {what} file {path} is empty")
    return check_secret(lines[0].strip(), what)


def from_file_or_env(path: str | Path | None, env: str, what: str) -> str | None:
    """A secret from ``path`` if given, else from the environment variable ``env``, else
    None. Never from argv."""
    if path is not None:
        return read_secret_file(path, what)
    value = os.environ.get(env)
    if value is None or value == "":
        return None
    return check_secret(value.strip(), f"{what} in ${env}")


def bearer(header: str | None) -> str | None:
    """The credential of an ``Authorization: Bearer X`` header, or None."""
    if not header:
        return None
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()

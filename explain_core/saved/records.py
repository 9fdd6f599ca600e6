"""The pieces of a saved record that need no database: tokens and their hashes, share tokens, names, and the two
shapes a caller gets back (:class:`Stored`, :class:`SavedInfo`).

A session's token is 256 random bits in the URL; only its SHA-256 is stored. A share token is an HMAC of a key
and a random salt: the key is the owner's session token (no sign-in), or the server's secret with the signed-in
user's identity (sign-in on), so the owner's list can show it again while the store holds only its hash. A signed-in
user is stored as the SHA-256 of their identity (the provider's issuer and subject).
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass

from ..errors import IntakeError, SavedNotFound

TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)
MAX_NAME = 80


def new_token() -> str:
    """A fresh unguessable token (256 random bits, URL-safe).

    Returns
    -------
    str
        The token.
    """
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def user_hash(user: str) -> bytes:
    """What the store keeps of a signed-in user: SHA-256 of their identity, apart from every token's hash."""
    return hashlib.sha256(b"user:" + user.encode()).digest()


def share_token(key: bytes, salt: bytes) -> str:
    """The read-only token of a saved analysis: HMAC-SHA-256 of its owner's key and its salt, URL-safe."""
    digest = hmac.new(key, b"share:" + salt, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def checked_token(token: str, what: str = "link") -> str:
    """``token`` when it has a token's form, else :class:`SavedNotFound` (before any lookup)."""
    if not isinstance(token, str) or not TOKEN.fullmatch(token):
        raise SavedNotFound(f"This {what} does not name a saved analysis (its token is incomplete or mistyped); "
                            "ask for the link again.")
    return token


def checked_name(name: str) -> str:
    """A saved analysis's name: one line of 1 to :data:`MAX_NAME` printable characters."""
    text = " ".join(str(name or "").split())
    if not 1 <= len(text) <= MAX_NAME or not text.isprintable():
        raise IntakeError(f"Give the analysis a name of 1 to {MAX_NAME} characters (letters, digits, spaces, "
                          "punctuation).")
    return text


@dataclass(frozen=True)
class Stored:
    """A record's state (JSON text) and its files by SHA-256.

    Parameters
    ----------
    state : str
        The state as JSON.
    files : dict of str to bytes
        Its files.
    """

    state: str
    files: dict[str, bytes]


@dataclass(frozen=True)
class SavedInfo:
    """One saved analysis as its owner's list shows it.

    Parameters
    ----------
    id : int
        The record's id.
    name, summary : str
        Its name, and what it holds.
    created, used : float
        When it was saved and last opened (seconds since the epoch).
    size : int
        Bytes.
    share_token : str
        Its share token.
    """

    id: int
    name: str
    summary: str
    created: float
    used: float
    size: int
    share_token: str

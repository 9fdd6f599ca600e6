"""Share links kept through sign-in (issue 56): a signed-out visitor who opens a share link is asked to sign in, and
the sign-in's round trip through the provider comes back to the app's first page without the link. So, as they
click Sign in, the link is *held*: a short-lived server-side record under a key their browser carries through the
round trip (the app gives it: ``ui/streamlit_runtime.browser_key``); signed in, the same browser *claims* it once.

A held link is only a pointer. Claiming it opens the share exactly as the link would (:meth:`SavedStore.open_share
<explain_core.saved.store.SavedStore.open_share>`'s checks: the share exists and has not expired, the user is signed
in, they get their own copy) and nothing else: no address is kept, so nothing redirects anywhere. The record holds
only hashes (of the key, and the share token's own hash, as ``records.share_hash``), lives
:data:`~explain_core.saved.schema.PENDING_S` at most, is used once (deleted as it is claimed, whatever follows) and
is replaced when the same browser holds another link. Malformed keys and share tokens are refused before any lookup.
"""
from __future__ import annotations

import hashlib

import sqlalchemy as sa

from ..errors import IntakeError
from .database import Database
from .guard import guarded
from .records import checked_token, token_hash
from .schema import PENDING_S, pending

P = pending.c
KEY_BYTES = (16, 64)  # the lengths of key accepted (Streamlit's browser token is 16 bytes)


def key_hash(key: bytes) -> bytes:
    """What the store keeps of a browser's key: its SHA-256, apart from every token's hash.

    Parameters
    ----------
    key : bytes
        The browser's key, 16 to 64 bytes.

    Returns
    -------
    bytes
        The hash.

    Raises
    ------
    IntakeError
        When ``key`` is not bytes of that length.
    """
    if not isinstance(key, bytes) or not KEY_BYTES[0] <= len(key) <= KEY_BYTES[1]:
        raise IntakeError("This browser gave no usable key to keep the shared link through the sign-in; sign in, "
                          "then open the link again.")
    return hashlib.sha256(b"pending:" + key).digest()


class PendingShares(Database):
    """Holding a share link through a sign-in, and claiming it after (see the module's docstring); the base of
    :class:`~explain_core.saved.store.SavedStore`, whose ``_open_shared`` opens what is claimed."""

    @guarded("keeping the shared link through your sign-in")
    def hold_share(self, key: bytes, share: str) -> None:
        """Keep ``share`` for the browser whose key is ``key`` for :data:`~explain_core.saved.schema.PENDING_S`,
        in place of any link that browser held.

        Parameters
        ----------
        key : bytes
            The browser's key (16 to 64 bytes), which it carries through the sign-in.
        share : str
            The share token the signed-out visitor opened.

        Raises
        ------
        IntakeError
            When the key or the share token is malformed (nothing is kept).
        """
        checked_token(share, "shared link")
        held, now = key_hash(key), self._now()
        with self._connect(write=True) as conn:
            conn.execute(pending.delete().where(sa.or_(P.key_hash == held, P.created < now - PENDING_S)))
            conn.execute(pending.insert().values(key_hash=held, share_hash=token_hash(share), created=now))

    @guarded("opening the shared analysis")
    def claim_share(self, key: bytes, *, user: str) -> tuple[str, str] | None:
        """The link the browser whose key is ``key`` held, opened for the signed-in ``user``: a new session holding
        their own copy (its token, and the analysis's name), as :meth:`open_share` gives; None when the browser
        holds no link (or held it too long ago). A held link is claimed once, whatever opening it gives.

        Parameters
        ----------
        key : bytes
            The browser's key.
        user : str
            The signed-in user.

        Returns
        -------
        tuple of (str, str) or None
            The new session's token and the analysis's name, or None.

        Raises
        ------
        IntakeError
            When nobody is signed in or the key is malformed; :class:`~explain_core.errors.SavedNotFound` when the
            shared analysis is gone.
        """
        if not user:
            raise IntakeError("Sign in to open a shared analysis.")
        held = key_hash(key)
        with self._connect() as conn:  # a read first: most sign-ins hold nothing, and take no write lock
            row = conn.execute(sa.select(P.share_hash, P.created).where(P.key_hash == held)).first()
        if row is None:
            return None
        with self._connect(write=True) as conn:  # used once, whatever opening it gives: one claim deletes it
            if not conn.execute(pending.delete().where(P.key_hash == held, P.created == row[1])).rowcount:
                return None
        if row[1] < self._now() - PENDING_S:
            return None
        return self._open_shared(row[0], user)

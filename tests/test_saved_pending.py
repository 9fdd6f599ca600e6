"""A share link held through a sign-in (issue 56, explain_core/saved/pending.py), on SQLite and on PostgreSQL: the
signed-in user who held it gets their own copy, once; a hold expires, belongs to one browser's key, is replaced by
the next; malformed keys and links are refused before any lookup, and the store keeps only hashes."""
from __future__ import annotations

import random

import pytest

from explain_core import IntakeError
from explain_core.saved import SavedNotFound, new_token
from explain_core.saved.schema import PENDING_S
from store_backends import rows

SECRET = b"the server's secret"
ALICE, BOB = "https://idp.example|alice", "https://idp.example|bob"


def browser_key(seed: int) -> bytes:
    """A browser's 16-byte key, the same in every run (and in every xdist worker's collection)."""
    return random.Random(seed).randbytes(16)


@pytest.fixture
def clock():
    now = [2_000_000_000.0]
    return now


@pytest.fixture
def team(open_store, clock):
    return open_store(secret=SECRET, clock=lambda: clock[0])


def shared(team, state: str = '{"v": "alice"}', name: str = "alice's") -> str:
    token = new_token()
    team.save_session(token, state, {}, user=ALICE)
    return team.save_analysis(token, name, user=ALICE).share_token


def test_a_held_link_opens_once_as_the_users_own_copy(team, clock):
    share, key = shared(team), browser_key(1)
    team.hold_share(key, share)
    clock[0] += PENDING_S - 1  # the provider's round trip took its time
    bobs, name = team.claim_share(key, user=BOB)
    assert name == "alice's" and team.open_session(bobs, user=BOB).state == '{"v": "alice"}'
    with pytest.raises(SavedNotFound):
        team.open_session(bobs, user=ALICE)  # Bob's copy
    assert team.claim_share(key, user=BOB) is None  # used once
    assert rows(team, "SELECT COUNT(*) FROM pending") == [(0,)]
    assert team.list_analyses(None, user=BOB) == []  # a copy to work on, not one of his saved analyses


def test_a_hold_expires_and_belongs_to_one_browser(team, clock):
    share, key, other = shared(team), browser_key(2), browser_key(3)
    team.hold_share(key, share)
    assert team.claim_share(other, user=BOB) is None  # another browser holds nothing
    clock[0] += PENDING_S + 1
    assert team.claim_share(key, user=BOB) is None  # too late
    assert rows(team, "SELECT COUNT(*) FROM pending") == [(0,)]  # and gone
    team.hold_share(key, share)
    clock[0] += PENDING_S + 1
    team.purge_expired()
    assert rows(team, "SELECT COUNT(*) FROM pending") == [(0,)]


def test_a_browser_holds_its_last_link_only(team):
    first, second, key = shared(team, name="first"), shared(team, name="second"), browser_key(4)
    team.hold_share(key, first)
    team.hold_share(key, second)
    assert team.claim_share(key, user=BOB)[1] == "second"
    assert team.claim_share(key, user=BOB) is None


def test_the_shares_own_checks_decide(team):
    share, key = shared(team), browser_key(5)
    team.hold_share(key, new_token())  # well formed, names nothing: held (a pointer), refused when claimed
    with pytest.raises(SavedNotFound, match="not on this server"):
        team.claim_share(key, user=BOB)
    assert team.claim_share(key, user=BOB) is None  # claimed all the same
    team.hold_share(key, share)
    team.delete_analysis(None, team.list_analyses(None, user=ALICE)[0].id, user=ALICE)  # deleted meanwhile
    with pytest.raises(SavedNotFound):
        team.claim_share(key, user=BOB)
    team.hold_share(key, shared(team))
    for nobody in (None, ""):
        with pytest.raises(IntakeError, match="Sign in"):
            team.claim_share(key, user=nobody)


@pytest.mark.parametrize("share", ["", "x", "../../etc/passwd", "https://evil.example/?share=" + "a" * 43,
                                   "a" * 42 + "/", "a" * 44, "a" * 43 + "\n", None, 42])
def test_a_malformed_link_is_refused_before_any_lookup(team, share):
    with pytest.raises(SavedNotFound, match="incomplete or mistyped"):
        team.hold_share(browser_key(6), share)
    assert rows(team, "SELECT COUNT(*) FROM pending") == [(0,)]


@pytest.mark.parametrize("key", [b"", b"short", b"k" * 65, "a" * 16, None],
                         ids=["empty", "short", "65 bytes", "text", "none"])
def test_a_malformed_key_is_refused(team, key):
    share = shared(team)
    for call in (lambda: team.hold_share(key, share), lambda: team.claim_share(key, user=BOB)):
        with pytest.raises(IntakeError, match="no usable key"):
            call()
    assert rows(team, "SELECT COUNT(*) FROM pending") == [(0,)]


def test_only_hashes_are_kept(team):
    share, key = shared(team), browser_key(7)
    team.hold_share(key, share)
    [(key_hash, share_hash)] = [(bytes(k), bytes(s)) for k, s in rows(team, "SELECT key_hash, share_hash FROM pending")]
    assert key not in key_hash and share.encode() not in share_hash
    assert rows(team, "SELECT COUNT(*) FROM records WHERE share_hash = ?", share_hash) == [(1,)]

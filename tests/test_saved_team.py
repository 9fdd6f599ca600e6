"""The store a team's server needs, on SQLite and on PostgreSQL: signed-in users own their analyses (listed from
any session, out of every other user's reach, shared as read-only copies, counted against a per-user quota), files
kept in a folder, migrations that keep every saved analysis (from today's SQLite file, and from the first revision),
two stores on one database as two replicas, and PostgreSQL's busy and unreachable server as messages."""
from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import numpy as np
import pytest
import sqlalchemy as sa

from explain_core import IntakeError
from explain_core.limits import Limits
from explain_core.saved import AnalysisState, SavedNotFound, SavedStore, StoreError, new_token, rebuild
from explain_core.saved import blobs
from explain_core.saved.schema import FILE_NAME, HEAD, WRITE_LOCK, migrate
from store_backends import rows

SECRET = b"the server's secret"
ALICE, BOB = "https://idp.example|alice", "https://idp.example|bob"
MB = 2 ** 20
OLD_FILE = Path(__file__).parent / "data" / "saved-analyses-v1.sqlite3"  # written by the SQLite-only store


def blob(n: int, seed: int = 0) -> tuple[str, bytes]:
    data = np.random.default_rng(seed).bytes(n)
    return hashlib.sha256(data).hexdigest(), data


@pytest.fixture
def team(open_store):
    return open_store(secret=SECRET)


def test_a_users_analyses_are_theirs_from_any_session(team):
    first, second = new_token(), new_token()  # two browsers of Alice's
    sha, data = blob(400)
    team.save_session(first, '{"v": "alice"}', {sha: data}, user=ALICE)
    info = team.save_analysis(first, "alice's", user=ALICE)
    assert [i.id for i in team.list_analyses(second, user=ALICE)] == [info.id]
    assert team.list_analyses(None, user=ALICE)[0].share_token == info.share_token  # the same link everywhere
    assert team.list_analyses(first) == []  # the token alone owns nothing: Alice does
    team.open_saved(second, info.id, user=ALICE)
    assert team.open_session(second, user=ALICE).files == {sha: data}
    assert rows(team, "SELECT COUNT(*) FROM records WHERE owner_hash IS NOT NULL AND user_hash IS NULL") == [(1,)]


def test_another_user_cannot_reach_them(team):
    token = new_token()
    team.save_session(token, '{"v": "alice"}', {}, user=ALICE)
    info = team.save_analysis(token, "alice's", user=ALICE)
    assert team.list_analyses(None, user=BOB) == []
    assert not team.delete_analysis(None, info.id, user=BOB)
    for open_as in (lambda: team.open_session(token, user=BOB), lambda: team.open_session(token),
                    lambda: team.open_saved(new_token(), info.id, user=BOB)):
        with pytest.raises(SavedNotFound, match="not on this server"):  # Bob, or anyone signed out, with her token
            open_as()
    with pytest.raises(SavedNotFound):
        team.save_session(token, '{"v": "bob writes"}', {}, user=BOB)
    assert team.open_session(token, user=ALICE).state == '{"v": "alice"}'


def test_a_share_link_gives_another_user_a_read_only_copy(team):
    token = new_token()
    team.save_session(token, '{"v": 1}', dict([blob(300)]), user=ALICE)
    info = team.save_analysis(token, "to share", user=ALICE)
    bobs, name = team.open_share(info.share_token, user=BOB)
    assert name == "to share" and team.open_session(bobs, user=BOB).state == '{"v": 1}'
    with pytest.raises(SavedNotFound):
        team.open_session(bobs, user=ALICE)  # the copy is Bob's
    team.save_session(bobs, '{"v": "changed by bob"}', {}, user=BOB)
    again, _ = team.open_share(info.share_token, user=ALICE)
    assert team.open_session(again, user=ALICE).state == '{"v": 1}'  # the shared analysis is as it was
    assert team.list_analyses(None, user=BOB) == []


def test_sign_in_needs_the_servers_secret(open_store):
    with pytest.raises(IntakeError, match="server's secret"):
        open_store(secret=b"").list_analyses(None, user=ALICE)


def test_a_user_has_a_quota_beside_the_total(open_store):
    store = open_store(secret=SECRET, caps=Limits(saved_mb=10.0, saved_analysis_mb=1.5, saved_visitor_mb=2.0))
    first, second = new_token(), new_token()
    store.save_session(first, "{}", dict([blob(int(0.9 * MB), 1)]), user=ALICE)
    store.save_analysis(first, "one", user=ALICE)
    with pytest.raises(IntakeError, match="space your saved analyses take"):  # counted across her sessions
        store.save_session(second, "{}", dict([blob(int(0.9 * MB), 2)]), user=ALICE)
    store.save_session(second, "{}", dict([blob(int(0.9 * MB), 3)]), user=BOB)


def test_files_in_a_folder_are_checked_shared_and_swept(open_store, tmp_path, monkeypatch):
    folder = tmp_path / "files"
    store = open_store(files_folder=folder)
    token, (sha, data) = new_token(), blob(5000)
    store.save_session(token, "{}", {sha: data})
    info = store.save_analysis(token, "kept")
    assert (folder / sha[:2] / sha).read_bytes() == data and rows(store, "SELECT data FROM files") == [(b"",)] * 2
    assert store.open_session(token).files == {sha: data}
    (folder / sha[:2] / sha).write_bytes(b"x" + data[1:])
    with pytest.raises(IntakeError, match="damaged"):
        store.open_session(token)
    (folder / sha[:2] / sha).unlink()
    with pytest.raises(IntakeError, match="missing from the server's folder"):
        store.open_session(token)
    store.save_session(token, "{}", {sha: data})  # kept again: the row is there, the file comes back
    assert store.open_session(token).files == {sha: data}
    monkeypatch.setattr(blobs, "GRACE_S", -1.0)
    store.delete_analysis(token, info.id)
    assert (folder / sha[:2] / sha).exists()  # the session still names it
    store.save_session(token, "{}", {})
    store.purge_expired()
    assert not (folder / sha[:2] / sha).exists()


def test_todays_sqlite_file_is_migrated_with_its_analyses(tmp_path):
    """A file the SQLite-only store wrote (tests/data): its session, saved analysis and share link work after the
    migration, and the analysis rebuilds."""
    shutil.copy(OLD_FILE, tmp_path / FILE_NAME)
    store = SavedStore(tmp_path, clock=lambda: 2_000_000_000.0 + 86_400)
    assert rows(store, "SELECT version_num FROM alembic_version") == [(HEAD,)]
    back = store.open_session("T" * 43)
    sha = "8b0bf3d9cd3cf2fca0b925e8b1076016148f7a0552afdf57cdf72aac52aee9a7"
    assert back.files == {sha: b"today's uploaded bytes\n" * 40}
    restored = rebuild(AnalysisState.from_json(back.state), back.files)
    assert restored.row == 7 and restored.setup.dataset.name == "compas"
    [info] = store.list_analyses("T" * 43)
    assert info.name == "kept by today's store" and info.share_token == "ewow-PWTzTa9xJuyUJrLjelIkTDQUk-ZvR4awAy5qpY"
    viewer, name = store.open_share(info.share_token)
    assert store.open_session(viewer).state == back.state


def test_an_upgrade_from_the_first_revision_keeps_every_analysis(open_store):
    store = open_store()
    token = new_token()
    store.save_session(token, '{"v": 1}', dict([blob(100)]))
    store.save_analysis(token, "before the upgrade")
    from alembic import command
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(Path(migrate.__code__.co_filename).with_name("migrations")))
    with store.engine.begin() as conn:
        config.attributes["connection"] = conn
        command.downgrade(config, "0001")
    assert rows(store, "SELECT version_num FROM alembic_version") == [("0001",)]
    again = open_store()
    assert again.open_session(token).state == '{"v": 1}' and [i.name for i in again.list_analyses(token)] == [
        "before the upgrade"]


def test_two_replicas_on_one_database_see_each_others_saves(open_store):
    one, two = open_store(secret=SECRET), open_store(secret=SECRET)
    token, (sha, data) = new_token(), blob(700)
    one.save_session(token, '{"v": 1}', {sha: data}, user=ALICE)
    info = one.save_analysis(token, "saved on one", user=ALICE)
    assert [i.share_token for i in two.list_analyses(None, user=ALICE)] == [info.share_token]
    elsewhere = new_token()
    two.open_saved(elsewhere, info.id, user=ALICE)
    assert one.open_session(elsewhere, user=ALICE).files == {sha: data}


def test_postgresql_busy_and_unreachable_are_messages(postgres_url):
    from store_backends import emptied

    store = SavedStore(url=emptied(postgres_url))
    token = new_token()
    store.save_session(token, '{"v": 1}', {})
    with store.engine.connect() as holder, holder.begin():  # another replica writing, longer than the lock wait
        holder.execute(sa.text("SELECT pg_advisory_xact_lock(:id)"), {"id": WRITE_LOCK})
        with pytest.raises(StoreError, match="busy .* did not happen"):
            store.save_session(token, '{"v": 2}', {})
    store.save_session(token, '{"v": 2}', {})
    assert store.open_session(token).state == '{"v": 2}'
    down = sa.make_url(postgres_url).set(port=1)
    with pytest.raises(StoreError, match="database cannot be reached"):
        SavedStore(url=down.render_as_string(hide_password=False))
    with pytest.raises(IntakeError, match="EXPLAIN_STATE_URL.*cannot be used: mysql is not one of"):
        SavedStore(url="mysql://nobody@localhost/none")

"""Saved analyses in the app: the session is kept on the server under a token in the URL (``?session=…``), so a
reload brings the same analysis back; "Save this analysis" (sidebar) keeps a named copy; Home lists the visitor's
saved analyses — those saved under this session's token or, with sign-in on (``ui/account.py``), the signed-in
user's from any browser, whose sessions no other user's or signed-out visit opens — with their share links
(``?share=…``: whoever opens one gets their own copy, under a new token; a signed-out visitor's is held through
their sign-in, :func:`held_share`). The store and the recipes are
:mod:`explain_core.saved`'s; this module reads the session, calls them and says what happened. A restored model
file is loaded by the upload's own cached loader (``ui/uploads.load_cached``: the same allow-lists and sandbox).
"""
from __future__ import annotations

import hashlib
import logging
import re
import time
from dataclasses import replace
from typing import Callable
from urllib.parse import urlencode, urlsplit, urlunsplit

import numpy as np
import streamlit as st

from explain_core import IntakeError
from explain_core.analysis import DEFAULT_DEMO, Parameters, Setup, UploadChoices, demo_setup
from explain_core.inspection.filters import fitting
from explain_core.intake.tables import read_table
from explain_core.limits import limits
from explain_core.saved import AnalysisState, Builders, DataRecipe, FileRef, ModelRecipe, SavedStore, new_token, rebuild
from explain_core.saved.records import MAX_NAME, checked_token
from explain_core.saved.schema import PENDING_S
from explain_core.vocabulary import plain
from ui import account
from ui import boundary
from ui import origins
from ui import shared
from ui import streamlit_runtime
from ui import uploads

SESSION, SHARE = "session", "share"  # the query parameters: this session's token, a saved analysis's share token
LOG = logging.getLogger(__name__)


@st.cache_resource(show_spinner=False)
def _store() -> SavedStore:
    return SavedStore(secret=account.secret())


def store() -> SavedStore | None:
    """The server's store, or None (and the reason, shown in the sidebar) when it cannot be opened."""
    try:
        return _store()
    except IntakeError as exc:
        st.session_state["saved_problem"] = f"Saved analyses are off on this server: {plain(exc)}"
        return None


def builders() -> Builders:
    """The pages' own cached builders: a restore shares their caches and their loading."""
    return Builders(demo=lambda name, kind, seed: shared.demo(name, kind) if seed == 0 else
                    demo_setup(name, kind, seed=seed), load=load_file,
                    train=lambda dataset, kind, seed: shared.trained(dataset, dataset.key, kind, seed),
                    read=lambda data, name: read_table(data, filename=name, max_mb=shared.upload_limit_mb()))


def load_file(dataset, data: bytes, filename: str, choices: UploadChoices):
    """A saved model file loaded exactly as its upload was (``load_cached``: same key, same safe loader)."""
    return uploads.load_cached(dataset, data, uploads.ModelUpload(dataset.key, hashlib.sha1(data).hexdigest(),
                                                                  filename, choices))


# --- the session's state -----------------------------------------------------------------------------------------

def current_state() -> AnalysisState | None:
    """The session as an AnalysisState; None when where its data or model came from is unknown."""
    s = st.session_state["setup"]
    data, model = origins.origins_of(s)
    if model is None and s.training is not None:
        model = sparse_recipe(s)
    if data is None or model is None:
        return None
    second = st.session_state.get("second_model")  # (setup key, second setup): ui/second_model.py
    second = None if second is None else (origins.origins_of(second[1])[1] or (
        sparse_recipe(second[1]) if second[1].training is not None else None))
    return AnalysisState.of(s, data, model, parameters=shared.params(), row=shared.row(),
                            whatif=st.session_state.get("whatif"), second=second,
                            cohorts=fitting(st.session_state.get("cohorts", ()), s.dataset))  # this data's only


def sparse_recipe(setup: Setup) -> ModelRecipe | None:
    """A model trained on the Sparser page, kept as its ``.skops`` file (restored through the same safe loading as
    an upload); its split seed is its base model's (None when the split cannot be told)."""
    from explain_core.sparse.training import skops_bytes

    base = origins.origins_of(setup.training.base)[1]
    seed = base.seed if base is not None else 0
    if not np.array_equal(setup.dataset.split(seed)[0], setup.train_rows):
        return None
    data = skops_bytes(setup)
    recipe = ModelRecipe("file", seed=seed, file=FileRef.of(data, "sparser_model.skops"),
                         threshold=setup.model.threshold, positive=setup.model.positive_class, source=setup.source)
    origins.remember_model(setup.model_key, recipe, data)
    return recipe


def pristine(state: AnalysisState) -> bool:
    """The demo a session starts on, untouched but for the row (the URL's ``?row=`` says that much)."""
    name, kind = DEFAULT_DEMO
    start = AnalysisState.of(shared.demo(name, kind), DataRecipe(demo=name), ModelRecipe("demo", kind),
                             parameters=Parameters(), row=0)
    return replace(state, row=0) == start


def autosave(force: bool = False, in_url: bool = True) -> None:
    """Keep the session's analysis on the server when it changed (a session that was never kept and is still on its
    starting demo is kept only with ``force``), and keep its token in the URL (``in_url``; a callback leaves that to
    the run, as setting the URL lets a click that follows at once stop the callback)."""
    if "setup" not in st.session_state:
        return
    state = current_state()
    if state is None:
        st.session_state["saved_problem"] = ("This setup cannot be kept across a reload: where its data or model "
                                             "came from is not known.")
        return
    text, last = state.to_json(), st.session_state.get("saved_text")
    # a session is kept once it has been (or differs from its demo): a fresh start after a failed restore leaves
    # the record it could not read alone until the visitor changes something
    if text != last and (force or last is not None or not pristine(state)):
        st.session_state["saved_text"] = text  # tried once per state, not on every rerun
        write(st.session_state.get("token") or new_token(), text, state)
    keep_origins()
    token = st.session_state.get("token")
    if in_url and token and st.query_params.get(SESSION) != token:
        st.query_params[SESSION] = token


def write(token: str, text: str, state: AnalysisState) -> None:
    saved = store()
    if saved is None:
        return
    try:
        saved.save_session(token, text, {f.sha256: origins.remembered_file(f.sha256) for f in state.files},
                           user=account.user())
    except IntakeError as exc:
        st.session_state["saved_problem"] = f"This analysis is not kept across a reload: {plain(exc)}"
    else:
        st.session_state["token"] = token
        st.session_state.pop("saved_problem", None)


def keep_origins() -> None:
    """Forget the origins (and file bytes) of datasets and models neither the session nor Data & model holds."""
    s, working = st.session_state["setup"], st.session_state.get("dm_model")
    second = st.session_state.get("second_model")
    origins.keep({s.dataset.key, st.session_state.get("dm_dataset_key")},
                 {s.model_key, getattr(working, "key", None), None if second is None else second[1].model_key})


# --- opening: a reload, a shared link, a saved analysis -------------------------------------------------------

def begin() -> None:
    """A session's first run: open what the URL names (``?share=``: a copy of a saved analysis; ``?session=``: this
    visitor's own session, after a reload) or, right after a sign-in, the share link this browser held through it;
    with sign-in on, nothing before the visitor signs in."""
    if account.signed_out():
        account.gate(*held_share())
    if "setup" in st.session_state:
        return
    share, name = st.query_params.get(SHARE), None
    token = st.query_params.get(SESSION) or st.session_state.get("token")  # the token Home's Open kept
    saved = store()
    if share and saved is not None:
        del st.query_params[SHARE]
        try:
            token, name = saved.open_share(share, user=account.user())
        except IntakeError as exc:
            st.warning(f"{plain(exc)} A fresh session started on the demo.", icon=":material/link_off:")
            return
    elif not token and saved is not None and account.user() is not None:
        token, name = claim_held(saved)
    if token and saved is not None:
        restore(saved, token, name)


def held_share() -> tuple[tuple[str, str] | None, Callable[[], None] | None]:
    """For a signed-out visitor whose URL has a share link: what the sign-in page says of it, and what its Sign in
    does first — hold the link for this browser (:mod:`explain_core.saved.pending`, keyed by
    :func:`~ui.streamlit_runtime.browser_key`), so that it opens once they are signed in. A malformed link is
    refused here; a browser without a key (or a server without a store) is asked to open the link again."""
    share = st.query_params.get(SHARE)
    if not share:
        return None, None
    try:
        checked_token(share, "shared link")
    except IntakeError as exc:
        return ("warning", plain(exc)), None
    key, saved = streamlit_runtime.browser_key(), store()
    if key is None or saved is None:
        return ("info", "You opened a shared analysis: sign in, then open its link again to get your own copy."), None
    return (("info", f"You opened a shared analysis: sign in, and your own copy of it opens (within "
                     f"{PENDING_S / 60:g} minutes, in this browser)."), lambda: hold(saved, key, share))


def hold(saved: SavedStore, key: bytes, share: str) -> None:
    """Sign in's first step with a share link: hold it for this browser (on failure, the sign-in goes on and the
    link is still the visitor's)."""
    try:
        saved.hold_share(key, share)
    except IntakeError as exc:
        LOG.warning("A share link was not held through a sign-in: %s", exc)


def claim_held(saved: SavedStore) -> tuple[str | None, str | None]:
    """A signed-in session whose URL names nothing (as the sign-in comes back): the share link this browser held
    through the sign-in, opened as the user's own copy (its session's token and the analysis's name); Nones when it
    held none, or with a message when it cannot be opened."""
    key = streamlit_runtime.browser_key()
    if key is None:
        return None, None
    try:
        return saved.claim_share(key, user=account.user()) or (None, None)
    except IntakeError as exc:
        st.warning(f"The shared analysis you opened before signing in cannot be opened. {plain(exc)}",
                   icon=":material/link_off:")
        return None, None


def restore(saved: SavedStore, token: str, shared_name: str | None = None) -> None:
    """Rebuild the session ``token`` names; a message and a fresh session when it cannot be."""
    try:
        stored = saved.open_session(token, user=account.user())
    except IntakeError as exc:
        st.query_params.pop(SESSION, None)
        st.warning(f"{plain(exc)} A fresh session started on the demo.", icon=":material/link_off:")
        return
    st.session_state["token"] = token
    if stored is None:  # a visitor whose saved analyses outlived their working session
        return
    try:
        state = AnalysisState.from_json(stored.state)
        with st.spinner("Restoring the analysis: its data and model…"):
            restored = rebuild(state, stored.files, builders())
    except Exception as exc:  # noqa: BLE001 — whatever fails, the visitor gets a message and a working session
        st.warning(f"This link's analysis could not be restored. {boundary.failure_message(exc, 'a restore')} A fresh "
                   "session started on the demo.", icon=":material/link_off:")
        return
    origins.remember_data(restored.setup.dataset, state.data, stored.files.get(getattr(state.data.file, "sha256", "")))
    origins.remember_model(restored.setup.model_key, state.model,
                           stored.files.get(getattr(state.model.file, "sha256", "")))
    shared.use_setup(restored.setup)
    if restored.second is not None:
        origins.remember_model(restored.second.model_key, state.second,
                               stored.files.get(getattr(state.second.file, "sha256", "")))
        st.session_state["second_model"] = (restored.setup.key, restored.second)
    linked = str(st.query_params.get("row", ""))
    rows = len(restored.setup.dataset.features)
    st.session_state.update(row=int(linked) if re.fullmatch(r"[0-9]{1,12}", linked) and int(linked) < rows
                            else restored.row, params=restored.parameters, whatif=restored.whatif,
                            cohorts=restored.cohorts, saved_text=stored.state)
    if shared_name is not None:
        st.info(f"You opened the shared analysis “{plain(shared_name)}”. This is your own copy: what you change here "
                "does not change it.", icon=":material/share:")


# --- saving and the list -------------------------------------------------------------------------------------

def share_url(share: str) -> str:
    """The link that opens a copy of a saved analysis (this server, this page)."""
    parts = urlsplit(st.context.url or "")
    query = urlencode({SHARE: share})
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, "")) if parts.netloc else f"?{query}"


def summary() -> str:
    s = st.session_state["setup"]
    edited = " (edited)" if st.session_state.get("whatif") else ""
    return f"{s.dataset.name} · {s.model.name} · row {shared.row()}{edited}"


def save_now() -> None:
    """The sidebar's Save: keep the session now, then a named copy of it."""
    autosave(force=True, in_url=False)
    token, saved = st.session_state.get("token"), store()
    if token is None or saved is None:
        raise IntakeError(st.session_state.get("saved_problem") or "This analysis cannot be saved on this server.")
    info = saved.save_analysis(token, st.session_state.get("saved_name", ""), summary(), user=account.user())
    st.session_state["saved_last"] = (info.name, share_url(info.share_token))


def save_panel() -> None:
    """The sidebar's "Save this analysis" (a name, then its share link) and why the session is not kept, if it is
    not; and who is signed in, with sign-in on."""
    account.panel()
    with st.sidebar, st.popover("Save this analysis", icon=":material/bookmark_add:"):
        with st.form("saved_form", clear_on_submit=True, border=False):
            st.text_input("Name", max_chars=MAX_NAME, key="saved_name", placeholder="e.g. credit model, applicant 42")
            st.form_submit_button("Save", icon=":material/save:", on_click=boundary.guarded(save_now))
        last = st.session_state.get("saved_last")
        if last:
            st.success(f"Saved “{plain(last[0])}”. Its share link opens a copy for whoever has it:",
                       icon=":material/check_circle:")
            st.code(last[1], language=None, wrap_lines=True)
        st.caption(f"The data, model, choices and row are kept on this server, and listed on Home, for "
                   f"{limits().saved_days:g} days after their last use. The address bar's link is this session's "
                   "own: whoever has it works on the same analysis.")
        problem = st.session_state.get("saved_problem")
        if problem:
            st.warning(problem, icon=":material/cloud_off:")


def open_saved(analysis: int) -> None:
    """Home's Open: that saved analysis becomes the session again (restored by :func:`begin` in this very run; a
    signed-in user's session that was never kept gets its token here)."""
    token = st.session_state.get("token") or new_token()
    store().open_saved(token, analysis, user=account.user())
    st.session_state["token"] = token
    for key in ("setup", "saved_text", "whatif", "params", "cohorts"):
        st.session_state.pop(key, None)
    st.query_params.pop("row", None)


def delete_saved(analysis: int) -> None:
    store().delete_analysis(st.session_state.get("token"), analysis, user=account.user())


def saved_list() -> None:
    """Home's list of the analyses saved under this session's token (or by the signed-in user), each with Open,
    Delete and its share link."""
    st.subheader("Your saved analyses")
    token, saved, user = st.session_state.get("token"), store(), account.user()
    infos = saved.list_analyses(token, user=user) if (token or user) and saved is not None else []
    if not infos:
        whose = ("This list is your account's: it is here from any browser you sign in on." if user else
                 "This list belongs to this session's address: keep it to come back.")
        st.caption("None yet. **Save this analysis** (in the sidebar) keeps the current one under a name, here and "
                   f"behind a link you can share. {whose}")
        return
    for info in infos:
        with st.container(border=True, key=f"saved_{info.id}"):
            text, open_, delete = st.columns([6, 1, 1], vertical_alignment="center")
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.created))
            text.markdown(f"**{plain(info.name)}** · {plain(info.summary)}  \nsaved {when}, "
                          f"{info.size / 2 ** 20:.1f} MB")
            open_.button("Open", key=f"saved_open_{info.id}", icon=":material/open_in_browser:",
                         on_click=boundary.guarded(open_saved), args=(info.id,),
                         help="Make it this session's analysis again (the saved one stays as it is).")
            delete.button("Delete", key=f"saved_delete_{info.id}", icon=":material/delete:",
                          on_click=boundary.guarded(delete_saved), args=(info.id,),
                          help="Delete it; its share link stops working.")
            st.code(share_url(info.share_token), language=None, wrap_lines=True)


"""What keeping a session costs (issue 26): the work the app does on every run, a write to the store, and a reload.

- **Every run**: the session as an ``AnalysisState`` and its JSON (what ``ui/saved.autosave`` builds on each run
  to see whether anything changed; it writes only then).
- **Writes**: ``SavedStore.save_session`` of a state with a table and a model file of ``--mb`` MB each (the first
  write), then of the same state with another row (no file is written again).
- **A reload**: ``open_session`` + ``rebuild`` of the COMPAS demo, and of an upload (COMPAS as a CSV and its GBDT
  Pipeline as a ``.skops`` file, loaded through the sandbox; the store's read, ``open_session``, also alone), beside
  the upload's own path on the same bytes (``read_table`` + ``make_dataset`` + ``model_from_upload`` +
  ``make_setup``: what a first upload does). Ratio
  reload / upload, target ≤ 1.2: a reload is the upload's own work, nothing more.

Medians of ``--repeats`` runs (the store in a temporary folder: SQLite, or the PostgreSQL database of ``--url``,
whose tables must be empty or this version's; the bench's records stay there).

    python bench/saved_sessions.py
    python bench/saved_sessions.py --mb 100 --repeats 3
    python bench/saved_sessions.py --url postgresql+psycopg://explain@127.0.0.1:5432/bench
"""
from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time

import numpy as np
import skops.io as sio

from explain_core.analysis import Parameters, demo_setup
from explain_core.intake.data import make_dataset
from explain_core.intake.layout import TableChoices
from explain_core.intake.tables import read_table
from explain_core.saved import AnalysisState, DataRecipe, FileRef, ModelRecipe, SavedStore, new_token, rebuild
from explain_core.setup import make_setup, model_from_upload


def median_seconds(work, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def upload_case():
    """COMPAS as the bytes of a CSV and of its demo GBDT as a .skops file, with the upload's recipe."""
    demo = demo_setup("compas", "gbdt")
    data = demo.dataset
    frame = data.features.assign(**{str(data.target.name): data.target})
    csv, model_file = frame.to_csv(index=False).encode(), sio.dumps(demo.model.estimator)
    kinds = {g.name: g.kind for g in data.groups}
    recipe = DataRecipe.upload(FileRef.of(csv, "compas.csv"), str(data.target.name), task=data.task,
                               positive_class=data.positive_class, name="compas", choices=TableChoices(kinds=kinds))
    return csv, model_file, recipe, kinds


def upload_path(csv: bytes, model_file: bytes, recipe: DataRecipe, kinds: dict):
    dataset = make_dataset(read_table(csv, filename="compas.csv"), recipe.target, task=recipe.task,
                           positive_class=recipe.positive_class, name="compas", choices=TableChoices(kinds=kinds))
    return make_setup(dataset, model_from_upload(dataset, model_file, "compas.skops"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=50.0, help="size of each file in the write test (MB)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--url", help="a database URL (postgresql+psycopg://…) instead of a SQLite file")
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    store = SavedStore(folder, url=args.url)
    print(f"store: {store.engine.dialect.name} ({store.where})")
    demo = demo_setup("compas", "gbdt")
    demo_state = lambda row=0: AnalysisState.of(demo, DataRecipe(demo="compas"), ModelRecipe("demo", "gbdt"),  # noqa: E731
                                                parameters=Parameters(), row=row)
    per_run = median_seconds(lambda: demo_state().to_json(), max(args.repeats, 50))
    print(f"every run: the state and its JSON {per_run * 1e3:.2f} ms")

    rng = np.random.default_rng(0)
    table, model_file = rng.bytes(int(args.mb * 2 ** 20)), rng.bytes(int(args.mb * 2 ** 20))
    files = {hashlib.sha256(b).hexdigest(): b for b in (table, model_file)}
    first, again = [], []
    for _ in range(args.repeats):
        token = new_token()
        start = time.perf_counter()
        store.save_session(token, demo_state(0).to_json(), files)
        first.append(time.perf_counter() - start)
        start = time.perf_counter()
        store.save_session(token, demo_state(1).to_json(), files)
        again.append(time.perf_counter() - start)
    print(f"write, two files of {args.mb:g} MB: first {statistics.median(first):.3f} s, "
          f"a rewrite with another row {statistics.median(again) * 1e3:.1f} ms")

    token = new_token()
    store.save_session(token, demo_state(3).to_json(), {})
    reload_demo = median_seconds(lambda: rebuild(AnalysisState.from_json(store.open_session(token).state), {}),
                                 args.repeats)
    print(f"reload of the COMPAS demo: {reload_demo * 1e3:.0f} ms")

    csv, skops_file, recipe, kinds = upload_case()
    model_ref = FileRef.of(skops_file, "compas.skops")
    direct = upload_path(csv, skops_file, recipe, kinds)  # the state as the app keeps it: of the upload's setup
    state = AnalysisState.of(direct, recipe, ModelRecipe("file", file=model_ref), parameters=Parameters(), row=0)
    token = new_token()
    store.save_session(token, state.to_json(), {recipe.file.sha256: csv, model_ref.sha256: skops_file})

    def reload_upload():
        stored = store.open_session(token)
        return rebuild(AnalysisState.from_json(stored.state), stored.files)

    restored = reload_upload()
    assert restored.setup.key == direct.key, "the reload is not the same analysis"
    reload_s = median_seconds(reload_upload, args.repeats)
    read_s = median_seconds(lambda: store.open_session(token), args.repeats)  # the store's share of a reload
    upload_s = median_seconds(lambda: upload_path(csv, skops_file, recipe, kinds), args.repeats)
    ratio = reload_s / upload_s
    print(f"reload of an upload (COMPAS CSV {len(csv) / 2 ** 20:.1f} MB + .skops {len(skops_file) / 2 ** 10:.0f} KB, "
          f"sandboxed): {reload_s:.2f} s (its read from the store {read_s * 1e3:.0f} ms); the upload's own path "
          f"{upload_s:.2f} s; ratio {ratio:.2f} "
          f"({'within' if ratio <= 1.2 else 'over'} the 1.2 target)")


if __name__ == "__main__":
    main()

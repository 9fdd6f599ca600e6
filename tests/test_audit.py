"""Dataset-wide audits on Dask (explain_core.audit): a LocalCluster of 2 worker processes gives the single-process
results on Adult, survives a killed worker, resumes an interrupted run, and streams a table several times larger
than a worker's memory limit. Sizes are small on purpose (the CI's time is shared): 1,200 Adult rows (stated
subset), and the out-of-core table is 105,000 rows of 20 kB text (2.0 GiB) against a 700 MB limit per worker (3×).
"""
from __future__ import annotations

import json
import os
import signal
from dataclasses import replace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from conftest import ROOT
from explain_core import IntakeError
from explain_core.analysis import dataset_sev, demo_setup
from explain_core.audit import AuditOptions, Cluster, explain_partition, read_audit, run_audit
from explain_core.intake.data import make_dataset
from explain_core.lens import ContextOptions, lens_contexts, opposite_references
from explain_core.setup import Parameters, lens_max_size, trained_setup
from explain_core.sev.summaries import prevalence_table, sev_counts

ADULT_ROWS = 1200
WORKER_MEMORY = 700 * 10**6
PARAMS = Parameters()


@pytest.fixture(scope="module")
def client():
    from distributed import Client

    from explain_core.audit.cluster import local_cluster

    cluster = local_cluster(2, memory_limit=WORKER_MEMORY)
    with Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def adult(explain_cache_dir):
    return demo_setup("adult", "l2_lr").with_restricted(["sex", "race"])


@pytest.fixture(scope="module")
def adult_file(adult, tmp_path_factory):
    """The first 1,200 Adult rows in 8 row groups (8 partitions)."""
    path = tmp_path_factory.mktemp("adult") / "rows.parquet"
    adult.dataset.features.iloc[:ADULT_ROWS].to_parquet(path, row_group_size=ADULT_ROWS // 8)
    return path


@pytest.fixture(scope="module")
def expected(adult):
    """The single-process engine on the same rows: dataset_sev (the dashboard's dataset-wide view)."""
    rows = np.arange(ADULT_ROWS)
    runs = {"minus": dataset_sev(replace(adult, restricted=()), rows, PARAMS, kind="minus"),
            "plus": dataset_sev(adult, rows, PARAMS, kind="plus"),
            "restricted": dataset_sev(adult, rows, PARAMS, kind="minus")}
    return {kind: run.results for kind, run in runs.items()}


def table(folder) -> pd.DataFrame:
    return read_audit(folder).rows().sort_values("row").reset_index(drop=True)


def check_equal(frame: pd.DataFrame, expected) -> None:
    assert frame["row"].tolist() == list(range(ADULT_ROWS))
    for kind, results in expected.items():
        assert [None if pd.isna(v) else int(v) for v in frame[f"sev_{kind}"]] == [r.value for r in results], kind
        assert frame[f"sev_{kind}_status"].tolist() == [r.status for r in results], kind
        assert [sorted(map(tuple, e)) for e in frame[f"sev_{kind}_explanations"]] == \
            [sorted(r.explanations) for r in results], kind


def test_cluster_run_equals_the_single_process_engine_on_adult(client, adult, adult_file, expected, tmp_path):
    run = run_audit(adult, adult_file, tmp_path / "cluster", cluster=Cluster(client=client))
    assert run.executor == "Dask cluster (2 workers)" and run.computed == tuple(range(8)) and not run.skipped
    frame = table(run.folder)
    check_equal(frame, expected)
    single = run_audit(adult, adult_file, tmp_path / "single", cluster=Cluster("single"))
    assert single.executor == "single process"
    assert table(single.folder).drop(columns="seconds").equals(frame.drop(columns="seconds"))
    assert frame["prediction"].tolist() == adult.model.label(adult.dataset.features.iloc[:ADULT_ROWS]).tolist()
    assert frame["status"].tolist() == frame["sev_restricted_status"].tolist()
    audit = read_audit(run.folder)  # the summary, as the dashboard and the PDF read it
    for kind, results in expected.items():
        counts = sev_counts([r.value if r.explainable else None for r in results])
        assert audit.counts(kind)[["sev", "count"]].equals(counts[["sev", "count"]])
        wanted = prevalence_table(results, adult.dataset.group_names)
        assert audit.prevalence(kind)["count"].tolist() == wanted["count"].tolist()


def test_a_values_only_audit_gives_the_same_values_and_no_prevalence(adult, adult_file, expected, tmp_path):
    """``AuditOptions(explanations="first")`` (``--first-flip``): each search stops at its first flip, the values and
    statuses are the full audit's, each row lists one of its minimal explanations, and the summary, the PDF and the
    page have no prevalence (it would count first flips, not minimal explanations)."""
    from explain_core.audit.summary import VALUES_ONLY
    from explain_core.report.audit import write_audit_pdf

    run = run_audit(adult, adult_file, tmp_path / "first", cluster=Cluster("single"),
                    options=AuditOptions(explanations="first"))
    frame = table(run.folder)
    for kind, results in expected.items():
        assert [None if pd.isna(v) else int(v) for v in frame[f"sev_{kind}"]] == [r.value for r in results], kind
        assert frame[f"sev_{kind}_status"].tolist() == [r.status for r in results], kind
        for listed, r in zip(frame[f"sev_{kind}_explanations"], results):
            assert len(listed) <= 1 and all(tuple(e) in r.explanations for e in listed), kind
    audit = read_audit(run.folder)
    assert audit.summary["explanations"] == "first" and audit.manifest["options"]["explanations"] == "first"
    for kind, results in expected.items():
        counts = sev_counts([r.value if r.explainable else None for r in results])
        assert audit.counts(kind)[["sev", "count"]].equals(counts[["sev", "count"]])
        assert audit.prevalence(kind) is None
    assert write_audit_pdf(audit, image_renderer="matplotlib")[:4] == b"%PDF"
    assert "values only" in VALUES_ONLY
    with pytest.raises(IntakeError):
        AuditOptions(explanations="some")


def test_a_worker_killed_mid_run_changes_nothing(client, adult, adult_file, expected, tmp_path):
    pids = client.run(os.getpid)
    victim = next(iter(pids.values()))
    killed = []

    def kill(i: int) -> None:  # after the first partition is written, 7 are still running or waiting
        if not killed:
            os.kill(victim, signal.SIGKILL)
            killed.append(i)

    run = run_audit(adult, adult_file, tmp_path / "killed", cluster=Cluster(client=client), on_partition=kill)
    assert killed and len(run.computed) == 8
    check_equal(table(run.folder), expected)
    client.wait_for_workers(2, timeout=60)
    assert victim not in client.run(os.getpid).values()  # the nanny started a new worker process


def test_an_interrupted_run_resumes_with_only_the_missing_partitions(client, adult, adult_file, expected, tmp_path):
    out, written = tmp_path / "resumed", []

    def interrupt(i: int) -> None:
        written.append(i)
        if len(written) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_audit(adult, adult_file, out, cluster=Cluster(client=client), on_partition=interrupt)
    stamps = {p.name: p.stat().st_mtime_ns for p in (out / "parts").glob("*.parquet")}
    assert len(stamps) == 3 and not list((out / "parts").glob(".*"))  # whole partition files only
    assert not read_audit(out).complete
    run = run_audit(adult, adult_file, out, cluster=Cluster(client=client))
    assert run.skipped == tuple(sorted(written)) and sorted(run.computed) == sorted(set(range(8)) - set(written))
    assert {p.name: p.stat().st_mtime_ns for p in (out / "parts").glob("*.parquet") if p.name in stamps} == stamps
    check_equal(table(out), expected)
    assert read_audit(out).complete
    with pytest.raises(IntakeError, match="other inputs"):
        run_audit(adult, adult_file, out, Parameters(max_depth=2), cluster=Cluster(client=client))


TEXT = 20_000
WIDE_ROWS, WIDE_GROUP = 105_000, 1000


def peak_memory() -> int:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited from the parent over exec)."""
    line = next(line for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024


def test_a_table_several_times_larger_than_a_worker_streams_through(client, tmp_path):
    """2.0 GiB of text (105,000 rows × 20 kB, a feature the model one-hot encodes) against 700 MB per worker."""
    rng = np.random.default_rng(0)
    notes = [letter * TEXT for letter in "abc"]
    x, k = rng.normal(size=300), rng.integers(0, 3, 300)
    sample = pd.DataFrame({"x": x, "note": np.array(notes, dtype=object)[k], "y": (x + k - 1 > 0).astype(int)})
    setup = trained_setup(make_dataset(sample, "y", name="wide"), "l2_lr")
    path = tmp_path / "wide.parquet"
    with pq.ParquetWriter(path, pa.schema([("x", pa.float64()), ("note", pa.string())])) as writer:
        for _ in range(WIDE_ROWS // WIDE_GROUP):  # written group by group: never in memory here either
            codes = pa.array(rng.integers(0, 3, WIDE_GROUP).astype(np.int32))
            text = pa.DictionaryArray.from_arrays(codes, pa.array(notes)).cast(pa.string())
            writer.write_table(pa.table({"x": rng.normal(size=WIDE_GROUP), "note": text}))
    assert WIDE_ROWS * TEXT >= 3 * WORKER_MEMORY
    client.wait_for_workers(2, timeout=60)
    before = client.run(os.getpid)
    run = run_audit(setup, path, tmp_path / "wide", cluster=Cluster(client=client))
    assert client.run(os.getpid) == before, "a worker was restarted (killed for memory?)"
    peaks = client.run(peak_memory)
    assert max(peaks.values()) < WORKER_MEMORY, peaks
    assert run.summary["rows"] == WIDE_ROWS and run.summary["partitions"] == WIDE_ROWS // WIDE_GROUP
    first = pq.ParquetFile(path).read_row_group(0).to_pandas()
    local = explain_partition(setup, first, 0, PARAMS, AuditOptions()).to_pandas()
    stored = pd.read_parquet(tmp_path / "wide" / "parts" / "part-00000.parquet")
    assert stored.drop(columns="seconds").equals(local.drop(columns="seconds"))


def test_report_command_fans_rows_out_over_the_cluster(client, adult, tmp_path):
    """batch_reports on the cluster (one task per row, the setup sent once) writes the PDFs and the index that one
    process writes."""
    from explain_core.report import BatchOptions, batch_reports

    rows, kw = [7, 0], dict(options=BatchOptions(sections=("sev",), image_renderer="matplotlib"))
    _, here = batch_reports(adult, rows, PARAMS, tmp_path / "here", **kw)
    _, there = batch_reports(adult, rows, PARAMS, tmp_path / "there", cluster=Cluster(client=client), **kw)
    assert there == here and [r["row"] for r in there] == rows
    assert all((tmp_path / "there" / r["pdf"]).read_bytes()[:4] == b"%PDF" for r in there)


@pytest.mark.parametrize("memory_limit", [0, WORKER_MEMORY])
def test_workers_keep_freed_arrays_instead_of_mapping_them_again(adult, memory_limit):
    """Dask's nanny starts a worker with MALLOC_TRIM_THRESHOLD_ set, which pins glibc's mmap threshold at 128 KiB:
    each 2 MB array is mapped anew and every page faulted in. Under the setup plugin (what audits and reports run
    in) the freed arrays are reused — unless the worker's memory limit is tight (700 MB here), where Dask's
    trimming stays so that kept memory cannot pause the worker. Page faults counted, not seconds."""
    from distributed import Client

    from explain_core.audit.cluster import Executor, local_cluster

    def faults_of_array_churn(*_):
        import resource
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(200):
            np.ones(1 << 18).sum()  # 2 MiB: 512 pages
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

    cluster = local_cluster(1, memory_limit=memory_limit)
    with Client(cluster) as c:
        assert c.submit(lambda: os.environ.get("MALLOC_TRIM_THRESHOLD_")).result()  # the nanny's setting
        plain = c.submit(faults_of_array_churn, pure=False).result()
        with Executor(c) as run:
            (_, held), = run.stream(adult, faults_of_array_churn, {0: ()})
    cluster.close()
    assert plain > 200 * 400
    assert held < plain / 20 if not memory_limit else held > 200 * 400


def test_an_audit_pauses_the_workers_profiler_and_starts_it_again(client, adult):
    """Dask's sampling profiler walks the running task's stack every 10 ms; the setup plugin stops it while an
    audit holds the workers (a partition took 8–14 % longer with it) and starts it again when the audit ends."""
    from distributed import get_worker

    from explain_core.audit.cluster import PROFILER_CALLBACKS, Executor

    def profiling(dask_worker=None):
        callbacks = (dask_worker or get_worker()).periodic_callbacks
        return [callbacks[name].is_running() for name in PROFILER_CALLBACKS]

    assert all(all(running) for running in client.run(profiling).values())  # Dask's default: on
    with Executor(client) as run:
        during = [flags for _, flags in run.stream(adult, lambda _setup, _i: profiling(), {0: (0,), 1: (1,)})]
    assert during == [[False, False], [False, False]]
    assert all(all(running) for running in client.run(profiling).values())


def test_lens_factor_and_flip_numbers_per_row(adult, tmp_path):
    """LENS: the factor is τ-sufficient and no factor with fewer groups is (checked on the context itself);
    LIME-C/SHAP-C: as the dashboard's row_baselines computes them (same seed)."""
    params = Parameters(lens_references=30, lens_max_size=2, lime_samples=200, shap_background=20, tau=0.8)
    setup = replace(adult, restricted=())
    rows = setup.dataset.features.iloc[:3]
    rows.to_parquet(tmp_path / "three.parquet", row_group_size=2)
    run = run_audit(setup, tmp_path / "three.parquet", tmp_path / "out", params,
                    options=AuditOptions(lens=True, flips=True))
    frame = table(run.folder)
    from explain_core.analysis import row_baselines
    for i, got in frame.iterrows():
        query = rows.iloc[[i]]
        refs = opposite_references(setup.model, setup.dataset, query, setup.train_rows, n=30, seed=0)
        context = lens_contexts(setup.model, setup.dataset, query, refs,
                                ContextOptions(directions=("r2i",), max_size=lens_max_size(setup, params)))["r2i"]
        sufficient = [context.factor(j) for j in range(len(context.masks)) if context.ps[j] >= 0.8]
        if got["factor_status"] == "none":
            assert not sufficient
        else:
            factor = tuple(got["factor"])
            assert context.measures([factor]).ps >= 0.8 and got["factor_ps"] == context.measures([factor]).ps
            assert min(len(f) for f in sufficient) == len(factor)
        flips = row_baselines(setup, query, params)
        assert (got["lime_c"], got["shap_c"]) == (flips.lime_flip.count, flips.shap_flip.count)
    assert set(json.loads((run.folder / "summary.json").read_text())) >= {"lens", "flips", "kinds"}


def test_bad_inputs_get_clear_messages(adult, adult_file, tmp_path):
    with pytest.raises(IntakeError, match="no such file"):
        run_audit(adult, tmp_path / "missing.parquet", tmp_path / "a")
    pd.DataFrame({"age": [1]}).to_parquet(tmp_path / "narrow.parquet")
    with pytest.raises(IntakeError, match="lacks the model's feature column"):
        run_audit(adult, tmp_path / "narrow.parquet", tmp_path / "b")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "notes.txt").write_text("mine")
    with pytest.raises(IntakeError, match="not empty"):
        run_audit(adult, adult_file, tmp_path / "c")
    with pytest.raises(IntakeError, match="holds no audit"):
        read_audit(tmp_path / "c")


def test_resume_refuses_a_planted_or_changed_part_and_a_damaged_folder_is_named(adult, adult_file, tmp_path):
    out = tmp_path / "audit"
    run_audit(adult, adult_file, out, cluster=Cluster("single"))
    planted = out / "parts" / "part-00099.parquet"
    pq.write_table(pa.table({"sev_minus": [99] * 99}), planted)  # would move SEV⁻'s mean from 1.4 to 25.8
    for reader in (lambda: run_audit(adult, adult_file, out, cluster=Cluster("single")), lambda: read_audit(out)):
        with pytest.raises(IntakeError, match="part-00099.parquet was not written by this audit"):
            reader()
    planted.unlink()
    first = out / "parts" / "part-00000.parquet"
    table0 = pq.read_table(first)
    pq.write_table(table0.set_column(table0.schema.get_field_index("sev_minus"), "sev_minus",
                                     pa.array([9] * table0.num_rows, type=table0["sev_minus"].type)), first)
    with pytest.raises(IntakeError, match="part-00000.parquet changed since the audit wrote it"):
        run_audit(adult, adult_file, out, cluster=Cluster("single"))
    (out / "audit.json").write_text("{not json")
    with pytest.raises(IntakeError, match="is damaged: audit.json"):
        read_audit(out)


def test_audit_inputs_are_checked_before_they_are_read(adult, tmp_path, monkeypatch):
    from hostile import nested_parquet, parquet_bomb

    (tmp_path / "out.txt").write_text("a file")
    with pytest.raises(IntakeError, match="is a file; pass a folder"):
        run_audit(adult, ROOT / "data" / "adult.csv", tmp_path / "out.txt")
    (tmp_path / "nested.parquet").write_bytes(nested_parquet())
    with pytest.raises(IntakeError, match="nested columns"):
        run_audit(adult, tmp_path / "nested.parquet", tmp_path / "n")
    parts = tmp_path / "parts"
    parts.mkdir()
    (parts / "zero.parquet").symlink_to("/dev/zero")
    with pytest.raises(IntakeError, match="not a regular file"):
        run_audit(adult, parts, tmp_path / "z")
    monkeypatch.setenv("EXPLAIN_MAX_ROWS", "1000000")
    bomb = parquet_bomb(50_000_000, tmp_path / "bomb.parquet")  # a few hundred kB on disk
    with pytest.raises(IntakeError, match="number of rows is 50,000,000, over this server's limit of 1,000,000"):
        run_audit(adult, bomb, tmp_path / "b")


def test_cli_audit_writes_partitions_summary_and_pdf(explain_cache_dir, tmp_path):
    from explain_core.cli.main import main
    from explain_core.intake.demos import load_demo

    data = load_demo("adult")
    frame = pd.concat([data.features, data.target], axis=1).iloc[:400]
    frame.to_csv(tmp_path / "rows.csv", index=False)
    out = tmp_path / "audit"
    args = ["audit", "--data", str(tmp_path / "rows.csv"), "--target", "income", "--model", "l2_lr", "--out", str(out),
            "--sample-rows", "400", "--rows", "predicted-positive", "--quiet", "--pdf", "--renderer", "matplotlib"]
    assert main(args) == 0
    audit = read_audit(out)
    assert audit.complete and 0 < audit.summary["rows"] < 400
    assert (audit.rows(["prediction"])["prediction"] == 1).all()
    assert (out / "audit.pdf").read_bytes()[:4] == b"%PDF"
    assert main(args) == 0  # a rerun: everything already written
    assert main(["audit", "--data", str(tmp_path / "rows.csv"), "--model", "l2_lr", "--out", str(out)]) == 2


def test_the_sev_page_shows_an_audit_the_server_offers(explain_cache_dir, adult, adult_file, tmp_path, monkeypatch,
                                                       chart_specs):
    from streamlit.testing.v1 import AppTest

    from explain_core.sev.summaries import NOT_EXPLAINED

    run_audit(adult, adult_file, tmp_path / "audits" / "adult-2026-11", cluster=Cluster("single"))
    monkeypatch.setenv("EXPLAIN_AUDIT_DIR", str(tmp_path / "audits"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.switch_page("app_pages/sev.py").run()
    assert not at.exception, at.exception
    assert at.selectbox(key="sev_audit").value.name == "adult-2026-11"
    at.radio(key="sev_audit_kind").set_value("restricted").run()
    audit = read_audit(tmp_path / "audits" / "adult-2026-11")
    hist = next(c for c in chart_specs(at) if c["layout"]["title"]["text"].startswith("SEV® over 1,200"))
    assert hist["data"][0]["y"] == audit.counts("restricted")["count"].tolist()
    assert hist["data"][0]["x"][-1] == NOT_EXPLAINED
    assert any("another model" in c.value for c in at.caption)  # the session's setup is COMPAS, not this Adult one


def test_rows_per_group_counts_each_group_once_per_row_across_chunks():
    """The summary's prevalence counter against a loop over the rows: a group named in two explanations of one row
    counts once; empty, null and missing explanations count nothing; chunks are counted apart and added."""
    import pyarrow as pa

    from explain_core.audit.rows import GROUP_LISTS
    from explain_core.audit.summary import _rows_per_group

    rows = [[["age", "sex"], ["age"]], [], None, [["race"]], [["sex"], ["age", "race"], ["sex"]], [[]]]
    column = pa.chunked_array([pa.array(rows[:3], GROUP_LISTS), pa.array(rows[3:], GROUP_LISTS)])
    expected = {}
    for row in rows:
        for group in {g for explanation in row or [] for g in explanation}:
            expected[group] = expected.get(group, 0) + 1
    assert dict(_rows_per_group(column)) == expected == {"age": 2, "sex": 2, "race": 2}

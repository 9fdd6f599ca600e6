"""The README and the docs site stay true: the README is short (at most 120 lines) with exactly two commands (set up
+ run, test), a map of the layers naming paths that exist and links that resolve; every page of docs/ is in the site's
nav and the site builds with --strict; the Python examples of docs/ run as written, and the architecture page names
every module of the package and nothing that is not there."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = ROOT / "docs"


def nav_pages(nav) -> set[str]:
    """Every page file named in mkdocs.yml's nav, however deep its sections nest."""
    if isinstance(nav, str):
        return {nav}
    items = nav.values() if isinstance(nav, dict) else nav
    return set().union(*(nav_pages(item) for item in items))


def test_readme_is_short_and_its_links_resolve():
    assert len(README.splitlines()) <= 120
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert "docs/assets/home.png" in links and "docs/python-api.md" in links
    for link in links:
        assert (ROOT / link).is_file(), f"the README links to {link}, which does not exist"
    assert (ROOT / "docs/assets/home.png").stat().st_size <= 200_000


def test_layer_map_names_paths_that_exist():
    section = README.split("## The layers", 1)[1]
    tree = section.split("```")[1].strip().splitlines()
    assert len(tree) == 10
    for line in tree:
        head, *beside = line.split("   ")[0].replace(",", " ").split()  # the paths, before the description
        for path in [ROOT / head, *(ROOT / Path(head).parent / name for name in beside)]:
            assert path.exists(), f"the layer map names {path.relative_to(ROOT)}, which does not exist"


def test_every_docs_page_is_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages == nav_pages(config["nav"])


@pytest.mark.slow
def test_docs_site_builds_strictly(tmp_path):
    """The docs site, built into a folder of its own: any warning fails the build (CI builds it here, in the tests:
    .ci/run runs no second build)."""
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(tmp_path)],
                           cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert built.returncode == 0, built.stdout + built.stderr
    api = (tmp_path / "api" / "index.html").read_text()
    assert 'id="explain_core.explain_sev"' in api and "Parameters:" in api
    assert ":func:" not in api  # docs/hooks.py shows the docstrings' Sphinx roles as code names
    assert "mkdocs" not in (ROOT / ".ci" / "run").read_text()  # one build a run: this one


def test_two_commands_set_up_run_and_test():
    bash = re.findall(r"```bash\n(.*?)```", README, flags=re.S)
    assert bash[0].strip() == "pip install torch==2.13.0 -r requirements.txt && streamlit run app.py"
    assert bash[1].strip() == "python -m pytest"
    assert "python -m pytest" in (ROOT / ".ci" / "run").read_text()


# smaller sizes, the same calls: samples of 300 for 2000 (and the report's 5000), fewer LENS references and LIME
# samples, ten rows of the dataset-wide table for a hundred, a few training epochs for the family's default schedule
SMALLER = {"m=2000": "m=300", "predicted_rows(setup)[:100]": "predicted_rows(setup)[:10]",
           "Parameters(k=5, sigma=1.0, tau=0.9, seed=0)":
           "Parameters(k=5, sigma=1.0, tau=0.9, seed=0, m=300, lens_references=40, lime_samples=500)",
           'TrainingSettings(objective="all_opt_plus", seed=0)':
           'TrainingSettings(objective="all_opt_plus", seed=0, warmup_epochs=4, sev_epochs=2)'}


@pytest.mark.slow
def test_python_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # row.pdf lands here
    pages = "\n".join(page.read_text() for page in sorted(DOCS.glob("*.md")))
    code = "\n".join(re.findall(r"```python\n(.*?)```", pages, flags=re.S))
    for written, smaller in SMALLER.items():
        assert written in code, f"docs/ no longer writes {written}"
        code = code.replace(written, smaller)
    namespace: dict = {}
    exec(compile(code, "docs/python-api.md", "exec"), namespace)  # noqa: S102
    assert (tmp_path / "row.pdf").read_bytes().startswith(b"%PDF")
    assert namespace["lin"].exact.status == "optimal"


def test_architecture_names_every_module():
    tree = (DOCS / "architecture.md").read_text().split("```")[1]
    listed = set(re.findall(r"\b([a-z_]+\.py|[a-z_]+/)", tree))
    package = ROOT / "explain_core"
    modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    subpackages = {f"{p.name}/" for p in package.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert modules - listed == set(), "modules missing from docs/architecture.md"
    assert subpackages - listed == set()
    for name in listed - {"app.py", "_shared.py"}:
        hits = list(ROOT.glob(f"**/{name.rstrip('/')}"))
        assert hits, f"docs/architecture.md names {name}, which does not exist"

"""The README stays true: exactly two commands (set up + run, test), its Python examples run as written, and its
architecture section names every module of the package and nothing that is not there."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()


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
    code = "\n".join(re.findall(r"```python\n(.*?)```", README, flags=re.S))
    for written, smaller in SMALLER.items():
        assert written in code, f"the README no longer writes {written}"
        code = code.replace(written, smaller)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102
    assert (tmp_path / "row.pdf").read_bytes().startswith(b"%PDF")
    assert namespace["lin"].exact.status == "optimal"


def test_architecture_names_every_module():
    section = README.split("## Architecture", 1)[1]
    tree = section.split("```")[1]
    listed = set(re.findall(r"\b([a-z_]+\.py|[a-z_]+/)", tree))
    package = ROOT / "explain_core"
    modules = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
    subpackages = {f"{p.name}/" for p in package.iterdir() if p.is_dir() and not p.name.startswith("__")}
    assert modules - listed == set(), "modules missing from the README's architecture"
    assert subpackages - listed == set()
    for name in listed - {"app.py", "_shared.py"}:
        hits = list(ROOT.glob(f"**/{name.rstrip('/')}"))
        assert hits, f"the README names {name}, which does not exist"

"""What the commands share: the argument groups for data, model and parameters, and turning them into a
:class:`~explain_core.setup.Setup` and :class:`~explain_core.setup.Parameters`; the one-line usage error."""
from __future__ import annotations

from pathlib import Path
from ..errors import UsageError


def add_model_argument(group) -> None:
    """--model (shared by ``report`` and ``audit``)."""
    from ..intake.demo_models import DEMO_KINDS

    group.add_argument("--model", required=True,
                       help=f"a demo model kind ({', '.join(DEMO_KINDS)}) or a model file (.skops, .onnx, XGBoost "
                            ".json/.ubj, LightGBM .txt, CatBoost .cbm; .joblib/.pkl with --trusted)")


def add_file_arguments(group) -> None:
    """How to read a data file and a model file (shared by ``report`` and ``audit``)."""
    group.add_argument("--target", help="target column of a data file that is not bundled")
    group.add_argument("--positive-class", help="the positive class of that target (as written in the file)")
    from ..intake.data import TASKS

    group.add_argument("--task", choices=TASKS, help="task of that target")
    group.add_argument("--by-order", action="store_true",
                       help="the model file records no column names: its inputs are the data's feature columns in "
                            "order")
    group.add_argument("--trusted", action="store_true",
                       help="allow pickle model files and unvetted skops types (only for files you trust)")
    group.add_argument("--model-seed", type=int, default=0, help="seed of a demo model and its train/test split")
    group.add_argument("--restricted", default="", help="comma list of features held fixed (SEV®)")


def add_sev_lens_arguments(group) -> None:
    """SEV's and LENS's parameters (:class:`~explain_core.setup.SEVParameters`, :class:`~explain_core.setup.
    LensParameters`; the seed comes with :func:`add_baseline_arguments`); defaults as in the app."""
    from ..lens import CORRECTIONS, DIRECTIONS
    from ..sev.dispatch import METHODS as SEV_METHODS
    from ..lens.search import DEFAULT_BUDGET_ROWS
    from ..sev.engine import DEFAULT_BUDGET_ROWS as SEV_BUDGET_ROWS

    group.add_argument("--max-depth", type=int, default=None, help="SEV breadth-first search depth")
    group.add_argument("--sev-method", choices=SEV_METHODS, default=None,
                       help="SEV engine: exact (tree ensembles and additive models, certified at any width), bfs "
                            "(breadth-first search, any model), auto (exact where it applies on wide data; default)")
    group.add_argument("--sev-budget", type=float, default=None,
                       help="the exact SEV engine's budget per search, in CP-SAT deterministic seconds (default 10)")
    group.add_argument("--sev-search-budget", dest="sev_budget_rows", type=int, default=None, metavar="ROWS",
                       help="the SEV breadth-first search's model rows per row (a count of work, not seconds); a row "
                            f"it leaves open gets a bracket (default {SEV_BUDGET_ROWS:,})")
    group.add_argument("--tau", type=float, default=None, help="LENS sufficiency threshold τ")
    group.add_argument("--alpha", type=float, default=None, help="LENS test level α (default: exact mode)")
    group.add_argument("--lens-correction", choices=CORRECTIONS, default=None,
                       help="LENS multiple-testing correction with --alpha (holm: family-wise over the row's factors)")
    group.add_argument("--lens-direction", choices=DIRECTIONS, default=None, help="LENS context")
    group.add_argument("--lens-references", type=int, default=None, help="LENS reference rows")
    group.add_argument("--lens-max-size", type=int, default=None, help="largest LENS factor")
    group.add_argument("--lens-budget", dest="lens_budget_rows", type=int, default=None, metavar="ROWS",
                       help="LENS's layered search on wide data (more than 12 features, no --lens-max-size): the "
                            "model rows it may score (a count of work, not seconds, so the answer is the same on "
                            f"any machine; default {DEFAULT_BUDGET_ROWS:,})")


def add_linear_arguments(group) -> None:
    """The linear explanations' parameters (:class:`~explain_core.setup.LinearParameters`)."""
    from ..setup import LINEAR_METHODS

    group.add_argument("--sigma", type=float, default=None, help="linear: concentration σ")
    group.add_argument("-k", type=int, default=None, help="linear: sparsity budget k")
    group.add_argument("-m", type=int, default=None, help="linear: samples m")
    group.add_argument("--linear-method", choices=tuple(LINEAR_METHODS), default=None,
                       help="linear: IHT, the certified exact fit, or both")
    group.add_argument("--time-limit", type=float, default=None, help="exact linear fit time limit (s)")


def add_reference_arguments(group) -> None:
    """The other kinds of reference and the counterfactuals (:class:`~explain_core.setup.ReferenceParameters`,
    :class:`~explain_core.setup.CounterfactualParameters`)."""
    from ..counterfactuals import DICE_METHODS
    from ..references import ASSIGNMENTS, REFERENCE_KINDS

    group.add_argument("--reference-kind", choices=REFERENCE_KINDS, default=None,
                       help="SEV's kind of reference: single, flexible (SEV^F) or cluster (SEV^©)")
    group.add_argument("--flex-tau", type=float, default=None, help="SEV^F: each window's half-width τ (quantile rank)")
    group.add_argument("--flex-k", type=int, default=None, help="SEV^F: values tried in each window")
    group.add_argument("--clusters", type=int, default=None, help="SEV^©: typical cases (default: by the assignment)")
    group.add_argument("--cluster-assignment", choices=ASSIGNMENTS, default=None,
                       help="SEV^©: each row's typical case, the nearest or the one reached by the fewest changes")
    group.add_argument("--credible", type=float, default=None, help="credible search: the percentile threshold")
    group.add_argument("--dice-method", choices=DICE_METHODS, default=None, help="DiCE's method")
    group.add_argument("--dice-count", type=int, default=None, help="DiCE's counterfactuals")


def add_baseline_arguments(group) -> None:
    group.add_argument("--lime-samples", type=int, default=None, help="LIME's samples")
    group.add_argument("--shap-background", type=int, default=None, help="SHAP's background rows")
    group.add_argument("--seed", type=int, default=None, help="seed of every random draw")


def bundled_name(data: str) -> str | None:
    """The bundled dataset ``data`` names (its name, or a copy of its file such as ``data/compas.csv``), or None."""
    from ..intake.demos import bundled_file, demo_cards

    cards = demo_cards()
    if data in cards:
        return data
    path = Path(data)
    if path.is_file():
        for name, card in cards.items():
            if path.name == card["file"] and path.read_bytes() == bundled_file(card["file"]).read_bytes():
                return name
    return None


def load_setup(args):
    """The :class:`~explain_core.analysis.Setup` the arguments describe (bad ones raise IntakeError / UsageError)."""
    from ..intake.data import make_dataset
    from ..intake.demos import demo_names, load_demo
    from ..intake.tables import read_table

    name = bundled_name(args.data)
    if name is None:
        path = Path(args.data)
        if not path.exists():
            raise UsageError(f"Data file {args.data!r} not found; pass a CSV or Parquet file, or a bundled dataset: "
                             f"{', '.join(demo_names())}.")
        if not path.is_file():
            raise UsageError(f"--data {args.data!r} is a folder; pass a CSV or Parquet file.")
        if not args.target:
            raise UsageError(f"{path.name} is not a bundled dataset, so --target must name its target column.")
        frame = read_table(path)
        dataset = make_dataset(frame, args.target, task=args.task, positive_class=positive_class(args, frame),
                               name=path.stem)
    else:
        dataset = load_demo(name)
    return setup_of(args, dataset, bundled=name is not None)


def setup_of(args, dataset, *, bundled: bool):
    """A setup of ``dataset`` with ``--model`` (a demo kind: the cached demo model of a bundled dataset, or one
    trained here; or a model file) and ``--restricted``."""
    from ..setup import demo_setup, file_setup, trained_setup
    from ..intake.demo_models import DEMO_KINDS

    restricted = [r.strip() for r in args.restricted.split(",") if r.strip()]
    if args.model in DEMO_KINDS:
        if bundled:
            setup = demo_setup(dataset.name, args.model, seed=args.model_seed)
            return setup.with_restricted(restricted) if restricted else setup
        return trained_setup(dataset, args.model, seed=args.model_seed, restricted=restricted)
    path = Path(args.model)
    if not path.suffix:
        raise UsageError(f"Unknown model {args.model!r}: pass a demo model kind ({', '.join(DEMO_KINDS)}) or a model "
                         "file (.skops, .onnx; .joblib/.pkl with --trusted).")
    if not path.is_file():
        raise UsageError(f"Model file {args.model!r} not found.")
    return file_setup(dataset, path, seed=args.model_seed, trusted=args.trusted or None, restricted=restricted,
                      by_order=args.by_order)


def positive_class(args, frame):
    """``--positive-class`` as the target column's type (when the column is there)."""
    if args.positive_class is None or args.target not in frame.columns:
        return args.positive_class
    return _typed(args.positive_class, frame[args.target])


def _typed(value: str, column):
    """``--positive-class`` as the target column's type (a number for a numeric column)."""
    import pandas as pd

    if pd.api.types.is_numeric_dtype(column):
        try:
            number = float(value)
            return int(number) if number.is_integer() else number
        except ValueError:
            return value
    return value


def load_params(args):
    """The :class:`~explain_core.setup.Parameters` of the arguments: each flag is its field (``--lens-budget`` is
    ``lens_budget_rows``), a flag left out keeps the app's default."""
    from dataclasses import fields

    from ..setup import Parameters

    return Parameters(**{f.name: getattr(args, f.name) for f in fields(Parameters)
                         if getattr(args, f.name, None) is not None})



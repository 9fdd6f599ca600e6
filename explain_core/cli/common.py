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


def add_method_arguments(group) -> None:
    """Every registered method's options (:attr:`~explain_core.registry.Method.options`: a flag fills the field of
    :class:`~explain_core.setup.Parameters` it names) and the seed of every random draw; defaults as in the app."""
    from ..methods import methods

    for m in methods():
        for o in m.options:
            group.add_argument(o.flag, dest=o.dest, type=o.type, choices=o.choices, default=None, help=o.help,
                               metavar=o.metavar)
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



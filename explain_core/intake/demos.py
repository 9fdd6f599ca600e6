"""The bundled demo datasets: package resources (``explain_core/datasets``, read with :mod:`importlib.resources`),
their data cards, and :func:`load_demo`, which types one through :func:`~explain_core.intake.data.make_dataset`."""
from __future__ import annotations

import json
from importlib import resources

import pandas as pd

from ..errors import check_choice
from .data import Dataset, make_dataset
from .layout import TableChoices


def bundled_file(name: str):
    """A file of the bundled datasets folder (``explain_core/datasets``) as an importlib resource."""
    return resources.files("explain_core").joinpath("datasets", name)


def demo_cards() -> dict[str, dict]:
    """The bundled datasets' cards (``datasets/datasets.json``) by name."""
    return {card["name"]: card for card in json.loads(bundled_file("datasets.json").read_text(encoding="utf-8"))}


def demo_names() -> list[str]:
    """The names of the bundled datasets, as :func:`load_demo` takes them.

    Returns
    -------
    list of str
        One name per bundled data card, e.g. ``["adult", "california_housing", "compas", …]``.
    """
    return list(demo_cards())


DEMO_DROPS = {"adult": ("final_weight",)}  # census sampling weight, not a property of the person (card advice)


def load_demo(name: str) -> Dataset:
    """Load a bundled dataset by name (``compas``, ``adult``, ``german_credit``, ``california_housing``…).

    Parameters
    ----------
    name : str
        One of :func:`demo_names`.

    Returns
    -------
    Dataset
        The typed dataset, with its data card's kinds (Adult's census sampling weight dropped).

    Raises
    ------
    IntakeError
        When ``name`` is not a bundled dataset (the message lists them).
    """
    cards = demo_cards()
    check_choice(name, cards, "bundled dataset")
    card = cards[name]
    with bundled_file(card["file"]).open("rb") as handle:
        frame = pd.read_csv(handle)
    drop = DEMO_DROPS.get(name, ())
    kinds = {c["name"]: c["kind"] for c in card["columns"] if c["role"] == "feature" and c["name"] not in drop}
    return make_dataset(frame, card["target"], task=card["task"], positive_class=card.get("positive_class"),
                        name=name, card=card, choices=TableChoices(kinds=kinds, drop=drop))

"""The in-memory caches are named objects (:class:`explain_core.cache.Memo`) owned by one instance: computed once
per key, bounded, empty in every copy and after pickling, and never part of their owner's value."""
from __future__ import annotations

import dataclasses
import pickle

import pytest

from explain_core import reference as reference_module
from explain_core.cache import Memo
from explain_core.intake.encoding import encoded_model
from explain_core.setup import demo_setup


def test_a_memo_computes_each_key_once_and_keeps_the_latest():
    memo, calls = Memo("squares", max_entries=2), []

    def square(x):
        return lambda: calls.append(x) or x * x

    assert [memo.get(x, square(x)) for x in (2, 3, 2)] == [4, 9, 4] and calls == [2, 3]
    memo.get(5, square(5))  # over max_entries: 3, the least recently used, goes
    assert 3 not in memo and 2 in memo and len(memo) == 2
    assert memo.get(3, square(3)) == 9 and calls == [2, 3, 5, 3]
    back = pickle.loads(pickle.dumps(memo))
    assert (back.name, back.max_entries, len(back)) == ("squares", 2, 0)
    assert "squares" in repr(memo)


def test_each_setup_owns_its_memos_and_they_are_not_its_value(explain_cache_dir, monkeypatch):
    setup = demo_setup()
    made = []
    original = reference_module.make_reference

    def counted(*args, **kwargs):
        made.append(kwargs.get("explain_class"))
        return original(*args, **kwargs)

    import explain_core.setup as setup_module
    monkeypatch.setattr(setup_module, "make_reference", counted)
    other = 1 - setup.reference.explain_class
    assert setup.reference_of_label(other) is setup.reference_of_label(other)
    assert made == [other] and other in setup.mirrors
    copy = dataclasses.replace(setup, restricted=("sex",))
    assert len(copy.mirrors) == 0 and copy.mirrors is not setup.mirrors  # every instance starts empty
    assert copy.reference_of_label(other) == setup.reference_of_label(other) and made == [other, other]
    assert dataclasses.replace(copy, restricted=()) == setup  # the memo is no part of the value
    assert len(pickle.loads(pickle.dumps(setup)).mirrors) == 0

    split = encoded_model(setup.model, setup.dataset.layout.groups)
    assert encoded_model(setup.model, setup.dataset.layout.groups) is split and len(setup.model.splits) == 1
    assert len(dataclasses.replace(setup.model).splits) == 0


@pytest.mark.parametrize("owner, field", [("explain_core.setup:Setup", "mirrors"),
                                          ("explain_core.intake.models:ModelAdapter", "splits"),
                                          ("explain_core.intake.encoding:EncodedModel", "rows"),
                                          ("explain_core.intake.encoding:EncodedModel", "references"),
                                          ("explain_core.sparse.training:SparseOrigin", "comparisons")])
def test_every_memo_field_is_owned_and_outside_the_value(owner, field):
    import importlib

    module, name = owner.split(":")
    cls = getattr(importlib.import_module(module), name)
    f = next(f for f in dataclasses.fields(cls) if f.name == field)
    assert (f.init, f.compare, f.repr) == (False, False, False)
    assert isinstance(f.default_factory(), Memo)
    assert not [g.name for g in dataclasses.fields(cls) if g.default_factory is dict]  # no bare dict caches left

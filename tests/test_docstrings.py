"""The API reference's promise (docs/api/, built by mkdocstrings in numpy style): every public function and class of
explain_core and of its subpackages' public faces, and every public method of those classes, documents each of its
parameters under Parameters, what it returns under Returns, and under Raises the IntakeError it raises itself."""
from __future__ import annotations

import importlib
import inspect
import re

import pytest

PACKAGES = ["explain_core", "explain_core.sev", "explain_core.lens", "explain_core.linear", "explain_core.references",
            "explain_core.inspection", "explain_core.report", "explain_core.audit", "explain_core.saved"]
INTAKE = re.compile(r"raise (IntakeError|over)\(|check_choice\(")  # the module's own ways of raising IntakeError


def public_names(package: str) -> list[str]:
    """``__all__``, or for a package without one (inspection) the functions and classes its ``__init__`` imports."""
    module = importlib.import_module(package)
    if hasattr(module, "__all__"):
        return list(module.__all__)
    return sorted(n for n, o in vars(module).items() if not n.startswith("_") and (inspect.isfunction(o) or
                                                                                      inspect.isclass(o)))


def documented() -> list[tuple[str, object]]:
    """Every public function and class once (the first package that exports it), by its public name."""
    seen: dict[int, tuple[str, object]] = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in public_names(package):
            obj = getattr(module, name)
            if isinstance(obj, type) or callable(obj):
                seen.setdefault(id(obj), (f"{package}.{name}", obj))
    return list(seen.values())


def methods() -> list[tuple[str, object]]:
    """The public methods (class and static ones too) each documented class defines itself."""
    seen: dict[int, tuple[str, object]] = {}
    for name, cls in documented():
        if not isinstance(cls, type):
            continue
        for attr, value in vars(cls).items():
            function = value.__func__ if isinstance(value, (classmethod, staticmethod)) else value
            if (not attr.startswith("_") and inspect.isfunction(function)
                    and function.__qualname__ == f"{cls.__name__}.{attr}"):  # not a field's default function
                seen.setdefault(id(function), (f"{name}.{attr}", function))
    return list(seen.values())


def section(doc: str, title: str) -> str | None:
    """The text of a numpydoc section (its title underlined with dashes), or None."""
    found = re.search(rf"^{title}\n-{{{len(title)}}}\n(.*?)(?=^\w[\w ]*\n-+\n|\Z)", doc, flags=re.S | re.M)
    return found.group(1) if found else None


def named_parameters(text: str) -> set[str]:
    """The names a Parameters section documents: each unindented line's names before `` : `` (``a, b : int``)."""
    names = set()
    for line in text.splitlines():
        if line and not line.startswith(" "):
            names |= {n.strip().lstrip("*") for n in line.split(" : ")[0].split(",")}
    return names


def parameters_of(obj) -> list[str]:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # an exception class without its own __init__
        return []
    return [n for n in signature.parameters if n not in ("self", "cls") and not n.startswith("_")]


def returns_something(obj) -> bool:
    if isinstance(obj, type):
        return False
    annotation = inspect.signature(obj).return_annotation
    return annotation not in (None, "None")


def raises_intake_error(obj) -> bool:
    """Whether the function's own body raises IntakeError (directly, by :func:`over` or :func:`check_choice`)."""
    if isinstance(obj, type):
        return False
    return bool(INTAKE.search(inspect.getsource(inspect.unwrap(obj))))


@pytest.mark.parametrize("name, obj", documented() + methods(),
                         ids=lambda value: value if isinstance(value, str) else "")
def test_public_name_has_numpydoc_sections(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert doc, f"{name} has no docstring"
    wanted = parameters_of(obj)
    if wanted:
        text = section(doc, "Parameters")
        assert text is not None, f"{name} has no Parameters section"
        assert set(wanted) <= named_parameters(text), f"{name} leaves out {set(wanted) - named_parameters(text)}"
    if returns_something(obj):
        assert section(doc, "Returns") is not None, f"{name} has no Returns section"
    if raises_intake_error(obj):
        assert "IntakeError" in (section(doc, "Raises") or ""), f"{name} raises IntakeError, not under Raises"


def test_the_checks_find_a_missing_section():
    """The parser sees sections and the names they document, and misses what is not there."""
    doc = ("Summary.\n\nParameters\n----------\na, b : int\n    Two.\n*args\n    More.\n\n"
           "Returns\n-------\nint\n    One.")
    assert named_parameters(section(doc, "Parameters")) == {"a", "b", "args"}
    assert section(doc, "Returns").strip().startswith("int") and section(doc, "Raises") is None
    assert raises_intake_error(importlib.import_module("explain_core.reference").check_restricted)
    assert not raises_intake_error(importlib.import_module("explain_core.lens").default_max_size)

"""Resource limits: how much one upload or one run may cost, set by the server's operator.

Every limit has a default sized for a 2-core, few-GB server and an environment variable that the operator
sets before starting the app or the command line (``EXPLAIN_MAX_ROWS=5000000 streamlit run app.py``):
``EXPLAIN_MAX_`` + the field name in capitals. The app passes its own upload limit (Streamlit's
``server.maxUploadSize``) to the readers; the library never reads the app's configuration.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields, replace
from functools import lru_cache
from typing import Mapping

from .errors import IntakeError

ENV_PREFIX = "EXPLAIN_MAX_"


@dataclass(frozen=True)
class Limits:
    """Caps on uploads (after decompression), model files and runs; each breach is an IntakeError that says
    which limit and how to stay within it.

    Each field is set by ``EXPLAIN_MAX_`` + its name in capitals (:meth:`from_env`).

    Parameters
    ----------
    upload_mb : float
        Bytes of one uploaded file, as sent.
    rows, columns, cells : int
        Rows, columns and rows × columns of a table, after decompression.
    model_array_mb : float
        One array stored in a ``.skops`` file, decoded.
    model_seconds, model_memory_mb, model_idle_seconds : float
        An uploaded model's time per call, its worker's address space, and the idle time that stops its worker.
    model_classes, model_trees : int
        Classes of an uploaded model, and trees a booster file declares.
    model_call_rows : int
        Rows an uploaded model's worker is sent in one call (larger calls go in chunks).
    train_rows, train_steps : int
        Rows a model may be trained on here, and optimiser steps of one sparse-training run.
    lens_samples, lens_rows : int
        LENS: references × factors of one context, and the model rows its layered search may score for one row.
    linear_samples : int
        The linear explanations' m (also LIME's samples).
    sev_rows, sev_depth : int
        Rows of one dataset-wide SEV run in the app, and layers the SEV search may be asked for.
    sev_search_rows : int
        Model rows one SEV search may be asked to score for one row.
    shap_background : int
        SHAP's background rows.
    run_seconds : float
        A run's own time limit (the exact linear fit).
    saved_mb, saved_analysis_mb, saved_days : float
        Saved analyses together, one saved analysis, and the days an unused one is kept.
    saved_visitor_mb : float
        One visitor's saved analyses and working session together.
    """

    upload_mb: float = 200.0           # bytes of one uploaded file, as sent
    rows: int = 2_000_000              # rows of a table, after decompression
    columns: int = 2_000               # columns of a table
    cells: int = 50_000_000            # rows × columns of a table
    model_array_mb: float = 1_024.0    # one array stored in a .skops file, decoded
    model_seconds: float = 20.0        # an uploaded model: loading it, and each call (wall time; CPU time ≤ this ×
                                       # the worker's threads)
    model_memory_mb: float = 4_096.0   # address space of the worker process that holds an uploaded model
    model_call_rows: int = 65_536      # rows an uploaded model's worker is sent in one call (larger calls are
                                       # chunked: each chunk runs under model_seconds)
    model_idle_seconds: float = 60.0   # a model's worker idle this long is stopped (restarted when next used)
    model_classes: int = 1_000         # classes of an uploaded model
    model_trees: int = 100_000         # trees a booster file declares
    train_rows: int = 100_000          # rows a model may be trained on here
    train_steps: int = 200_000         # optimiser steps of one sparse-training run (epochs × batches)
    lens_samples: int = 5_000_000      # LENS: references × factors of one context
    lens_rows: int = 50_000_000        # LENS's layered search (wide data): model rows scored for one row
    linear_samples: int = 200_000      # linear explanations: m (one sample, and one hold-out sample)
    sev_rows: int = 100_000            # rows of one dataset-wide SEV run in the app
    sev_depth: int = 64                # layers the SEV search may be asked for
    sev_search_rows: int = 20_000_000  # model rows one SEV search may be asked to score for one row
    shap_background: int = 5_000       # SHAP's background rows (each explained row is scored against every one)
    run_seconds: float = 600.0         # a run's own time limit (the exact linear fit)
    saved_mb: float = 2_048.0          # saved analyses (sessions and named ones) together: their files and state
    saved_analysis_mb: float = 500.0   # one saved analysis: its data file, model file and state
    saved_visitor_mb: float = 1_024.0  # one visitor's: a session's working analysis and those it saved, together
    saved_days: float = 30.0           # a saved analysis not opened or changed for this many days is deleted

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Limits":
        """The defaults, with each ``EXPLAIN_MAX_<FIELD>`` set in ``environ`` (default ``os.environ``).

        Parameters
        ----------
        environ : mapping of str to str, optional
            The variables.

        Returns
        -------
        Limits
            The limits.

        Raises
        ------
        IntakeError
            When a variable is not a positive number.
        """
        environ = os.environ if environ is None else environ
        changes = {}
        for f in fields(cls):
            text = environ.get(ENV_PREFIX + f.name.upper())
            if text is None or not text.strip():
                continue
            kind = float if isinstance(f.default, float) else int
            try:
                value = kind(float(text)) if kind is int else float(text)
            except ValueError:
                raise IntakeError(f"{ENV_PREFIX + f.name.upper()}={text!r} is not a number; set it to a "
                                  f"positive number (default {f.default}).") from None
            if not value > 0:
                raise IntakeError(f"{ENV_PREFIX + f.name.upper()} must be positive, not {text!r}.")
            changes[f.name] = value
        return replace(cls(), **changes)


VARIABLES = tuple(ENV_PREFIX + f.name.upper() for f in fields(Limits))


@lru_cache(maxsize=8)
def _cached(values: tuple) -> Limits:
    return Limits.from_env({k: v for k, v in zip(VARIABLES, values) if v is not None})


def limits() -> Limits:
    """The limits in force now (the environment is read on every call; parsing is cached).

    Returns
    -------
    Limits
        The defaults, with every ``EXPLAIN_MAX_*`` variable set in the environment.

    Raises
    ------
    IntakeError
        When a variable is not a positive number.
    """
    return _cached(tuple(map(os.environ.get, VARIABLES)))


def limit(name: str) -> float:
    """One limit in force now (``limits().<name>``, reading only its own variable: the sandboxed model's hot path
    asks for its call time on every call)."""
    return _one(name, os.environ.get(ENV_PREFIX + name.upper()))


@lru_cache(maxsize=64)
def _one(name: str, text: str | None) -> float:
    return getattr(Limits.from_env({} if text is None else {ENV_PREFIX + name.upper(): text}), name)


def over(what: str, value: float, limit: float, fix: str, unit: str = "") -> IntakeError:
    """The error for a breached limit: what, how much, the limit, the fix and the operator's setting."""
    return IntakeError(f"{what} is {value:,.0f}{unit}, over this server's limit of {limit:,.0f}{unit}; {fix} "
                       "(The server's operator sets the limits: EXPLAIN_MAX_* environment variables.)")

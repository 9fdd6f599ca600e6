"""Explanations toward references real people resemble ("Improving Decision Sparsity", Sun, Wang, Rudin, NeurIPS
2024): SEV^F (:mod:`.flexible`), SEV^© (:mod:`.prototypes`), SEVᵀ as a kind (:func:`~explain_core.sev.tree_sev`),
credibility (:mod:`.credibility`), measured in the
reference population's coordinates (:mod:`.space`) by one search (:mod:`.search`); typed results
(:mod:`.outcome`) and the kinds side by side for a setup (:mod:`.kinds`)."""
from .credibility import DEFAULT_CREDIBLE, ReferenceDensity, fit_density
from .flexible import DEFAULT_K, DEFAULT_TAU, FlexibleWindow, check_flexible, flexible_candidates, flexible_windows
from .fits import FittedReferences, ReferenceFits, fit_references
from .kinds import REFERENCE_KINDS, available_kinds, explain_kind
from .outcome import (KIND_LABELS, RULE_LABELS, ClusterSEV, FlexibleSEV, ReferenceSEV, SingleSEV, TreeKindSEV,
                      kind_label, summary_row)
from .prototypes import ASSIGNMENTS, DEFAULT_ASSIGNMENT, Clustering, Prototype, PrototypeSet, fit_prototypes
from .search import Candidates, search
from .space import Destination, PopulationSpace, population_rows
from .table import KindsTable, compare_kinds

__all__ = [
                    "ASSIGNMENTS",
                    "DEFAULT_ASSIGNMENT",
                    "DEFAULT_CREDIBLE",
                    "DEFAULT_K",
                    "DEFAULT_TAU",
                    "KIND_LABELS",
                    "REFERENCE_KINDS",
                    "RULE_LABELS",
                    "Candidates",
                    "ClusterSEV",
                    "Clustering",
                    "Destination",
                    "FittedReferences",
                    "FlexibleSEV",
                    "FlexibleWindow",
                    "KindsTable",
                    "PopulationSpace",
                    "Prototype",
                    "PrototypeSet",
                    "ReferenceDensity",
                    "ReferenceFits",
                    "ReferenceSEV",
                    "SingleSEV",
                    "TreeKindSEV",
                    "available_kinds",
                    "check_flexible",
                    "compare_kinds",
                    "explain_kind",
                    "fit_density",
                    "fit_prototypes",
                    "fit_references",
                    "kind_label",
                    "flexible_candidates",
                    "flexible_windows",
                    "population_rows",
                    "search",
                    "summary_row",
]

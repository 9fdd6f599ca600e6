"""SEV, the sparse explanation value (SEV paper Defs 1-4): the batched search (:mod:`.engine`) over the hypercube
(:mod:`explain_core.vertices`), the exact engines for tree ensembles and additive models (:mod:`.exact_sev`) with
the choice between them (:mod:`.dispatch`), tree-based SEVᵀ (:mod:`.tree_sev`), the explanations in words
(:mod:`.readings`) and the dataset-wide numbers (:mod:`.summaries`)."""
from .dispatch import METHODS, SEVParameters, SEVRequest, explain_sev, sev_results
from .engine import (DEFAULT_MAX_DEPTH, HYPERCUBE_MAX_GROUPS, BFSSearch, Hypercube, SEVExplanation, SEVResult,
                     hypercube, sev, sev_batch)
from .summaries import NOT_EXPLAINED, lattice_counts, prevalence_table, sev_counts
from .tree_sev import TreeSEVResult, tree_sev

__all__ = ["DEFAULT_MAX_DEPTH", "HYPERCUBE_MAX_GROUPS", "METHODS", "NOT_EXPLAINED", "BFSSearch", "Hypercube",
           "SEVExplanation", "SEVParameters", "SEVRequest", "SEVResult", "TreeSEVResult", "explain_sev", "hypercube",
           "lattice_counts", "prevalence_table", "sev", "sev_batch", "sev_counts", "sev_results", "tree_sev"]

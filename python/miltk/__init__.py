"""miltk: multiple-instance learning with a scikit-learn interface.

Bags are lists of 2-D arrays (instances x features), labels one per bag. The
estimators wrap the Rust library ``mil-toolkit``: classifiers (:class:`CitationKNN`,
:class:`MILR`, :class:`SetKernelSVM`, :class:`SimpleMI`, :class:`MIWrapper`,
:class:`MiVLAD`, :class:`MiFV`, :class:`MiSVM`, :class:`MISVM`, :class:`SMIL`,
:class:`SBMIL`, :class:`DiverseDensity`, :class:`EMDD`, :class:`MILES` with its
embedding :class:`MILESEmbedding`, :class:`MIGraph`, :class:`AttentionMIL`,
:class:`AutoMIL`), projections
(:class:`BMIDA`, :class:`MIALM`, ...) whose ``transform`` returns projected bags for a
``Pipeline``, bag clustering (:class:`M3IC`, :class:`BAMIC`), set-kernel Gram matrices,
the shipped benchmark sets, the folds of ``mil cv``, instance scores
(``predict_instances``) with their key-instance metrics (:func:`instance_auroc`,
:func:`witness_precision`), and export to the ``no_std`` core (:mod:`miltk.deploy`).
"""

from ._bags import ProjectedBags, bags_from_instances, check_bags
from ._parallel import get_max_memory_gib, get_num_threads, set_max_memory_gib, set_num_threads
from .classifiers import (
    EMDD,
    MILES,
    MILR,
    MISVM,
    AttentionMIL,
    AutoMIL,
    CitationKNN,
    DiverseDensity,
    MIGraph,
    MILESEmbedding,
    MiFV,
    MiSVM,
    MiVLAD,
    MIWrapper,
    SBMIL,
    SMIL,
    SetKernelSVM,
    SimpleMI,
)
from .cluster import BAMIC, M3IC
from .datasets import (
    load_corel3,
    load_corel_dogs,
    load_dataset,
    load_elephant,
    load_fox,
    load_musk1,
    load_musk2,
    load_sival6,
    load_tiger,
)
from .deploy import CoreModel, export
from .instances import instance_auroc, witness_precision
from .kernels import gram_matrix
from .model_selection import (
    StratifiedBagKFold,
    clustering_accuracy,
    cross_validate_native,
    library_cross_validate,
    stratified_bag_folds,
)
from .projections import BMIDA, CLFDA, LDA, LFDA, MIALM, MIDR, MMIDA, PCA

__version__ = "0.1.0"

__all__ = [
    "AttentionMIL",
    "AutoMIL",
    "BAMIC",
    "BMIDA",
    "CLFDA",
    "CitationKNN",
    "CoreModel",
    "DiverseDensity",
    "EMDD",
    "LDA",
    "LFDA",
    "M3IC",
    "MIALM",
    "MIDR",
    "MIGraph",
    "MILES",
    "MILESEmbedding",
    "MILR",
    "MISVM",
    "MIWrapper",
    "MiFV",
    "MiVLAD",
    "MiSVM",
    "MMIDA",
    "PCA",
    "ProjectedBags",
    "SBMIL",
    "SMIL",
    "SetKernelSVM",
    "SimpleMI",
    "StratifiedBagKFold",
    "bags_from_instances",
    "check_bags",
    "clustering_accuracy",
    "cross_validate_native",
    "export",
    "gram_matrix",
    "instance_auroc",
    "get_max_memory_gib",
    "get_num_threads",
    "library_cross_validate",
    "load_corel3",
    "load_corel_dogs",
    "load_dataset",
    "load_elephant",
    "load_fox",
    "load_musk1",
    "load_musk2",
    "load_sival6",
    "load_tiger",
    "set_max_memory_gib",
    "set_num_threads",
    "stratified_bag_folds",
    "witness_precision",
]

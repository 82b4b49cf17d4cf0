"""Types of the native extension (python/src), the thin layer over the Rust library.

Bags travel as one row-major instance matrix plus bag offsets; `n_threads=0` is the
default of `set_num_threads`.
"""

from typing import Optional

import numpy as np
import numpy.typing as npt

_Matrix = npt.NDArray[np.float64]

class Bags:
    def __init__(
        self,
        x: _Matrix,
        starts: list[int],
        labels: Optional[list[int]] = None,
        n_classes: int = 0,
        name: str = "bags",
    ) -> None: ...
    @staticmethod
    def from_arrays(
        bags: object,
        n_features: Optional[int] = None,
        labels: Optional[list[int]] = None,
        n_classes: int = 0,
        name: str = "bags",
    ) -> Optional[Bags]: ...
    @property
    def n_bags(self) -> int: ...
    @property
    def dim(self) -> int: ...
    def arrays(self) -> tuple[_Matrix, list[int], Optional[list[int]]]: ...

class ClassifierSpec:
    @staticmethod
    def citation_knn(
        references: int,
        citers: int,
        rank: int,
        scaling: str,
        hausdorff: str,
        class_weight: str = "none",
    ) -> ClassifierSpec: ...
    @staticmethod
    def milr(
        pooling: str, ridge: float, beta: float, optimizer: str, class_weight: str = "none"
    ) -> ClassifierSpec: ...
    @staticmethod
    def simple_mi(summary: str, ridge: float, class_weight: str = "none") -> ClassifierSpec: ...
    @staticmethod
    def mi_wrapper(combine: str, ridge: float, class_weight: str = "none") -> ClassifierSpec: ...
    @staticmethod
    def mi_vlad(
        encoding: str, codebook: int, ridge: float, seed: int, class_weight: str = "none"
    ) -> ClassifierSpec: ...
    @staticmethod
    def mi_svm(
        bag_level: bool,
        kernel: str,
        gamma: Optional[float],
        cost: float,
        max_iterations: int,
        scaling: str = "zscore",
        class_weight: str = "none",
    ) -> ClassifierSpec: ...
    @staticmethod
    def smil(
        balanced: bool,
        kernel: str,
        gamma: Optional[float],
        cost: float,
        eta: float,
        class_weight: str = "none",
        bias: str = "training-cut",
    ) -> ClassifierSpec: ...
    @staticmethod
    def miles(
        gamma: Optional[float],
        cost: float,
        mu: float,
        max_prototypes: int,
        seed: int,
        class_weight: str = "none",
    ) -> ClassifierSpec: ...
    @staticmethod
    def mi_graph(
        gamma: Optional[float],
        cost: float,
        class_weight: str = "none",
        norm: str = "sum",
    ) -> ClassifierSpec: ...
    @staticmethod
    def attention(
        pooling: str,
        hidden: int,
        dropout: float,
        learning_rate: float,
        weight_decay: float,
        epochs: int,
        patience: int,
        validation_fraction: float,
        seed: int,
        class_weight: str = "none",
    ) -> ClassifierSpec: ...
    @staticmethod
    def dd(
        em: bool,
        max_restarts: int,
        max_iterations: int,
        seed: int,
        class_weight: str = "none",
    ) -> ClassifierSpec: ...
    @staticmethod
    def svm(
        kernel: str,
        estimator: str,
        epsilon: float,
        delta: float,
        precision: Optional[int],
        gamma: Optional[str],
        rho: str,
        map: str,
        cost: float,
        seed: int,
        class_weight: str = "none",
        preprocessing: str = "none",
    ) -> ClassifierSpec: ...
    def fit(self, bags: Bags, projected: bool = False, n_threads: int = 0) -> FittedClassifier: ...

class GridSpec:
    def __init__(
        self,
        candidates: Optional[list[ClassifierSpec]],
        seed: int,
        class_weight: str = "none",
        inner_folds: int = 3,
        select: str = "auroc",
        max_cpu_minutes: Optional[float] = None,
        vote: int = 1,
        inner_repeats: int = 1,
    ) -> None: ...
    @property
    def n_candidates(self) -> int: ...
    def fit(
        self, bags: Bags, projected: bool = False, n_threads: int = 0
    ) -> tuple[
        FittedClassifier,
        str,
        Optional[float],
        list[str],
        list[tuple[str, Optional[float]]],
    ]: ...

class FittedClassifier:
    def scores(self, bags: Bags, n_threads: int = 0) -> tuple[_Matrix, list[int]]: ...
    def predict_instances(
        self, bags: Bags, n_threads: int = 0
    ) -> list[npt.NDArray[np.float64]]: ...
    @property
    def instance_score_kind(self) -> str: ...
    @property
    def instance_threshold(self) -> Optional[float]: ...
    @property
    def n_voters(self) -> int: ...
    @property
    def n_classes(self) -> int: ...
    @property
    def input_dim(self) -> int: ...
    @property
    def kind(self) -> str: ...
    def gram_diagnosis(self) -> Optional[str]: ...
    def to_json(self) -> str: ...
    def training_bags(self) -> Optional[Bags]: ...
    @staticmethod
    def from_json(text: str, train: Optional[Bags] = None) -> FittedClassifier: ...

class ProjectionSpec:
    def __init__(
        self, kind: str, dim: int, alpha: Optional[float] = None, seed: int = 1
    ) -> None: ...
    @property
    def alpha(self) -> Optional[float]: ...
    def fit(self, bags: Bags, n_threads: int = 0) -> FittedProjection: ...

class FittedProjection:
    def transform(self, x: _Matrix) -> _Matrix: ...
    @property
    def input_dim(self) -> int: ...
    @property
    def output_dim(self) -> int: ...
    @property
    def components(self) -> _Matrix: ...
    @property
    def mean(self) -> list[float]: ...
    @property
    def scale(self) -> list[float]: ...
    @property
    def diagnostics(self) -> list[tuple[str, float]]: ...
    def to_json(self) -> str: ...
    def training_bags(self) -> Optional[Bags]: ...
    @staticmethod
    def from_json(text: str, train: Optional[Bags] = None) -> FittedProjection: ...

class FittedCluster:
    def assign(self, bags: Bags, n_threads: int = 0) -> list[int]: ...
    @property
    def input_dim(self) -> int: ...
    def to_json(self) -> str: ...
    def training_bags(self) -> Optional[Bags]: ...
    def export(self, format: str) -> bytes: ...
    @staticmethod
    def from_json(text: str, train: Optional[Bags] = None) -> FittedCluster: ...

class CoreModel:
    def __init__(self, bytes: bytes) -> None: ...
    def to_bytes(self) -> bytes: ...
    @property
    def kind(self) -> str: ...
    @property
    def encoding(self) -> str: ...
    @property
    def input_dim(self) -> int: ...
    @property
    def n_bytes(self) -> int: ...
    def classify(self, bags: Bags) -> tuple[list[int], _Matrix]: ...

def m3ic_fit(
    bags: Bags,
    k: int,
    c: Optional[float],
    balance: Optional[float],
    restarts: int,
    seed: int,
    standardize: bool = True,
    normalize: bool = True,
    balance_mode: Optional[str] = None,
    min_size: Optional[float] = None,
    max_size: Optional[float] = None,
    n_threads: int = 0,
) -> tuple[FittedCluster, list[int], float]: ...
def bamic_fit(
    bags: Bags, k: int, distance: str, restarts: int, seed: int, n_threads: int = 0
) -> tuple[FittedCluster, list[int], float]: ...
def log_gram(
    bags: Bags,
    kernel: str,
    estimator: str,
    epsilon: float,
    delta: float,
    precision: Optional[int],
    gamma: Optional[float],
    seed: int,
    n_threads: int = 0,
) -> _Matrix: ...
def load_dataset(name: str) -> tuple[_Matrix, list[int], list[int], list[str], list[str]]: ...
def stratified_folds(
    labels: list[int], k: int, seed: int, repeats: int = 1
) -> list[list[list[int]]]: ...
def cross_validate(
    bags: Bags,
    classifier: ClassifierSpec | GridSpec,
    projection: Optional[ProjectionSpec] = None,
    k: int = 10,
    seed: int = 1,
    repeats: int = 1,
    n_threads: int = 0,
    given: Optional[list[list[int]]] = None,
) -> tuple[float, list[int], list[float], float, Optional[float], list[Optional[str]]]: ...
def clustering_accuracy(assignment: list[int], truth: list[int]) -> float: ...
def export_model(
    classifier: FittedClassifier,
    projection: Optional[FittedProjection] = None,
    format: str = "f32",
    fold_projection: bool = False,
    input: str = "fitted",
) -> bytes: ...
def set_num_threads(n: int) -> None: ...
def num_threads() -> int: ...
def num_cores() -> int: ...
def set_max_memory_gib(gib: float | None = None) -> None: ...
def get_max_memory_gib() -> float: ...
def keywords(concept: str) -> list[str]: ...
def instance_auroc(scores: list[list[float]], truth: list[list[bool]]) -> Optional[float]: ...
def witness_precision(
    scores: list[list[float]], truth: list[list[bool]], predicted_positive: list[bool]
) -> Optional[float]: ...
def miles_embedding(
    bags: Bags, gamma: Optional[float], max_prototypes: int, seed: int, n_threads: int = 0
) -> tuple[_Matrix, list[float], list[float], float]: ...
def miles_transform(
    bags: Bags,
    prototypes: _Matrix,
    mean: list[float],
    inv_sd: list[float],
    gamma: float,
    n_threads: int = 0,
) -> _Matrix: ...

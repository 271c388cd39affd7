# Type stubs of pagelab's compiled half (crates/pagelab-py/src). Checked by the tests
# (tests/test_types.py: mypy over the package and a typed use of it; and the names
# here against the module's).
from os import PathLike
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple, Union

__version__: str
TRACE_FORMATS: List[str]
PAGE_TABLES: List[str]
PROMOTION_POLICIES: List[str]
REPLACEMENT_POLICIES: List[str]
PRESETS: List[str]

class Machine:
    """A machine configuration held by the core."""

    def __init__(self) -> None: ...
    @staticmethod
    def preset(name: str) -> Machine: ...
    @staticmethod
    def from_toml(text: str, origin: str = "<config>") -> Machine: ...
    @staticmethod
    def load(path: Union[str, PathLike[str]]) -> Machine: ...
    @staticmethod
    def from_dict(value: Mapping[str, Any], origin: str = "<config>") -> Machine: ...
    def with_overrides(self, overrides: Dict[str, Any]) -> Machine: ...
    def to_toml(self) -> str: ...
    def to_dict(self) -> Dict[str, Any]: ...
    @property
    def name(self) -> str: ...
    def __eq__(self, other: object) -> bool: ...
    __hash__: ClassVar[None]  # type: ignore[assignment]

def dict_to_toml(value: Mapping[str, Any]) -> str: ...
def simulate(
    traces: Sequence[str],
    config_toml: str = "",
    format: Optional[str] = None,
    origin: str = "<config>",
    synthetic: Optional[str] = None,
    quantum: int = ...,
    baseline: bool = False,
    warmup: Optional[str] = None,
) -> Dict[str, Any]: ...
def trace_info(trace: str, format: Optional[str] = None, categories_toml: str = "") -> Dict[str, Any]: ...
def default_config() -> str: ...
def contiguity(
    trace: str,
    config_toml: str = "",
    machine: Optional[str] = None,
    regions: Sequence[str] = ...,
    format: Optional[str] = None,
    origin: str = "<config>",
) -> Dict[str, Any]: ...
def compare_translation(
    trace: str,
    config_toml: str = "",
    machine: Optional[str] = None,
    regions: Sequence[str] = ...,
    format: Optional[str] = None,
    origin: str = "<config>",
    coalescing: bool = False,
) -> Dict[str, Any]: ...
def compare_virtualized(
    trace: str,
    config_toml: str = "",
    machine: Optional[str] = None,
    guests: Sequence[str] = ...,
    hosts: Sequence[str] = ...,
    host_page: Optional[str] = None,
    format: Optional[str] = None,
    origin: str = "<config>",
) -> Dict[str, Any]: ...
def reuse(
    trace: str,
    page_sizes: Sequence[str] = ...,
    format: Optional[str] = None,
    sample_rate: Optional[float] = None,
    warmup: Optional[str] = None,
) -> Dict[str, Any]: ...
def benefit(
    trace: str,
    config_toml: str = "",
    machine: Optional[str] = None,
    format: Optional[str] = None,
    origin: str = "<config>",
    page_sizes: Sequence[str] = ...,
    budget: Optional[str] = None,
    tlb_miss_cycles: Optional[float] = None,
    page_fault_cycles: Optional[float] = None,
    page_table_entries: Optional[int] = None,
    seconds: Optional[float] = None,
    clock_ghz: float = 3.0,
    sample: int = 1,
    categories_toml: str = "",
    simulate: bool = False,
) -> Dict[str, Any]: ...
def sweep(
    spec: Union[str, Dict[str, Any]],
    db: str,
    jobs: Optional[int] = None,
    ray: Optional[str] = None,
    python: Optional[str] = None,
    quiet: bool = False,
    folder: str = ".",
    separate: bool = False,
) -> Dict[str, Any]: ...
def sweep_run(trace: str, config_toml: str, analysis: str = ...) -> Tuple[Dict[str, Any], int]: ...
def host_machine() -> Dict[str, Any]: ...
def repro_papers() -> List[Dict[str, Any]]: ...
def repro_claims(db: str) -> List[Dict[str, Any]]: ...
def repro(
    paper: str,
    output: str,
    traces: str,
    quick: bool = ...,
    jobs: Optional[int] = ...,
    quiet: bool = ...,
    cache: Optional[str] = ...,
    warmup: Optional[str] = ...,
) -> Dict[str, Any]: ...
def results_table(db: str, whole: bool = False) -> Dict[str, Any]: ...
def flatten_report(report: Dict[str, Any]) -> Dict[str, Any]: ...
def export_results(db: str, csv: Optional[str] = None, parquet: Optional[str] = None) -> None: ...
def write_file(path: str, data: bytes) -> None: ...
def compare_pagetables(
    trace: Optional[str] = None,
    layout: Optional[str] = None,
    format: Optional[str] = None,
    max_refs: Optional[int] = None,
    machine: Optional[str] = None,
    config_toml: str = "",
    origin: str = "<config>",
) -> Dict[str, Any]: ...
def convert_trace(
    input: str,
    output: str,
    to: Optional[str] = None,
    from_format: Optional[str] = None,
    workload: Optional[str] = None,
    chunk_refs: Optional[int] = None,
    level: Optional[int] = None,
    compress_literals: bool = False,
    salvage: bool = False,
) -> str: ...
def machines() -> List[Dict[str, Any]]: ...

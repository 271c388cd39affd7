# The compiled half of pagelab (src/lib.rs). Every function returns JSON text.
from typing import List, Optional

__version__: str
TRACE_FORMATS: List[str]
PAGE_TABLES: List[str]
PROMOTION_POLICIES: List[str]
REPLACEMENT_POLICIES: List[str]

def simulate(trace: str, config_toml: str = "", format: Optional[str] = None, origin: str = "<config>") -> str: ...
def trace_info(trace: str, format: Optional[str] = None) -> str: ...
def default_config() -> str: ...
PRESETS: List[str]

def contiguity(
    trace: str,
    config_toml: str = "",
    machine: Optional[str] = None,
    regions: List[str] = ...,
    format: Optional[str] = None,
    origin: str = "<config>",
) -> str: ...
def compare_translation(
    trace: str,
    config_toml: str = "",
    machine: Optional[str] = None,
    regions: List[str] = ...,
    format: Optional[str] = None,
    origin: str = "<config>",
) -> str: ...
def reuse(
    trace: str, page_sizes: List[str] = ..., format: Optional[str] = None, sample_rate: Optional[float] = None
) -> str: ...

"""Type stubs of the compiled engine module `mpsim._core` (crates/mpsim-py).

Errors: the constructor raises `mpsim.errors.EngineSpecError` (the spec is
not what the engine reads), `EngineBuildError`, `UnsupportedError` or
`NoRouteError` (the engine cannot build the world); `run_until` raises
KeyboardInterrupt when a signal handler does (Ctrl-C).
"""

from typing import Literal

__version__: str

class Simulation:
    """One run, built from an engine spec (JSON, docs/engine-spec.md)."""

    def __init__(self, spec_json: str) -> None: ...
    def run_until(self, t_ps: int) -> bool:
        """Runs up to `t_ps` picoseconds (GIL released, signals checked
        between slices); True when the run is over. Packet-ins for an SDN
        app in Python are answered between slices, with the GIL held."""
    def set_sdn_app(self, app: object) -> None:
        """The object whose `on_packet_in(event: dict) -> list[str] | None`
        answers packet-ins (`[controller] app = "python:module:Class"`):
        the path as link names from the source host to the destination
        host, or None to refuse; docs/sdn.md."""
    @property
    def now_ps(self) -> int: ...
    @property
    def end_ps(self) -> int: ...
    @property
    def events(self) -> int: ...
    @property
    def packet_hops(self) -> int: ...
    def summary_json(self, requests: bool = True) -> str:
        """The run summary as JSON (without mpsim_version); with `requests`
        False every flow's `requests` list is empty (the same rows are in
        the requests table)."""
    def pcaps(self) -> dict[str, bytes]:
        """`{interface: pcap file bytes}` for the interfaces of `record.pcap`."""
    def traces(
        self,
    ) -> dict[str, dict[str, tuple[Literal["f64", "i64"], bytes] | tuple[Literal["dict"], list[str], bytes]]]:
        """`{table: {column: buffer}}`: `("f64" | "i64", little-endian values)`
        or `("dict", distinct values, little-endian u32 index per row)`."""

def vocabulary_json() -> str:
    """The names and defaults a scenario may use, as JSON (see mpsim.vocabulary)."""
    ...

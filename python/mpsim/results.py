"""Results of one run: the summary dict and the trace tables, in and out of Parquet.

Tables are held as Arrow tables with a fixed schema per table (the columns of
docs/engine-spec.md), so an absent table is an empty table with the right
columns, and the same data always gives the same Parquet bytes. DataFrames
are made from them on demand.

A run folder holds `summary.json` and one Parquet file per table. Writing is
all-or-nothing: files go to temporary names and are renamed into place, and a
new folder is built under a temporary name and renamed at the end.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .errors import ResultsError

F64, I64, STR = pa.float64(), pa.int64(), pa.string()

SCHEMAS: dict[str, pa.Schema] = {
    "interfaces": pa.schema(
        [("time_s", F64), ("node", STR), ("interface", STR), ("tx_bytes", I64),
         ("rx_bytes", I64), ("tx_bps", F64), ("rx_bps", F64)]
    ),
    "flows": pa.schema([("time_s", F64), ("flow", STR), ("bytes_delivered", I64), ("goodput_bps", F64)]),
    "subflows": pa.schema(
        [("time_s", F64), ("flow", STR), ("connection", I64), ("subflow", I64), ("side", STR),
         ("cwnd_bytes", F64), ("ssthresh_bytes", F64), ("srtt_s", F64),
         ("bytes_in_flight", I64), ("bytes_delivered", I64), ("retransmissions", I64),
         ("reinjected_bytes", I64), ("timeouts", I64), ("fast_recoveries", I64)]
    ),
    "connections": pa.schema(
        [("time_s", F64), ("flow", STR), ("connection", I64), ("side", STR),
         ("rcv_buffer_bytes", I64), ("ooo_bytes", I64)]
    ),
    "requests": pa.schema(
        [("flow", STR), ("index", I64), ("size_bytes", I64), ("start_s", F64), ("end_s", F64)]
    ),
}  # fmt: skip
TABLES = tuple(SCHEMAS)
SUMMARY_FILE = "summary.json"
_PARQUET_OPTIONS = {"compression": "zstd", "use_dictionary": True, "write_statistics": True}

TableLike = Mapping[str, Any] | pd.DataFrame | pa.Table


class Results:
    """The summary and time series of one run."""

    def __init__(
        self,
        summary: Mapping[str, Any],
        traces: Mapping[str, TableLike] | None = None,
        pcaps: Mapping[str, bytes] | None = None,
    ) -> None:
        self.summary: dict[str, Any] = dict(summary)
        #: Captures of `record.pcap`: interface ("node:link") -> pcap file bytes.
        self.pcaps: dict[str, bytes] = dict(pcaps or {})
        traces = traces or {}
        self._tables = {name: to_arrow(name, traces.get(name)) for name in TABLES}
        # Tables the engine returned beyond the known ones are kept as they are.
        for name, data in traces.items():
            if name not in SCHEMAS:
                self._tables[name] = to_arrow(name, data)
        self._frames: dict[str, pd.DataFrame] = {}

    def __repr__(self) -> str:
        return (
            f"Results(scenario={self.summary.get('scenario')!r}, "
            f"flows={len(self.summary.get('flows', {}))}, sim_time_s={self.summary.get('sim_time_s')})"
        )

    # ------------------------------------------------------------ tables

    def table(self, name: str) -> pd.DataFrame:
        """One trace table as a DataFrame (empty, with its columns, when not recorded)."""
        if name not in self._tables:
            raise KeyError(f"no table {name!r}; tables: {', '.join(self._tables)}")
        if name not in self._frames:
            self._frames[name] = self._tables[name].to_pandas()
        return self._frames[name]

    @property
    def interfaces(self) -> pd.DataFrame:
        return self.table("interfaces")

    @property
    def flows(self) -> pd.DataFrame:
        return self.table("flows")

    @property
    def subflows(self) -> pd.DataFrame:
        return self.table("subflows")

    @property
    def connections(self) -> pd.DataFrame:
        """MPTCP connection-level samples: receive buffer and out-of-order bytes per endpoint."""
        return self.table("connections")

    @property
    def requests(self) -> pd.DataFrame:
        return self.table("requests")

    def arrow(self, name: str) -> pa.Table:
        """One trace table as an Arrow table."""
        return self._tables[name]

    def goodput_bps(self, flow: str) -> float:
        """The flow's goodput from the summary, in bit/s."""
        flows = self.summary.get("flows", {})
        if flow not in flows:
            raise KeyError(f"no flow named {flow!r}; flows: {', '.join(flows) or '(none)'}")
        return float(flows[flow]["goodput_bps"])

    def plot(self, what: str = "flows", ax: Any = None) -> Any:
        """A matplotlib Figure over time: "interfaces", "flows", "cwnd", "rtt",
        "subflow-throughput" (MPTCP subflows) or "rcvbuf" (MPTCP receive buffers)."""
        from .plot import figure

        return figure(self, what, ax=ax)

    # ------------------------------------------------------------ files

    def save(self, directory: str | Path, *, plot: bool = False) -> Path:
        """Write summary.json, the Parquet tables and (optionally) PNG plots into `directory`."""
        directory = Path(directory)
        with atomic_dir(directory) as target:
            for name, table in self._tables.items():
                atomic_write(target / f"{name}.parquet", lambda tmp, t=table: _write_parquet(t, tmp))
            text = summary_text(self.summary)
            atomic_write(target / SUMMARY_FILE, lambda tmp: tmp.write_text(text, encoding="utf-8"))
            for iface, data in self.pcaps.items():
                atomic_write(target / pcap_file_name(iface), lambda tmp, d=data: tmp.write_bytes(d))
            if plot:
                from .plot import plot_results

                plot_results(self, target)
        return directory

    def to_parquet(self, directory: str | Path) -> Path:
        """Write summary.json and one Parquet file per table (no plots)."""
        return self.save(directory, plot=False)

    @classmethod
    def from_dir(cls, directory: str | Path) -> Results:
        """Read a run folder written by `save`."""
        directory = Path(directory)
        try:
            summary = json.loads((directory / SUMMARY_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ResultsError(f"{directory}: not a run folder (no {SUMMARY_FILE})") from None
        except (OSError, ValueError) as exc:
            raise ResultsError(f"{directory / SUMMARY_FILE}: cannot read: {exc}") from None
        traces: dict[str, pa.Table] = {}
        for path in sorted(directory.glob("*.parquet")):
            try:
                traces[path.stem] = pq.read_table(path)
            except (OSError, pa.ArrowException) as exc:
                raise ResultsError(f"{path}: cannot read: {exc}") from None
        return cls(summary, traces)


def pcap_file_name(iface: str) -> str:
    """File of the capture of interface "node:link": node-link.pcap."""
    return iface.replace(":", "-") + ".pcap"


def _write_parquet(table: pa.Table, path: Path) -> None:
    pq.write_table(table, path, **_PARQUET_OPTIONS)


def summary_text(summary: Mapping[str, Any]) -> str:
    """The summary as written to summary.json: indented, key order kept."""
    return json.dumps(summary, indent=2, ensure_ascii=False) + "\n"


def to_arrow(name: str, data: TableLike | None) -> pa.Table:
    """A trace table in its fixed schema (known tables) or as given (others)."""
    schema = SCHEMAS.get(name)
    if data is None:
        return schema.empty_table() if schema is not None else pa.table({})
    if isinstance(data, pd.DataFrame):
        table = pa.Table.from_pandas(data, preserve_index=False)
    elif isinstance(data, pa.Table):
        table = data
    else:
        table = _table_from_columns(name, data, schema)
    table = _conform(name, table, schema)
    # Pandas metadata carries library versions: leave it out so files stay byte-identical.
    return table.replace_schema_metadata(None)


def _table_from_columns(name: str, columns: Mapping[str, Any], schema: pa.Schema | None) -> pa.Table:
    lengths = {len(v) for v in columns.values()}
    if len(lengths) > 1:
        raise ResultsError(f"trace table {name!r}: columns have different lengths {sorted(lengths)}")
    arrays, names = [], []
    for column, values in columns.items():
        kind = schema.field(column).type if schema is not None and column in schema.names else None
        try:
            arrays.append(pa.array(list(values), type=kind))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise ResultsError(f"trace table {name!r}, column {column!r}: {exc}") from None
        names.append(column)
    return pa.table(arrays, names=names) if arrays else pa.table({})


def _conform(name: str, table: pa.Table, schema: pa.Schema | None) -> pa.Table:
    """Known columns first, in schema order and type (nulls when absent), then the rest."""
    if schema is None:
        return table
    rows = table.num_rows
    arrays, fields = [], []
    for f in schema:
        if f.name in table.column_names:
            try:
                arrays.append(table.column(f.name).cast(f.type))
            except pa.ArrowException as exc:
                raise ResultsError(f"trace table {name!r}, column {f.name!r}: {exc}") from None
        else:
            arrays.append(pa.nulls(rows, type=f.type))
        fields.append(f)
    for column in table.column_names:
        if column not in schema.names:
            arrays.append(table.column(column))
            fields.append(table.schema.field(column))
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


# ------------------------------------------------------------ atomic writes


def atomic_write(path: Path, write: Callable[[Path], Any]) -> None:
    """Write through `write(tmp)` to a temporary name beside `path`, then rename into place."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextmanager
def atomic_dir(path: Path) -> Iterator[Path]:
    """A folder to write into that appears at `path` only if the block succeeds.

    A new folder is built under a temporary sibling name and renamed at the
    end; an existing folder is written in place (each file atomically).
    """
    if path.is_dir():
        yield path
        return
    created = _make_parents(path.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        yield tmp
        tmp.chmod(0o777 & ~_umask())  # mkdtemp makes 0o700; give the usual permissions
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for parent in created:  # innermost first; only the ones we made, and only if empty
            try:
                parent.rmdir()
            except OSError:
                break
        raise


def _make_parents(folder: Path) -> list[Path]:
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for parent in reversed(missing):
        parent.mkdir(exist_ok=True)
    return missing


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask

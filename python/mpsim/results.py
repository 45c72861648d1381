"""Results of one run: the summary dict and the trace tables, in and out of Parquet.

Tables are held as Arrow tables with a fixed schema per table (the columns of
docs/engine-spec.md), so an absent table is an empty table with the right
columns, and the same data always gives the same Parquet bytes. DataFrames
are made from them on demand.

A run folder holds `summary.json`, `run.json` (how the run was made) and one
Parquet file per table. Writing is all-or-nothing and whole: the folder is
built under a temporary name and renamed into place, replacing a previous
run's folder entirely; a non-empty folder that is not a run folder is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from .errors import ResultsError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

# pandas and pyarrow are imported where tables are used, not here: a run that
# writes only its summary never pays for them (docs/performance.md).
_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "interfaces": [("time_s", "f64"), ("node", "str"), ("interface", "str"), ("tx_bytes", "i64"),
                   ("rx_bytes", "i64"), ("tx_bps", "f64"), ("rx_bps", "f64")],
    "flows": [("time_s", "f64"), ("flow", "str"), ("bytes_delivered", "i64"), ("goodput_bps", "f64")],
    "subflows": [("time_s", "f64"), ("flow", "str"), ("connection", "i64"), ("subflow", "i64"), ("side", "str"),
                 ("cwnd_bytes", "f64"), ("ssthresh_bytes", "f64"), ("srtt_s", "f64"),
                 ("bytes_in_flight", "i64"), ("bytes_delivered", "i64"), ("retransmissions", "i64"),
                 ("reinjected_bytes", "i64"), ("timeouts", "i64"), ("fast_recoveries", "i64"), ("state", "str"), ("backup", "bool"),
                 ("client_interface", "str"), ("server_interface", "str"), ("peer_rwnd_bytes", "f64"),
                 ("fast_retransmissions", "f64"), ("fast_retransmissions_inter", "f64"), ("fast_retransmissions_intra", "f64")],
    "connections": [("time_s", "f64"), ("flow", "str"), ("connection", "i64"), ("side", "str"),
                    ("rcv_buffer_bytes", "i64"), ("ooo_bytes", "i64")],
    "requests": [("flow", "str"), ("index", "i64"), ("size_bytes", "i64"), ("start_s", "f64"), ("end_s", "f64")],
}  # fmt: skip
TABLES = tuple(_COLUMNS)
SUMMARY_FILE = "summary.json"
#: How the run was made: resolved scenario, overrides, seed, mpsim version.
RUN_FILE = "run.json"
_PARQUET_OPTIONS = {"compression": "zstd", "use_dictionary": True, "write_statistics": True}

TableLike = Any  # a {column: values} mapping, a pandas DataFrame or a pyarrow Table


@cache
def schemas() -> dict[str, pa.Schema]:
    """The fixed Arrow schema of each known table."""
    import pyarrow as pa

    kinds = {"f64": pa.float64(), "i64": pa.int64(), "str": pa.string(), "bool": pa.bool_()}
    return {name: pa.schema([(c, kinds[k]) for c, k in cols]) for name, cols in _COLUMNS.items()}


def __getattr__(name: str) -> Any:
    if name == "SCHEMAS":  # built on first use, with pyarrow
        return schemas()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class Results:
    """The summary and time series of one run."""

    def __init__(
        self,
        summary: Mapping[str, Any],
        traces: Mapping[str, TableLike] | None = None,
        pcaps: Mapping[str, bytes] | None = None,
        provenance: Mapping[str, Any] | None = None,
    ) -> None:
        self.summary: dict[str, Any] = dict(summary)
        #: Captures of `record.pcap`: interface ("node:link") -> pcap file bytes.
        self.pcaps: dict[str, bytes] = dict(pcaps or {})
        #: How the run was made (written to run.json): None when not known.
        self.provenance: dict[str, Any] | None = dict(provenance) if provenance is not None else None
        self._raw = dict(traces or {})
        for name, data in self._raw.items():
            if isinstance(data, Mapping):
                _check_lengths(name, data)
        self._arrow: dict[str, pa.Table] | None = None
        self._frames: dict[str, pd.DataFrame] = {}

    def __repr__(self) -> str:
        return (
            f"Results(scenario={self.summary.get('scenario')!r}, "
            f"flows={len(self.summary.get('flows', {}))}, sim_time_s={self.summary.get('sim_time_s')})"
        )

    @property
    def _tables(self) -> dict[str, pa.Table]:
        """The trace tables as Arrow tables, converted on first use."""
        if self._arrow is None:
            tables = {name: to_arrow(name, self._raw.get(name)) for name in TABLES}
            # Tables the engine returned beyond the known ones are kept as they are.
            for name, data in self._raw.items():
                if name not in tables:
                    tables[name] = to_arrow(name, data)
            self._arrow, self._raw = tables, {}
        return self._arrow

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
        """Per subflow and sample: window, RTT, bytes, its TCP state (a closed subflow
        has one last row with state "closed"), backup flag and interfaces."""
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
        """Write summary.json, run.json (when known), the Parquet tables and
        (optionally) PNG plots into `directory`.

        The folder is replaced wholly: a previous run's files do not stay. A
        non-empty folder that is not a run folder is refused (ResultsError).
        """
        directory = Path(directory)
        check_out_dir(directory)
        with replaced_dir(directory) as target:
            for name, table in self._tables.items():
                _write_parquet(table, target / f"{name}.parquet")
            write_summary(self.summary, target / SUMMARY_FILE)
            if self.provenance is not None:
                (target / RUN_FILE).write_text(summary_text(self.provenance), encoding="utf-8")
            for iface, data in self.pcaps.items():
                (target / pcap_file_name(iface)).write_bytes(data)
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
        import pyarrow as pa
        import pyarrow.parquet as pq

        directory = Path(directory)
        try:
            summary = json.loads((directory / SUMMARY_FILE).read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ResultsError(f"{directory}: not a run folder (no {SUMMARY_FILE})") from None
        except (OSError, ValueError) as exc:
            raise ResultsError(f"{directory / SUMMARY_FILE}: cannot read: {exc}") from None
        provenance = None
        if (directory / RUN_FILE).is_file():
            try:
                provenance = json.loads((directory / RUN_FILE).read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ResultsError(f"{directory / RUN_FILE}: cannot read: {exc}") from None
        traces: dict[str, pa.Table] = {}
        for path in sorted(directory.glob("*.parquet")):
            try:
                traces[path.stem] = pq.read_table(path)
            except (OSError, pa.ArrowException) as exc:
                raise ResultsError(f"{path}: cannot read: {exc}") from None
        return cls(summary, traces, provenance=provenance)


def is_run_folder(directory: Path) -> bool:
    """A folder written by mpsim: it holds a summary.json or a run.json."""
    return (directory / SUMMARY_FILE).is_file() or (directory / RUN_FILE).is_file()


def check_out_dir(directory: Path) -> None:
    """Raise ResultsError unless `directory` can take a run: absent (and
    creatable), empty, or a previous run folder (which will be replaced)."""
    if directory.exists():
        if not directory.is_dir():
            raise ResultsError(f"{directory}: exists and is not a folder")
        if any(directory.iterdir()) and not is_run_folder(directory):
            raise ResultsError(
                f"{directory}: not an mpsim run folder (no {SUMMARY_FILE}) and not empty; "
                "refusing to replace it: name a new or empty folder"
            )
        if not os.access(directory.parent, os.W_OK | os.X_OK):
            raise ResultsError(f"{directory}: cannot replace it: {directory.parent} is not writable")
        return
    check_creatable(directory)


def check_creatable(path: Path) -> None:
    """Raise ResultsError unless `path` could be created: its nearest existing
    ancestor is a writable folder."""
    parent = path.parent
    while not parent.exists():
        if parent == parent.parent:
            break
        parent = parent.parent
    if not parent.is_dir():
        raise ResultsError(f"{path}: cannot be created: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ResultsError(f"{path}: cannot be created: {parent} is not writable")


@contextmanager
def replaced_dir(path: Path) -> Iterator[Path]:
    """A folder to write into that replaces `path` wholly, and only if the block succeeds.

    The new folder is built under a temporary sibling name; at the end a
    previous folder at `path` is moved aside, the new one renamed into
    place, and the previous one removed.
    """
    if not path.is_dir():
        with atomic_dir(path) as tmp:
            yield tmp
        return
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.tmp-", dir=path.parent))
    try:
        yield tmp
        tmp.chmod(path.stat().st_mode & 0o7777)
        old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
        os.rename(path, old / path.name)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _check_lengths(name: str, columns: Mapping[str, Any]) -> None:
    lengths = {_column_length(v) for v in columns.values()}
    if len(lengths) > 1:
        raise ResultsError(f"trace table {name!r}: columns have different lengths {sorted(lengths)}")


def pcap_file_name(iface: str) -> str:
    """File of the capture of interface "node:link": node-link.pcap."""
    return iface.replace(":", "-") + ".pcap"


def _write_parquet(table: pa.Table, path: Path) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, path, **_PARQUET_OPTIONS)


def summary_text(summary: Mapping[str, Any]) -> str:
    """The summary as written to summary.json: indented, key order kept."""
    return json.dumps(summary, indent=2, ensure_ascii=False) + "\n"


def dump_summary(summary: Mapping[str, Any], fp: IO[str]) -> None:
    """Write `summary_text(summary)` to `fp` piece by piece: the indented
    encoder would otherwise hold a list of some ten strings per request (a
    run of 20,000 short flows: about 10 MB) before joining them."""
    json.dump(summary, fp, indent=2, ensure_ascii=False)
    fp.write("\n")


def write_summary(summary: Mapping[str, Any], path: Path) -> None:
    """Write `summary_text(summary)` to the file `path`."""
    with path.open("w", encoding="utf-8") as fp:
        dump_summary(summary, fp)


def to_arrow(name: str, data: TableLike | None) -> pa.Table:
    """A trace table in its fixed schema (known tables) or as given (others)."""
    import pandas as pd
    import pyarrow as pa

    schema = schemas().get(name)
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
    import pyarrow as pa

    columns = {column: _from_buffer(values) for column, values in columns.items()}
    _check_lengths(name, columns)
    arrays, names = [], []
    for column, values in columns.items():
        kind = schema.field(column).type if schema is not None and column in schema.names else None
        try:
            if isinstance(values, pa.Array):
                arrays.append(values.cast(kind) if kind is not None else values)
            elif kind == pa.bool_():  # the engine sends flags as 0/1
                arrays.append(pa.array(list(values)).cast(kind))
            else:
                arrays.append(pa.array(list(values), type=kind))
        except (pa.ArrowException, TypeError, ValueError) as exc:
            raise ResultsError(f"trace table {name!r}, column {column!r}: {exc}") from None
        names.append(column)
    return pa.table(arrays, names=names) if arrays else pa.table({})


def _is_buffer(values: Any) -> bool:
    return isinstance(values, tuple) and bool(values) and values[0] in ("f64", "i64", "dict")


def _column_length(values: Any) -> int:
    if not _is_buffer(values):
        return len(values)
    return len(values[2]) // 4 if values[0] == "dict" else len(values[1]) // 8


#: Distinct values of an integer column whose Python objects are shared.
SHARED_INTS = 1024


def column_list(values: Any) -> list[Any]:
    """A column as a Python list. Engine buffers are decoded with equal text
    values (and the first SHARED_INTS distinct integers) as one object each:
    columns such as flow names and request sizes repeat a few values, and an
    object per row costs some 30-50 bytes."""
    if not _is_buffer(values):
        return list(values)
    import numpy as np

    kind = values[0]
    if kind == "dict":
        names = values[1]
        return [names[c] for c in np.frombuffer(values[2], dtype="<u4").tolist()]
    if kind == "f64":
        return np.frombuffer(values[1], dtype="<f8").tolist()
    seen: dict[int, int] = {}
    out = []
    for v in np.frombuffer(values[1], dtype="<i8").tolist():
        shared = seen.get(v)
        if shared is None:
            shared = v
            if len(seen) < SHARED_INTS:
                seen[v] = v
        out.append(shared)
    return out


def _from_buffer(values: Any) -> Any:
    """An engine column buffer (`mpsim._core.Simulation.traces`) as an Arrow
    array without a Python object per value; anything else as given."""
    import numpy as np
    import pyarrow as pa

    if not _is_buffer(values):
        return values
    if values[0] == "dict":
        codes = pa.array(np.frombuffer(values[2], dtype="<u4"))
        return pa.DictionaryArray.from_arrays(codes, pa.array(values[1], type=pa.string())).dictionary_decode()
    return pa.array(np.frombuffer(values[1], dtype="<f8" if values[0] == "f64" else "<i8"))


def _conform(name: str, table: pa.Table, schema: pa.Schema | None) -> pa.Table:
    """Known columns first, in schema order and type (nulls when absent), then the rest."""
    import pyarrow as pa

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

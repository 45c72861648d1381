//! Python bindings: `mpsim._core.Simulation`. A spec (JSON) goes in, the
//! summary (JSON) and trace columns come out. No model logic lives here.

use mpsim::report_column::Column;
use mpsim::BuildError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

/// Events run between two checks for Ctrl-C: tens of milliseconds of work.
const EVENTS_PER_SLICE: u64 = 1 << 20;

/// The exception class of `mpsim.errors` that stands for an engine error.
fn error_class(e: &BuildError) -> &'static str {
    match e {
        BuildError::Json(_) => "EngineSpecError",
        BuildError::Invalid(_) => "EngineBuildError",
        BuildError::Unsupported(_) => "UnsupportedError",
        BuildError::NoRoute(_) => "NoRouteError",
    }
}

/// The engine error as an instance of its `mpsim.errors` class (the
/// hierarchy lives in Python, under `MpsimError`); `ValueError` only if
/// that module cannot be imported.
fn engine_error(py: Python<'_>, e: &BuildError) -> PyErr {
    let class = py
        .import("mpsim.errors")
        .and_then(|m| m.getattr(error_class(e)))
        .and_then(|c| c.downcast_into::<PyType>().map_err(PyErr::from));
    match class {
        Ok(class) => PyErr::from_type(class, e.to_string()),
        Err(_) => PyValueError::new_err(e.to_string()),
    }
}

#[pyclass(module = "mpsim._core")]
struct Simulation {
    inner: mpsim::Simulation,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(py: Python<'_>, spec_json: &str) -> PyResult<Self> {
        mpsim::Simulation::from_json(spec_json).map(|inner| Simulation { inner }).map_err(|e| engine_error(py, &e))
    }

    /// Runs up to `t_ps` picoseconds with the GIL released, in slices with
    /// a check for signals between them, so Ctrl-C raises KeyboardInterrupt
    /// within a slice. True when the run is over.
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> PyResult<bool> {
        let until = mpsim_core_time(t_ps);
        loop {
            let sim = &mut self.inner;
            let reached = py.allow_threads(|| sim.advance(until, EVENTS_PER_SLICE));
            py.check_signals()?;
            if reached {
                return Ok(self.inner.is_done());
            }
        }
    }

    #[getter]
    fn now_ps(&self) -> u64 {
        self.inner.now().as_ps()
    }

    #[getter]
    fn end_ps(&self) -> u64 {
        self.inner.end().as_ps()
    }

    #[getter]
    fn events(&self) -> u64 {
        self.inner.events()
    }

    #[getter]
    fn packet_hops(&self) -> u64 {
        self.inner.packet_hops()
    }

    /// The summary as JSON; with `requests` false every flow's `requests`
    /// list is empty (the same rows are in the requests table).
    #[pyo3(signature = (requests = true))]
    fn summary_json(&self, requests: bool) -> String {
        self.inner.summary_json(requests)
    }

    /// `{interface: pcap file bytes}` for the interfaces of `record.pcap`.
    fn pcaps<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (name, bytes) in self.inner.pcaps() {
            out.set_item(name, pyo3::types::PyBytes::new(py, &bytes))?;
        }
        Ok(out)
    }

    /// `{table: {column: list}}`.
    fn traces<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (name, table) in self.inner.traces() {
            let cols = PyDict::new(py);
            for (col, values) in table.columns {
                match values {
                    Column::F64(v) => cols.set_item(col, v)?,
                    Column::I64(v) => cols.set_item(col, shared_ints(py, v)?)?,
                    Column::Str(v) => cols.set_item(col, shared_strings(py, v)?)?,
                }
            }
            out.set_item(name, cols)?;
        }
        Ok(out)
    }
}

/// A string column as a Python list in which equal strings are one object:
/// columns such as a table's flow names repeat a few values on every row,
/// and a string object per row costs some 50 bytes.
fn shared_strings(py: Python<'_>, column: Vec<String>) -> PyResult<Bound<'_, pyo3::types::PyList>> {
    let mut seen: std::collections::HashMap<String, Bound<'_, pyo3::types::PyString>> = std::collections::HashMap::new();
    let items: Vec<Bound<'_, pyo3::types::PyString>> =
        column.into_iter().map(|s| seen.entry(s).or_insert_with_key(|k| pyo3::types::PyString::new(py, k)).clone()).collect();
    pyo3::types::PyList::new(py, items)
}

/// Distinct values of an integer column whose objects are shared.
const SHARED_INTS: usize = 1024;

/// An integer column as a Python list in which equal values, among the
/// first `SHARED_INTS` distinct ones, are one object: columns such as
/// request sizes, states and counters repeat a few values, and Python
/// makes a 28-byte object per integer past 256.
fn shared_ints(py: Python<'_>, column: Vec<i64>) -> PyResult<Bound<'_, pyo3::types::PyList>> {
    let mut seen: std::collections::HashMap<i64, Bound<'_, PyAny>> = std::collections::HashMap::new();
    let mut items: Vec<Bound<'_, PyAny>> = Vec::with_capacity(column.len());
    for v in column {
        let item = match seen.get(&v) {
            Some(o) => o.clone(),
            None => {
                let o = v.into_pyobject(py)?.into_any();
                if seen.len() < SHARED_INTS {
                    seen.insert(v, o.clone());
                }
                o
            }
        };
        items.push(item);
    }
    pyo3::types::PyList::new(py, items)
}

fn mpsim_core_time(t_ps: u64) -> mpsim::SimTime {
    mpsim::SimTime(t_ps)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add("__version__", mpsim::VERSION)?;
    Ok(())
}

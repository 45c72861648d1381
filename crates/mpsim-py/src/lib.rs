//! Python bindings: `mpsim._core.Simulation`. A spec (JSON) goes in, the
//! summary (JSON) and trace columns come out. No model logic lives here.

use mpsim::report_column::Column;
use mpsim::BuildError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyType};

/// The engine's allocator: jemalloc, which `.cargo/config.toml` builds to
/// back its heap with transparent huge pages. A large fabric's state
/// spans hundreds of megabytes, and on 4 KiB pages its runs took up to
/// half as long again (docs/performance.md, "Link directions, huge pages").
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
    /// The SdnController app written in Python (`set_sdn_app`), if any.
    sdn_app: Option<PyObject>,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(py: Python<'_>, spec_json: &str) -> PyResult<Self> {
        mpsim::Simulation::from_json(spec_json).map(|inner| Simulation { inner, sdn_app: None }).map_err(|e| engine_error(py, &e))
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
            self.answer_packet_ins(py)?;
            if reached {
                return Ok(self.inner.is_done());
            }
        }
    }

    /// The object whose `on_packet_in(event)` answers the packet-ins of an
    /// SDN app written in Python (`[controller] app = "python:..."`).
    fn set_sdn_app(&mut self, app: PyObject) {
        self.sdn_app = Some(app);
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
            out.set_item(name, PyBytes::new(py, &bytes))?;
        }
        Ok(out)
    }

    /// `{table: {column: buffer}}`, each column as one of
    /// `("f64", bytes)` or `("i64", bytes)` (little-endian values) or
    /// `("dict", [value, ...], bytes)` (text columns: the distinct values in
    /// order of first appearance and one little-endian u32 index per row).
    /// Buffers, not Python lists: converting millions of Python objects
    /// cost more than the simulation itself.
    fn traces<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for (name, table) in self.inner.traces() {
            let cols = PyDict::new(py);
            for (col, values) in table.columns {
                match values {
                    Column::F64(v) => cols.set_item(col, ("f64", le_bytes(py, &v, f64::to_le_bytes)))?,
                    Column::I64(v) => cols.set_item(col, ("i64", le_bytes(py, &v, i64::to_le_bytes)))?,
                    Column::Str(v) => {
                        let (values, codes) = dictionary(&v);
                        cols.set_item(col, ("dict", values, le_bytes(py, &codes, u32::to_le_bytes)))?
                    }
                }
            }
            out.set_item(name, cols)?;
        }
        Ok(out)
    }
}

impl Simulation {
    /// Calls the Python SDN app, with the GIL held, for each packet-in the
    /// slice stopped at, and hands its answers to the engine.
    fn answer_packet_ins(&mut self, py: Python<'_>) -> PyResult<()> {
        let events = self.inner.sdn_packet_ins();
        if events.is_empty() {
            return Ok(());
        }
        let Some(app) = &self.sdn_app else {
            return Err(PyValueError::new_err("a packet-in waits for an SDN app in Python: set_sdn_app was not called"));
        };
        for e in events {
            let d = PyDict::new(py);
            d.set_item("time_s", e.time_s)?;
            d.set_item("switch", &e.switch)?;
            d.set_item("in_link", &e.in_link)?;
            d.set_item("src", &e.src)?;
            d.set_item("dst", &e.dst)?;
            d.set_item("sport", e.sport)?;
            d.set_item("dport", e.dport)?;
            d.set_item("proto", e.proto)?;
            d.set_item("opening", e.opening)?;
            d.set_item("token", e.token)?;
            d.set_item("flow", &e.flow)?;
            d.set_item("connection", e.connection)?;
            d.set_item("size_bytes", e.size_bytes)?;
            let answer = app.call_method1(py, "on_packet_in", (d,))?;
            let links: Option<Vec<String>> = if answer.is_none(py) { None } else { Some(answer.extract(py)?) };
            self.inner
                .sdn_answer(e.id, links.as_deref())
                .map_err(|m| PyValueError::new_err(format!("SDN app: packet-in at {} for {}: {m}", e.switch, e.dst)))?;
        }
        Ok(())
    }
}

fn le_bytes<'py, T: Copy, const N: usize>(py: Python<'py>, v: &[T], f: fn(T) -> [u8; N]) -> Bound<'py, PyBytes> {
    let mut buf = Vec::with_capacity(v.len() * N);
    for &x in v {
        buf.extend_from_slice(&f(x));
    }
    PyBytes::new(py, &buf)
}

/// Distinct values in order of first appearance, and each row's index among them.
fn dictionary(v: &[String]) -> (Vec<&str>, Vec<u32>) {
    let mut index: std::collections::BTreeMap<&str, u32> = std::collections::BTreeMap::new();
    let mut values = Vec::new();
    let codes = v
        .iter()
        .map(|s| {
            *index.entry(s.as_str()).or_insert_with(|| {
                values.push(s.as_str());
                (values.len() - 1) as u32
            })
        })
        .collect();
    (values, codes)
}

fn mpsim_core_time(t_ps: u64) -> mpsim::SimTime {
    mpsim::SimTime(t_ps)
}

/// The names and defaults a scenario may use, as JSON (mpsim::vocabulary).
#[pyfunction]
fn vocabulary_json() -> String {
    mpsim::vocabulary::vocabulary().to_string()
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Simulation>()?;
    m.add("__version__", mpsim::VERSION)?;
    m.add_function(wrap_pyfunction!(vocabulary_json, m)?)?;
    Ok(())
}

//! Python bindings: `mpsim._core.Simulation`. A spec (JSON) goes in, the
//! summary (JSON) and trace columns come out. No model logic lives here.

use mpsim::report_column::Column;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

#[pyclass(module = "mpsim._core")]
struct Simulation {
    inner: mpsim::Simulation,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(spec_json: &str) -> PyResult<Self> {
        mpsim::Simulation::from_json(spec_json)
            .map(|inner| Simulation { inner })
            .map_err(|e| PyValueError::new_err(e.to_string()))
    }

    /// Runs up to `t_ps` picoseconds with the GIL released; true when the run is over.
    fn run_until(&mut self, py: Python<'_>, t_ps: u64) -> bool {
        let sim = &mut self.inner;
        py.allow_threads(|| sim.run_until(mpsim_core_time(t_ps)))
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

    fn summary_json(&self) -> String {
        self.inner.summary().to_string()
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
                    Column::I64(v) => cols.set_item(col, v)?,
                    Column::Str(v) => cols.set_item(col, v)?,
                }
            }
            out.set_item(name, cols)?;
        }
        Ok(out)
    }
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

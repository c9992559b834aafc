//! The conversions of the binding: numpy arrays and `scipy.sparse` matrices in (each refusal
//! a `ValueError` naming the argument), arrays out, serde values as Python objects, library
//! errors as Python exceptions.

use numpy::{
    Element, PyArray1, PyArrayDescrMethods, PyArrayDyn, PyArrayMethods, PyUntypedArray,
    PyUntypedArrayMethods,
};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use serde::Serialize;
use signorini::problem::CsrMatrix;

/// A library error as a Python exception carrying its message: `OSError` (its subclass by
/// the cause, e.g. `FileNotFoundError`) for files, `RuntimeError` for the GPU path and a
/// failed factorization, `ValueError` for bad input and settings.
pub fn error(e: signorini::Error) -> PyErr {
    use signorini::Error as E;
    let message = e.to_string();
    match e {
        E::Io { source, .. } => std::io::Error::new(source.kind(), message).into(),
        E::Gpu(_) | E::Factorization(_) | E::Report(_) => PyRuntimeError::new_err(message),
        _ => PyValueError::new_err(message),
    }
}

/// A `ValueError` about the argument `name`.
pub fn invalid(name: &str, message: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err(format!("{name}: {message}"))
}

/// The entries of `obj` of `ndim` dimensions, dtype `T`, with its shape; `name` is the
/// argument in the errors. An ndarray is taken as it is, and must be of dtype `T` and
/// C-contiguous (nothing is converted behind the caller's back); anything else (a list) goes
/// through `numpy.asarray(obj, dtype=T)`.
fn array<T: Element + Copy>(
    obj: &Bound<'_, PyAny>,
    name: &str,
    ndim: usize,
) -> PyResult<(Vec<T>, Vec<usize>)> {
    let py = obj.py();
    let want = numpy::dtype::<T>(py);
    let converted;
    let untyped = match obj.cast::<PyUntypedArray>() {
        Ok(array) => array,
        Err(_) => {
            converted = py
                .import("numpy")?
                .call_method1("asarray", (obj, &want))
                .map_err(|e| invalid(name, format!("not an array of {want}: {e}")))?;
            converted.cast::<PyUntypedArray>()?
        }
    };
    let shape = untyped.shape().to_vec();
    if shape.len() != ndim {
        return Err(invalid(
            name,
            format!("expected a {ndim}-D array, got shape {shape:?}"),
        ));
    }
    if !untyped.dtype().is_equiv_to(&want) {
        return Err(invalid(
            name,
            format!("dtype {}, expected {}", untyped.dtype(), want),
        ));
    }
    if !untyped.is_c_contiguous() {
        return Err(invalid(
            name,
            "not C-contiguous (numpy.ascontiguousarray gives a copy that is)",
        ));
    }
    let typed = untyped.cast::<PyArrayDyn<T>>()?.readonly();
    let data = typed.as_slice().map_err(|e| invalid(name, e))?.to_vec();
    Ok((data, shape))
}

/// Refuses a non-finite entry of `data` (shape `shape`), naming it by its index.
fn finite(name: &str, data: &[f64], shape: &[usize]) -> PyResult<()> {
    let Some(flat) = data.iter().position(|v| !v.is_finite()) else {
        return Ok(());
    };
    let mut index = vec![0; shape.len()];
    let mut rest = flat;
    for (i, n) in index.iter_mut().zip(shape).rev() {
        *i = rest % n;
        rest /= n;
    }
    let index: Vec<String> = index.iter().map(usize::to_string).collect();
    Err(invalid(
        &format!("{name}[{}]", index.join(", ")),
        format!("{} (entries must be finite)", data[flat]),
    ))
}

/// A 1-D float64 array of finite entries.
pub fn vector(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<f64>> {
    let (data, shape) = array::<f64>(obj, name, 1)?;
    finite(name, &data, &shape)?;
    Ok(data)
}

/// A 2-D float64 array of finite entries, row-major, with its shape.
pub fn dense(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<(Vec<f64>, [usize; 2])> {
    let (data, shape) = array::<f64>(obj, name, 2)?;
    finite(name, &data, &shape)?;
    Ok((data, [shape[0], shape[1]]))
}

/// The Jacobian rows of a factored problem: a float64 array of shape `(rows, 2, 6)` of finite
/// entries (each row's 6 entries for its block's first and second body), with its shape.
pub fn jacobian(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<(Vec<f64>, Vec<usize>)> {
    let (data, shape) = array::<f64>(obj, name, 3)?;
    if shape[1..] != [2, 6] {
        return Err(invalid(
            name,
            format!("shape {shape:?}, expected [rows, 2, 6]"),
        ));
    }
    finite(name, &data, &shape)?;
    Ok((data, shape))
}

/// An int64 array of `ndim` dimensions, with its shape.
pub fn indices(
    obj: &Bound<'_, PyAny>,
    name: &str,
    ndim: usize,
) -> PyResult<(Vec<i64>, Vec<usize>)> {
    array::<i64>(obj, name, ndim)
}

/// A matrix given as a dense 2-D float64 ndarray or as any `scipy.sparse` matrix or array
/// (through its canonical CSR form: duplicates summed, explicit zeros kept; a canonical CSR
/// input is read as it is, the caller's matrix is never modified).
pub fn matrix(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<CsrMatrix> {
    if obj.cast::<PyUntypedArray>().is_err() && obj.hasattr("tocsr")? {
        let mut csr = obj.call_method0("tocsr")?;
        if !csr.getattr("has_canonical_format")?.extract::<bool>()? {
            csr = csr.call_method0("copy")?;
            csr.call_method0("sum_duplicates")?;
        }
        let (nrows, ncols): (usize, usize) = csr.getattr("shape")?.extract()?;
        let values = vector(&csr.getattr("data")?, &format!("{name}.data"))?;
        // scipy's index dtype is int32 or int64 by size: read both as int64.
        let index = |field: &str| -> PyResult<Vec<usize>> {
            let a = csr.getattr(field)?.call_method1("astype", ("int64",))?;
            let (v, _) = indices(&a, &format!("{name}.{field}"), 1)?;
            Ok(v.into_iter().map(|i| i as usize).collect())
        };
        let m = CsrMatrix {
            nrows,
            ncols,
            indptr: index("indptr")?,
            indices: index("indices")?,
            values,
        };
        m.validate(name).map_err(error)?;
        return Ok(m);
    }
    let (data, [nrows, ncols]) = dense(obj, name)?;
    // Row-major data read column-major is the transpose.
    Ok(CsrMatrix::from_dense_col_major(ncols, nrows, &data).transpose())
}

/// A 2-D array of `rows × cols` from row-major `data`.
pub fn array2<T: Element>(
    py: Python<'_>,
    data: Vec<T>,
    cols: usize,
) -> PyResult<Bound<'_, numpy::PyArray2<T>>> {
    let rows = data.len() / cols;
    PyArray1::from_vec(py, data).reshape([rows, cols])
}

/// A JSON value as the Python object `json.loads` would give.
pub fn value<'py>(py: Python<'py>, v: &serde_json::Value) -> PyResult<Bound<'py, PyAny>> {
    use serde_json::Value as V;
    Ok(match v {
        V::Null => py.None().into_bound(py),
        V::Bool(b) => b.into_pyobject(py)?.to_owned().into_any(),
        V::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            (None, None) => n.as_f64().into_pyobject(py)?.into_any(),
        },
        V::String(s) => s.into_pyobject(py)?.into_any(),
        V::Array(items) => {
            let items = items
                .iter()
                .map(|x| value(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any()
        }
        V::Object(fields) => {
            let dict = PyDict::new(py);
            for (k, x) in fields {
                dict.set_item(k, value(py, x)?)?;
            }
            dict.into_any()
        }
    })
}

/// `x` through its serde form (the keys and values of the CLI's JSON) as a Python object.
pub fn serde<'py, T: Serialize>(py: Python<'py>, x: &T) -> PyResult<Bound<'py, PyAny>> {
    let v = serde_json::to_value(x).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    value(py, &v)
}

/// Issues a Python `UserWarning` with `message`.
pub fn warn(py: Python<'_>, message: &str) -> PyResult<()> {
    let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
    let message = std::ffi::CString::new(message.replace('\0', " "))?;
    PyErr::warn(py, &category, &message, 1)
}

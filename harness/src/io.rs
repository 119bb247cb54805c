//! Reading `.npy` / `.csv` tables and writing `.npy` / JSON, atomically.
//!
//! Every reader fails with a message that names the file and, where it applies, the row and
//! column. Writers write to a temporary file beside the target and rename it into place, so a
//! failed command never leaves a partial output behind.

use anyhow::{Context, Result, bail};
use npyz::{Order, TypeChar, WriterBuilder};
use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A row-major `rows x cols` table.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix<T> {
    /// Number of rows (samples).
    pub rows: usize,
    /// Number of columns (features).
    pub cols: usize,
    /// `rows * cols` values, row-major.
    pub data: Vec<T>,
}

impl<T: Copy> Matrix<T> {
    /// Wraps row-major data; fails if the length does not match.
    pub fn new(rows: usize, cols: usize, data: Vec<T>) -> Result<Self> {
        if rows.checked_mul(cols) != Some(data.len()) {
            bail!("{} values do not fill a {rows} x {cols} matrix", data.len());
        }
        Ok(Self { rows, cols, data })
    }
    /// Row `r`.
    pub fn row(&self, r: usize) -> &[T] {
        &self.data[r * self.cols..(r + 1) * self.cols]
    }
    /// Keeps the listed columns, in that order.
    pub fn select_columns(&self, cols: &[usize]) -> Self {
        let data = (0..self.rows)
            .flat_map(|r| cols.iter().map(move |c| self.data[r * self.cols + c]))
            .collect();
        Self {
            rows: self.rows,
            cols: cols.len(),
            data,
        }
    }
    /// Converts each value.
    pub fn map<U>(&self, f: impl Fn(T) -> U) -> Matrix<U> {
        Matrix {
            rows: self.rows,
            cols: self.cols,
            data: self.data.iter().map(|v| f(*v)).collect(),
        }
    }
}

/// A numeric table as read from disk: float data keep their precision, integers become `f64`.
#[derive(Clone, Debug, PartialEq)]
pub enum Table {
    /// `float32` data.
    F32(Matrix<f32>),
    /// `float64` data, or integers converted exactly.
    F64(Matrix<f64>),
}

impl Table {
    /// Rows and columns.
    pub fn shape(&self) -> (usize, usize) {
        match self {
            Table::F32(m) => (m.rows, m.cols),
            Table::F64(m) => (m.rows, m.cols),
        }
    }
    /// As `f64` (exact for every type read).
    pub fn to_f64(&self) -> Matrix<f64> {
        match self {
            Table::F32(m) => m.map(f64::from),
            Table::F64(m) => m.clone(),
        }
    }
    /// As `f32` (rounding `f64` values to nearest).
    pub fn to_f32(&self) -> Matrix<f32> {
        match self {
            Table::F32(m) => m.clone(),
            Table::F64(m) => m.map(|v| v as f32),
        }
    }
    /// The storage type's name, as numpy spells it.
    pub fn dtype(&self) -> &'static str {
        match self {
            Table::F32(_) => "float32",
            Table::F64(_) => "float64",
        }
    }
}

/// Reads a `.npy` or `.csv` table, by extension.
pub fn read_table(path: &Path) -> Result<Table> {
    match extension(path).as_str() {
        "npy" => read_npy(path),
        "csv" => Ok(Table::F64(read_csv(path)?)),
        other => bail!(
            "{}: unsupported extension {other:?} (expected .npy or .csv)",
            path.display()
        ),
    }
}

fn extension(path: &Path) -> String {
    path.extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Reads a 1-D (as one column) or 2-D `.npy` array in C or Fortran order: `float32`, `float64`,
/// or any integer or boolean type (converted to `f64`, exactly for |value| < 2^53).
pub fn read_npy(path: &Path) -> Result<Table> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    read_npy_from(BufReader::new(file), &path.display().to_string())
}

/// Reads a `.npy` table from any reader; `name` labels error messages.
pub fn read_npy_from(reader: impl std::io::Read, name: &str) -> Result<Table> {
    let ctx = || name.to_string();
    let npy =
        npyz::NpyFile::new(reader).with_context(|| format!("{}: not a valid .npy file", ctx()))?;
    let shape = npy.shape().to_vec();
    let (rows, cols) = match shape[..] {
        [n] => (n as usize, 1),
        [n, d] => (n as usize, d as usize),
        _ => bail!(
            "{}: expected a 1-D or 2-D array, found shape {shape:?}",
            ctx()
        ),
    };
    let order = npy.order();
    let npyz::DType::Plain(ts) = npy.dtype() else {
        bail!(
            "{}: structured or array dtypes are not supported; expected a numeric array",
            ctx()
        );
    };
    let size = ts.size_field();
    macro_rules! ints {
        ($($s:literal => $t:ty),*) => {
            match size {
                $($s => npy.into_vec::<$t>()?.into_iter().map(|v| v as f64).collect::<Vec<f64>>(),)*
                _ => bail!("{}: unsupported integer size {size}", ctx()),
            }
        };
    }
    let table = match (ts.type_char(), size) {
        (TypeChar::Float, 4) => Table::F32(matrix(npy.into_vec::<f32>()?, rows, cols, order)?),
        (TypeChar::Float, 8) => Table::F64(matrix(npy.into_vec::<f64>()?, rows, cols, order)?),
        (TypeChar::Int, _) => Table::F64(matrix(
            ints!(1 => i8, 2 => i16, 4 => i32, 8 => i64),
            rows,
            cols,
            order,
        )?),
        (TypeChar::Uint, _) => Table::F64(matrix(
            ints!(1 => u8, 2 => u16, 4 => u32, 8 => u64),
            rows,
            cols,
            order,
        )?),
        (TypeChar::Bool, _) => Table::F64(matrix(
            npy.into_vec::<bool>()?
                .into_iter()
                .map(|b| b as u8 as f64)
                .collect(),
            rows,
            cols,
            order,
        )?),
        _ => bail!(
            "{}: unsupported dtype {ts}; expected float32, float64, integer or bool",
            ctx()
        ),
    };
    Ok(table)
}

fn matrix<T: Copy>(data: Vec<T>, rows: usize, cols: usize, order: Order) -> Result<Matrix<T>> {
    let m = Matrix::new(rows, cols, data)?;
    Ok(match order {
        Order::C => m,
        // Fortran order stores columns contiguously: transpose into row-major.
        Order::Fortran => {
            let data = (0..rows)
                .flat_map(|r| (0..cols).map(move |c| (r, c)))
                .map(|(r, c)| m.data[c * rows + r])
                .collect();
            Matrix { rows, cols, data }
        }
    })
}

/// Reads integer labels (`.npy` of any integer type, or a one-column `.csv`).
pub fn read_labels(path: &Path) -> Result<Vec<i64>> {
    let m = read_table(path)?.to_f64();
    if m.cols != 1 {
        bail!(
            "{}: labels must be one column, found {}",
            path.display(),
            m.cols
        );
    }
    m.data
        .iter()
        .enumerate()
        .map(|(i, v)| {
            if v.fract() == 0.0 && v.abs() < 9.0e15 {
                Ok(*v as i64)
            } else {
                bail!(
                    "{}: label at row {i} is not an integer: {v}",
                    path.display()
                )
            }
        })
        .collect()
}

/// Reads a numeric CSV file. The first line is taken as a header when any of its fields is not a
/// number; every other line must have the same number of numeric fields.
pub fn read_csv(path: &Path) -> Result<Matrix<f64>> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .trim(csv::Trim::All)
        .from_reader(BufReader::new(file));
    let mut data = Vec::new();
    let mut cols = None;
    let mut rows = 0usize;
    for (line, record) in reader.records().enumerate() {
        let record = record.map_err(|e| match e.kind() {
            csv::ErrorKind::UnequalLengths {
                expected_len, len, ..
            } => anyhow::anyhow!(
                "{}: line {} has {len} fields, expected {expected_len} (ragged rows)",
                path.display(),
                line + 1
            ),
            _ => anyhow::anyhow!("{}: line {}: {e}", path.display(), line + 1),
        })?;
        let parsed: Vec<Option<f64>> = record.iter().map(|f| f.parse::<f64>().ok()).collect();
        if line == 0 && parsed.iter().any(Option::is_none) {
            cols = Some(record.len()); // header
            continue;
        }
        if let Some(c) = parsed.iter().position(Option::is_none) {
            bail!(
                "{}: line {}, column {}: {:?} is not a number",
                path.display(),
                line + 1,
                c,
                &record[c]
            );
        }
        data.extend(parsed.into_iter().flatten());
        cols = Some(record.len());
        rows += 1;
    }
    let Some(cols) = cols.filter(|_| rows > 0) else {
        bail!("{}: no data rows", path.display());
    };
    Matrix::new(rows, cols, data)
}

/// Writes `path` by way of a temporary file in the same directory and a rename.
pub fn write_atomic(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<()>,
) -> Result<()> {
    let tmp = temp_path(path);
    let result = (|| {
        let file =
            File::create(&tmp).with_context(|| format!("cannot create {}", tmp.display()))?;
        let mut w = BufWriter::new(file);
        write(&mut w)?;
        w.flush()?;
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path).with_context(|| format!("cannot write {}", path.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

fn temp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp{}", std::process::id()))
}

/// Writes a 2-D `.npy` (C order) of `f32` or `f64`.
pub fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, m: &Matrix<T>) -> Result<()> {
    write_atomic(path, |w| {
        let mut out = npyz::WriteOptions::new()
            .default_dtype()
            .shape(&[m.rows as u64, m.cols as u64])
            .writer(w)
            .begin_nd()?;
        out.extend(m.data.iter().copied())?;
        out.finish()?;
        Ok(())
    })
}

/// Writes pretty JSON.
pub fn write_json(path: &Path, value: &serde_json::Value) -> Result<()> {
    write_atomic(path, |w| {
        serde_json::to_writer_pretty(&mut *w, value)?;
        writeln!(w)?;
        Ok(())
    })
}

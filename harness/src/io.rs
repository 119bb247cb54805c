//! Reading `.npy` / `.csv` tables and writing `.npy` / JSON, atomically.
//!
//! Every reader fails with a message that names the file and, where it applies, the row and
//! column, and checks a file's declared size against its length before allocating. A large
//! row-major float `.npy` file is mapped rather than read ([`Values`]). Writers go
//! through [`crate::output`]: a temporary file beside the target, renamed into place.

use anyhow::{Context, Result, bail};
use npyz::{Order, TypeChar, WriterBuilder};
use std::fs::File;
use std::io::{BufReader, Write};
use std::path::Path;

/// A row-major `rows x cols` table.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix<T> {
    /// Number of rows (samples).
    pub rows: usize,
    /// Number of columns (features).
    pub cols: usize,
    /// `rows * cols` values, row-major.
    pub data: Values<T>,
}

/// The values of a [`Matrix`]: a vector, or the bytes of a `.npy` file mapped into memory
/// ([`read_npy`]). Both are slices ([`Deref`](std::ops::Deref)); [`into_vec`](Self::into_vec)
/// copies a mapped file's values into a vector.
///
/// A mapped table costs no allocation and no copy: its pages are the file's, already in the page
/// cache after a recent write or read, where reading into a new buffer had the kernel zero
/// 40 MB of fresh pages and then copy the file into them (a fifth of `unmix whiten`'s time at
/// 2e4 x 256). The map is read-only: [`DerefMut`](std::ops::DerefMut) first copies the values
/// into a vector, so nothing reaches the file. As with every program that maps its input (numpy's
/// `mmap_mode`, ripgrep), another process that rewrites the file while the command runs may show
/// it part of the change, and one that truncates it ends the process with `SIGBUS`.
pub enum Values<T> {
    /// Values in a vector.
    Owned(Vec<T>),
    /// `len` values at byte `offset` of a read-only map of a file, aligned for `T`.
    Mapped(Mapped<T>),
}

/// `len` values of `T` at byte `offset` of `map`; built only by `Mapped::new`, which checks
/// the range and the alignment.
pub struct Mapped<T> {
    map: memmap2::Mmap,
    offset: usize,
    len: usize,
    _values: std::marker::PhantomData<T>,
}

impl<T: NpyFloat> Mapped<T> {
    /// The `len` values at byte `offset` of `map`, if they lie inside it and `offset` is
    /// aligned for `T` (the map starts on a page).
    fn new(map: memmap2::Mmap, offset: usize, len: usize) -> Option<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>())?;
        let aligned = (map.as_ptr() as usize + offset).is_multiple_of(std::mem::align_of::<T>());
        (aligned && offset.checked_add(bytes)? <= map.len()).then_some(Self {
            map,
            offset,
            len,
            _values: std::marker::PhantomData,
        })
    }
}

impl<T> std::ops::Deref for Values<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Values::Owned(v) => v,
            // SAFETY: `Mapped::new` checked that `len` values of `T` from `offset` lie inside
            // the map and are aligned; `T` is `f32` or `f64` (`NpyFloat`), for which every bit
            // pattern is a value; the map lives as long as `self`.
            Values::Mapped(m) => unsafe {
                std::slice::from_raw_parts(m.map.as_ptr().add(m.offset).cast::<T>(), m.len)
            },
        }
    }
}

impl<T: Clone> std::ops::DerefMut for Values<T> {
    /// The values to change: a mapped file's are first copied into a vector (the map is
    /// read-only).
    fn deref_mut(&mut self) -> &mut [T] {
        if let Values::Mapped(_) = self {
            *self = Values::Owned(self.to_vec());
        }
        match self {
            Values::Owned(v) => v,
            Values::Mapped(_) => unreachable!("replaced by a vector above"),
        }
    }
}

impl<T> Values<T> {
    /// Whether the values are a file's mapped pages, which [`release`](Self::release) can
    /// hand back to the page cache.
    pub fn is_mapped(&self) -> bool {
        matches!(self, Values::Mapped(_))
    }

    /// Takes the whole pages under values `range` out of this process's memory, when mapped
    /// (else does nothing): they stay in the page cache, and reading them again maps them back
    /// from there, with the same values. A fit that has read its rows into white rows releases
    /// them as it goes, so that the white rows can all be stored within the memory bound
    /// ([`crate::fastica::PoolExecutor::releasing`]).
    pub fn release(&self, range: std::ops::Range<usize>) {
        #[cfg(unix)]
        if let Values::Mapped(m) = self {
            let size = std::mem::size_of::<T>();
            let (start, end) = (range.start.min(m.len), range.end.min(m.len));
            // Whole pages only (the map starts on one): the pages at either end may hold values
            // outside `range`.
            let page = page_size();
            let first = (m.offset + start * size).next_multiple_of(page);
            let last = (m.offset + end * size) / page * page;
            if first < last {
                // SAFETY: a read-only shared map of a file: MADV_DONTNEED drops this process's
                // mappings of the pages, and the next read maps the file's pages again, so every
                // value read stays the file's (the condition `Values` documents for any map).
                // The range lies inside the map (`Mapped::new` checked `offset + len * size`).
                // A failure releases nothing and changes nothing.
                let _ = unsafe {
                    m.map.unchecked_advise_range(
                        memmap2::UncheckedAdvice::DontNeed,
                        first,
                        last - first,
                    )
                };
            }
        }
        #[cfg(not(unix))]
        let _ = range;
    }

    /// [`release`](Self::release) of the values under `piece`, a piece of these values (else
    /// nothing is released).
    pub fn release_piece(&self, piece: &[T]) {
        let start = (piece.as_ptr() as usize).wrapping_sub(self.as_ptr() as usize)
            / std::mem::size_of::<T>().max(1);
        if start < self.len() {
            self.release(start..start + piece.len());
        }
    }
}

/// The system's page size (4096 where it cannot be read).
#[cfg(unix)]
fn page_size() -> usize {
    static PAGE: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    // SAFETY: sysconf only reads a constant of the system.
    let read = || usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) });
    *PAGE.get_or_init(|| read().unwrap_or(4096).max(1))
}

impl<T: Clone> Values<T> {
    /// The values in a vector (a copy when mapped).
    pub fn into_vec(self) -> Vec<T> {
        match self {
            Values::Owned(v) => v,
            Values::Mapped(_) => self.to_vec(),
        }
    }
}

impl<T> From<Vec<T>> for Values<T> {
    fn from(v: Vec<T>) -> Self {
        Values::Owned(v)
    }
}

impl<T> FromIterator<T> for Values<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Values::Owned(iter.into_iter().collect())
    }
}

impl<T: Clone> Clone for Values<T> {
    fn clone(&self) -> Self {
        Values::Owned(self.to_vec())
    }
}

impl<T: std::fmt::Debug> std::fmt::Debug for Values<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: PartialEq> PartialEq for Values<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<'a, T> IntoIterator for &'a Values<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<T: Copy> Matrix<T> {
    /// Wraps row-major data; fails if the length does not match.
    pub fn new(rows: usize, cols: usize, data: Vec<T>) -> Result<Self> {
        Self::from_values(rows, cols, data.into())
    }
    /// Wraps row-major values (a vector or a mapped file); fails if the length does not match.
    pub fn from_values(rows: usize, cols: usize, data: Values<T>) -> Result<Self> {
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
    /// Converts each value into a vector, releasing a mapped file's pages as they are read
    /// ([`Values::release`]), so that the file and its copy are not both in memory: `--dtype
    /// f64` on a float32 file of 1e6 x 8 (32 MB) peaked at 99 MB, the file and its 64 MB copy.
    pub fn convert<U>(self, f: impl Fn(T) -> U) -> Matrix<U> {
        Matrix {
            rows: self.rows,
            cols: self.cols,
            data: self.converted_releasing(f).into(),
        }
    }
    /// [`Self::convert`]'s values, leaving `self` released (its values read back the same).
    fn converted_releasing<U>(&self, f: impl Fn(T) -> U) -> Vec<U> {
        // Values a step: 1 or 2 MB of the file, many pages and little held at once.
        const STEP: usize = 1 << 18;
        let mut data = Vec::with_capacity(self.data.len());
        for (i, step) in self.data.chunks(STEP).enumerate() {
            data.extend(step.iter().map(|v| f(*v)));
            // From the step before: the page across the boundary is released once both
            // steps are read.
            self.data
                .release(i.saturating_sub(1) * STEP..i * STEP + step.len());
        }
        data
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
    /// As `f64`, without a copy when the table already is (the commands' inputs: a copy of the
    /// whole input would double the peak memory), else converted as
    /// [`Matrix::convert`] does, releasing a mapped file as it is read.
    pub fn into_f64(self) -> Matrix<f64> {
        match self {
            Table::F32(m) => m.convert(f64::from),
            Table::F64(m) => m,
        }
    }
    /// As `f32`, without a copy when the table already is, else as [`Self::into_f64`].
    pub fn into_f32(self) -> Matrix<f32> {
        match self {
            Table::F32(m) => m,
            Table::F64(m) => m.convert(|v| v as f32),
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
    Ok(read_table_described(path)?.0)
}

/// Reads a `.npy` or `.csv` table and names the type stored in the file (`"int64"`, `"float32"`,
/// `"csv"`...), which may differ from the table's (integers are read as `f64`).
pub fn read_table_described(path: &Path) -> Result<(Table, String)> {
    match extension(path).as_str() {
        "npy" => {
            let (raw, dtype) = read_npy_raw(path)?;
            Ok((raw.into_table(), dtype))
        }
        "csv" => Ok((Table::F64(read_csv(path)?), "csv (read as float64)".into())),
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
    Ok(read_npy_raw(path)?.0.into_table())
}

fn read_npy_raw(path: &Path) -> Result<(Raw, String)> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let meta = file.metadata().ok();
    if meta
        .as_ref()
        .is_some_and(|m| m.is_file() && m.len() >= MAP_MIN_BYTES)
        && let Some(mapped) = map_npy(&file)
    {
        return Ok(mapped);
    }
    let len = meta.map(|m| m.len());
    read_npy_inner(BufReader::new(file), &path.display().to_string(), len)
}

/// From this many bytes a `.npy` file is mapped ([`Values::Mapped`]) rather than read.
pub const MAP_MIN_BYTES: u64 = 1 << 20;

/// The table in `file` as a read-only map of its pages, when it holds little-endian `float32` or
/// `float64` values in row-major order that lie whole inside the file (the rows of a C-order
/// array, or one row or column in either order). `None` leaves everything else (integers, other
/// byte orders, Fortran order, a truncated or malformed file, a map the system refuses) to
/// [`read_npy_inner`], which converts, transposes or explains.
fn map_npy(file: &File) -> Option<(Raw, String)> {
    // SAFETY: a read-only map of a file opened for reading; see `Values` on another process
    // changing the file meanwhile. Populated up front: one call instead of a fault per page.
    let map = unsafe { memmap2::MmapOptions::new().populate().map(file) }.ok()?;
    // The data start after the magic (6 bytes), the version (2), the header's length (2 bytes
    // in version 1, 4 in versions 2 and 3) and the header.
    let offset = match map.get(6)? {
        1 => 10 + usize::from(u16::from_le_bytes(map.get(8..10)?.try_into().ok()?)),
        2 | 3 => 12 + usize::try_from(u32::from_le_bytes(map.get(8..12)?.try_into().ok()?)).ok()?,
        _ => return None,
    };
    let mut rest: &[u8] = &map;
    let header = npyz::NpyHeader::from_reader(&mut rest).ok()?;
    let layout = Layout::of(&header, "").ok()?;
    let (rows, cols) = (
        usize::try_from(layout.rows).ok()?,
        usize::try_from(layout.cols).ok()?,
    );
    let ts = &layout.ts;
    let row_major = layout.order == Order::C || rows <= 1 || cols <= 1;
    if map.len() - rest.len() != offset
        || ts.type_char() != TypeChar::Float
        || ts.endianness() != npyz::Endianness::Little
        || !cfg!(target_endian = "little")
        || !row_major
    {
        return None;
    }
    fn mapped<T: NpyFloat>(
        map: memmap2::Mmap,
        offset: usize,
        rows: usize,
        cols: usize,
    ) -> Option<Matrix<T>> {
        let values = Mapped::new(map, offset, rows.checked_mul(cols)?)?;
        Matrix::from_values(rows, cols, Values::Mapped(values)).ok()
    }
    let raw = match ts.size_field() {
        4 => Raw::F32(mapped(map, offset, rows, cols)?),
        8 => Raw::F64(mapped(map, offset, rows, cols)?),
        _ => return None,
    };
    Some((raw, layout.dtype))
}

/// What a `.npy` header says about its table: shape (a 1-D array is one column), order and
/// element type, with the type's numpy name (`float64`, `int32`, ...). An error for what no
/// reader here takes: other shapes, structured dtypes, complex numbers, strings.
struct Layout {
    rows: u64,
    cols: u64,
    order: Order,
    ts: npyz::TypeStr,
    dtype: String,
}

impl Layout {
    /// The layout in `header`; `name` labels the errors.
    fn of(header: &npyz::NpyHeader, name: &str) -> Result<Self> {
        let shape = header.shape();
        let (rows, cols) = match shape[..] {
            [n] => (n, 1),
            [n, d] => (n, d),
            _ => bail!("{name}: expected a 1-D or 2-D array, found shape {shape:?}"),
        };
        let npyz::DType::Plain(ts) = header.dtype() else {
            bail!("{name}: structured or array dtypes are not supported; expected a numeric array");
        };
        let size = ts.size_field();
        let dtype = match ts.type_char() {
            TypeChar::Float => format!("float{}", size * 8),
            TypeChar::Int => format!("int{}", size * 8),
            TypeChar::Uint => format!("uint{}", size * 8),
            TypeChar::Bool => "bool".to_string(),
            _ => {
                bail!("{name}: unsupported dtype {ts}; expected float32, float64, integer or bool")
            }
        };
        Ok(Self {
            rows,
            cols,
            order: header.order(),
            ts,
            dtype,
        })
    }
}

/// Reads a `.npy` table from any reader; `name` labels error messages.
pub fn read_npy_from(reader: impl std::io::Read, name: &str) -> Result<Table> {
    Ok(read_npy_inner(reader, name, None)?.0.into_table())
}

/// Values as stored: floats keep their type, integers (and booleans) are held exactly.
enum Raw {
    F32(Matrix<f32>),
    F64(Matrix<f64>),
    Int(Matrix<i128>),
}

impl Raw {
    fn into_table(self) -> Table {
        match self {
            Raw::F32(m) => Table::F32(m),
            Raw::F64(m) => Table::F64(m),
            Raw::Int(m) => Table::F64(m.map(|v| v as f64)),
        }
    }
}

/// `available`: the file's length, when known. The header's shape is checked against it before
/// anything is allocated, so a 1 KB file cannot ask for 1 TB.
fn read_npy_inner(
    reader: impl std::io::Read,
    name: &str,
    available: Option<u64>,
) -> Result<(Raw, String)> {
    let mut reader = reader;
    let header = npyz::NpyHeader::from_reader(&mut reader)
        .with_context(|| format!("{name}: not a valid .npy file"))?;
    let Layout {
        rows,
        cols,
        order,
        ts,
        dtype,
    } = Layout::of(&header, name)?;
    let size = ts.size_field();
    let bytes = rows
        .checked_mul(cols)
        .and_then(|v| v.checked_mul(size.max(1)));
    match (bytes, available) {
        (None, _) => bail!("{name}: shape {rows} x {cols} is too large"),
        (Some(b), Some(len)) if b > len => bail!(
            "{name}: truncated: the header promises {rows} x {cols} {dtype} ({b} bytes) but the \
             file holds {len} bytes"
        ),
        _ => {}
    }
    let (rows, cols) = (
        usize::try_from(rows).context("shape too large")?,
        usize::try_from(cols).context("shape too large")?,
    );
    let truncated = || format!("{name}: truncated: cannot read the {rows} x {cols} {dtype} values");
    // Little-endian floats are read as bytes, a chunk at a time; the rest through npyz.
    let little = ts.endianness() == npyz::Endianness::Little;
    let raw = match (ts.type_char(), size) {
        // Read straight into row-major order (Fortran order too), so the values are held once.
        (TypeChar::Float, 4) if little => Raw::F32(Matrix::new(
            rows,
            cols,
            read_floats(&mut reader, rows, cols, order, f32::from_le_bytes)
                .with_context(truncated)?,
        )?),
        (TypeChar::Float, 8) if little => Raw::F64(Matrix::new(
            rows,
            cols,
            read_floats(&mut reader, rows, cols, order, f64::from_le_bytes)
                .with_context(truncated)?,
        )?),
        _ => {
            let npy = npyz::NpyFile::with_header(header.clone(), reader);
            macro_rules! ints {
                ($($s:literal => $t:ty),*) => {
                    match size {
                        $($s => npy.into_vec::<$t>().with_context(truncated)?
                            .into_iter().map(i128::from).collect::<Vec<i128>>(),)*
                        _ => bail!("{name}: unsupported integer size {size}"),
                    }
                };
            }
            match (ts.type_char(), size) {
                (TypeChar::Float, 4) => Raw::F32(matrix(
                    npy.into_vec::<f32>().with_context(truncated)?,
                    rows,
                    cols,
                    order,
                )?),
                (TypeChar::Float, 8) => Raw::F64(matrix(
                    npy.into_vec::<f64>().with_context(truncated)?,
                    rows,
                    cols,
                    order,
                )?),
                (TypeChar::Int, _) => Raw::Int(matrix(
                    ints!(1 => i8, 2 => i16, 4 => i32, 8 => i64),
                    rows,
                    cols,
                    order,
                )?),
                (TypeChar::Uint, _) => Raw::Int(matrix(
                    ints!(1 => u8, 2 => u16, 4 => u32, 8 => u64),
                    rows,
                    cols,
                    order,
                )?),
                (TypeChar::Bool, _) => Raw::Int(matrix(
                    npy.into_vec::<bool>()
                        .with_context(truncated)?
                        .into_iter()
                        .map(i128::from)
                        .collect(),
                    rows,
                    cols,
                    order,
                )?),
                _ => bail!(
                    "{name}: unsupported dtype {ts}; expected float32, float64, integer or bool"
                ),
            }
        }
    };
    Ok((raw, dtype))
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

/// Reads integer labels: a `.npy` of any integer or boolean type (read exactly: any `int64`
/// value, and `uint64` up to `i64::MAX`), a float `.npy` or a one-column `.csv` whose values are
/// whole numbers (exact up to 2^53, as floats are).
pub fn read_labels(path: &Path) -> Result<Vec<i64>> {
    let name = path.display();
    let column = |cols: usize| -> Result<()> {
        if cols != 1 {
            bail!("{name}: labels must be one column, found {cols}");
        }
        Ok(())
    };
    if extension(path) == "npy"
        && let (Raw::Int(m), _) = read_npy_raw(path)?
    {
        column(m.cols)?;
        return m
            .data
            .iter()
            .enumerate()
            .map(|(i, v)| {
                i64::try_from(*v)
                    .with_context(|| format!("{name}: label at row {i} ({v}) exceeds int64"))
            })
            .collect();
    }
    let m = read_table(path)?.to_f64();
    column(m.cols)?;
    m.data
        .iter()
        .enumerate()
        .map(|(i, v)| {
            // 2^63 itself does not fit; every float below it that is whole does.
            if v.fract() == 0.0 && v.abs() < 9_223_372_036_854_775_808.0 {
                Ok(*v as i64)
            } else {
                bail!("{name}: label at row {i} is not an integer: {v}")
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

/// Writes a 2-D `.npy` (C order) of `f32` or `f64` to `path`, atomically. Commands write their
/// outputs through [`crate::output::Outputs`] instead, which also checks them against the inputs.
pub fn write_npy<T: npyz::AutoSerialize + Copy + 'static>(
    path: &Path,
    m: &Matrix<T>,
) -> Result<()> {
    crate::output::write_atomic(path, |w| write_npy_to(w, m))
}

/// Writes pretty JSON to `path`, atomically.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<()> {
    crate::output::write_atomic(path, |w| write_json_to(w, value))
}

/// Writes a 2-D `.npy` (C order) of `f32` or `f64`.
pub fn write_npy_to<T: npyz::AutoSerialize + Copy + 'static>(
    w: &mut impl Write,
    m: &Matrix<T>,
) -> Result<()> {
    let any = m as &dyn std::any::Any;
    if let Some(m) = any.downcast_ref::<Matrix<f64>>() {
        return write_floats(w, m);
    }
    if let Some(m) = any.downcast_ref::<Matrix<f32>>() {
        return write_floats(w, m);
    }
    let mut out = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[m.rows as u64, m.cols as u64])
        .writer(w)
        .begin_nd()?;
    out.extend(m.data.iter().copied())?;
    out.finish()?;
    Ok(())
}

/// Bytes converted per `write_all` by the float writers and readers.
const IO_CHUNK: usize = 1 << 16;

/// The `.npy` version 1.0 header of a C-order `rows x cols` array of `descr`: magic, version,
/// length, then the dict padded with spaces to a multiple of 64 bytes and ended by a newline.
pub fn npy_header(descr: &str, rows: usize, cols: usize) -> Vec<u8> {
    let mut dict =
        format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    let unpadded = 10 + dict.len() + 1;
    dict.extend(std::iter::repeat_n(
        ' ',
        unpadded.next_multiple_of(64) - unpadded,
    ));
    dict.push('\n');
    let mut header = b"\x93NUMPY\x01\x00".to_vec();
    header.extend((dict.len() as u16).to_le_bytes());
    header.extend(dict.as_bytes());
    header
}

/// Writes a float matrix as little-endian bytes, [`IO_CHUNK`] bytes per write: npyz's writer
/// takes one call per value (80 instructions each), this one a few per byte.
fn write_floats<T: NpyFloat>(w: &mut impl Write, m: &Matrix<T>) -> Result<()> {
    let mut out = NpyRows::begin(w, m.rows, m.cols)?;
    out.push(&m.data)?;
    out.finish()
}

/// A float type the `.npy` readers and writers move as little-endian bytes: `f32` and `f64`
/// only (plain data: every bit pattern is a value, no padding).
pub trait NpyFloat: Copy + 'static {
    /// numpy's type string (`"<f8"`).
    const DESCR: &'static str;
    /// Appends the value's little-endian bytes.
    fn put(self, buf: &mut Vec<u8>);
    /// The values' memory as bytes (their little-endian encoding on a little-endian machine).
    fn as_bytes(v: &[Self]) -> &[u8];
    /// The values' memory as bytes, writable.
    fn as_bytes_mut(v: &mut [Self]) -> &mut [u8];
}

macro_rules! npy_float {
    ($t:ty, $descr:literal) => {
        impl NpyFloat for $t {
            const DESCR: &'static str = $descr;
            fn put(self, buf: &mut Vec<u8>) {
                buf.extend_from_slice(&self.to_le_bytes());
            }
            fn as_bytes(v: &[Self]) -> &[u8] {
                // SAFETY: a float has no padding and alignment 4 or 8 >= 1; the bytes cover
                // exactly the slice's memory, borrowed for as long as the slice.
                unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), size_of_val(v)) }
            }
            fn as_bytes_mut(v: &mut [Self]) -> &mut [u8] {
                // SAFETY: as above, and every bit pattern written through the bytes is a float.
                unsafe {
                    std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), size_of_val(v))
                }
            }
        }
    };
}
npy_float!(f64, "<f8");
npy_float!(f32, "<f4");

/// A 2-D C-order `.npy` written a block of rows at a time, so that an output (sources, whitened
/// data) never needs to be held whole: the header first, then [`push`](Self::push) rows in
/// order, then [`finish`](Self::finish), which fails unless exactly the promised rows came. The
/// bytes are those of [`write_npy_to`] on the whole matrix.
pub struct NpyRows<'w, W: Write, T> {
    w: &'w mut W,
    cols: usize,
    remaining: usize,
    buf: Vec<u8>,
    _t: std::marker::PhantomData<T>,
}

impl<'w, W: Write, T: NpyFloat> NpyRows<'w, W, T> {
    /// Writes the header of a `rows x cols` array.
    pub fn begin(w: &'w mut W, rows: usize, cols: usize) -> Result<Self> {
        w.write_all(&npy_header(T::DESCR, rows, cols))?;
        Ok(Self {
            w,
            cols,
            remaining: rows.checked_mul(cols).context("shape too large")?,
            buf: Vec::with_capacity(IO_CHUNK),
            _t: std::marker::PhantomData,
        })
    }
    /// Writes the next whole rows.
    pub fn push(&mut self, values: &[T]) -> Result<()> {
        if !values.len().is_multiple_of(self.cols.max(1)) || values.len() > self.remaining {
            bail!(
                "internal: {} values are not whole rows of {} or exceed the {} left",
                values.len(),
                self.cols,
                self.remaining
            );
        }
        if cfg!(target_endian = "little") {
            // The values' memory is their encoding: one write, no conversion copy.
            self.w.write_all(T::as_bytes(values))?;
        } else {
            let per_write = (IO_CHUNK / std::mem::size_of::<T>()).max(1);
            for chunk in values.chunks(per_write) {
                self.buf.clear();
                for v in chunk {
                    v.put(&mut self.buf);
                }
                self.w.write_all(&self.buf)?;
            }
        }
        self.remaining -= values.len();
        Ok(())
    }
    /// Checks that every promised row was written.
    pub fn finish(self) -> Result<()> {
        if self.remaining != 0 {
            bail!(
                "internal: {} values of the array were not written",
                self.remaining
            );
        }
        Ok(())
    }
}

/// Reads `rows x cols` little-endian floats of `B` bytes stored in `order`, [`IO_CHUNK`] bytes
/// per read, into a row-major vector: Fortran order is transposed while reading, so that the
/// table is held once (a transpose after reading held it twice).
fn read_floats<T: NpyFloat, const B: usize>(
    r: &mut impl std::io::Read,
    rows: usize,
    cols: usize,
    order: Order,
    from_le: fn([u8; B]) -> T,
) -> std::io::Result<Vec<T>> {
    let len = rows * cols;
    #[cfg(target_endian = "little")]
    if order == Order::C || rows <= 1 || cols <= 1 {
        // The file's bytes are the values' memory: read them in place, no conversion copy.
        let mut out = zeroed(len, from_le([0; B]));
        r.read_exact(T::as_bytes_mut(&mut out))?;
        return Ok(out);
    }
    let mut buf = vec![0u8; IO_CHUNK];
    fn values<'a, T: 'a, const B: usize>(
        bytes: &'a [u8],
        from_le: fn([u8; B]) -> T,
    ) -> impl Iterator<Item = T> + 'a {
        bytes
            .chunks_exact(B)
            .map(move |c| from_le(c.try_into().expect("B bytes")))
    }
    if order == Order::C || rows <= 1 || cols <= 1 {
        let mut out = Vec::with_capacity(len);
        advise_huge_pages(&mut out);
        while out.len() < len {
            let bytes = ((len - out.len()) * B).min(IO_CHUNK / B * B);
            r.read_exact(&mut buf[..bytes])?;
            out.extend(values(&buf[..bytes], from_le));
        }
        return Ok(out);
    }
    let mut out = Vec::with_capacity(len);
    advise_huge_pages(&mut out);
    out.resize(len, from_le([0; B]));
    let mut done = 0;
    while done < len {
        let bytes = ((len - done) * B).min(IO_CHUNK / B * B);
        r.read_exact(&mut buf[..bytes])?;
        for v in values(&buf[..bytes], from_le) {
            // Value `done` of the file is row `done % rows` of column `done / rows`.
            out[(done % rows) * cols + done / rows] = v;
            done += 1;
        }
    }
    Ok(out)
}

/// Asks Linux to back the (still untouched) capacity of `v` with transparent huge pages where
/// the system allows it on request (`madvise` mode, the common default): a table is then faulted
/// in 2 MB at a time instead of 4 KB, which took a quarter of `unmix whiten`'s time at
/// 2e4 x 256 (10 000 page faults). Only a hint: nothing changes where it is refused.
pub fn advise_huge_pages<T>(v: &mut Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let bytes = v.capacity() * std::mem::size_of::<T>();
        if bytes < 4 << 20 {
            return;
        }
        let start = (v.as_mut_ptr() as usize).next_multiple_of(PAGE);
        let end = (v.as_mut_ptr() as usize + bytes) / PAGE * PAGE;
        if end > start {
            // SAFETY: the range lies inside the vector's allocation, which outlives the call;
            // MADV_HUGEPAGE changes how pages are backed, never their contents.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// `len` zeros in a vector advised to huge pages ([`advise_huge_pages`]).
///
/// The pages are touched only as the values are written: `vec!` of a zero float asks the
/// allocator for zeroed memory, which is fresh pages of zeros from the system for large
/// vectors. The white rows of a fit that releases its input as it whitens
/// ([`crate::fastica::PoolExecutor::releasing`]) then grow as the input shrinks; writing the
/// zeros first had both whole at once (97 against 76 MB at 2e4 x 256).
pub fn zeroed<T: Clone>(len: usize, zero: T) -> Vec<T> {
    let mut v = vec![zero; len];
    advise_huge_pages(&mut v);
    v
}

/// Writes pretty JSON and a final newline.
pub fn write_json_to(w: &mut impl Write, value: &impl serde::Serialize) -> Result<()> {
    serde_json::to_writer_pretty(&mut *w, value)?;
    writeln!(w)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The byte writers' files read back exactly, through npyz's element reader as well as ours,
    /// at sizes around the chunk length, and their headers are 64-byte aligned.
    #[test]
    fn float_files_round_trip_through_npyz() {
        for (rows, cols) in [(1, 1), (3, 7), (IO_CHUNK / 8 + 1, 3), (1000, 1)] {
            let x: Vec<f64> = (0..rows * cols).map(|i| (i as f64).sin() * 1e3).collect();
            let m = Matrix::new(rows, cols, x.clone()).unwrap();
            let mut bytes = Vec::new();
            write_npy_to(&mut bytes, &m).unwrap();
            let header = bytes.len() - 8 * rows * cols;
            assert_eq!(header % 64, 0, "header of {header} bytes");
            let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
            assert_eq!(npy.shape(), &[rows as u64, cols as u64]);
            assert_eq!(npy.into_vec::<f64>().unwrap(), x);
            let Table::F64(back) = read_npy_from(&bytes[..], "t").unwrap() else {
                panic!("not f64")
            };
            assert_eq!(back, m);
            let m32 = m.map(|v| v as f32);
            let mut bytes = Vec::new();
            write_npy_to(&mut bytes, &m32).unwrap();
            let npy = npyz::NpyFile::new(&bytes[..]).unwrap();
            assert_eq!(npy.into_vec::<f32>().unwrap(), *m32.data);
            let Table::F32(back) = read_npy_from(&bytes[..], "t").unwrap() else {
                panic!("not f32")
            };
            assert_eq!(back, m32);
        }
    }

    /// `x` (`rows x cols`) written to a `.npy` file in `dir` and read back (mapped, when large).
    fn written_and_read<T: npyz::AutoSerialize + Copy + 'static>(
        dir: &Path,
        rows: usize,
        cols: usize,
        x: &[T],
    ) -> Table {
        let path = dir.join("x.npy");
        write_npy(&path, &Matrix::new(rows, cols, x.to_vec()).unwrap()).unwrap();
        read_npy(&path).unwrap()
    }

    /// Released pages of a mapped table read back with the file's values, whatever the range
    /// (pages cut at either end, ranges past the end, empty); a vector ignores it.
    #[test]
    fn released_pages_read_back_the_same_values() {
        let dir = tempfile::tempdir().unwrap();
        let (rows, cols) = (3000, 70);
        let x: Vec<f64> = (0..rows * cols).map(|i| (i as f64 * 0.61).cos()).collect();
        let m = written_and_read(dir.path(), rows, cols, &x).into_f64();
        assert!(m.data.is_mapped());
        for range in [
            0..1000,
            513..70_000,
            150_000..10_000_000,
            7..7,
            0..rows * cols,
        ] {
            m.data.release(range.clone());
            assert!(m.data[..] == x[..], "after releasing {range:?}");
        }
        // Released, the map holds no page in this process but the one with the header.
        #[cfg(target_os = "linux")]
        {
            let before = mapped_kb(m.data.as_ptr() as usize);
            m.data.release(0..rows * cols);
            let after = mapped_kb(m.data.as_ptr() as usize);
            assert!(
                before >= 1600 && after <= 8,
                "{before} kB resident, {after} kB released"
            );
        }
        let owned = Values::Owned(x.clone());
        assert!(!owned.is_mapped());
        owned.release(0..x.len());
        assert!(owned[..] == x[..]);
    }

    /// A mapped table converted to the other type gives the exact conversions and leaves its
    /// file's pages released, so that the file and the copy are not both held.
    #[test]
    fn conversions_release_the_file_as_they_read_it() {
        let dir = tempfile::tempdir().unwrap();
        let (rows, cols) = (2000, 300);
        let x: Vec<f32> = (0..rows * cols).map(|i| (i as f32 * 0.37).sin()).collect();
        let m = written_and_read(dir.path(), rows, cols, &x).into_f32();
        assert!(m.data.is_mapped());
        let wide = m.converted_releasing(f64::from);
        assert!(wide.iter().zip(&x).all(|(w, v)| *w == f64::from(*v)));
        // Every page read was released but the header's and the last, which hold other bytes.
        #[cfg(target_os = "linux")]
        {
            let resident = mapped_kb(m.data.as_ptr() as usize);
            assert!(resident <= 8, "{resident} kB of 2400 kB still resident");
        }
        let converted = Table::F32(m).into_f64();
        assert_eq!((converted.rows, converted.cols), (rows, cols));
        assert!(converted.data[..] == wide[..]);
        let back = Table::F64(converted).into_f32();
        assert!(back.data[..] == x[..]);
    }

    /// The kB of the map holding `address` that are in this process's memory (`Rss` of
    /// `/proc/self/smaps`).
    #[cfg(target_os = "linux")]
    fn mapped_kb(address: usize) -> usize {
        let smaps = std::fs::read_to_string("/proc/self/smaps").unwrap();
        let mut inside = false;
        for line in smaps.lines() {
            let range = line
                .split_whitespace()
                .next()
                .and_then(|r| r.split_once('-'));
            if let Some((lo, hi)) = range.filter(|_| !line.ends_with(" kB")) {
                let parse = |v| usize::from_str_radix(v, 16).ok();
                inside = matches!((parse(lo), parse(hi)), (Some(lo), Some(hi)) if lo <= address && address < hi);
            } else if inside && let Some(kb) = line.strip_prefix("Rss:") {
                return kb.trim().trim_end_matches("kB").trim().parse().unwrap();
            }
        }
        panic!("no map holds {address:#x}")
    }

    #[test]
    fn release_of_a_vector_changes_nothing() {
        let x: Vec<f64> = (0..5000).map(f64::from).collect();
        let owned = Values::Owned(x.clone());
        owned.release(0..x.len());
        assert!(owned[..] == x[..]);
    }

    /// From [`MAP_MIN_BYTES`] a row-major float file is mapped, and gives the values the reader
    /// gives; Fortran order is still read (and transposed); a truncated file is still an error;
    /// changing a mapped table copies it and leaves the file alone.
    #[test]
    fn large_float_files_are_mapped_with_the_values_read() {
        let dir = tempfile::tempdir().unwrap();
        let (rows, cols) = (600, 500);
        let x: Vec<f64> = (0..rows * cols)
            .map(|i| (i as f64 * 0.37).sin() * 1e3)
            .collect();
        let m = Matrix::new(rows, cols, x.clone()).unwrap();
        let mapped = |t: &Table| match t {
            Table::F32(m) => matches!(m.data, Values::Mapped(_)),
            Table::F64(m) => matches!(m.data, Values::Mapped(_)),
        };
        let cases = [
            ("f64.npy", Table::F64(m.clone())),
            ("f32.npy", Table::F32(m.map(|v| v as f32))),
            (
                "column.npy",
                Table::F32(
                    Matrix::new(rows * cols, 1, m.map(|v| v as f32).data.into_vec()).unwrap(),
                ),
            ),
        ];
        for (name, table) in &cases {
            let mut bytes = Vec::new();
            match table {
                Table::F32(m) => write_npy_to(&mut bytes, m).unwrap(),
                Table::F64(m) => write_npy_to(&mut bytes, m).unwrap(),
            }
            assert!(bytes.len() as u64 >= MAP_MIN_BYTES);
            let path = dir.path().join(name);
            std::fs::write(&path, &bytes).unwrap();
            let back = read_npy(&path).unwrap();
            assert!(mapped(&back), "{name} not mapped");
            assert_eq!(&back, table, "{name}");
            assert_eq!(back, read_npy_from(&bytes[..], name).unwrap(), "{name}");
            // Truncated by one value: the reader's error, not a short map.
            std::fs::write(&path, &bytes[..bytes.len() - 4]).unwrap();
            let err = format!("{:#}", read_npy(&path).unwrap_err());
            assert!(err.contains("truncated"), "{name}: {err}");
        }
        let path = dir.path().join("f64.npy");
        let mut bytes = Vec::new();
        write_npy_to(&mut bytes, &m).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let Table::F64(mut back) = read_npy(&path).unwrap() else {
            panic!("not f64")
        };
        back.data[0] = -1.0;
        assert!(matches!(back.data, Values::Owned(_)) && back.data[1..] == x[1..]);
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "the file changed");
        // Version 2 headers (a 4-byte length): mapped when the data start aligned for f64,
        // read when they do not; the same values either way.
        let text_end = 10 + usize::from(u16::from_le_bytes([bytes[8], bytes[9]]));
        let text = std::str::from_utf8(&bytes[10..text_end])
            .unwrap()
            .trim_end();
        for (name, data_at, maps) in [("v2.npy", 128, true), ("v2_unaligned.npy", 132, false)] {
            let padded = format!("{text:<width$}\n", width = data_at - 12 - 1);
            let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
            v2.extend_from_slice(&(padded.len() as u32).to_le_bytes());
            v2.extend_from_slice(padded.as_bytes());
            v2.extend_from_slice(&bytes[text_end..]);
            let path = dir.path().join(name);
            std::fs::write(&path, &v2).unwrap();
            let back = read_npy(&path).unwrap();
            assert_eq!(mapped(&back), maps, "{name}");
            assert_eq!(back, Table::F64(m.clone()), "{name}");
        }
        // Fortran order: read and transposed, not mapped.
        let path = dir.path().join("fortran.npy");
        std::fs::write(&path, fortran_npy(&x, rows, cols)).unwrap();
        let back = read_npy(&path).unwrap();
        assert!(!mapped(&back));
        assert_eq!(back, Table::F64(m));
    }

    /// Rows pushed in any pieces give the bytes of the whole matrix's writer; a wrong number of
    /// rows is an error, not a malformed file.
    #[test]
    fn rows_written_in_pieces_are_the_whole_matrix_bytes() {
        let (rows, cols) = (IO_CHUNK / 8 * 3 + 5, 3);
        let x: Vec<f64> = (0..rows * cols).map(|i| (i as f64).cos() * 7.0).collect();
        let m = Matrix::new(rows, cols, x.clone()).unwrap();
        let mut whole = Vec::new();
        write_npy_to(&mut whole, &m).unwrap();
        for piece in [1, 7, 1000, IO_CHUNK / 8 + 1, rows] {
            let mut bytes = Vec::new();
            let mut out = NpyRows::begin(&mut bytes, rows, cols).unwrap();
            for p in x.chunks(piece * cols) {
                out.push(p).unwrap();
            }
            out.finish().unwrap();
            assert!(bytes == whole, "pieces of {piece} rows");
        }
        let mut bytes = Vec::new();
        let mut out = NpyRows::<_, f64>::begin(&mut bytes, 2, 3).unwrap();
        assert!(out.push(&[1.0; 4]).is_err(), "not whole rows");
        out.push(&[1.0; 3]).unwrap();
        assert!(out.push(&[1.0; 6]).is_err(), "more rows than promised");
        assert!(out.finish().is_err(), "a row missing");
    }

    /// The `.npy` bytes of the row-major `rows x cols` table `x` stored in Fortran order.
    fn fortran_npy(x: &[f64], rows: usize, cols: usize) -> Vec<u8> {
        let mut bytes = Vec::new();
        let mut out = npyz::WriteOptions::new()
            .default_dtype()
            .order(Order::Fortran)
            .shape(&[rows as u64, cols as u64])
            .writer(&mut bytes)
            .begin_nd()
            .unwrap();
        // npyz takes the values in file order: columns one after the other.
        for c in 0..cols {
            for r in 0..rows {
                out.push(&x[r * cols + c]).unwrap();
            }
        }
        out.finish().unwrap();
        bytes
    }

    /// A Fortran-order file (transposed while read, at sizes around the read chunk) gives the
    /// row-major table numpy means.
    #[test]
    fn fortran_order_is_read_as_rows() {
        for (rows, cols) in [(3, 2), (IO_CHUNK / 8 + 3, 5), (1, 4), (4, 1)] {
            let x: Vec<f64> = (0..rows * cols).map(|i| i as f64 * 0.5).collect();
            let bytes = fortran_npy(&x, rows, cols);
            let Table::F64(back) = read_npy_from(&bytes[..], "t").unwrap() else {
                panic!("not f64")
            };
            assert_eq!(back, Matrix::new(rows, cols, x).unwrap(), "{rows} x {cols}");
        }
    }
}

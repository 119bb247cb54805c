//! The model files: serde-derived structs, written by `whiten --model` and `fit --model`, read by
//! `transform` and `inverse-transform`.
//!
//! Both formats carry the whitener's parts (`mean`, `whitening`, `unwhitening`,
//! `explained_variance`) in the core's layout; a FastICA model adds `unmixing`, `components` and
//! `mixing`. Reading checks every shape against `n_features` / `n_components` from the lengths of
//! the arrays actually present, before anything is allocated from those numbers.

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use std::path::Path;
use unmix::Float;
use unmix::ica::{FastIcaOptions, FastIcaView, IcaInfo};
use unmix::whiten::{FitInfo, Rotation, WhitenOptions, WhitenerView};

/// A model file of either kind, told apart by its `format` field.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "format")]
pub enum Model {
    /// Written by `unmix whiten --model`.
    #[serde(rename = "unmix-whitener")]
    Whitener(WhitenerModel),
    /// Written by `unmix fit`.
    #[serde(rename = "unmix-fastica")]
    FastIca(FastIcaModel),
}

/// The whitener's rotation as the model file spells it: `"none"` or `{"random": {"seed": S}}`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RotationField {
    /// No rotation.
    None,
    /// A Haar-random rotation drawn from `seed`.
    Random {
        /// Its seed.
        seed: u64,
    },
}

impl From<Rotation> for RotationField {
    fn from(r: Rotation) -> Self {
        match r {
            Rotation::None => Self::None,
            Rotation::Random { seed } => Self::Random { seed },
        }
    }
}

/// A fitted whitener (`unmix whiten --model`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WhitenerModel {
    /// Format version (1).
    pub version: u32,
    /// `float32` or `float64`: the precision it was fitted in.
    pub dtype: String,
    /// `pca` or `zca` ([`unmix::whiten::Method`]'s names).
    pub method: String,
    /// The rotation after whitening.
    pub rotation: RotationField,
    /// Delta degrees of freedom of the covariance.
    pub ddof: u32,
    /// Relative eigenvalue threshold of the effective rank.
    pub rank_rtol: f64,
    /// Training samples.
    pub n_samples: u64,
    /// Features `D`.
    pub n_features: usize,
    /// Components `K`.
    pub n_components: usize,
    /// Eigenvalues above `rank_rtol` times the largest.
    pub effective_rank: usize,
    /// `D` means.
    pub mean: Vec<f64>,
    /// `K` rows of `D`.
    pub whitening: Vec<Vec<f64>>,
    /// `D` rows of `K`.
    pub unwhitening: Vec<Vec<f64>>,
    /// `K` eigenvalues kept.
    pub explained_variance: Vec<f64>,
}

/// A fitted FastICA model (`unmix fit`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FastIcaModel {
    /// Format version (1).
    pub version: u32,
    /// `float32` or `float64`.
    pub dtype: String,
    /// `parallel` or `deflation` ([`unmix::ica::Algorithm`]'s names).
    pub algorithm: String,
    /// `logcosh`, `exp` or `cube` ([`unmix::ica::ContrastKind`]'s names).
    pub fun: String,
    /// logcosh's alpha (1 for the others).
    pub alpha: f64,
    /// `unit-variance`, `arbitrary-variance` or `false` ([`unmix::ica::WhitenMode`]'s names).
    pub whiten: String,
    /// Iteration cap.
    pub max_iter: usize,
    /// Stopping tolerance.
    pub tol: f64,
    /// Components ordered and signed canonically.
    pub canonical: bool,
    /// Training samples.
    pub n_samples: u64,
    /// Features `D`.
    pub n_features: usize,
    /// Components `K`.
    pub n_components: usize,
    /// Effective rank of the training data.
    pub effective_rank: usize,
    /// Iterations run.
    pub n_iter: usize,
    /// Whether the stopping rule was met.
    pub converged: bool,
    /// The last iteration's change (`null` if not finite).
    pub last_change: Option<f64>,
    /// `D` means.
    pub mean: Vec<f64>,
    /// `K` rows of `D`.
    pub whitening: Vec<Vec<f64>>,
    /// `D` rows of `K`.
    pub unwhitening: Vec<Vec<f64>>,
    /// `K` values.
    pub explained_variance: Vec<f64>,
    /// `K` rows of `K`.
    pub unmixing: Vec<Vec<f64>>,
    /// `K` rows of `D`.
    pub components: Vec<Vec<f64>>,
    /// `D` rows of `K`.
    pub mixing: Vec<Vec<f64>>,
}

fn dtype_of<T: Float>() -> String {
    if size_of::<T>() == 4 {
        "float32"
    } else {
        "float64"
    }
    .to_string()
}

fn vector<T: Float>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

fn rows<T: Float>(flat: &[T], width: usize) -> Vec<Vec<f64>> {
    flat.chunks(width.max(1)).map(vector).collect()
}

impl WhitenerModel {
    /// The model of a fitted whitener.
    pub fn new<T: Float>(v: &WhitenerView<'_, T>, o: &WhitenOptions, info: &FitInfo) -> Self {
        let (d, k) = (v.n_features(), v.n_components());
        Self {
            version: 1,
            dtype: dtype_of::<T>(),
            method: o.method.as_str().to_string(),
            rotation: o.rotation.into(),
            ddof: o.ddof,
            rank_rtol: o.rank_rtol,
            n_samples: info.n_samples,
            n_features: d,
            n_components: k,
            effective_rank: info.effective_rank,
            mean: vector(v.mean()),
            whitening: rows(v.whitening(), d),
            unwhitening: rows(v.unwhitening(), k),
            explained_variance: vector(v.explained_variance()),
        }
    }
}

impl FastIcaModel {
    /// The model of a fitted FastICA.
    pub fn new<T: Float>(
        v: &FastIcaView<'_, T>,
        o: &FastIcaOptions,
        effective_rank: usize,
        n_samples: u64,
    ) -> Self {
        let (d, k) = (v.n_features(), v.n_components());
        let alpha = match o.contrast {
            unmix::ica::ContrastKind::LogCosh(c) => c.alpha(),
            _ => 1.0,
        };
        let info = v.info();
        let w = v.whitener();
        Self {
            version: 1,
            dtype: dtype_of::<T>(),
            algorithm: o.ica.algorithm.as_str().to_string(),
            fun: o.contrast.as_str().to_string(),
            alpha,
            whiten: o.whiten.as_str().to_string(),
            max_iter: o.ica.max_iter,
            tol: o.ica.tol,
            canonical: o.canonical,
            n_samples,
            n_features: d,
            n_components: k,
            effective_rank,
            n_iter: info.n_iter,
            converged: info.converged,
            last_change: Some(info.last_change).filter(|c| c.is_finite()),
            mean: vector(w.mean()),
            whitening: rows(w.whitening(), d),
            unwhitening: rows(w.unwhitening(), k),
            explained_variance: vector(w.explained_variance()),
            unmixing: rows(v.unmixing(), k),
            components: rows(v.components(), d),
            mixing: rows(v.mixing(), k),
        }
    }
}

/// A model read back and checked, in the core's flat storage layout (as `f64`).
pub struct Loaded {
    /// Features `D`.
    pub d: usize,
    /// Components `K`.
    pub k: usize,
    /// `float32` or `float64`.
    pub dtype: String,
    /// The core's storage: [`unmix::whiten::storage_len`] values for a whitener,
    /// [`unmix::ica::model_len`] for FastICA.
    pub storage: Vec<f64>,
    /// `Some` for a FastICA model.
    pub ica: Option<IcaInfo>,
}

impl Loaded {
    /// `"whitener"` or `"FastICA model"`, for messages.
    pub fn kind(&self) -> &'static str {
        if self.ica.is_some() {
            "FastICA model"
        } else {
            "whitener"
        }
    }
}

/// Reads a model file of either kind and checks every shape.
pub fn read(path: &Path) -> Result<Loaded> {
    let name = path.display();
    let file = std::fs::File::open(path).with_context(|| format!("cannot open {name}"))?;
    let model: Model = serde_json::from_reader(std::io::BufReader::new(file))
        .with_context(|| format!("{name}: not an unmix model (whitener or FastICA)"))?;
    let checked = |what: &str, d: usize, k: usize| -> Result<()> {
        if d == 0 || k == 0 || k > d {
            bail!("{name}: {what} has n_features {d} and n_components {k}: need 1 <= k <= d");
        }
        Ok(())
    };
    let mut storage = Vec::new();
    let mut take = |key: &str, part: Part<'_>, rows: usize, cols: usize| -> Result<()> {
        part.append_to(&mut storage, rows, cols)
            .with_context(|| format!("{name}: {key}"))
    };
    let loaded = match model {
        Model::Whitener(m) => {
            checked("the whitener", m.n_features, m.n_components)?;
            let (d, k) = (m.n_features, m.n_components);
            take("mean", Part::Vector(&m.mean), d, 1)?;
            take("whitening", Part::Rows(&m.whitening), k, d)?;
            take("unwhitening", Part::Rows(&m.unwhitening), d, k)?;
            take(
                "explained_variance",
                Part::Vector(&m.explained_variance),
                k,
                1,
            )?;
            Loaded {
                d,
                k,
                dtype: m.dtype,
                storage,
                ica: None,
            }
        }
        Model::FastIca(m) => {
            checked("the model", m.n_features, m.n_components)?;
            let (d, k) = (m.n_features, m.n_components);
            take("mean", Part::Vector(&m.mean), d, 1)?;
            take("whitening", Part::Rows(&m.whitening), k, d)?;
            take("unwhitening", Part::Rows(&m.unwhitening), d, k)?;
            take(
                "explained_variance",
                Part::Vector(&m.explained_variance),
                k,
                1,
            )?;
            take("unmixing", Part::Rows(&m.unmixing), k, k)?;
            take("components", Part::Rows(&m.components), k, d)?;
            take("mixing", Part::Rows(&m.mixing), d, k)?;
            Loaded {
                d,
                k,
                dtype: m.dtype,
                storage,
                ica: Some(IcaInfo {
                    n_iter: m.n_iter,
                    converged: m.converged,
                    last_change: m.last_change.unwrap_or(f64::NAN),
                }),
            }
        }
    };
    if !matches!(loaded.dtype.as_str(), "float32" | "float64") {
        bail!(
            "{name}: dtype {:?} is neither float32 nor float64",
            loaded.dtype
        );
    }
    Ok(loaded)
}

/// One array of a model file, before its shape is checked.
enum Part<'a> {
    Vector(&'a [f64]),
    Rows(&'a [Vec<f64>]),
}

impl Part<'_> {
    /// Appends the values after checking that they form `rows x cols` (every row of length
    /// `cols`) and are finite.
    fn append_to(&self, out: &mut Vec<f64>, rows: usize, cols: usize) -> Result<()> {
        match self {
            Part::Vector(v) => {
                if v.len() != rows {
                    bail!("expected {rows} values, found {}", v.len());
                }
                out.extend_from_slice(v);
            }
            Part::Rows(r) => {
                if r.len() != rows {
                    bail!("expected {rows} rows of {cols}, found {} rows", r.len());
                }
                if let Some((i, row)) = r.iter().enumerate().find(|(_, row)| row.len() != cols) {
                    bail!(
                        "expected {rows} rows of {cols}, but row {i} has {} values",
                        row.len()
                    );
                }
                out.extend(r.iter().flatten());
            }
        }
        // serde_json reads only finite numbers, but a model may have been written elsewhere.
        if out.iter().any(|v| !v.is_finite()) {
            bail!("holds a non-finite value");
        }
        Ok(())
    }
}

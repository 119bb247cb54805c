//! SVG figures for `unmix demo` and `unmix report`, drawn with plotters' SVG backend.
//!
//! No font files are read: plotters' built-in text metrics place the labels and the SVG viewer
//! draws them in its own sans-serif font.

use anyhow::{Result, anyhow};
use plotters::prelude::*;
use std::path::Path;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

fn err<E: std::fmt::Display>(path: &Path) -> impl Fn(E) -> anyhow::Error + '_ {
    move |e| anyhow!("{}: drawing the figure failed: {e}", path.display())
}

fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.08).max(1e-9);
    (lo - pad, hi + pad)
}

/// One panel of lines: a title and named series of (x, y) points.
pub struct LinePanel {
    /// Panel title.
    pub title: String,
    /// Named series.
    pub series: Vec<(String, Vec<(f64, f64)>)>,
    /// Axis labels (x, y).
    pub axes: (String, String),
}

/// Panels of line plots stacked vertically, one legend per panel.
pub fn lines(path: &Path, title: &str, panels: &[LinePanel]) -> Result<()> {
    let e = err(path);
    let root = SVGBackend::new(path, (900, 260 * panels.len() as u32 + 40)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(&e)?;
    for (panel, area) in panels
        .iter()
        .zip(root.split_evenly((panels.len(), 1)).iter())
    {
        let (x0, x1) = range(panel.series.iter().flat_map(|s| s.1.iter().map(|p| p.0)));
        let (y0, y1) = range(panel.series.iter().flat_map(|s| s.1.iter().map(|p| p.1)));
        // Headroom for the legend, so it does not cover the lines.
        let y1 = y1 + 0.3 * (y1 - y0);
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(&e)?;
        chart
            .configure_mesh()
            .x_desc(&panel.axes.0)
            .y_desc(&panel.axes.1)
            .draw()
            .map_err(&e)?;
        for (i, (name, points)) in panel.series.iter().enumerate() {
            let c = color(i);
            chart
                .draw_series(LineSeries::new(points.iter().copied(), c.stroke_width(2)))
                .map_err(&e)?
                .label(name)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c));
            if points.len() <= 40 {
                chart
                    .draw_series(points.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(&e)?;
            }
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}

/// Bar charts side by side: one panel per (title, values), bars over the feature index.
pub fn bars(path: &Path, title: &str, panels: &[(String, Vec<f64>)], y_desc: &str) -> Result<()> {
    let e = err(path);
    let root = SVGBackend::new(path, (300 * panels.len() as u32 + 40, 340)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(&e)?;
    let y1 = panels
        .iter()
        .flat_map(|p| p.1.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1e-9)
        * 1.08;
    for (i, ((name, values), area)) in panels
        .iter()
        .zip(root.split_evenly((1, panels.len())).iter())
        .enumerate()
    {
        let n = values.len() as f64;
        let mut chart = ChartBuilder::on(area)
            .caption(name, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(50)
            .build_cartesian_2d(-0.5..n - 0.5, 0.0..y1)
            .map_err(&e)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_desc("feature")
            .y_desc(y_desc)
            .draw()
            .map_err(&e)?;
        let c = color(i);
        chart
            .draw_series(values.iter().enumerate().map(|(j, &v)| {
                let x = j as f64;
                Rectangle::new([(x - 0.4, 0.0), (x + 0.4, v)], c.filled())
            }))
            .map_err(&e)?;
    }
    root.present().map_err(&e)?;
    Ok(())
}

/// One panel of a spread figure: rows, each with its per-seed values.
pub struct SpreadPanel {
    /// Panel title.
    pub title: String,
    /// Row names and per-seed values.
    pub rows: Vec<(String, Vec<f64>)>,
    /// Draw the axis from 0 with a line at 0 (for signed quantities such as concentration).
    pub from_zero: bool,
}

/// Per-seed values as dots, with the mean and mean +- one standard deviation as an error bar.
pub fn spread(path: &Path, title: &str, panels: &[SpreadPanel], y_desc: &str) -> Result<()> {
    let e = err(path);
    let root = SVGBackend::new(path, (420 * panels.len() as u32 + 40, 380)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(&e)?;
    for (panel, area) in panels
        .iter()
        .zip(root.split_evenly((1, panels.len())).iter())
    {
        let names: Vec<String> = panel.rows.iter().map(|r| r.0.clone()).collect();
        let (y0, y1) = range(panel.rows.iter().flat_map(|r| r.1.iter().copied()));
        let (y0, y1) = if panel.from_zero {
            (y0.min(0.0), y1.max(0.0))
        } else {
            (y0, y1)
        };
        let mut chart = ChartBuilder::on(area)
            .caption(&panel.title, ("sans-serif", 16))
            .margin(10)
            .x_label_area_size(35)
            .y_label_area_size(55)
            .build_cartesian_2d(-0.5..names.len() as f64 - 0.5, y0..y1)
            .map_err(&e)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(names.len())
            .x_label_formatter(&|x| {
                let i = x.round();
                if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < names.len() {
                    names[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .y_desc(y_desc)
            .draw()
            .map_err(&e)?;
        chart
            .draw_series(LineSeries::new(
                [(-0.5, 0.0), (names.len() as f64 - 0.5, 0.0)],
                BLACK.mix(0.4),
            ))
            .map_err(&e)?;
        for (i, (_, values)) in panel.rows.iter().enumerate() {
            let c = color(i);
            let x = i as f64;
            let n = values.len() as f64;
            let mean = values.iter().sum::<f64>() / n;
            let sd = if values.len() > 1 {
                (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
            } else {
                0.0
            };
            chart
                .draw_series(std::iter::once(ErrorBar::new_vertical(
                    x,
                    mean - sd,
                    mean,
                    mean + sd,
                    c.stroke_width(2),
                    16,
                )))
                .map_err(&e)?;
            chart
                .draw_series(values.iter().enumerate().map(|(j, &v)| {
                    let dx = (j as f64 - (n - 1.0) / 2.0) * 0.04;
                    Circle::new((x + 0.15 + dx, v), 3, c.mix(0.6).filled())
                }))
                .map_err(&e)?;
        }
    }
    root.present().map_err(&e)?;
    Ok(())
}

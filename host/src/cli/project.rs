//! `mil project`: fits a projection on every bag of DATA, writes the projected instances
//! in the CSV layout, and optionally draws the first two projected dimensions as SVG.

use std::path::Path;
use std::time::Instant;

use plotters::prelude::*;
use serde_json::json;

use super::{ProjectArgs, ProjectionName, Report};
use crate::data::{self, csv::to_csv, Dataset};
use crate::error::{Error, Result};
use crate::projection::{self, ProjectionKind, ProjectionSpec};

/// The algorithm a CLI projection name selects, or `None` for `none`.
pub fn projection_kind(name: ProjectionName) -> Option<ProjectionKind> {
    Some(match name {
        ProjectionName::None => return None,
        ProjectionName::Pca => ProjectionKind::Pca,
        ProjectionName::Lda => ProjectionKind::Lda,
        ProjectionName::Lfda => ProjectionKind::Lfda,
        ProjectionName::Clfda => ProjectionKind::Clfda,
        ProjectionName::Bmida => ProjectionKind::Bmida,
        ProjectionName::Mmida => ProjectionKind::Mmida,
        ProjectionName::MiAlm => ProjectionKind::MiAlm,
        ProjectionName::Midr => ProjectionKind::Midr,
    })
}

/// Runs `mil project`.
pub fn run(args: &ProjectArgs) -> Result<Report> {
    let kind = projection_kind(args.projection.projection)
        .ok_or_else(|| Error::parameter("--projection", "none", "choose a projection to fit"))?;
    let dim = match args.projection.dim.as_slice() {
        [d] => *d,
        [] => {
            return Err(Error::parameter(
                "--dim",
                "(missing)",
                "give one output dimension",
            ))
        }
        many => {
            return Err(Error::parameter(
                "--dim",
                format!("{many:?}"),
                "give one value (lists are for mil cv's inner selection)",
            ))
        }
    };
    let alpha = match args.projection.alpha.as_slice() {
        [] => kind.default_alpha(),
        [a] => *a,
        many => {
            return Err(Error::parameter(
                "--alpha",
                format!("{many:?}"),
                "give one value (lists are for mil cv's inner selection)",
            ))
        }
    };
    let data = data::load(&args.data)?;
    let spec = ProjectionSpec {
        kind,
        dim,
        alpha,
        midr_c2: args.projection.midr_c2,
        seed: args.seed,
    };
    let start = Instant::now();
    let all: Vec<usize> = (0..data.n_bags()).collect();
    let fitted = projection::fit(&spec, &data, &all)?;
    let seconds = start.elapsed().as_secs_f64();
    let projected = fitted.transform(&data)?;
    write_file(&args.output, to_csv(&projected).as_bytes())?;
    if let Some(plot) = &args.plot {
        draw(&projected, plot)?;
    }

    let mut json = json!({
        "projection": kind,
        "dim": dim,
        "alpha": alpha,
        "seconds": seconds,
        "bags": projected.n_bags(),
        "instances": projected.n_instances(),
        "output": args.output,
    });
    if kind == ProjectionKind::Midr {
        json["midr_c2"] = json!(spec.midr_c2);
    }
    let mut human = format!(
        "{} of {} ({} features → {dim}) fitted in {seconds:.3} s; {} instances written to {}",
        serde_json::to_value(kind)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default(),
        data.name(),
        data.dim(),
        projected.n_instances(),
        args.output
    );
    for (name, value) in &fitted.diagnostics {
        json[name] = json!(value);
        human.push_str(&format!("\n{name}: {value}"));
    }
    if let Some(plot) = &args.plot {
        json["plot"] = json!(plot);
        human.push_str(&format!("\nplot: {plot}"));
    }
    Ok(Report { human, json })
}

fn write_file(path: &str, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|source| Error::Io {
        path: path.into(),
        source,
    })
}

/// Colour of class `c` (Tableau 10), grey for unlabelled bags.
fn colour(class: Option<usize>) -> RGBColor {
    const PALETTE: [RGBColor; 10] = [
        RGBColor(31, 119, 180),
        RGBColor(214, 39, 40),
        RGBColor(44, 160, 44),
        RGBColor(255, 127, 14),
        RGBColor(148, 103, 189),
        RGBColor(140, 86, 75),
        RGBColor(227, 119, 194),
        RGBColor(127, 127, 127),
        RGBColor(188, 189, 34),
        RGBColor(23, 190, 207),
    ];
    class.map_or(RGBColor(160, 160, 160), |c| PALETTE[c % PALETTE.len()])
}

/// Scatter of the first two projected dimensions (the first against 0 when d = 1), one
/// circle per instance, coloured by its bag's label.
pub fn draw(projected: &Dataset, path: &str) -> Result<()> {
    let d = projected.dim();
    let point = |i: usize| {
        let x = projected.instance(i);
        (x[0], if d > 1 { x[1] } else { 0.0 })
    };
    let n = projected.n_instances();
    let (mut lo, mut hi) = (
        (f64::INFINITY, f64::INFINITY),
        (f64::NEG_INFINITY, f64::NEG_INFINITY),
    );
    for i in 0..n {
        let (x, y) = point(i);
        lo = (lo.0.min(x), lo.1.min(y));
        hi = (hi.0.max(x), hi.1.max(y));
    }
    let pad = |a: f64, b: f64| {
        let m = 0.05 * (b - a).max(1e-9);
        (a - m)..(b + m)
    };
    let plot_error = |e: String| Error::Io {
        path: path.into(),
        source: std::io::Error::other(e),
    };
    let root = SVGBackend::new(Path::new(path), (720, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| plot_error(e.to_string()))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{}: first two projected dimensions", projected.name()),
            ("sans-serif", 18),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(48)
        .build_cartesian_2d(pad(lo.0, hi.0), pad(lo.1, hi.1))
        .map_err(|e| plot_error(e.to_string()))?;
    chart
        .configure_mesh()
        .x_desc("dimension 1")
        .y_desc(if d > 1 {
            "dimension 2"
        } else {
            "(one dimension)"
        })
        .draw()
        .map_err(|e| plot_error(e.to_string()))?;
    for b in 0..projected.n_bags() {
        let c = colour(projected.label(b));
        chart
            .draw_series(
                projected
                    .bag_range(b)
                    .map(|i| Circle::new(point(i), 3, c.mix(0.7).filled())),
            )
            .map_err(|e| plot_error(e.to_string()))?;
    }
    root.present().map_err(|e| plot_error(e.to_string()))?;
    Ok(())
}

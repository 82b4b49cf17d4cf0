//! `mil project`: fits a projection on every bag of DATA, writes the projected instances
//! in the CSV layout, and optionally draws the first two projected dimensions as SVG.

use std::time::Instant;

use plotters::prelude::*;
use serde_json::json;

use mil_core::keyword::Keyword;

use super::{ProjectArgs, Report};
use crate::data::{self, csv::to_csv, Dataset};
use crate::error::{Error, Result};
use crate::projection::{ProjectionKind, ProjectionParams};

/// Runs `mil project`.
pub fn run(args: &ProjectArgs) -> Result<Report> {
    let kind = args.projection.projection.0.ok_or_else(|| {
        Error::parameter(
            "--projection",
            args.projection.projection,
            "choose a projection to fit",
        )
    })?;
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
    let mut params = ProjectionParams::new(kind)
        .with_dim(dim)
        .with_seed(args.seed);
    if let ProjectionParams::Midr(m) = &mut params {
        m.c2 = args.projection.midr_c2;
    }
    match args.projection.alpha.as_slice() {
        [] => {}
        [a] => params = params.with_alpha(*a)?,
        many => {
            return Err(Error::parameter(
                "--alpha",
                format!("{many:?}"),
                "give one value (lists are for mil cv's inner selection)",
            ))
        }
    }
    let mut inputs = vec![args.data.as_str()];
    inputs.extend(args.truth.as_deref());
    let mut outputs = vec![("--output", args.output.as_str())];
    outputs.extend(args.plot.as_deref().map(|p| ("--plot", p)));
    super::output::check_outputs(&outputs, &inputs)?;
    let data = data::load(&args.data)?;
    super::estimate::check_projection(&data, args.memory.max_memory_gib)?;
    let start = Instant::now();
    params.check_fit(&crate::data::Bags::from(&data))?;
    // B-MIDA and M-MIDA also report the prototypes their kernel-density step chose.
    let (fitted, trace) = match &params {
        ProjectionParams::Bmida(b) => {
            let fit = b.fit_traced(&data)?;
            (fit.projection.clone(), Some(fit))
        }
        ProjectionParams::Mmida(m) => {
            let fit = m.fit_traced(&data)?;
            (fit.projection.clone(), Some(fit))
        }
        _ => (params.fit(&data)?, None),
    };
    let truth = match (&args.truth, &trace) {
        (Some(path), Some(_)) => Some(crate::data::synth::read_truth(
            std::path::Path::new(path),
            &data,
        )?),
        (Some(path), None) => {
            return Err(Error::parameter(
                "--truth",
                path,
                "prototypes exist for --projection bmida or mmida only",
            ))
        }
        (None, _) => None,
    };
    let seconds = start.elapsed().as_secs_f64();
    let projected = fitted.transform(&data)?;
    write_file(&args.output, to_csv(&projected).as_bytes())?;
    if let Some(plot) = &args.plot {
        draw(&projected, kind, plot)?;
    }

    let mut json = json!({
        "projection": kind.name(),
        "dim": dim,
        "alpha": params.alpha(),
        "seconds": seconds,
        "bags": projected.n_bags(),
        "instances": projected.n_instances(),
        "output": args.output,
    });
    if let ProjectionParams::Midr(m) = params {
        json["midr_c2"] = json!(m.c2);
    }
    let mut human = format!(
        "{} of {} ({} features → {dim}) fitted in {seconds:.3} s; {} instances written to {}",
        kind.name(),
        data.name(),
        data.dim(),
        projected.n_instances(),
        args.output
    );
    for (name, value) in &fitted.diagnostics {
        json[name] = json!(value);
        human.push_str(&format!("\n{name}: {value}"));
    }
    if let Some(fit) = &trace {
        // Instance numbers from 1 within each bag, as `mil synth --truth` writes them.
        let locate = |i: usize| {
            let b = (0..data.n_bags())
                .find(|&b| data.bag_range(b).contains(&i))
                .unwrap_or(0);
            (data.bag_id(b).to_string(), i - data.bag_range(b).start + 1)
        };
        let prototypes: Vec<serde_json::Value> = fit
            .initial_prototypes
            .iter()
            .zip(&fit.prototypes)
            .map(|(&first, &last)| {
                let (bag, initial) = locate(first);
                json!({"bag": bag, "initial_instance": initial, "instance": locate(last).1})
            })
            .collect();
        human.push_str(&format!(
            "\npositive prototypes: {} bags (kernel-density choice, then final; instances from 1)",
            prototypes.len()
        ));
        for p in &prototypes {
            human.push_str(&format!(
                "\n  {}\t{}\t{}",
                p["bag"].as_str().unwrap_or(""),
                p["initial_instance"],
                p["instance"]
            ));
        }
        json["prototypes"] = json!(prototypes);
        if let Some(truth) = &truth {
            let id = fit.identification(truth);
            json["identification"] = json!({
                "bags": id.bags,
                "identified": id.initial,
                "rate": id.rate(),
                "final_identified": id.last,
                "final_rate": id.final_rate(),
            });
            human.push_str(&format!(
                "\nidentified positive prototypes: {}/{} ({:.1} %) by the kernel density, {}/{} ({:.1} %) at the end",
                id.initial,
                id.bags,
                100.0 * id.rate(),
                id.last,
                id.bags,
                100.0 * id.final_rate()
            ));
        }
    }
    if let Some(plot) = &args.plot {
        json["plot"] = json!(plot);
        human.push_str(&format!("\nplot: {plot}"));
    }
    Ok(Report { human, json })
}

fn write_file(path: &str, bytes: &[u8]) -> Result<()> {
    super::output::write_output(path, bytes)
}

/// Colour of class `c` (Tableau 10), grey for unlabelled bags.
pub(super) fn colour(class: Option<usize>) -> RGBColor {
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

/// Scatter of the first two projected dimensions, one circle per instance coloured by
/// its bag's class, with a legend of the classes. A 1-D projection is drawn as one strip
/// per class (the class on the vertical axis).
pub fn draw(projected: &Dataset, kind: ProjectionKind, path: &str) -> Result<()> {
    let d = projected.dim();
    let n_classes = projected.n_classes().max(1);
    // Vertical position: dimension 2, or for d = 1 the bag's class strip.
    let y_of = |b: usize, x: &[f64]| {
        if d > 1 {
            x[1]
        } else {
            projected.label(b).map_or(n_classes as f64, |c| c as f64)
        }
    };
    let (mut lo, mut hi) = (
        (f64::INFINITY, f64::INFINITY),
        (f64::NEG_INFINITY, f64::NEG_INFINITY),
    );
    for b in 0..projected.n_bags() {
        for i in projected.bag_range(b) {
            let x = projected.instance(i);
            let y = y_of(b, x);
            lo = (lo.0.min(x[0]), lo.1.min(y));
            hi = (hi.0.max(x[0]), hi.1.max(y));
        }
    }
    let pad = |a: f64, b: f64| {
        let m = 0.05 * (b - a).max(1e-9);
        (a - m)..(b + m)
    };
    let (y_lo, y_hi) = if d > 1 {
        (lo.1, hi.1)
    } else {
        (-0.5, n_classes as f64 - 0.5)
    };
    let plot_error = |e: String| Error::Io {
        path: path.into(),
        source: std::io::Error::other(e),
    };
    let title = if d > 1 {
        format!(
            "{} of {}: projected dimensions 1 and 2",
            kind.name(),
            projected.name()
        )
    } else {
        format!(
            "{} of {}: the projected dimension, by class",
            kind.name(),
            projected.name()
        )
    };
    // Drawn into memory, then written atomically like every output.
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_error(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(pad(lo.0, hi.0), y_lo..y_hi)
            .map_err(|e| plot_error(e.to_string()))?;
        let class_names = projected.class_names().to_vec();
        let y_label = |y: &f64| {
            if d > 1 {
                format!("{y:.2}")
            } else {
                let c = y.round();
                if (y - c).abs() < 1e-6 && c >= 0.0 {
                    class_names.get(c as usize).cloned().unwrap_or_default()
                } else {
                    String::new()
                }
            }
        };
        chart
            .configure_mesh()
            .x_desc("projected dimension 1")
            .y_desc(if d > 1 {
                "projected dimension 2"
            } else {
                "class"
            })
            .axis_desc_style(("sans-serif", 16))
            .label_style(("sans-serif", 14))
            .x_label_formatter(&|x| format!("{x:.2}"))
            .y_label_formatter(&y_label)
            .y_labels(if d > 1 { 10 } else { 2 * n_classes + 1 })
            .draw()
            .map_err(|e| plot_error(e.to_string()))?;
        // One series per class so the legend names each once.
        let classes: Vec<Option<usize>> = if projected.labels().is_some() {
            (0..n_classes).map(Some).collect()
        } else {
            vec![None]
        };
        for class in classes {
            let c = colour(class);
            let points: Vec<(f64, f64)> = (0..projected.n_bags())
                .filter(|&b| projected.label(b) == class)
                .flat_map(|b| {
                    projected.bag_range(b).map(move |i| {
                        let x = projected.instance(i);
                        (x[0], y_of(b, x))
                    })
                })
                .collect();
            let name = class.map_or_else(
                || "unlabelled".to_string(),
                |k| format!("class {}", class_names.get(k).map_or("?", String::as_str)),
            );
            chart
                .draw_series(
                    points
                        .into_iter()
                        .map(|p| Circle::new(p, 3, c.mix(0.7).filled())),
                )
                .map_err(|e| plot_error(e.to_string()))?
                .label(name)
                .legend(move |(x, y)| Circle::new((x, y), 4, c.filled()));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(|e| plot_error(e.to_string()))?;
        root.present().map_err(|e| plot_error(e.to_string()))?;
    }
    write_file(path, svg.as_bytes())
}

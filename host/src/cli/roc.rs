//! `mil cv --plot`: the ROC curve of the out-of-fold scores of every repetition, pooled,
//! drawn as SVG — the positive class's score for two classes, one-vs-rest on each
//! class's score for more.

use plotters::element::DashedPathElement;
use plotters::prelude::*;

use crate::data::Dataset;
use crate::error::{Error, Result};
use crate::eval::auroc;
use crate::eval::roc::roc_curve;
use crate::pipeline::FoldOutcome;

/// One class's curve.
pub struct Curve {
    /// The class whose score ranks the bags (its bags are the positives).
    pub class: usize,
    /// (false-positive rate, true-positive rate), from (0, 0) to (1, 1).
    pub points: Vec<(f64, f64)>,
    /// Area under the curve.
    pub auroc: f64,
}

/// The curves of the pooled out-of-fold scores: one for two classes (class 1's score),
/// else one per class. `plot` names the output in errors.
pub fn curves(
    d: &Dataset,
    assignments: &[(u64, Vec<Vec<usize>>)],
    outcomes: &[FoldOutcome],
    plot: &str,
) -> Result<Vec<Curve>> {
    let labels = d.require_labels(2)?;
    let n_classes = d.n_classes();
    // Every test bag of every fold of every repetition: its class and its score row.
    let mut pooled: Vec<(usize, &[f64])> = Vec::new();
    for (repeat, (_, test_sets)) in assignments.iter().enumerate() {
        for (fold, test) in test_sets.iter().enumerate() {
            let scores = outcomes
                .iter()
                .find(|o| o.repeat == repeat && o.fold == fold)
                .map(|o| &o.scores)
                .filter(|s| s.len() == test.len())
                .ok_or_else(|| {
                    Error::data(
                        d.name(),
                        format!("no scores for repetition {repeat}, fold {fold}"),
                    )
                })?;
            pooled.extend(
                test.iter()
                    .enumerate()
                    .map(|(i, &b)| (labels[b], scores.row(i))),
            );
        }
    }
    let classes: Vec<usize> = if n_classes == 2 {
        vec![1]
    } else {
        (0..n_classes).collect()
    };
    classes
        .into_iter()
        .map(|class| {
            let scores: Vec<f64> = pooled.iter().map(|(_, row)| row[class]).collect();
            let positive: Vec<bool> = pooled.iter().map(|&(l, _)| l == class).collect();
            match (roc_curve(&scores, &positive), auroc(&scores, &positive)) {
                (Some(points), Some(auroc)) => Ok(Curve {
                    class,
                    points,
                    auroc,
                }),
                _ => Err(Error::data(
                    plot,
                    format!(
                        "no ROC curve for class {}: the out-of-fold scores lack its bags or the others', or are NaN",
                        d.class_names()[class]
                    ),
                )),
            }
        })
        .collect()
}

/// The legend entry of a curve: its class and AUROC (four decimals, as the report).
pub fn legend(d: &Dataset, curve: &Curve) -> String {
    let name = &d.class_names()[curve.class];
    if d.n_classes() == 2 {
        format!("class {name} score (AUROC {:.4})", curve.auroc)
    } else {
        format!("class {name} vs rest (AUROC {:.4})", curve.auroc)
    }
}

/// Draws the curves, the chance diagonal and the legend, and writes the SVG to `path`.
pub fn draw(d: &Dataset, curves: &[Curve], repeats: usize, path: &str) -> Result<()> {
    let plot_error = |e: String| Error::Io {
        path: path.into(),
        source: std::io::Error::other(e),
    };
    let pooled = if repeats > 1 {
        format!("out-of-fold scores of {repeats} repetitions pooled")
    } else {
        "out-of-fold scores".to_string()
    };
    // Drawn into memory, then written atomically like every output.
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 640)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_error(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("ROC of {}: {pooled}", d.name()), ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(0.0..1.0, 0.0..1.0)
            .map_err(|e| plot_error(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("false-positive rate")
            .y_desc("true-positive rate")
            .axis_desc_style(("sans-serif", 16))
            .label_style(("sans-serif", 14))
            .x_label_formatter(&|x| format!("{x:.1}"))
            .y_label_formatter(&|y| format!("{y:.1}"))
            .draw()
            .map_err(|e| plot_error(e.to_string()))?;
        let grey = RGBColor(127, 127, 127);
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                vec![(0.0, 0.0), (1.0, 1.0)],
                6,
                4,
                grey,
            )))
            .map_err(|e| plot_error(e.to_string()))?
            .label("chance (AUROC 0.5)")
            .legend(move |(x, y)| DashedPathElement::new(vec![(x, y), (x + 20, y)], 4, 3, grey));
        for curve in curves {
            let c = super::project::colour(Some(curve.class));
            chart
                .draw_series(std::iter::once(PathElement::new(
                    curve.points.clone(),
                    c.stroke_width(2),
                )))
                .map_err(|e| plot_error(e.to_string()))?
                .label(legend(d, curve))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(|e| plot_error(e.to_string()))?;
        root.present().map_err(|e| plot_error(e.to_string()))?;
    }
    super::output::write_output(path, svg.as_bytes())
}

/// Draws the plot of a cross-validation to `path` and adds it to the report: the path
/// and each curve's AUROC (`roc` in JSON).
pub fn add_plot(
    report: &mut super::Report,
    d: &Dataset,
    assignments: &[(u64, Vec<Vec<usize>>)],
    outcomes: &[FoldOutcome],
    path: &str,
) -> Result<()> {
    let curves = curves(d, assignments, outcomes, path)?;
    draw(d, &curves, assignments.len(), path)?;
    let areas: serde_json::Map<String, serde_json::Value> = curves
        .iter()
        .map(|c| (d.class_names()[c.class].clone(), c.auroc.into()))
        .collect();
    let listed: Vec<String> = curves
        .iter()
        .map(|c| format!("class {} {:.4}", d.class_names()[c.class], c.auroc))
        .collect();
    report.human.push_str(&format!(
        "\nROC plot: {path} (AUROC of the pooled scores: {})",
        listed.join(", ")
    ));
    report.json["roc"] = serde_json::json!({"plot": path, "auroc": areas});
    Ok(())
}

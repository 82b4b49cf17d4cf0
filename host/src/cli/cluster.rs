//! `mil cluster`: M³IC-MBM or BAMIC over the bags of a data set; scores the clustering
//! against the labels when there are any (accuracy after Hungarian matching, NMI, ARI).

use std::path::Path;
use std::time::Instant;

use plotters::prelude::*;
use serde_json::json;

use super::project::colour;
use super::{ClusterArgs, Report};
use crate::cluster::{bamic, m3ic, ClusterMethod, ClusterModel};
use crate::data::{self, Dataset};
use crate::error::{Error, Result};
use crate::eval;
use crate::projection::pca::Pca;
use crate::projection::Projector;

/// Runs `mil cluster`.
pub fn run(args: &ClusterArgs) -> Result<Report> {
    if let Some(out) = &args.output {
        super::output::refuse_stdout("--output", out)?;
    }
    let mut outputs: Vec<(&str, &str)> = Vec::new();
    outputs.extend(args.output.as_deref().map(|p| ("--output", p)));
    outputs.extend(args.plot.as_deref().map(|p| ("--plot", p)));
    super::output::check_outputs(&outputs, &[&args.data])?;
    let data = data::load(&args.data)?;
    let start = Instant::now();
    let (model, assignments, objective, detail) = match args.method {
        ClusterMethod::M3ic => {
            let defaults = m3ic::M3ic::for_mode(args.balance_mode);
            let params = defaults
                .clone()
                .k(args.k)
                .seed(args.seed)
                .c(args.cost.unwrap_or(defaults.c))
                .l(args.balance)
                .eps1(args.epsilon1.unwrap_or(defaults.eps1))
                .eps2(args.epsilon2)
                .restarts(args.restarts)
                .standardize(!args.raw)
                .normalize(!args.no_instance_norm)
                .balance_mode(args.balance_mode)
                .min_size(args.min_size)
                .max_size(args.max_size);
            params.check()?;
            super::estimate::check_cluster(
                &format!("M³IC over {} bags (its cutting planes)", data.n_bags()),
                m3ic::footprint(crate::params::Shape::of(&data), args.k, &params),
                args.memory.gib(),
            )?;
            let fit = params.fit(&data)?;
            let best = &fit.runs[fit.best];
            let detail = json!({
                "C": params.c,
                "l": params.l,
                "balance_mode": params.balance_mode.to_string(),
                "min_size": params.min_size,
                "max_size": params.max_size,
                "epsilon1": params.eps1,
                "epsilon2": params.eps2,
                "standardized": params.standardize,
                "instance_norm": params.normalize,
                "restart_objectives": fit.runs.iter().map(m3ic::M3icRun::objective).collect::<Vec<_>>(),
                "cccp_iterations": best.history.len(),
                "cutting_planes": best.planes,
            });
            (
                ClusterModel::M3ic(fit.model),
                fit.assignments,
                fit.objective,
                detail,
            )
        }
        ClusterMethod::Bamic(distance) => {
            super::estimate::check_cluster(
                &format!("BAMIC over {} bags (its bag distances)", data.n_bags()),
                bamic::footprint(crate::params::Shape::of(&data)),
                args.memory.gib(),
            )?;
            let fit = bamic::Bamic::default()
                .k(args.k)
                .seed(args.seed)
                .distance(distance)
                .restarts(args.restarts)
                .fit(&data)?;
            let detail = json!({ "medoids": fit.medoids });
            (
                ClusterModel::Bamic(fit.model),
                fit.assignments,
                fit.objective,
                detail,
            )
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    if let Some(out) = &args.output {
        model.save(Path::new(out))?;
    }
    let mut sizes = vec![0usize; args.k];
    for &a in &assignments {
        sizes[a] += 1;
    }
    let method = args.method.to_string();
    let mut human = format!(
        "{}: {} bags into {} clusters by {} (seed {}, {} restarts): objective {:.6}, sizes {:?}, {:.3} s",
        data.name(),
        data.n_bags(),
        args.k,
        method,
        args.seed,
        args.restarts,
        objective,
        sizes,
        seconds
    );
    let mut json = json!({
        "method": method,
        "k": args.k,
        "seed": args.seed,
        "restarts": args.restarts,
        "assignments": assignments,
        "cluster_sizes": sizes,
        "objective": objective,
        "seconds": seconds,
        "detail": detail,
    });
    // Say so when the clustering used fewer clusters than asked for.
    let empty: Vec<usize> = (0..args.k).filter(|&c| sizes[c] == 0).collect();
    json["empty_clusters"] = json!(empty);
    if !empty.is_empty() {
        human.push_str(&format!(
            "\nwarning: cluster(s) {empty:?} received no bag: {} of the {} clusters are used",
            args.k - empty.len(),
            args.k
        ));
    }
    if let Some(labels) = data.labels() {
        let accuracy = eval::clustering_accuracy(&assignments, labels);
        let nmi = eval::nmi(&assignments, labels);
        let ari = eval::adjusted_rand_index(&assignments, labels);
        human.push_str(&format!(
            "\naccuracy {:.1}% (Hungarian matching), NMI {:.3}, ARI {:.3}",
            100.0 * accuracy,
            nmi,
            ari
        ));
        json["accuracy"] = json!(accuracy);
        json["nmi"] = json!(nmi);
        json["ari"] = json!(ari);
    }
    if let Some(out) = &args.output {
        human.push_str(&format!("\nmodel saved to {out}"));
        json["model"] = json!(out);
    }
    if let Some(plot) = &args.plot {
        draw(&data, &assignments, args.k, &method, plot)?;
        human.push_str(&format!("\nplot: {plot}"));
        json["plot"] = json!(plot);
    }
    Ok(Report { human, json })
}

/// Each bag's mean instance: a data set of one instance per bag, with the bags' labels.
fn bag_means(data: &Dataset) -> Result<Dataset> {
    let dim = data.dim();
    let mut means = Vec::with_capacity(data.n_bags() * dim);
    for b in 0..data.n_bags() {
        let range = data.bag_range(b);
        let n = range.len() as f64;
        let mut sum = vec![0.0; dim];
        for i in range {
            sum.iter_mut()
                .zip(data.instance(i))
                .for_each(|(s, v)| *s += v);
        }
        means.extend(sum.into_iter().map(|s| s / n));
    }
    Dataset::new(
        data.name(),
        dim,
        means,
        (0..=data.n_bags()).collect(),
        data.bag_ids().to_vec(),
        data.labels().map(<[usize]>::to_vec),
        data.class_names().to_vec(),
    )
}

/// Scatter of the bags' mean instances on the first two principal axes of those means
/// (z-scored features; one axis for one feature): one colour per cluster, one marker per
/// class (circle, triangle, cross, square, then again), legends of both.
fn draw(data: &Dataset, assignments: &[usize], k: usize, method: &str, path: &str) -> Result<()> {
    let means = bag_means(data)?;
    let axes = data.dim().min(2);
    let pca = Pca::default().dim(axes).fit(&means)?.transform(&means)?;
    let point = |b: usize| {
        let x = pca.instance(b);
        (x[0], if axes > 1 { x[1] } else { 0.0 })
    };
    let (mut lo, mut hi) = (
        (f64::INFINITY, f64::INFINITY),
        (f64::NEG_INFINITY, f64::NEG_INFINITY),
    );
    for b in 0..pca.n_bags() {
        let (x, y) = point(b);
        (lo, hi) = ((lo.0.min(x), lo.1.min(y)), (hi.0.max(x), hi.1.max(y)));
    }
    let pad = |a: f64, b: f64| {
        let m = 0.05 * (b - a).max(1e-9);
        (a - m)..(b + m)
    };
    let plot_error = |e: String| Error::Io {
        path: path.into(),
        source: std::io::Error::other(e),
    };
    let title = format!(
        "{method}: {} bags of {} in {k} clusters",
        data.n_bags(),
        data.name()
    );
    let class_names = data.class_names().to_vec();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (800, 600)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| plot_error(e.to_string()))?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(pad(lo.0, hi.0), pad(lo.1, hi.1))
            .map_err(|e| plot_error(e.to_string()))?;
        chart
            .configure_mesh()
            .x_desc("principal axis 1 of the bag means")
            .y_desc(if axes > 1 { "principal axis 2" } else { "" })
            .axis_desc_style(("sans-serif", 16))
            .label_style(("sans-serif", 14))
            .x_label_formatter(&|x| format!("{x:.2}"))
            .y_label_formatter(&|y| format!("{y:.2}"))
            .draw()
            .map_err(|e| plot_error(e.to_string()))?;
        for cluster in 0..k {
            let c = colour(Some(cluster));
            let members: Vec<usize> = (0..pca.n_bags())
                .filter(|&b| assignments[b] == cluster)
                .collect();
            // One series per marker shape (class c is shape c mod 4, unlabelled a circle).
            for shape in 0..4 {
                let points: Vec<(f64, f64)> = members
                    .iter()
                    .filter(|&&b| data.label(b).unwrap_or(0) % 4 == shape)
                    .map(|&b| point(b))
                    .collect();
                let style = c.mix(0.8).filled();
                match shape {
                    0 => chart.draw_series(points.into_iter().map(|p| Circle::new(p, 4, style))),
                    1 => chart
                        .draw_series(points.into_iter().map(|p| TriangleMarker::new(p, 5, style))),
                    2 => chart.draw_series(
                        points
                            .into_iter()
                            .map(|p| Cross::new(p, 4, c.stroke_width(2))),
                    ),
                    _ => {
                        chart.draw_series(points.into_iter().map(|p| {
                            EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], style)
                        }))
                    }
                }
                .map_err(|e| plot_error(e.to_string()))?;
            }
            chart
                .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                .map_err(|e| plot_error(e.to_string()))?
                .label(format!("cluster {cluster} ({} bags)", members.len()))
                .legend(move |p| Circle::new(p, 4, c.filled()));
        }
        if data.labels().is_some() {
            // Legend entries for the markers: an empty series per class.
            let grey = colour(None);
            for (c, name) in class_names.iter().enumerate() {
                let series = chart
                    .draw_series(std::iter::empty::<Circle<(f64, f64), i32>>())
                    .map_err(|e| plot_error(e.to_string()))?
                    .label(format!("class {name}"));
                // The shapes of `marker`, one type per arm.
                match c % 4 {
                    0 => series.legend(move |p| Circle::new(p, 4, grey.filled())),
                    1 => series.legend(move |p| TriangleMarker::new(p, 5, grey.filled())),
                    2 => series.legend(move |p| Cross::new(p, 4, grey.stroke_width(2))),
                    _ => series.legend(move |(x, y)| {
                        Rectangle::new([(x - 4, y - 4), (x + 4, y + 4)], grey.filled())
                    }),
                };
            }
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
    super::output::write_output(path, svg.as_bytes())
}

//! `mil cluster`: M³IC-MBM or BAMIC over the bags of a data set; scores the clustering
//! against the labels when there are any (accuracy after Hungarian matching, NMI, ARI).

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{ClusterArgs, Report};
use crate::cluster::{bamic, m3ic, ClusterMethod, ClusterModel};
use crate::data;
use crate::error::Result;
use crate::eval;

/// Runs `mil cluster`.
pub fn run(args: &ClusterArgs) -> Result<Report> {
    if let Some(out) = &args.output {
        super::output::refuse_stdout("--output", out)?;
        super::output::refuse_input_as_output("--output", out, &[&args.data])?;
    }
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
                args.memory.max_memory_gib,
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
                args.memory.max_memory_gib,
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
    Ok(Report { human, json })
}

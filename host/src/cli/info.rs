//! `mil info`: counts and checks a data set.

use serde_json::json;

use super::{InfoArgs, Report};
use crate::data::{self, builtin};
use crate::error::Result;

/// Runs `mil info`.
pub fn run(args: &InfoArgs) -> Result<Report> {
    if args.list {
        let human = builtin::BUILTINS
            .iter()
            .map(|b| format!("{:<10} {}", b.name, b.description))
            .collect::<Vec<_>>()
            .join("\n");
        let json = json!({
            "datasets": builtin::BUILTINS.iter().map(|b| json!({"name": b.name, "description": b.description})).collect::<Vec<_>>()
        });
        return Ok(Report { human, json });
    }
    let spec = args.data.as_deref().unwrap_or_default();
    let d = data::load(spec)?;
    let per_class: serde_json::Map<String, serde_json::Value> = d
        .class_names()
        .iter()
        .zip(d.bags_per_class())
        .map(|(name, count)| (name.clone(), json!(count)))
        .collect();
    let sizes: Vec<usize> = (0..d.n_bags()).map(|b| d.bag(b).len()).collect();
    let min_size = sizes.iter().copied().min().unwrap_or(0);
    let max_size = sizes.iter().copied().max().unwrap_or(0);
    let constant = (0..d.dim())
        .filter(|&j| {
            let first = d.instance(0)[j];
            (0..d.n_instances()).all(|i| d.instance(i)[j] == first)
        })
        .count();
    let mut human = format!(
        "{}: {} bags, {} instances, {} features ({} constant), bag sizes {}..{}",
        d.name(),
        d.n_bags(),
        d.n_instances(),
        d.dim(),
        constant,
        min_size,
        max_size
    );
    if d.n_classes() > 0 {
        let parts: Vec<String> = per_class.iter().map(|(k, v)| format!("{k}: {v}")).collect();
        human.push_str(&format!(
            "\n{} classes, bags per class: {}",
            d.n_classes(),
            parts.join(", ")
        ));
    } else {
        human.push_str("\nunlabelled");
    }
    let json = json!({
        "name": d.name(),
        "bags": d.n_bags(),
        "instances": d.n_instances(),
        "features": d.dim(),
        "classes": d.n_classes(),
        "bags_per_class": per_class,
        "constant_features": constant,
        "min_bag_size": min_size,
        "max_bag_size": max_size,
    });
    Ok(Report { human, json })
}

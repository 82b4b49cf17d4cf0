//! The command line's own face: `mil completions`, `mil manpage`, `mil --version` and the
//! ROC plot of `mil cv --plot` / `mil cv merge --plot`.

use std::path::Path;
use std::process::Command;

use mil_suite::{mil_json, mil_refuses_naming, run_mil, temp_dir};

/// Stdout of a `mil` run that must succeed.
fn ok(args: &[&str]) -> String {
    let out = run_mil(args);
    assert!(
        out.status.success(),
        "mil {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 on stdout")
}

/// The subcommands `mil --help` lists (first word of each line under "Commands:").
fn subcommands() -> Vec<String> {
    let help = ok(&["--help"]);
    let names: Vec<String> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|name| name != "help")
        .collect();
    for expected in ["cv", "train", "predict", "completions", "manpage"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }
    names
}

/// Whether `word` occurs in `text` as a whole word (not inside a longer name).
fn has_word(text: &str, word: &str) -> bool {
    let part = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
    text.match_indices(word).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + word.len()..].chars().next();
        !before.is_some_and(part) && !after.is_some_and(part)
    })
}

#[test]
fn completion_scripts_name_every_subcommand() {
    let names = subcommands();
    let dir = temp_dir("completions");
    for shell in ["bash", "zsh", "fish"] {
        let script = ok(&["completions", shell]);
        assert!(script.len() > 1000, "{shell}: {} bytes", script.len());
        for name in &names {
            assert!(has_word(&script, name), "{shell} script lacks {name}");
        }
        // -o writes the same script to a file.
        let file = dir.join(format!("mil.{shell}"));
        ok(&["completions", shell, "-o", &file.display().to_string()]);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), script, "{shell}");
    }
    let bash = dir.join("mil.bash");
    match Command::new("bash").arg("-n").arg(&bash).output() {
        Ok(out) => assert!(
            out.status.success(),
            "bash -n: {}",
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) => eprintln!("bash not run ({e}); syntax not checked"),
    }
    // Sourced into bash, the script registers its completion function for `mil`.
    if let Ok(out) = Command::new("bash")
        .arg("-c")
        .arg(format!("source {} && complete -p mil", bash.display()))
        .output()
    {
        let registered = String::from_utf8_lossy(&out.stdout);
        assert!(registered.contains("mil"), "complete -p mil: {registered}");
    }
    mil_refuses_naming(&["completions", "tcsh"], "tcsh");
    mil_refuses_naming(
        &["completions", "bash", "-o", &dir.display().to_string()],
        "directory",
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Checks one roff page: its title line, and when groff is installed that it renders
/// without warnings into text containing `expect`.
fn check_page(page: &str, title: &str, expect: &[String]) {
    let th = page
        .lines()
        .find(|l| l.starts_with(".TH "))
        .unwrap_or_else(|| panic!("no .TH line in the page of {title}"));
    assert!(th.starts_with(&format!(".TH {title} 1 ")), "{th}");
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS"] {
        assert!(page.lines().any(|l| l == section), "{title}: {section}");
    }
    let rendered = Command::new("groff")
        // UTF-8 input (preconv, as `man` runs it; the help texts use ε, ³, →), plain
        // text out (no bold or underline), lines long enough not to hyphenate.
        .args(["-k", "-man", "-Tutf8", "-ww", "-rLL=200n", "-P-cbou"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let Ok(mut child) = rendered else {
        eprintln!("groff not installed; {title}'s page checked as roff only");
        return;
    };
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(page.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.is_empty(), "groff: {stderr}");
    // groff prints dashes as Unicode hyphens and may space words out: compare the
    // letters alone.
    let letters = |s: &str| -> String { s.chars().filter(char::is_ascii_alphanumeric).collect() };
    let text = letters(&String::from_utf8_lossy(&out.stdout));
    for e in expect {
        assert!(
            text.contains(&letters(e)),
            "{title}: rendered page lacks {e}"
        );
    }
}

#[test]
fn man_pages_cover_every_subcommand() {
    let names = subcommands();
    let page = ok(&["manpage"]);
    let listed: Vec<String> = names.iter().map(|n| format!("mil-{n}(1)")).collect();
    for entry in &listed {
        assert!(
            page.contains(&entry.replace('-', "\\-")),
            "mil.1 lacks {entry}"
        );
    }
    check_page(&page, "mil", &listed);

    let dir = temp_dir("manpage");
    let written = mil_json(&["manpage", "-o", &dir.display().to_string(), "--json"]);
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    files.sort();
    let mut pages: Vec<String> = written["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    pages.sort();
    assert_eq!(files, pages, "the report names the files written");
    assert_eq!(std::fs::read_to_string(dir.join("mil.1")).unwrap(), page);
    for name in &names {
        let title = format!("mil-{name}");
        let sub = std::fs::read_to_string(dir.join(format!("{title}.1")))
            .unwrap_or_else(|e| panic!("{title}.1: {e}"));
        check_page(&sub, &title, &[format!("mil {name}")]);
    }
    // The nested subcommands have pages too.
    for nested in ["mil-cv-merge.1", "mil-gram-merge.1"] {
        assert!(files.iter().any(|f| f == nested), "{nested} in {files:?}");
    }
    let not_dir = dir.join("mil.1").display().to_string();
    mil_refuses_naming(&["manpage", "-o", &not_dir], "--output");
    std::fs::remove_dir_all(&dir).ok();
}

/// Runs git in this repository; its trimmed stdout, or `None` outside a checkout.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

#[test]
fn version_names_the_commit() {
    let line = ok(&["--version"]);
    assert!(line.starts_with("mil 0."), "{line}");
    let expected = match std::env::var("MIL_BUILD_COMMIT") {
        Ok(given) if !given.trim().is_empty() => given.trim().to_string(),
        _ => match git(&["rev-parse", "--short=12", "HEAD"]) {
            Some(hash) => {
                let date = git(&["show", "-s", "--format=%cs", "HEAD"]).unwrap();
                assert!(line.contains(&format!(", {date})")), "{line}: date {date}");
                hash
            }
            None => "unknown".into(),
        },
    };
    assert!(line.contains(&format!("(commit {expected}")), "{line}");
    // Every subcommand reports the same version.
    assert_eq!(ok(&["cv", "--version"]), line.replacen("mil", "mil-cv", 1));
}

/// The SVG's root element and its texts, parsed as XML.
fn svg_texts(path: &Path) -> (String, Vec<String>) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains("<svg"), "{}", path.display());
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{} is not XML: {e}", path.display()));
    let root = doc.root_element().tag_name().name().to_string();
    let texts = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text().map(|t| t.trim().to_string()))
        .collect();
    (root, texts)
}

/// The areas under the thick polylines (the ROC curves; legend samples have two points
/// only), in the plot's own units: each curve runs from its (0, 0) to its (1, 1) corner.
fn drawn_areas(path: &Path) -> Vec<f64> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke-width") == Some("2"))
        .filter_map(|n| {
            let points: Vec<(f64, f64)> = n
                .attribute("points")?
                .split_whitespace()
                .map(|p| {
                    let (x, y) = p.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect();
            (points.len() > 2).then_some(points)
        })
        .map(|points| {
            let (x0, y0) = points[0];
            let (x1, y1) = points[points.len() - 1];
            let unit: Vec<(f64, f64)> = points
                .iter()
                .map(|&(x, y)| ((x - x0) / (x1 - x0), (y - y0) / (y1 - y0)))
                .collect();
            unit.windows(2)
                .map(|w| (w[1].0 - w[0].0) * (w[0].1 + w[1].1) / 2.0)
                .sum()
        })
        .collect()
}

/// Half a pixel of rounding at each end of each coordinate of a 720 × 640 plot.
const PIXEL_AREA_TOLERANCE: f64 = 0.005;

#[test]
fn cv_plot_draws_the_pooled_roc_curve() {
    let dir = temp_dir("cv-plot");
    let plot = dir.join("roc.svg");
    let plot_arg = plot.display().to_string();
    let cv = ["cv", "musk1", "--classifier", "citation-knn", "--quiet"];
    let mut args = cv.to_vec();
    args.extend(["--json", "--plot", &plot_arg]);
    let report = mil_json(&args);
    let auroc = report["auroc"].as_f64().expect("two classes: an AUROC");
    let (root, texts) = svg_texts(&plot);
    assert_eq!(root, "svg");
    let legend = format!("(AUROC {auroc:.4})");
    let entries: Vec<&String> = texts.iter().filter(|t| t.contains("(AUROC ")).collect();
    assert_eq!(entries.len(), 2, "the curve and chance: {entries:?}");
    assert!(
        entries.iter().any(|t| t.contains(&legend)),
        "{legend} in {entries:?}"
    );
    for axis in ["false-positive rate", "true-positive rate"] {
        assert!(texts.iter().any(|t| t == axis), "axis {axis}");
    }
    // One repetition: the pooled curve is the report's.
    assert_eq!(report["roc"]["auroc"]["1"].as_f64(), Some(auroc));
    let areas = drawn_areas(&plot);
    assert_eq!(areas.len(), 1);
    assert!(
        (areas[0] - auroc).abs() < PIXEL_AREA_TOLERANCE,
        "{areas:?} vs {auroc}"
    );

    // The parts of a sharded run draw the same plot at the merge.
    let parts: Vec<String> = (0..2)
        .map(|i| dir.join(format!("part-{i}.json")).display().to_string())
        .collect();
    for (i, part) in parts.iter().enumerate() {
        let shard = format!("{i}/2");
        let mut args = cv.to_vec();
        args.extend(["--shard", &shard, "-o", part]);
        ok(&args);
    }
    let merged_plot = dir.join("merged.svg");
    let merged = mil_json(&[
        "cv",
        "merge",
        &parts[0],
        &parts[1],
        "--json",
        "--plot",
        &merged_plot.display().to_string(),
    ]);
    assert_eq!(merged["roc"]["auroc"], report["roc"]["auroc"]);
    assert_eq!(
        std::fs::read(&merged_plot).unwrap(),
        std::fs::read(&plot).unwrap()
    );

    // Refused before any work: a plot over an input or a part, or a plot of one share.
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/weka_musk1_5bags.arff"
    );
    let copy = dir.join("data.arff");
    std::fs::copy(fixture, &copy).unwrap();
    let data = copy.display().to_string();
    mil_refuses_naming(
        &["cv", &data, "--classifier", "citation-knn", "--plot", &data],
        "--plot",
    );
    mil_refuses_naming(
        &["cv", "merge", &parts[0], &parts[1], "--plot", &parts[1]],
        "--plot",
    );
    let mut args = cv.to_vec();
    args.extend(["--shard", "0/2", "-o", &parts[0], "--plot", &plot_arg]);
    mil_refuses_naming(&args, "--plot");
    assert_eq!(
        std::fs::read(&copy).unwrap(),
        std::fs::read(fixture).unwrap(),
        "the input is untouched"
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn cv_plot_of_three_classes_has_one_curve_per_class() {
    let dir = temp_dir("cv-plot3");
    let plot = dir.join("roc3.svg");
    let report = mil_json(&[
        "cv",
        "corel3",
        "--classifier",
        "citation-knn",
        "--folds",
        "5",
        "--quiet",
        "--json",
        "--plot",
        &plot.display().to_string(),
    ]);
    assert!(report["auroc"].is_null(), "multi-class: no single AUROC");
    let (root, texts) = svg_texts(&plot);
    assert_eq!(root, "svg");
    let entries: Vec<&String> = texts
        .iter()
        .filter(|t| t.contains(" vs rest (AUROC "))
        .collect();
    assert_eq!(entries.len(), 3, "{entries:?}");
    let per_class = report["roc"]["auroc"].as_object().unwrap();
    let areas = drawn_areas(&plot);
    assert_eq!(areas.len(), 3);
    for (class, area) in ["0", "1", "2"].iter().zip(&areas) {
        let a = per_class[*class].as_f64().unwrap();
        let entry = format!("class {class} vs rest (AUROC {a:.4})");
        assert!(
            entries.iter().any(|t| **t == entry),
            "{entry} in {entries:?}"
        );
        assert!(
            (area - a).abs() < PIXEL_AREA_TOLERANCE,
            "class {class}: drawn {area}, {a}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `mil cluster --plot`: every bag is drawn once, in its cluster's colour and its class's
/// shape (musk1: class 0 circles, class 1 triangles), beside a legend of both.
#[test]
fn cluster_plot_draws_every_bag_in_its_clusters_colour_and_its_class_shape() {
    let dir = temp_dir("cluster-plot");
    let plot = dir.join("clusters.svg");
    let plot_arg = plot.display().to_string();
    let args = ["cluster", "musk1", "--method", "m3ic", "--k", "2"];
    let report = mil_json(&[&args[..], &["--json", "--plot", &plot_arg]].concat());
    let assignments: Vec<usize> = report["assignments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_u64().unwrap() as usize)
        .collect();
    let musk1 = mil_toolkit::data::load("musk1").unwrap();
    let labels = musk1.labels().unwrap();
    assert_eq!(musk1.class_names(), ["0", "1"]);
    let (root, texts) = svg_texts(&plot);
    assert_eq!(root, "svg");
    let sizes: Vec<usize> = (0..2)
        .map(|c| assignments.iter().filter(|&&a| a == c).count())
        .collect();
    for (c, n) in sizes.iter().enumerate() {
        let entry = format!("cluster {c} ({n} bags)");
        assert!(texts.contains(&entry), "{entry} in {texts:?}");
    }
    for class in ["class 0", "class 1"] {
        assert!(texts.iter().any(|t| t == class), "{class} in {texts:?}");
    }
    // Markers by shape and fill; each legend adds one marker of its own.
    let text = std::fs::read_to_string(&plot).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let count = |tag: &str, fill: &str| {
        doc.descendants()
            .filter(|n| n.has_tag_name(tag) && n.attribute("fill") == Some(fill))
            .count()
    };
    // The first two colours of the palette (clusters 0 and 1), and the legend's grey.
    let fills = ["#1F77B4", "#D62728"];
    for (c, fill) in fills.iter().enumerate() {
        let of_class = |class: usize| {
            (0..labels.len())
                .filter(|&b| assignments[b] == c && labels[b] == class)
                .count()
        };
        assert_eq!(
            count("circle", fill),
            of_class(0) + 1,
            "cluster {c}: circles"
        );
        assert_eq!(
            count("polygon", fill),
            of_class(1),
            "cluster {c}: triangles"
        );
    }
    assert_eq!(count("circle", "#A0A0A0"), 1, "the class 0 legend");
    assert_eq!(count("polygon", "#A0A0A0"), 1, "the class 1 legend");
    std::fs::remove_dir_all(dir).ok();
}

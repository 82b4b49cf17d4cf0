//! Data sets compiled into the binary, so the main job runs with no user data and from
//! any working directory. Attribution: `data/PROVENANCE.md`.

/// A data set the project ships.
pub struct Builtin {
    /// The name users type (`mil info musk1`).
    pub name: &'static str,
    /// One line on what it is.
    pub description: &'static str,
    /// The CSV text.
    pub csv: &'static str,
}

/// Every shipped data set.
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "musk1",
        description: "UCI Musk 1 drug activity: 92 bags (47+/45-), 476 instances, 166 features",
        csv: include_str!("../../../data/musk1.csv"),
    },
    Builtin {
        name: "elephant",
        description: "Corel elephant image annotation: 200 bags (100+/100-), 1391 instances, 230 features",
        csv: include_str!("../../../data/elephant.csv"),
    },
    Builtin {
        name: "corel3",
        description: "positive bags of elephant, fox, tiger (labels 0/1/2): 300 bags, 1953 instances, 230 features",
        csv: include_str!("../../../data/corel3.csv"),
    },
];

/// The built-in data set of that name, if any.
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

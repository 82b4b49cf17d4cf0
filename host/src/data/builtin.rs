//! Data sets compiled into the binary, so the main job runs with no user data and from
//! any working directory. The files are in the crate's `data/` folder (attribution:
//! `data/PROVENANCE.md`); without the `datasets` feature the list is empty and
//! [`crate::data::load`] reads files only.

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
#[cfg(feature = "datasets")]
pub const BUILTINS: &[Builtin] = &[
    Builtin {
        name: "musk1",
        description: "UCI Musk 1 drug activity: 92 bags (47+/45-), 476 instances, 166 features",
        csv: include_str!("../../data/musk1.csv"),
    },
    Builtin {
        name: "elephant",
        description: "Corel elephant image annotation: 200 bags (100+/100-), 1391 instances, 230 features",
        csv: include_str!("../../data/elephant.csv"),
    },
    Builtin {
        name: "fox",
        description: "Corel fox image annotation: 200 bags (100+/100-), 1320 instances, 230 features",
        csv: include_str!("../../data/fox.csv"),
    },
    Builtin {
        name: "tiger",
        description: "Corel tiger image annotation: 200 bags (100+/100-), 1220 instances, 230 features",
        csv: include_str!("../../data/tiger.csv"),
    },
    Builtin {
        name: "corel3",
        description: "positive bags of elephant, fox, tiger (labels 0/1/2): 300 bags, 1953 instances, 230 features",
        csv: include_str!("../../data/corel3.csv"),
    },
    Builtin {
        name: "musk2",
        description: "UCI Musk 2 drug activity: 102 bags (39+/63-), 6598 instances, 166 features",
        csv: include_str!("../../data/musk2.csv"),
    },
    Builtin {
        name: "sival6",
        description: "SIVAL, 6 categories (labels 0-5): 360 bags, 11410 instances, 30 features",
        csv: include_str!("../../data/sival6.csv"),
    },
    Builtin {
        name: "corel_dogs",
        description: "Corel 2000-image regions, \"dogs\" vs rest: 2000 bags (100+/1900-), 7947 instances, 9 features",
        csv: include_str!("../../data/corel_dogs.csv"),
    },
];

/// Every shipped data set: none without the `datasets` feature.
#[cfg(not(feature = "datasets"))]
pub const BUILTINS: &[Builtin] = &[];

/// The built-in data set of that name, if any.
pub fn find(name: &str) -> Option<&'static Builtin> {
    BUILTINS.iter().find(|b| b.name == name)
}

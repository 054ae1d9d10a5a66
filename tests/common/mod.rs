//! Helpers shared by the end-to-end tests: running the real binary, reading shards, and
//! comparing trajectories.
#![allow(dead_code)]

use polars::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn armada(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_armada"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the armada binary runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The shard files of a sweep directory, by file name.
pub fn shards(sweep_dir: &Path) -> BTreeMap<String, PathBuf> {
    std::fs::read_dir(sweep_dir.join("trajectories"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parquet"))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), p))
        .collect()
}

pub fn read(path: &Path) -> DataFrame {
    let file = std::fs::File::open(path).unwrap();
    ParquetReader::new(file).finish().unwrap()
}

/// Every column but `elapsed_ms`, bit for bit (NaN included).
pub fn assert_same_trajectory(a: &DataFrame, b: &DataFrame, what: &str) {
    assert_eq!(a.get_column_names(), b.get_column_names(), "{what}");
    assert_eq!(a.height(), b.height(), "{what}");
    for col in a.columns() {
        let name = col.name().as_str();
        if name == "elapsed_ms" {
            continue;
        }
        let other = b.column(name).unwrap();
        assert_eq!(col.dtype(), other.dtype(), "{what}: {name}");
        if col.dtype() == &DataType::Float64 {
            let x: Vec<Option<u64>> = col.f64().unwrap().iter().map(|v| v.map(f64::to_bits)).collect();
            let y: Vec<Option<u64>> = other.f64().unwrap().iter().map(|v| v.map(f64::to_bits)).collect();
            assert_eq!(x, y, "{what}: column {name}");
        } else {
            assert!(
                col.as_materialized_series().equals_missing(other.as_materialized_series()),
                "{what}: column {name}"
            );
        }
    }
}

//! The papers, one module each: `<id>.rs`, whose `measure` computes every measure the
//! claims of `repro/<id>.toml` name from the runs of its experiments. The build script
//! (`build.rs`) finds them and writes their declarations and [`PAPERS`], included here.

include!(concat!(env!("OUT_DIR"), "/papers.rs"));

//! `phobos check FILE|DIR...` (to be written).
#[derive(clap::Args)]
pub struct Args {
    /// Files or directories of .pho files.
    pub paths: Vec<std::path::PathBuf>,
}
pub fn run(_a: Args) -> u8 {
    eprintln!("error: `phobos check` is not written yet");
    2
}

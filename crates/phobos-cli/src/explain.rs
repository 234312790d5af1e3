//! `phobos explain` (to be written).
#[derive(clap::Args)]
pub struct Args {
    pub file: std::path::PathBuf,
}
pub fn run(_a: Args) -> u8 {
    eprintln!("error: `phobos explain` is not written yet");
    2
}

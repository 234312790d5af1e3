//! `phobos ptx`, `phobos build`, `phobos report` (to be written).
#[derive(clap::Args)]
pub struct PtxArgs {
    pub file: std::path::PathBuf,
}
#[derive(clap::Args)]
pub struct BuildArgs {
    pub paths: Vec<std::path::PathBuf>,
}
#[derive(clap::Args)]
pub struct ReportArgs {
    pub file: std::path::PathBuf,
}
pub fn run_ptx(_a: PtxArgs) -> u8 {
    eprintln!("error: `phobos ptx` is not written yet");
    2
}
pub fn run_build(_a: BuildArgs) -> u8 {
    eprintln!("error: `phobos build` is not written yet");
    2
}
pub fn run_report(_a: ReportArgs) -> u8 {
    eprintln!("error: `phobos report` is not written yet");
    2
}

//! Build options: what the builder API sets, what `phobos.toml` says and
//! what the environment overrides, resolved into one `Settings`. Every
//! environment variable read here is reported so the build script can print
//! `cargo:rerun-if-env-changed` for it.

use crate::BuildError;
use phobos_core::parse_arch;
pub(crate) use phobos_core::parse_arch_list;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The architectures built when nothing says otherwise: every target Phobos
/// supports, so a release binary runs on any of them without a JIT.
pub const DEFAULT_ARCHES: [u32; 8] = phobos_core::ARCHES;

/// `phobos.toml`, next to the crate's Cargo.toml:
///
/// ```toml
/// [build]
/// arches = ["sm_80", "sm_90"]   # or [80, 90]
/// ptxas = "/usr/local/cuda/bin/ptxas"
/// ptx-only = false
/// tuning = "tuning.ron"         # autotune decisions to ship (Device::export_tuning)
///
/// [build.defines]
/// BLOCK = 128                   # pins @autotune(BLOCK in [...]) to 128
/// ```
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ConfigFile {
    #[serde(default)]
    pub build: BuildSection,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub(crate) struct BuildSection {
    pub arches: Option<Vec<ArchValue>>,
    pub ptxas: Option<PathBuf>,
    pub ptx_only: Option<bool>,
    /// Exported autotune decisions to embed, relative to the manifest.
    pub tuning: Option<PathBuf>,
    /// Pins `@autotune` constants: `[build.defines] BLOCK = 128`.
    #[serde(default)]
    pub defines: std::collections::BTreeMap<String, i64>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum ArchValue {
    Number(u32),
    Name(String),
}

impl ConfigFile {
    /// The `phobos.toml` at `path` as every reader takes it: a missing file
    /// is the defaults (an error when the caller named the file), and one
    /// that is not a regular file (a device or a pipe, which could be
    /// endless or never end) is refused.
    pub(crate) fn read_at(path: &Path, named: bool) -> Result<ConfigFile, BuildError> {
        match std::fs::metadata(path) {
            Ok(m) if m.is_file() => ConfigFile::read(path),
            Ok(_) => Err(BuildError::io(path, "not a regular file")),
            Err(_) if named => Err(BuildError::io(path, "no such file")),
            Err(_) => Ok(ConfigFile::default()),
        }
    }

    fn read(path: &Path) -> Result<ConfigFile, BuildError> {
        let text =
            crate::read::file(path, crate::read::CONFIG).map_err(|e| BuildError::read(path, e))?;
        toml::from_str(&text).map_err(|e| BuildError::Config {
            path: path.to_path_buf(),
            message: e.to_string(),
        })
    }

    pub(crate) fn arches(&self, path: &Path) -> Result<Option<Vec<u32>>, BuildError> {
        let Some(values) = &self.build.arches else {
            return Ok(None);
        };
        let mut out = Vec::new();
        for v in values {
            let arch = match v {
                ArchValue::Number(n) => parse_arch(&n.to_string()),
                ArchValue::Name(s) => parse_arch(s),
            }
            .map_err(|message| BuildError::Config {
                path: path.to_path_buf(),
                message,
            })?;
            out.push(arch);
        }
        Ok(Some(out))
    }
}

/// The targets a crate's `phobos.toml` names (`[build] arches`), read from
/// `manifest_dir/phobos.toml` as a build reads it; `None` when there is no
/// such file or it names none (a build then takes `PHOBOS_ARCHES`, the
/// builder's, or every target). For tools that follow the project's
/// targets without building, such as the language server.
pub fn project_arches(manifest_dir: &Path) -> Result<Option<Vec<u32>>, BuildError> {
    let path = manifest_dir.join("phobos.toml");
    ConfigFile::read_at(&path, false)?.arches(&path)
}

/// Reads environment variables and remembers which ones were read.
#[derive(Default)]
pub(crate) struct Env {
    pub read: Vec<String>,
    /// In unit tests: the whole environment, instead of the process's.
    #[cfg(test)]
    pub fixed: Option<Vec<(String, String)>>,
}

impl Env {
    pub(crate) fn var(&mut self, name: &str) -> Option<String> {
        if !self.read.iter().any(|n| n == name) {
            self.read.push(name.to_string());
        }
        #[cfg(test)]
        if let Some(vars) = &self.fixed {
            return vars
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
                .filter(|v| !v.is_empty());
        }
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }

    /// An environment holding exactly `vars` (unit tests).
    #[cfg(test)]
    pub(crate) fn fixed(vars: &[(&str, &str)]) -> Env {
        Env {
            read: Vec::new(),
            fixed: Some(
                vars.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arch_names_parse_and_unknown_ones_are_refused() {
        assert_eq!(
            parse_arch_list("sm_80, 90 compute_75"),
            Ok(vec![80, 90, 75])
        );
        assert!(parse_arch_list("sm_70")
            .unwrap_err()
            .contains("unknown target `sm_70`"));
        assert!(parse_arch_list(" , ").is_err());
    }

    #[test]
    fn config_file_takes_names_or_numbers_and_refuses_unknown_keys() {
        let c: ConfigFile =
            toml::from_str("[build]\narches = [\"sm_86\", 90]\nptx-only = true\n").unwrap();
        assert_eq!(
            c.arches(Path::new("phobos.toml")).unwrap(),
            Some(vec![86, 90])
        );
        assert_eq!(c.build.ptx_only, Some(true));
        assert!(toml::from_str::<ConfigFile>("[build]\narch = 3\n").is_err());
    }
}

//! A loaded PTX module: its entries decoded and ready to launch, and the
//! `.file` table that turns `.loc` positions into source file names.

use crate::decode::{decode_module, Entry, ParamInfo};
use crate::error::SimError;
use crate::parse::parse;

/// A parsed and decoded PTX module.
#[derive(Clone, Debug)]
pub struct Module {
    files: Vec<(u32, String)>,
    /// `.loc ..., inlined_at` call-site chains, innermost first.
    inline_chains: Vec<Vec<(u32, u32, u32)>>,
    entries: Vec<Entry>,
}

impl Module {
    /// Parses PTX text. Fails on malformed PTX and on anything outside the
    /// supported subset (`unsupported instruction X at line N`).
    pub fn parse(ptx: &str) -> Result<Module, SimError> {
        let raw = parse(ptx)?;
        let entries = decode_module(&raw)?;
        Ok(Module {
            files: raw.files,
            inline_chains: raw.inline_chains,
            entries,
        })
    }

    /// The names of the module's `.entry` kernels, in order.
    pub fn entry_names(&self) -> Vec<&str> {
        self.entries.iter().map(|e| e.name.as_str()).collect()
    }

    /// An entry's `.param` list, in order.
    pub fn params(&self, entry: &str) -> Result<&[ParamInfo], SimError> {
        Ok(&self.entry(entry)?.params)
    }

    /// Bytes of static shared memory the entry declares.
    pub fn shared_bytes(&self, entry: &str) -> Result<u32, SimError> {
        Ok(self.entry(entry)?.shared_bytes)
    }

    /// The module's `.target` as a number (`80` for `sm_80`,
    /// `phobos_meta::arch::SM_90A` for `sm_90a`), when it names one.
    pub fn target(&self, entry: &str) -> Result<Option<u32>, SimError> {
        Ok(self.entry(entry)?.target)
    }

    pub(crate) fn entry(&self, name: &str) -> Result<&Entry, SimError> {
        self.entries
            .iter()
            .find(|e| e.name == name)
            .ok_or_else(|| SimError::UnknownEntry {
                name: name.to_string(),
                available: self.entries.iter().map(|e| e.name.clone()).collect(),
            })
    }

    /// The name of `.file` index `f`.
    pub fn file_name(&self, f: u32) -> String {
        self.files
            .iter()
            .find(|(i, _)| *i == f)
            .map_or_else(|| format!("<file {f}>"), |(_, n)| n.clone())
    }

    /// The call sites that code at an instruction was inlined into,
    /// innermost first (empty when it was not inlined).
    pub(crate) fn inline_chain(&self, chain: u32) -> &[(u32, u32, u32)] {
        self.inline_chains
            .get(chain as usize)
            .map_or(&[], Vec::as_slice)
    }
}

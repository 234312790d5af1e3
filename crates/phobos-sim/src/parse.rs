//! PTX text → a raw module: directives, entries, their declarations and
//! their instruction statements with operands still as text-level values.
//!
//! This module owns the lexical and structural grammar of PTX (the subset in
//! `docs/ptx-subset.md`). It does not know what any instruction means: that
//! is `decode`'s job. Every error carries the 1-based PTX line.

use crate::error::SimError;
use std::collections::HashMap;

/// One lexical token with the line it starts on.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// Identifiers, opcodes with their modifiers, directives, registers,
    /// numbers: any run of `[A-Za-z0-9_$%.]`.
    Word(String),
    Str(String),
    Punct(char),
}

#[derive(Clone, Debug)]
struct Token {
    tok: Tok,
    line: usize,
}

fn is_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '$' | '%' | '.')
}

/// A `// phobos.bounds NAME SYMBOL START END` note at the end of a shared
/// load, store or atomic that Phobos wrote: every access of that
/// instruction lies in bytes `START..END` from shared array `SYMBOL`, the
/// bytes of the kernel's buffer `NAME` (docs/simulator.md). Comments of any
/// other kind are ignored.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct RawBounds {
    pub name: String,
    pub symbol: String,
    pub start: u64,
    pub end: u64,
}

const BOUNDS_NOTE: &str = "phobos.bounds";
const STEP_NOTE: &str = "phobos.step";

/// A note Phobos writes at the end of an instruction's line for the
/// simulator's checks.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Note {
    Bounds(RawBounds),
    /// `// phobos.step NAME` on a loop's `add.s32 i, i, step`: the language
    /// requires the sum to stay inside i32 (NAME is the loop's variable).
    Step(String),
}

fn note(text: &str, line: usize) -> Result<Option<Note>, SimError> {
    let mut words = text.split_whitespace();
    match words.next() {
        Some(BOUNDS_NOTE) => {}
        Some(STEP_NOTE) => {
            return match (words.next(), words.next()) {
                (Some(name), None) => Ok(Some(Note::Step(name.to_string()))),
                _ => Err(SimError::parse(
                    line,
                    format!("a `{STEP_NOTE}` note is `{STEP_NOTE} NAME`"),
                )),
            };
        }
        _ => return Ok(None),
    }
    let bad = || {
        SimError::parse(
            line,
            format!("a `{BOUNDS_NOTE}` note is `{BOUNDS_NOTE} NAME SYMBOL START END`, with START <= END"),
        )
    };
    let (Some(name), Some(symbol), Some(start), Some(end), None) = (
        words.next(),
        words.next(),
        words.next(),
        words.next(),
        words.next(),
    ) else {
        return Err(bad());
    };
    let (Ok(start), Ok(end)) = (start.parse::<u64>(), end.parse::<u64>()) else {
        return Err(bad());
    };
    if start > end {
        return Err(bad());
    }
    Ok(Some(Note::Bounds(RawBounds {
        name: name.to_string(),
        symbol: symbol.to_string(),
        start,
        end,
    })))
}

/// The tokens of `src`, and its notes by line.
fn lex(src: &str) -> Result<(Vec<Token>, HashMap<usize, Note>), SimError> {
    let mut notes = HashMap::new();
    let mut out = Vec::new();
    let chars: Vec<char> = src.chars().collect();
    let mut i = 0;
    let mut line = 1;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && chars.get(i + 1) == Some(&'/') {
            let start = i + 2;
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            if let Some(n) = note(&text, line)? {
                notes.insert(line, n);
            }
        } else if c == '/' && chars.get(i + 1) == Some(&'*') {
            let start = line;
            i += 2;
            loop {
                if i + 1 >= chars.len() {
                    return Err(SimError::parse(start, "unterminated `/*` comment"));
                }
                if chars[i] == '*' && chars[i + 1] == '/' {
                    i += 2;
                    break;
                }
                if chars[i] == '\n' {
                    line += 1;
                }
                i += 1;
            }
        } else if c == '"' {
            let start = i + 1;
            i += 1;
            while i < chars.len() && chars[i] != '"' && chars[i] != '\n' {
                i += 1;
            }
            if i >= chars.len() || chars[i] != '"' {
                return Err(SimError::parse(line, "unterminated string"));
            }
            out.push(Token {
                tok: Tok::Str(chars[start..i].iter().collect()),
                line,
            });
            i += 1;
        } else if is_word_char(c) {
            let start = i;
            loop {
                while i < chars.len() && is_word_char(chars[i]) {
                    i += 1;
                }
                // A `::` qualifier inside a modifier: `st.shared::cta.b32`.
                if chars.get(i) == Some(&':')
                    && chars.get(i + 1) == Some(&':')
                    && chars.get(i + 2).is_some_and(|&c| is_word_char(c))
                {
                    i += 2;
                } else {
                    break;
                }
            }
            // The signed exponent of a decimal float (`1.0e-5`, `2E+3`).
            let decimal = |w: &[char]| {
                w.first().is_some_and(|c| c.is_ascii_digit() || *c == '.')
                    && w[..w.len() - 1]
                        .iter()
                        .all(|c| c.is_ascii_digit() || *c == '.')
                    && matches!(w.last(), Some('e' | 'E'))
            };
            if decimal(&chars[start..i])
                && matches!(chars.get(i), Some('+' | '-'))
                && chars.get(i + 1).is_some_and(char::is_ascii_digit)
            {
                i += 1;
                while i < chars.len() && chars[i].is_ascii_digit() {
                    i += 1;
                }
            }
            out.push(Token {
                tok: Tok::Word(chars[start..i].iter().collect()),
                line,
            });
        } else if ",;:[](){}<>+-|!@=".contains(c) {
            out.push(Token {
                tok: Tok::Punct(c),
                line,
            });
            i += 1;
        } else {
            return Err(SimError::parse(line, format!("unexpected character `{c}`")));
        }
    }
    Ok((out, notes))
}

/// A parsed operand, before registers and symbols are resolved.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RawOperand {
    /// A register, special register, symbol, label or numeric literal (the
    /// decoder tells them apart), optionally negated with `!`.
    Word { text: String, negated: bool },
    /// A negative literal written `-5`.
    Neg(String),
    /// `d|p`: a result and its predicate.
    Pair(String, String),
    /// `[base+offset]`; `base` is `None` for `[1024]`.
    Address { base: Option<String>, offset: i64 },
    /// `{a, b, c, d}`.
    Vector(Vec<String>),
    /// `[tensorMap, {c0, c1, ...}]`: a tensor map and coordinates
    /// (`cp.async.bulk.tensor`).
    TensorAddr { base: String, coords: Vec<String> },
}

/// One instruction statement.
#[derive(Clone, Debug)]
pub(crate) struct RawInst {
    pub line: usize,
    /// Guard predicate: (register, negated).
    pub guard: Option<(String, bool)>,
    /// The full opcode with modifiers, e.g. `ld.global.nc.v4.f32`.
    pub opcode: String,
    pub operands: Vec<RawOperand>,
    /// The nearest preceding `.loc`: (file, line, column).
    pub loc: Option<(u32, u32, u32)>,
    /// Index in [`RawModule::inline_chains`] of that `.loc`'s
    /// `inlined_at` call sites (0: not inlined).
    pub inlined: u32,
    /// Why the operands did not parse, reported unless the opcode itself
    /// is unsupported.
    pub bad_operands: Option<SimError>,
    /// The note on the instruction's line.
    pub note: Option<Note>,
}

/// A `.reg` declaration: one register or a `%r<N>` range.
#[derive(Clone, Debug)]
pub(crate) struct RegDecl {
    pub ty: String,
    pub name: String,
    /// `Some(n)` for the parameterized form `%r<n>`.
    pub count: Option<u32>,
    pub line: usize,
}

/// A `.shared`, `.local` or `.param` variable.
#[derive(Clone, Debug)]
pub(crate) struct VarDecl {
    pub name: String,
    pub ty: String,
    pub align: u32,
    /// Element count (1 for a scalar).
    pub elems: u64,
    pub line: usize,
}

/// A statement of an entry body in order.
#[derive(Clone, Debug)]
pub(crate) enum Stmt {
    Label(String, usize),
    Inst(RawInst),
}

#[derive(Clone, Debug)]
pub(crate) struct RawEntry {
    pub name: String,
    pub line: usize,
    pub params: Vec<VarDecl>,
    pub regs: Vec<RegDecl>,
    pub shared: Vec<VarDecl>,
    pub local: Vec<VarDecl>,
    pub body: Vec<Stmt>,
    pub reqntid: Option<[u32; 3]>,
    pub maxntid: Option<[u32; 3]>,
    /// The `{ }` scope of each statement of `body` and each declaration of
    /// `regs` (0: the entry's own), and each scope's parent (see `scope`).
    pub stmt_scopes: Vec<u32>,
    pub reg_scopes: Vec<u32>,
    pub scope_parents: Vec<u32>,
}

/// A source position of a `.loc`: (file, line, column).
pub(crate) type Loc = (u32, u32, u32);

/// The longest `inlined_at` chain kept; deeper call sites are dropped (a
/// real chain is a handful of inlined helpers deep).
const MAX_INLINE_DEPTH: usize = 32;

#[derive(Clone, Debug, Default)]
pub(crate) struct RawModule {
    pub files: Vec<(u32, String)>,
    /// The call sites of inlined code, innermost first, one chain per
    /// distinct `.loc ..., inlined_at F L C` chain; entry 0 is empty.
    pub inline_chains: Vec<Vec<Loc>>,
    /// The module's `.target` as a number (`phobos_meta::arch::from_name`).
    pub target: Option<u32>,
    pub shared: Vec<VarDecl>,
    /// `.extern .shared` arrays of no size: the dynamic shared memory a
    /// launch passes (`sharedMemBytes`), which they all start at.
    pub extern_shared: Vec<VarDecl>,
    /// Module-level `.global` variables (declared, with any initializer
    /// skipped; the decoder refuses an instruction that uses one).
    pub globals: Vec<VarDecl>,
    pub entries: Vec<RawEntry>,
}

struct Parser {
    toks: Vec<Token>,
    /// Notes by line.
    notes: HashMap<usize, Note>,
    pos: usize,
    loc: Option<Loc>,
    /// The current `.loc`'s chain in `chains`.
    inlined: u32,
    files: Vec<(u32, String)>,
    chains: Vec<Vec<Loc>>,
    /// The chain of the latest `.loc` at each position: an `inlined_at`
    /// call site continues the chain of the `.loc` that stood there.
    chain_at: std::collections::HashMap<Loc, u32>,
    /// Each chain's index in `chains`.
    chain_ids: std::collections::HashMap<Vec<Loc>, u32>,
}

/// Parses PTX text into its raw structure.
pub(crate) fn parse(src: &str) -> Result<RawModule, SimError> {
    let (toks, notes) = lex(src)?;
    let mut p = Parser {
        toks,
        notes,
        pos: 0,
        loc: None,
        inlined: 0,
        files: Vec::new(),
        chains: vec![Vec::new()],
        chain_at: std::collections::HashMap::new(),
        chain_ids: std::collections::HashMap::new(),
    };
    let mut module = RawModule::default();
    while let Some(t) = p.peek().cloned() {
        let line = t.line;
        match &t.tok {
            Tok::Word(w) => match w.as_str() {
                ".target" => {
                    p.pos += 1;
                    if let Some(Tok::Word(t)) = p.peek_tok() {
                        module.target =
                            t.strip_prefix("sm_").and_then(phobos_meta::arch::from_name);
                    }
                    p.skip_line(line);
                }
                ".version" | ".address_size" => p.skip_line(line),
                // DWARF sections (`.debug_info`, `.debug_line`, ...) that
                // Triton and `nvcc -lineinfo` emit: `.loc`/`.file` carry
                // everything the reports use.
                ".section" => p.section(line)?,
                ".file" => p.file_directive()?,
                ".loc" => p.loc_directive()?,
                ".visible" | ".weak" => {
                    p.pos += 1;
                }
                ".entry" => {
                    p.pos += 1;
                    let e = p.entry(line)?;
                    module.entries.push(e);
                }
                ".shared" => {
                    p.pos += 1;
                    let v = p.var_decl(line)?;
                    p.expect_punct(';')?;
                    module.shared.push(v);
                }
                ".extern" if p.next_word_is(".shared") => {
                    p.pos += 2;
                    let v = p.var_decl(line)?;
                    p.expect_punct(';')?;
                    if v.elems != 0 {
                        return Err(SimError::parse(
                            line,
                            format!("`.extern .shared` array `{}` must have no size", v.name),
                        ));
                    }
                    module.extern_shared.push(v);
                }
                // Triton's libdevice leaves unreferenced strings such as
                // `.global .align 1 .b8 _$_str[11] = {95, ...};`.
                ".global" => {
                    p.pos += 1;
                    let v = p.var_decl(line)?;
                    if p.eat_punct('=') {
                        p.initializer(line)?;
                    }
                    p.expect_punct(';')?;
                    module.globals.push(v);
                }
                ".func" | ".extern" | ".const" | ".tex" | ".surfref" | ".texref"
                | ".samplerref" => {
                    return Err(SimError::Unsupported {
                        instruction: w.clone(),
                        line,
                    })
                }
                _ => {
                    return Err(SimError::parse(
                        line,
                        format!("unexpected `{w}` at module level"),
                    ))
                }
            },
            Tok::Punct(';') => p.pos += 1,
            other => {
                return Err(SimError::parse(
                    line,
                    format!("unexpected {} at module level", describe(other)),
                ))
            }
        }
    }
    module.files = p.files;
    module.inline_chains = p.chains;
    Ok(module)
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Word(w) => format!("`{w}`"),
        Tok::Str(s) => format!("string \"{s}\""),
        Tok::Punct(c) => format!("`{c}`"),
    }
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.pos)
    }

    fn peek_tok(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn line(&self) -> usize {
        self.toks
            .get(self.pos)
            .or_else(|| self.toks.last())
            .map_or(1, |t| t.line)
    }

    fn next(&mut self) -> Result<Token, SimError> {
        let t = self
            .toks
            .get(self.pos)
            .cloned()
            .ok_or_else(|| SimError::parse(self.line(), "unexpected end of PTX"))?;
        self.pos += 1;
        Ok(t)
    }

    /// Whether the token after the current one is the word `w`.
    fn next_word_is(&self, w: &str) -> bool {
        matches!(self.toks.get(self.pos + 1), Some(Token { tok: Tok::Word(x), .. }) if x == w)
    }

    fn skip_line(&mut self, line: usize) {
        while self.peek().is_some_and(|t| t.line == line) {
            self.pos += 1;
        }
    }

    fn is_punct(&self, c: char) -> bool {
        self.peek_tok() == Some(&Tok::Punct(c))
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> Result<(), SimError> {
        let t = self.next()?;
        if t.tok == Tok::Punct(c) {
            Ok(())
        } else {
            Err(SimError::parse(
                t.line,
                format!("expected `{c}`, found {}", describe(&t.tok)),
            ))
        }
    }

    fn word(&mut self) -> Result<(String, usize), SimError> {
        let t = self.next()?;
        match t.tok {
            Tok::Word(w) => Ok((w, t.line)),
            other => Err(SimError::parse(
                t.line,
                format!("expected a name, found {}", describe(&other)),
            )),
        }
    }

    fn number(&mut self) -> Result<u64, SimError> {
        let (w, line) = self.word()?;
        parse_uint(&w)
            .ok_or_else(|| SimError::parse(line, format!("expected a number, found `{w}`")))
    }

    fn file_directive(&mut self) -> Result<(), SimError> {
        let t = self.next()?;
        let idx = self.number()?;
        let name = match self.next()? {
            Token {
                tok: Tok::Str(s), ..
            } => s,
            other => {
                return Err(SimError::parse(
                    other.line,
                    format!(
                        "expected a file name string, found {}",
                        describe(&other.tok)
                    ),
                ))
            }
        };
        self.skip_line(t.line);
        let idx =
            u32::try_from(idx).map_err(|_| SimError::parse(t.line, "file index too large"))?;
        self.files.push((idx, name));
        Ok(())
    }

    /// `.loc F L C[, function_name LABEL[+N]][, inlined_at F L C]`.
    fn loc_directive(&mut self) -> Result<(), SimError> {
        let t = self.next()?;
        let loc = self.loc_triple(t.line)?;
        let mut inlined = 0;
        while self.eat_punct(',') {
            let (key, kl) = self.word()?;
            match key.as_str() {
                "function_name" => {
                    self.word()?;
                    if self.eat_punct('+') {
                        self.number()?;
                    }
                }
                "inlined_at" => {
                    let site = self.loc_triple(kl)?;
                    let outer = self.chain_at.get(&site).copied().unwrap_or(0);
                    let mut chain = vec![site];
                    chain.extend(&self.chains[outer as usize]);
                    chain.truncate(MAX_INLINE_DEPTH);
                    let next = self.chains.len() as u32;
                    inlined = *self.chain_ids.entry(chain.clone()).or_insert(next);
                    if inlined == next {
                        self.chains.push(chain);
                    }
                }
                _ => return Err(SimError::parse(kl, format!("unexpected `{key}` in `.loc`"))),
            }
        }
        self.chain_at.insert(loc, inlined);
        self.loc = Some(loc);
        self.inlined = inlined;
        Ok(())
    }

    fn loc_triple(&mut self, line: usize) -> Result<Loc, SimError> {
        let mut vals = [0u32; 3];
        for v in &mut vals {
            let n = self.number()?;
            *v = u32::try_from(n).map_err(|_| SimError::parse(line, "`.loc` value too large"))?;
        }
        Ok((vals[0], vals[1], vals[2]))
    }

    /// Skips a variable's initializer (`5`, `{1, 2}`, `{{1}, {2}}`) up to
    /// the `;` that ends the declaration.
    fn initializer(&mut self, line: usize) -> Result<(), SimError> {
        let mut depth = 0u32;
        loop {
            match self.peek_tok() {
                None => return Err(SimError::parse(line, "unterminated initializer")),
                Some(Tok::Punct(';')) if depth == 0 => return Ok(()),
                Some(Tok::Punct('{')) => depth += 1,
                Some(Tok::Punct('}')) => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| SimError::parse(line, "unbalanced `}` in an initializer"))?;
                }
                Some(_) => {}
            }
            self.pos += 1;
        }
    }

    /// Skips `.section NAME { ... }`.
    fn section(&mut self, line: usize) -> Result<(), SimError> {
        self.pos += 1;
        self.word()?;
        self.expect_punct('{')?;
        let mut depth = 1;
        while depth > 0 {
            match self.next() {
                Ok(Token {
                    tok: Tok::Punct('{'),
                    ..
                }) => depth += 1,
                Ok(Token {
                    tok: Tok::Punct('}'),
                    ..
                }) => depth -= 1,
                Ok(_) => {}
                Err(_) => return Err(SimError::parse(line, "unterminated `.section`")),
            }
        }
        Ok(())
    }

    /// `[.align N] .type name[[N]]` after `.shared`/`.local`/`.param`.
    fn var_decl(&mut self, line: usize) -> Result<VarDecl, SimError> {
        let mut align = 0;
        let mut ty = None;
        loop {
            let (w, wl) = self.word()?;
            if w == ".align" {
                let a = self.number()?;
                align = u32::try_from(a).map_err(|_| SimError::parse(wl, "alignment too large"))?;
            } else if w == ".ptr"
                || w == ".global"
                || w == ".shared"
                || w == ".const"
                || w == ".local"
            {
                // `.param .u64 .ptr .global .align 16 name`: pointer attributes.
            } else if w.starts_with('.') {
                ty = Some(w);
            } else {
                let ty =
                    ty.ok_or_else(|| SimError::parse(wl, format!("variable `{w}` has no type")))?;
                let mut elems = 1;
                if self.eat_punct('[') {
                    elems = if self.is_punct(']') {
                        0
                    } else {
                        self.number()?
                    };
                    self.expect_punct(']')?;
                }
                let size = type_size(&ty).ok_or_else(|| {
                    SimError::parse(wl, format!("unknown type `{ty}` of variable `{w}`"))
                })?;
                if align == 0 {
                    align = size;
                }
                return Ok(VarDecl {
                    name: w,
                    ty,
                    align,
                    elems,
                    line,
                });
            }
        }
    }

    fn entry(&mut self, line: usize) -> Result<RawEntry, SimError> {
        let (name, _) = self.word()?;
        let mut e = RawEntry {
            name,
            line,
            params: Vec::new(),
            regs: Vec::new(),
            shared: Vec::new(),
            local: Vec::new(),
            body: Vec::new(),
            stmt_scopes: Vec::new(),
            reg_scopes: Vec::new(),
            scope_parents: vec![0],
            reqntid: None,
            maxntid: None,
        };
        if self.eat_punct('(') && !self.eat_punct(')') {
            loop {
                let (w, wl) = self.word()?;
                if w != ".param" {
                    return Err(SimError::parse(
                        wl,
                        format!("expected `.param`, found `{w}`"),
                    ));
                }
                e.params.push(self.var_decl(wl)?);
                if self.eat_punct(')') {
                    break;
                }
                self.expect_punct(',')?;
            }
        }
        // Performance directives before the body.
        while let Some(Tok::Word(w)) = self.peek_tok().cloned() {
            self.pos += 1;
            let dims = match w.as_str() {
                ".maxntid" | ".reqntid" => Some(self.dims()?),
                ".minnctapersm" | ".maxnreg" | ".maxnctapersm" => {
                    self.number()?;
                    None
                }
                _ => {
                    return Err(SimError::parse(
                        self.line(),
                        format!("unexpected `{w}` before the body of `{}`", e.name),
                    ))
                }
            };
            if w == ".maxntid" {
                e.maxntid = dims;
            } else if w == ".reqntid" {
                e.reqntid = dims;
            }
        }
        self.expect_punct('{')?;
        self.body(&mut e)?;
        Ok(e)
    }

    fn dims(&mut self) -> Result<[u32; 3], SimError> {
        let mut d = [1u32; 3];
        for (i, slot) in d.iter_mut().enumerate() {
            if i > 0 && !self.eat_punct(',') {
                break;
            }
            let n = self.number()?;
            *slot = u32::try_from(n)
                .map_err(|_| SimError::parse(self.line(), "dimension too large"))?;
        }
        Ok(d)
    }

    fn body(&mut self, e: &mut RawEntry) -> Result<(), SimError> {
        let mut depth = 1;
        // The open `{ }` scopes, innermost last (0 is the entry's body).
        let mut scopes = vec![0u32];
        loop {
            // Each statement and register declaration is tagged with the
            // scope it sits in; `scope::resolve` renames what a nested
            // scope declares.
            let here = *scopes.last().unwrap_or(&0);
            e.stmt_scopes.resize(e.body.len(), here);
            e.reg_scopes.resize(e.regs.len(), here);
            let t = self.next()?;
            let line = t.line;
            match t.tok {
                Tok::Punct('{') => {
                    depth += 1;
                    let id = e.scope_parents.len() as u32;
                    e.scope_parents.push(here);
                    scopes.push(id);
                }
                Tok::Punct('}') => {
                    depth -= 1;
                    scopes.pop();
                    if depth == 0 {
                        crate::scope::resolve(e);
                        return Ok(());
                    }
                }
                Tok::Punct(';') => {}
                Tok::Punct('@') => {
                    let negated = self.eat_punct('!');
                    let (p, _) = self.word()?;
                    let (op, _) = self.word()?;
                    let mut inst = self.instruction(op, line)?;
                    inst.guard = Some((p, negated));
                    e.body.push(Stmt::Inst(inst));
                }
                Tok::Word(w) => match w.as_str() {
                    ".reg" => self.reg_decl(e, line)?,
                    ".shared" => {
                        let v = self.var_decl(line)?;
                        self.expect_punct(';')?;
                        e.shared.push(v);
                    }
                    ".local" => {
                        let v = self.var_decl(line)?;
                        self.expect_punct(';')?;
                        e.local.push(v);
                    }
                    ".loc" => {
                        self.pos -= 1;
                        self.loc_directive()?;
                    }
                    ".file" => {
                        self.pos -= 1;
                        self.file_directive()?;
                    }
                    ".pragma" => {
                        while !self.eat_punct(';') {
                            self.next()?;
                        }
                    }
                    _ if w.starts_with('.') => {
                        return Err(SimError::Unsupported {
                            instruction: w,
                            line,
                        })
                    }
                    _ if self.is_punct(':') => {
                        self.pos += 1;
                        e.body.push(Stmt::Label(w, line));
                    }
                    _ => {
                        let inst = self.instruction(w, line)?;
                        e.body.push(Stmt::Inst(inst));
                    }
                },
                other => {
                    return Err(SimError::parse(
                        line,
                        format!(
                            "unexpected {} in the body of `{}`",
                            describe(&other),
                            e.name
                        ),
                    ))
                }
            }
        }
    }

    fn reg_decl(&mut self, e: &mut RawEntry, line: usize) -> Result<(), SimError> {
        let (ty, _) = self.word()?;
        if ty == ".v2" || ty == ".v4" {
            return Err(SimError::Unsupported {
                instruction: format!(".reg {ty}"),
                line,
            });
        }
        if !ty.starts_with('.') {
            return Err(SimError::parse(
                line,
                format!("expected a register type, found `{ty}`"),
            ));
        }
        loop {
            let (name, _) = self.word()?;
            let mut count = None;
            if self.eat_punct('<') {
                let n = self.number()?;
                count = Some(
                    u32::try_from(n).map_err(|_| SimError::parse(line, "too many registers"))?,
                );
                self.expect_punct('>')?;
            }
            e.regs.push(RegDecl {
                ty: ty.clone(),
                name,
                count,
                line,
            });
            if self.eat_punct(';') {
                return Ok(());
            }
            self.expect_punct(',')?;
        }
    }

    fn instruction(&mut self, opcode: String, line: usize) -> Result<RawInst, SimError> {
        let (operands, bad_operands) = match self.operands(&opcode) {
            Ok(ops) => (ops, None),
            Err(e) => {
                // Keep going to the end of the statement: the decoder reports
                // an unknown opcode as unsupported before blaming its operands.
                let mut depth = 0i32;
                while let Some(tok) = self.peek_tok().cloned() {
                    match tok {
                        Tok::Punct('{') => depth += 1,
                        Tok::Punct('}') if depth == 0 => break,
                        Tok::Punct('}') => depth -= 1,
                        Tok::Punct(';') if depth == 0 => {
                            self.pos += 1;
                            break;
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
                (Vec::new(), Some(e))
            }
        };
        Ok(RawInst {
            line,
            guard: None,
            opcode,
            operands,
            loc: self.loc,
            inlined: self.inlined,
            bad_operands,
            note: self.notes.remove(&line),
        })
    }

    fn operands(&mut self, opcode: &str) -> Result<Vec<RawOperand>, SimError> {
        let mut operands = Vec::new();
        if self.eat_punct(';') {
            return Ok(operands);
        }
        loop {
            operands.push(self.operand()?);
            if self.eat_punct(';') {
                return Ok(operands);
            }
            let t = self.next()?;
            if t.tok != Tok::Punct(',') {
                return Err(SimError::parse(
                    t.line,
                    format!(
                        "expected `,` or `;` after an operand of `{opcode}`, found {}",
                        describe(&t.tok)
                    ),
                ));
            }
        }
    }

    fn operand(&mut self) -> Result<RawOperand, SimError> {
        let t = self.next()?;
        match t.tok {
            Tok::Punct('!') => {
                let (w, _) = self.word()?;
                Ok(RawOperand::Word {
                    text: w,
                    negated: true,
                })
            }
            Tok::Punct('-') => {
                let (w, _) = self.word()?;
                Ok(RawOperand::Neg(w))
            }
            Tok::Punct('[') => {
                let mut base = None;
                let mut offset: i64 = 0;
                let mut sign = 1i64;
                let mut first = true;
                loop {
                    let t = self.next()?;
                    match t.tok {
                        Tok::Punct(']') => break,
                        Tok::Punct(',') if offset == 0 && base.is_some() => {
                            self.expect_punct('{')?;
                            let mut coords = Vec::new();
                            loop {
                                let (w, _) = self.word()?;
                                coords.push(w);
                                if self.eat_punct('}') {
                                    break;
                                }
                                self.expect_punct(',')?;
                            }
                            self.expect_punct(']')?;
                            return Ok(RawOperand::TensorAddr {
                                base: base.unwrap_or_default(),
                                coords,
                            });
                        }
                        Tok::Punct('+') => sign = 1,
                        Tok::Punct('-') => sign = -sign,
                        Tok::Word(w) => {
                            if let Some(v) = parse_int(&w) {
                                offset = offset.wrapping_add(sign.wrapping_mul(v));
                            } else if first && base.is_none() {
                                base = Some(w);
                            } else {
                                return Err(SimError::parse(
                                    t.line,
                                    format!("unsupported address part `{w}`"),
                                ));
                            }
                            sign = 1;
                        }
                        other => {
                            return Err(SimError::parse(
                                t.line,
                                format!("unexpected {} in an address", describe(&other)),
                            ))
                        }
                    }
                    first = false;
                }
                Ok(RawOperand::Address { base, offset })
            }
            Tok::Punct('{') => {
                let mut items = Vec::new();
                loop {
                    let (w, _) = self.word()?;
                    items.push(w);
                    if self.eat_punct('}') {
                        break;
                    }
                    self.expect_punct(',')?;
                }
                Ok(RawOperand::Vector(items))
            }
            Tok::Word(w) => {
                if self.eat_punct('|') {
                    let (p, _) = self.word()?;
                    Ok(RawOperand::Pair(w, p))
                } else {
                    Ok(RawOperand::Word {
                        text: w,
                        negated: false,
                    })
                }
            }
            other => Err(SimError::parse(
                t.line,
                format!("expected an operand, found {}", describe(&other)),
            )),
        }
    }
}

/// Size in bytes of a PTX fundamental type such as `.f32` or `.b8`.
pub(crate) fn type_size(ty: &str) -> Option<u32> {
    Some(match ty {
        ".b8" | ".u8" | ".s8" => 1,
        ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => 2,
        ".b32" | ".u32" | ".s32" | ".f32" | ".f16x2" | ".bf16x2" => 4,
        ".b64" | ".u64" | ".s64" | ".f64" => 8,
        ".pred" => 1,
        _ => return None,
    })
}

/// Parses an unsigned PTX integer literal: decimal, `0x` hex, `0b` binary,
/// octal with a leading `0`, optionally suffixed `U`.
pub(crate) fn parse_uint(w: &str) -> Option<u64> {
    let w = w.strip_suffix('U').unwrap_or(w);
    if let Some(h) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = w.strip_prefix("0b").or_else(|| w.strip_prefix("0B")) {
        u64::from_str_radix(b, 2).ok()
    } else if w.len() > 1 && w.starts_with('0') && w.bytes().all(|b| b.is_ascii_digit()) {
        u64::from_str_radix(&w[1..], 8).ok()
    } else if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) {
        w.parse().ok()
    } else {
        None
    }
}

/// Parses a signed integer literal as its 64-bit two's complement value.
pub(crate) fn parse_int(w: &str) -> Option<i64> {
    parse_uint(w).map(|v| v as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_read_by_its_name() {
        let module = |target: &str| {
            let src = format!(".version 8.0\n.target {target}\n.address_size 64\n.visible .entry k()\n{{\n  ret;\n}}\n");
            parse(&src).expect("parses").target
        };
        assert_eq!(module("sm_80"), Some(80));
        assert_eq!(module("sm_90a"), Some(phobos_meta::arch::SM_90A));
        assert_eq!(module("sm_91"), None);
    }

    #[test]
    fn lexes_and_parses_an_entry() {
        let src = r#"
.version 7.5
.target sm_75
.address_size 64
.file 1 "k.pho"
.visible .entry k(.param .u64 k_param_0, .param .s32 n)
.reqntid 128, 1, 1
{
  .reg .b32 %r<4>;
  .reg .pred %p<2>;
  .shared .align 16 .b8 smem[64];
  .loc 1 3 5
  mov.u32 %r1, %tid.x;
  @!%p1 bra $L_end;
  ld.global.nc.v4.f32 {%r0, %r1, %r2, %r3}, [%rd1+-16];
$L_end:
  ret;
}
"#;
        let m = parse(src).expect("parses");
        assert_eq!(m.files, vec![(1, "k.pho".to_string())]);
        let e = &m.entries[0];
        assert_eq!(e.name, "k");
        assert_eq!(e.params.len(), 2);
        assert_eq!(e.reqntid, Some([128, 1, 1]));
        assert_eq!(e.shared[0].elems, 64);
        assert_eq!(e.body.len(), 5);
        let Stmt::Inst(ld) = &e.body[2] else {
            panic!("expected an instruction")
        };
        assert_eq!(ld.loc, Some((1, 3, 5)));
        assert_eq!(
            ld.operands[1],
            RawOperand::Address {
                base: Some("%rd1".into()),
                offset: -16
            }
        );
    }

    #[test]
    fn reports_the_line_of_a_bad_token() {
        let err = parse(".version 7.5\n.entry k() {\n  mov.u32 %r1, #3;\n}").unwrap_err();
        assert!(err.to_string().contains("line 3"), "{err}");
    }
}

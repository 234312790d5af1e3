//! The LSP side: messages in and out through `lsp-server`'s `Connection`,
//! LSP types from `lsp-types`, positions converted between LSP's UTF-16
//! line/character and byte offsets. Documents are analysed lazily: an edit
//! marks the document stale, diagnostics are published once no message has
//! arrived for the debounce delay, and requests analyse a stale document
//! first. Each document keeps its kernels' analyses (`unit::UnitCache`), so
//! an edit re-checks only the kernel it touched.
//!
//! Initialization options (all optional): `debounceMs` (default 150), and
//! `uniformityHints` (default false) to show each local's uniformity level
//! as an inlay hint.

use crate::actions::ActionKind;
use crate::analysis::{Analysis, CompletionKind};
use crate::hints::HintKind;
use crate::tokens::{TokenType, MODIFIERS, TYPES};
use crate::unit::UnitCache;
use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidCloseTextDocument, DidOpenTextDocument, Notification as _,
    PublishDiagnostics,
};
use lsp_types::request::{
    CodeActionRequest, Completion, Formatting, GotoDefinition, HoverRequest, InlayHintRequest,
    References, Request as _, SemanticTokensFullDeltaRequest, SemanticTokensFullRequest,
    SemanticTokensRangeRequest,
};
use lsp_types::*;
use phobos_core::ast::Span;
use phobos_core::diag::Severity;
use std::collections::HashMap;
use std::time::Duration;

/// How long the document must be quiet before diagnostics are published,
/// unless the client's `debounceMs` says otherwise.
pub const DEBOUNCE: Duration = Duration::from_millis(150);

/// What the client chose in its initialization options.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub debounce: Duration,
    pub uniformity_hints: bool,
}

impl Settings {
    fn from_init(params: &serde_json::Value) -> Settings {
        let opts = &params["initializationOptions"];
        Settings {
            debounce: opts["debounceMs"]
                .as_u64()
                .map_or(DEBOUNCE, Duration::from_millis),
            uniformity_hints: opts["uniformityHints"].as_bool().unwrap_or(false),
        }
    }
}

pub fn semantic_tokens_legend() -> SemanticTokensLegend {
    SemanticTokensLegend {
        token_types: TYPES.iter().map(|t| SemanticTokenType::new(t)).collect(),
        token_modifiers: MODIFIERS
            .iter()
            .map(|m| SemanticTokenModifier::new(m))
            .collect(),
    }
}

pub fn capabilities() -> ServerCapabilities {
    ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Kind(TextDocumentSyncKind::FULL)),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec![".".into(), "<".into()]),
            ..Default::default()
        }),
        document_formatting_provider: Some(OneOf::Left(true)),
        semantic_tokens_provider: Some(SemanticTokensServerCapabilities::SemanticTokensOptions(
            SemanticTokensOptions {
                legend: semantic_tokens_legend(),
                full: Some(SemanticTokensFullOptions::Delta { delta: Some(true) }),
                range: Some(true),
                ..Default::default()
            },
        )),
        inlay_hint_provider: Some(OneOf::Left(true)),
        code_action_provider: Some(CodeActionProviderCapability::Options(CodeActionOptions {
            code_action_kinds: Some(vec![
                CodeActionKind::QUICKFIX,
                CodeActionKind::REFACTOR_REWRITE,
            ]),
            ..Default::default()
        })),
        ..Default::default()
    }
}

struct Doc {
    text: String,
    analysis: Option<Analysis>,
    /// The kernels checked for earlier versions, reused when unchanged.
    units: UnitCache,
    /// Diagnostics not yet published for the latest text.
    unpublished: bool,
    /// The last whole-document semantic tokens sent, by result id, which a
    /// `semanticTokens/full/delta` request names to get only the change.
    sent_tokens: Option<(String, Vec<SemanticToken>)>,
    /// Result ids given so far; each response gets a new one.
    result_ids: u64,
}

impl Doc {
    /// Keep `data` as the last tokens sent, under a new result id.
    fn remember_tokens(&mut self, data: Vec<SemanticToken>) -> SemanticTokens {
        self.result_ids += 1;
        let id = self.result_ids.to_string();
        self.sent_tokens = Some((id.clone(), data.clone()));
        SemanticTokens {
            result_id: Some(id),
            data,
        }
    }

    fn analysis(&mut self) -> &Analysis {
        let (text, units) = (&self.text, &mut self.units);
        self.analysis
            .get_or_insert_with(|| Analysis::with_cache(text, units))
    }
}

/// Serve one client until it sends `exit`.
pub fn serve(conn: &Connection) -> Result<(), String> {
    let caps = serde_json::to_value(capabilities()).map_err(|e| e.to_string())?;
    let init = conn.initialize(caps).map_err(|e| e.to_string())?;
    let settings = Settings::from_init(&init);
    let mut docs: HashMap<Url, Doc> = HashMap::new();
    loop {
        let waiting = docs.values().any(|d| d.unpublished);
        let msg = if waiting {
            match conn.receiver.recv_timeout(settings.debounce) {
                Ok(m) => m,
                Err(crossbeam_timeout) if crossbeam_timeout.is_timeout() => {
                    publish_pending(conn, &mut docs);
                    continue;
                }
                Err(_) => return Ok(()),
            }
        } else {
            match conn.receiver.recv() {
                Ok(m) => m,
                Err(_) => return Ok(()),
            }
        };
        match msg {
            Message::Request(req) => {
                if conn.handle_shutdown(&req).map_err(|e| e.to_string())? {
                    return Ok(());
                }
                let resp = handle_request(&mut docs, req, settings);
                let _ = conn.sender.send(Message::Response(resp));
            }
            Message::Notification(n) => handle_notification(&mut docs, n),
            Message::Response(_) => {}
        }
    }
}

fn publish_pending(conn: &Connection, docs: &mut HashMap<Url, Doc>) {
    for (uri, doc) in docs.iter_mut().filter(|(_, d)| d.unpublished) {
        doc.unpublished = false;
        let a = doc.analysis();
        let params = PublishDiagnosticsParams {
            uri: uri.clone(),
            diagnostics: a
                .diagnostics
                .iter()
                .map(|d| to_lsp_diagnostic(uri, a, d))
                .collect(),
            version: None,
        };
        let note = Notification::new(PublishDiagnostics::METHOD.into(), params);
        let _ = conn.sender.send(Message::Notification(note));
    }
}

fn handle_notification(docs: &mut HashMap<Url, Doc>, n: Notification) {
    match n.method.as_str() {
        DidOpenTextDocument::METHOD => {
            if let Ok(p) = serde_json::from_value::<DidOpenTextDocumentParams>(n.params) {
                let targets = project_targets(&p.text_document.uri);
                docs.insert(
                    p.text_document.uri,
                    Doc {
                        text: p.text_document.text,
                        analysis: None,
                        units: UnitCache::for_targets(targets),
                        unpublished: true,
                        sent_tokens: None,
                        result_ids: 0,
                    },
                );
            }
        }
        DidChangeTextDocument::METHOD => {
            if let Ok(p) = serde_json::from_value::<DidChangeTextDocumentParams>(n.params) {
                // Full sync: the last change holds the whole text.
                if let (Some(doc), Some(change)) = (
                    docs.get_mut(&p.text_document.uri),
                    p.content_changes.into_iter().last(),
                ) {
                    doc.text = change.text;
                    doc.analysis = None;
                    doc.unpublished = true;
                }
            }
        }
        DidCloseTextDocument::METHOD => {
            if let Ok(p) = serde_json::from_value::<DidCloseTextDocumentParams>(n.params) {
                docs.remove(&p.text_document.uri);
            }
        }
        _ => {}
    }
}

/// The targets a document is checked for: the `arches` of its project's
/// `phobos.toml`, read by phobos-build as a build reads it. The project is
/// the nearest directory above the file holding a `phobos.toml`, up to the
/// crate's (the first holding a `Cargo.toml`). Without one, or for a
/// document that is not a file, [`crate::unit::DEFAULT_ARCHES`]; a `phobos.toml`
/// that does not read is said on stderr (the editor's log) and the
/// default is used.
fn project_targets(uri: &Url) -> Vec<u32> {
    let Ok(path) = uri.to_file_path() else {
        return Vec::new();
    };
    for dir in path.ancestors().skip(1) {
        if dir.join("phobos.toml").is_file() {
            return match phobos_build::project_arches(dir) {
                Ok(arches) => arches.unwrap_or_default(),
                Err(e) => {
                    eprintln!("phobos lsp: {e}; checking for the default targets");
                    Vec::new()
                }
            };
        }
        if dir.join("Cargo.toml").is_file() {
            break;
        }
    }
    Vec::new()
}

fn handle_request(docs: &mut HashMap<Url, Doc>, req: Request, settings: Settings) -> Response {
    let id = req.id.clone();
    match dispatch(docs, req, settings) {
        Ok(v) => Response::new_ok(id, v),
        Err((code, msg)) => Response::new_err(id, code, msg),
    }
}

type Reply = Result<serde_json::Value, (i32, String)>;

fn params<P: serde::de::DeserializeOwned>(req: Request) -> Result<P, (i32, String)> {
    serde_json::from_value(req.params)
        .map_err(|e| (lsp_server::ErrorCode::InvalidParams as i32, e.to_string()))
}

fn json(v: impl serde::Serialize) -> Reply {
    serde_json::to_value(v)
        .map_err(|e| (lsp_server::ErrorCode::InternalError as i32, e.to_string()))
}

fn doc<'d>(docs: &'d mut HashMap<Url, Doc>, uri: &Url) -> Result<&'d mut Doc, (i32, String)> {
    docs.get_mut(uri).ok_or((
        lsp_server::ErrorCode::InvalidParams as i32,
        format!("document {uri} is not open"),
    ))
}

/// The analysis of the open document a request points into, and the byte
/// offset it points at.
fn analysis_at<'d>(
    docs: &'d mut HashMap<Url, Doc>,
    pos: &TextDocumentPositionParams,
) -> Result<(&'d Analysis, usize), (i32, String)> {
    let a = doc(docs, &pos.text_document.uri)?.analysis();
    Ok((a, offset(a, pos.position)))
}

/// The analysis of the open document `uri`, and the byte span of `within`.
fn analysis_over<'d>(
    docs: &'d mut HashMap<Url, Doc>,
    uri: &Url,
    within: Range,
) -> Result<(&'d Analysis, Span), (i32, String)> {
    let a = doc(docs, uri)?.analysis();
    let span = Span::new(offset(a, within.start), offset(a, within.end));
    Ok((a, span))
}

fn dispatch(docs: &mut HashMap<Url, Doc>, req: Request, settings: Settings) -> Reply {
    match req.method.as_str() {
        SemanticTokensFullRequest::METHOD => {
            let p: SemanticTokensParams = params(req)?;
            let d = doc(docs, &p.text_document.uri)?;
            let data = encode_tokens(d.analysis(), None);
            json(SemanticTokensResult::Tokens(d.remember_tokens(data)))
        }
        SemanticTokensFullDeltaRequest::METHOD => {
            let p: SemanticTokensDeltaParams = params(req)?;
            let d = doc(docs, &p.text_document.uri)?;
            let data = encode_tokens(d.analysis(), None);
            let previous = d
                .sent_tokens
                .take()
                .filter(|(id, _)| *id == p.previous_result_id);
            let tokens = d.remember_tokens(data);
            match previous {
                Some((_, old)) => json(SemanticTokensFullDeltaResult::TokensDelta(
                    SemanticTokensDelta {
                        result_id: tokens.result_id,
                        edits: token_edits(&old, &tokens.data),
                    },
                )),
                // An id this server no longer has: send everything.
                None => json(SemanticTokensFullDeltaResult::Tokens(tokens)),
            }
        }
        SemanticTokensRangeRequest::METHOD => {
            let p: SemanticTokensRangeParams = params(req)?;
            let (a, span) = analysis_over(docs, &p.text_document.uri, p.range)?;
            json(SemanticTokensRangeResult::Tokens(SemanticTokens {
                result_id: None,
                data: encode_tokens(a, Some(span)),
            }))
        }
        InlayHintRequest::METHOD => {
            let p: InlayHintParams = params(req)?;
            let (a, span) = analysis_over(docs, &p.text_document.uri, p.range)?;
            let hints: Vec<InlayHint> = a
                .inlay_hints(span, settings.uniformity_hints)
                .into_iter()
                .map(|h| InlayHint {
                    position: position(a, h.at),
                    label: InlayHintLabel::String(h.label),
                    kind: match h.kind {
                        HintKind::Type => Some(InlayHintKind::TYPE),
                        HintKind::Uniformity => None,
                    },
                    text_edits: None,
                    tooltip: None,
                    padding_left: Some(h.kind == HintKind::Uniformity),
                    padding_right: None,
                    data: None,
                })
                .collect();
            json(hints)
        }
        CodeActionRequest::METHOD => {
            let p: CodeActionParams = params(req)?;
            let uri = p.text_document.uri.clone();
            let (a, span) = analysis_over(docs, &uri, p.range)?;
            let actions: Vec<CodeActionOrCommand> = a
                .code_actions(span)
                .into_iter()
                .map(|act| {
                    let edits = act
                        .edits
                        .iter()
                        .map(|(s, t)| TextEdit {
                            range: range(a, *s),
                            new_text: t.clone(),
                        })
                        .collect();
                    let fixes = act
                        .fixes
                        .and_then(|i| a.diagnostics.get(i))
                        .map(|d| vec![to_lsp_diagnostic(&uri, a, d)]);
                    CodeActionOrCommand::CodeAction(CodeAction {
                        title: act.title,
                        kind: Some(match act.kind {
                            ActionKind::QuickFix => CodeActionKind::QUICKFIX,
                            ActionKind::Rewrite => CodeActionKind::REFACTOR_REWRITE,
                        }),
                        is_preferred: Some(fixes.is_some()),
                        diagnostics: fixes,
                        edit: Some(WorkspaceEdit {
                            changes: Some(HashMap::from([(uri.clone(), edits)])),
                            ..Default::default()
                        }),
                        ..Default::default()
                    })
                })
                .collect();
            json(actions)
        }
        HoverRequest::METHOD => {
            let p: HoverParams = params(req)?;
            let pos = p.text_document_position_params;
            let (a, at) = analysis_at(docs, &pos)?;
            json(a.hover(at).map(|(text, span)| Hover {
                contents: HoverContents::Markup(MarkupContent {
                    kind: MarkupKind::Markdown,
                    value: text,
                }),
                range: Some(range(a, span)),
            }))
        }
        GotoDefinition::METHOD => {
            let p: GotoDefinitionParams = params(req)?;
            let pos = p.text_document_position_params;
            let uri = pos.text_document.uri.clone();
            let (a, at) = analysis_at(docs, &pos)?;
            json(a.definition(at).map(|span| {
                GotoDefinitionResponse::Scalar(Location::new(uri.clone(), range(a, span)))
            }))
        }
        References::METHOD => {
            let p: ReferenceParams = params(req)?;
            let pos = p.text_document_position;
            let uri = pos.text_document.uri.clone();
            let (a, at) = analysis_at(docs, &pos)?;
            let mut spans = a.references(at);
            if !p.context.include_declaration && !spans.is_empty() {
                spans.remove(0);
            }
            json(
                spans
                    .into_iter()
                    .map(|s| Location::new(uri.clone(), range(a, s)))
                    .collect::<Vec<_>>(),
            )
        }
        Completion::METHOD => {
            let p: CompletionParams = params(req)?;
            let pos = p.text_document_position;
            let (a, at) = analysis_at(docs, &pos)?;
            let items: Vec<CompletionItem> = a
                .completions(at)
                .into_iter()
                .map(|c| CompletionItem {
                    label: c.label,
                    detail: Some(c.detail),
                    kind: Some(match c.kind {
                        CompletionKind::Field => CompletionItemKind::FIELD,
                        CompletionKind::Keyword => CompletionItemKind::KEYWORD,
                        CompletionKind::Function => CompletionItemKind::FUNCTION,
                        CompletionKind::Variable => CompletionItemKind::VARIABLE,
                    }),
                    ..Default::default()
                })
                .collect();
            json(CompletionResponse::Array(items))
        }
        Formatting::METHOD => {
            let p: DocumentFormattingParams = params(req)?;
            let a = doc(docs, &p.text_document.uri)?.analysis();
            match a.format() {
                Ok(text) if text == a.src => json(Vec::<TextEdit>::new()),
                Ok(text) => json(vec![TextEdit {
                    range: range(a, Span::new(0, a.src.len())),
                    new_text: text,
                }]),
                // A document that does not parse is left as it is; its
                // diagnostics already say why.
                Err(_) => json(Option::<Vec<TextEdit>>::None),
            }
        }
        _ => Err((
            lsp_server::ErrorCode::MethodNotFound as i32,
            format!("unhandled method {}", req.method),
        )),
    }
}

fn to_lsp_diagnostic(uri: &Url, a: &Analysis, d: &phobos_core::Diagnostic) -> Diagnostic {
    let primary = d.labels.iter().find(|l| l.primary);
    let span = primary.map_or(Span::new(0, 0), |l| l.span);
    let mut message = d.message.clone();
    if let Some(l) = primary.filter(|l| !l.message.is_empty()) {
        message.push_str(&format!("\n{}", l.message));
    }
    for n in &d.notes {
        message.push_str(&format!("\nnote: {n}"));
    }
    let related: Vec<DiagnosticRelatedInformation> = d
        .labels
        .iter()
        .filter(|l| !l.primary)
        .map(|l| DiagnosticRelatedInformation {
            location: Location::new(uri.clone(), range(a, l.span)),
            message: l.message.clone(),
        })
        .collect();
    Diagnostic {
        range: range(a, span),
        severity: Some(match d.severity {
            Severity::Error => DiagnosticSeverity::ERROR,
            Severity::Warning => DiagnosticSeverity::WARNING,
        }),
        code: Some(NumberOrString::String(d.code.to_string())),
        source: Some("phobos".into()),
        message,
        related_information: (!related.is_empty()).then_some(related),
        ..Default::default()
    }
}

/// Byte offset of an LSP position (UTF-16 character within the line),
/// clamped into the text. Lines end at `\n`, `\r\n` or `\r`, as LSP
/// counts them (the analysis's `LineIndex`).
pub fn offset(a: &Analysis, pos: Position) -> usize {
    let line = pos.line.saturating_add(1);
    let (Some(line_start), Some(line_end)) =
        (a.lines.line_start(line), a.lines.line_end(&a.src, line))
    else {
        return a.src.len();
    };
    let mut units = 0u32;
    for (i, c) in a.src[line_start..line_end].char_indices() {
        if units >= pos.character {
            return line_start + i;
        }
        units += c.len_utf16() as u32;
    }
    line_end
}

/// LSP position of a byte offset of the analysed text.
pub fn position(a: &Analysis, offset: usize) -> Position {
    let src = &a.src;
    let mut offset = offset.min(src.len());
    while !src.is_char_boundary(offset) {
        offset -= 1;
    }
    let (line, col) = a.lines.line_col(offset);
    let line_start = offset + 1 - col as usize;
    let character = src[line_start..offset]
        .chars()
        .map(|c| c.len_utf16() as u32)
        .sum();
    Position {
        line: line - 1,
        character,
    }
}

pub fn range(a: &Analysis, span: Span) -> Range {
    Range {
        start: position(a, span.start as usize),
        end: position(a, span.end as usize),
    }
}

/// The semantic tokens of the document, or of the part of it that `range`
/// overlaps, in LSP's relative encoding (the first token relative to the
/// document's start, as LSP asks for ranges too).
fn encode_tokens(a: &Analysis, range: Option<Span>) -> Vec<SemanticToken> {
    let mut data = Vec::new();
    let (mut prev_line, mut prev_start) = (0, 0);
    let tokens = match range {
        Some(r) => a.semantic_tokens_in(r),
        None => a.semantic_tokens(),
    };
    for t in tokens {
        let start = position(a, t.span.start as usize);
        let length = a
            .src
            .get(t.span.range())
            .unwrap_or("")
            .chars()
            .map(|c| c.len_utf16() as u32)
            .sum();
        let delta_line = start.line - prev_line;
        let delta_start = if delta_line == 0 {
            start.character - prev_start
        } else {
            start.character
        };
        data.push(SemanticToken {
            delta_line,
            delta_start,
            length,
            token_type: token_type_index(t.ty),
            token_modifiers_bitset: t.modifiers,
        });
        (prev_line, prev_start) = (start.line, start.character);
    }
    data
}

/// One edit from `old` to `new`: the tokens between their common start and
/// common end replaced. LSP counts edits in integers of the flat array,
/// five to a token.
fn token_edits(old: &[SemanticToken], new: &[SemanticToken]) -> Vec<SemanticTokensEdit> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (deleted, inserted) = (
        &old[prefix..old.len() - suffix],
        &new[prefix..new.len() - suffix],
    );
    if deleted.is_empty() && inserted.is_empty() {
        return vec![];
    }
    vec![SemanticTokensEdit {
        start: 5 * prefix as u32,
        delete_count: 5 * deleted.len() as u32,
        data: Some(inserted.to_vec()),
    }]
}

fn token_type_index(t: TokenType) -> u32 {
    match t {
        TokenType::Keyword => 0,
        TokenType::Type => 1,
        TokenType::Function => 2,
        TokenType::Parameter => 3,
        TokenType::Variable => 4,
        TokenType::Property => 5,
        TokenType::Number => 6,
        TokenType::Comment => 7,
        TokenType::Decorator => 8,
    }
}

/// A request id for clients built on this module (tests, benches).
pub fn request_id(n: i32) -> RequestId {
    RequestId::from(n)
}

//! The lexer: logos over the whole text, plus a thin layer for the three places where Modelica's
//! grammar needs one token of context (see [`Lexer`]).

use logos::{FilterResult, Logos};

/// What went wrong while reading characters (the parser turns it into a diagnostic).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum LexErrorKind {
    #[default]
    UnexpectedCharacter,
    UnterminatedString,
    UnterminatedComment,
    InvalidEscape(char),
    MalformedNumber,
    IntegerTooLarge,
}

impl std::fmt::Display for LexErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LexErrorKind::UnexpectedCharacter => write!(f, "unexpected character"),
            LexErrorKind::UnterminatedString => write!(f, "unterminated string literal"),
            LexErrorKind::UnterminatedComment => write!(f, "unterminated block comment"),
            LexErrorKind::InvalidEscape(c) => {
                write!(f, "invalid escape sequence `\\{c}` in string")
            }
            LexErrorKind::MalformedNumber => write!(f, "malformed number"),
            LexErrorKind::IntegerTooLarge => write!(f, "integer literal too large"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LexError {
    pub kind: LexErrorKind,
    pub start: usize,
    pub end: usize,
}

fn block_comment<'a>(lex: &mut logos::Lexer<'a, RawTok<'a>>) -> FilterResult<(), LexErrorKind> {
    match lex.remainder().find("*/") {
        Some(pos) => {
            lex.bump(pos + 2);
            FilterResult::Skip
        }
        None => {
            lex.bump(lex.remainder().len());
            FilterResult::Error(LexErrorKind::UnterminatedComment)
        }
    }
}

fn string_literal<'a>(lex: &mut logos::Lexer<'a, RawTok<'a>>) -> Result<&'a str, LexErrorKind> {
    let rest = lex.remainder();
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => {
                lex.bump(i + 1);
                let s = lex.slice();
                return Ok(&s[1..s.len() - 1]);
            }
            '\\' => match chars.next() {
                Some((_, '\'' | '"' | '?' | '\\' | 'a' | 'b' | 'f' | 'n' | 'r' | 't' | 'v')) => {}
                Some((j, other)) => {
                    lex.bump(j + other.len_utf8());
                    return Err(LexErrorKind::InvalidEscape(other));
                }
                None => break,
            },
            _ => {}
        }
    }
    lex.bump(rest.len());
    Err(LexErrorKind::UnterminatedString)
}

/// Tokens as logos sees them, before the context layer.
#[derive(Logos, Clone, Copy, Debug, PartialEq)]
#[logos(error = LexErrorKind)]
#[logos(skip r"[ \t\r\n\f\u{feff}]+")]
#[logos(skip(r"//[^\n]*", allow_greedy = true))]
pub enum RawTok<'a> {
    #[token("/*", block_comment)]
    BlockComment,
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*")]
    Ident(&'a str),
    /// `a.b.c` written without blanks: one token instead of five, since most references in a
    /// model are such (a connect has two). The grammar splits it; a keyword among its parts is
    /// reported there.
    #[regex(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+")]
    Dotted(&'a str),
    #[regex(r"'([^'\\]|\\.)*'")]
    QIdent(&'a str),
    #[regex(r"[0-9]+")]
    Integer(&'a str),
    #[regex(r"[0-9]+\.[0-9]*([eE][+-]?[0-9]+)?")]
    #[regex(r"[0-9]+[eE][+-]?[0-9]+")]
    Real(&'a str),
    #[token("\"", string_literal)]
    Str(&'a str),

    #[token("algorithm")]
    Algorithm,
    #[token("and")]
    And,
    #[token("annotation")]
    Annotation,
    #[token("block")]
    Block,
    #[token("break")]
    Break,
    #[token("class")]
    Class,
    #[token("connect")]
    Connect,
    #[token("connector")]
    Connector,
    #[token("constant")]
    Constant,
    #[token("constrainedby")]
    Constrainedby,
    #[token("discrete")]
    Discrete,
    #[token("each")]
    Each,
    #[token("else")]
    Else,
    #[token("elseif")]
    Elseif,
    #[token("elsewhen")]
    Elsewhen,
    #[token("encapsulated")]
    Encapsulated,
    #[token("end")]
    End,
    #[token("enumeration")]
    Enumeration,
    #[token("equation")]
    Equation,
    #[token("expandable")]
    Expandable,
    #[token("extends")]
    Extends,
    #[token("external")]
    External,
    #[token("false")]
    False,
    #[token("final")]
    Final,
    #[token("flow")]
    Flow,
    #[token("for")]
    For,
    #[token("function")]
    Function,
    #[token("if")]
    If,
    #[token("import")]
    Import,
    #[token("impure")]
    Impure,
    #[token("in")]
    In,
    #[token("initial")]
    Initial,
    #[token("inner")]
    Inner,
    #[token("input")]
    Input,
    #[token("loop")]
    Loop,
    #[token("model")]
    Model,
    #[token("not")]
    Not,
    #[token("operator")]
    Operator,
    #[token("or")]
    Or,
    #[token("outer")]
    Outer,
    #[token("output")]
    Output,
    #[token("package")]
    Package,
    #[token("parameter")]
    Parameter,
    #[token("partial")]
    Partial,
    #[token("protected")]
    Protected,
    #[token("public")]
    Public,
    #[token("pure")]
    Pure,
    #[token("record")]
    Record,
    #[token("redeclare")]
    Redeclare,
    #[token("replaceable")]
    Replaceable,
    #[token("return")]
    Return,
    #[token("stream")]
    Stream,
    #[token("then")]
    Then,
    #[token("true")]
    True,
    #[token("type")]
    Type,
    #[token("weak")]
    Weak,
    #[token("when")]
    When,
    #[token("while")]
    While,
    #[token("within")]
    Within,

    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(";")]
    Semi,
    #[token(",")]
    Comma,
    #[token(".")]
    Dot,
    #[token(":")]
    Colon,
    #[token("=")]
    Assign,
    #[token(":=")]
    ColonAssign,
    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("^")]
    Caret,
    #[token(".+")]
    DotPlus,
    #[token(".-")]
    DotMinus,
    #[token(".*")]
    DotStar,
    #[token("./")]
    DotSlash,
    #[token(".^")]
    DotCaret,
    #[token("==")]
    Eq,
    #[token("<>")]
    Ne,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
}

/// Tokens the parser sees: [`RawTok`] plus the context-made ones.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tok<'a> {
    Raw(RawTok<'a>),
    /// `end` inside `[…]`: the subscript expression "last index", never the end of a class.
    EndSubscript,
    /// `initial equation` as one token, so `initial()` can start an equation unambiguously.
    InitialEquation,
    /// `initial algorithm` as one token.
    InitialAlgorithm,
}

pub type Spanned<'a> = Result<(usize, Tok<'a>, usize), LexError>;

/// The token stream the parser reads. On top of logos it
/// - turns `end` into [`Tok::EndSubscript`] inside square brackets,
/// - fuses `initial equation` / `initial algorithm`,
/// - rejects a number glued to letters (`12abc`, `1e`) as one malformed number,
/// - keeps of an annotation only the arguments mocca reads ([`ANNOTATIONS_READ`]).
///
/// Lexical errors never stop the parse: they are collected in [`Lexer::errors`] and a stand-in
/// token is produced where that keeps the parse on track (a malformed number reads as `0.0`, an
/// unterminated string as a string), so one run reports every mistake once.
pub struct Lexer<'a> {
    inner: logos::SpannedIter<'a, RawTok<'a>>,
    peeked: Option<(Result<RawTok<'a>, LexErrorKind>, std::ops::Range<usize>)>,
    bracket_depth: u32,
    /// Tokens read ahead: the arguments of an annotation that are kept.
    pending: std::collections::VecDeque<(usize, Tok<'a>, usize)>,
    pub errors: Vec<LexError>,
}

impl<'a> Lexer<'a> {
    pub fn new(text: &'a str) -> Lexer<'a> {
        Lexer {
            inner: RawTok::lexer(text).spanned(),
            peeked: None,
            bracket_depth: 0,
            pending: std::collections::VecDeque::new(),
            errors: Vec::new(),
        }
    }

    fn next_raw(&mut self) -> Option<(Result<RawTok<'a>, LexErrorKind>, std::ops::Range<usize>)> {
        self.peeked.take().or_else(|| self.inner.next())
    }

    fn peek_raw(&mut self) -> Option<&(Result<RawTok<'a>, LexErrorKind>, std::ops::Range<usize>)> {
        if self.peeked.is_none() {
            self.peeked = self.inner.next();
        }
        self.peeked.as_ref()
    }

    /// A number immediately followed by identifier characters is one malformed number.
    fn glued_to_number(&mut self, end: usize) -> Option<usize> {
        match self.peek_raw() {
            Some((
                Ok(RawTok::Ident(_) | RawTok::Dotted(_) | RawTok::Real(_) | RawTok::Integer(_)),
                r,
            )) if r.start == end => {
                let glued_end = r.end;
                self.peeked = None;
                Some(glued_end)
            }
            _ => None,
        }
    }

    fn fuse_initial(&mut self, start: usize) -> Option<(usize, Tok<'a>, usize)> {
        let fused = match self.peek_raw() {
            Some((Ok(RawTok::Equation), r)) => (start, Tok::InitialEquation, r.end),
            Some((Ok(RawTok::Algorithm), r)) => (start, Tok::InitialAlgorithm, r.end),
            _ => return None,
        };
        self.peeked = None;
        Some(fused)
    }
}

/// The annotations mocca reads: of a class, `experiment` (Modelica 18.4); of a function,
/// `derivative` (12.7.1); of a parameter, `Evaluate` (18.3). The others (graphics,
/// documentation, dialogs: most of a library's text) are skipped by the lexer.
const ANNOTATIONS_READ: [&str; 3] = ["experiment", "derivative", "Evaluate"];

impl<'a> Iterator for Lexer<'a> {
    type Item = Spanned<'a>;

    fn next(&mut self) -> Option<Spanned<'a>> {
        if let Some(tok) = self.pending.pop_front() {
            return Some(Ok(tok));
        }
        let tok = self.next_token()?;
        if let Ok((_, Tok::Raw(RawTok::Annotation), _)) = tok {
            self.keep_annotations_read();
        }
        Some(tok)
    }
}

impl<'a> Lexer<'a> {
    /// After `annotation`: reads its `(…)` and queues it with only the arguments in
    /// [`ANNOTATIONS_READ`]. Each argument is skipped whole, up to the comma or parenthesis
    /// that ends it at its own depth.
    fn keep_annotations_read(&mut self) {
        match self.next_token() {
            Some(Ok(open @ (_, Tok::Raw(RawTok::LParen), _))) => self.pending.push_back(open),
            Some(Ok(other)) => return self.pending.push_back(other),
            _ => return,
        }
        let mut argument: Vec<(usize, Tok<'a>, usize)> = Vec::new();
        let mut kept_any = false;
        let mut depth = 0u32;
        while let Some(Ok(tok)) = self.next_token() {
            let ends_argument =
                depth == 0 && matches!(tok.1, Tok::Raw(RawTok::Comma | RawTok::RParen));
            if ends_argument {
                let read = matches!(argument.first(), Some((_, Tok::Raw(RawTok::Ident(name)), _))
                    if ANNOTATIONS_READ.contains(name));
                if read {
                    if kept_any {
                        let at = argument[0].0;
                        self.pending.push_back((at, Tok::Raw(RawTok::Comma), at));
                    }
                    self.pending.extend(argument.drain(..));
                    kept_any = true;
                }
                argument.clear();
                if matches!(tok.1, Tok::Raw(RawTok::RParen)) {
                    self.pending.push_back(tok);
                    return;
                }
                continue;
            }
            match tok.1 {
                Tok::Raw(RawTok::LParen | RawTok::LBracket | RawTok::LBrace) => depth += 1,
                Tok::Raw(RawTok::RParen | RawTok::RBracket | RawTok::RBrace) => {
                    depth = depth.saturating_sub(1)
                }
                _ => {}
            }
            // Only a kept argument's tokens are worth holding.
            let skipped = matches!(argument.first(), Some((_, first, _))
                if !matches!(first, Tok::Raw(RawTok::Ident(name)) if ANNOTATIONS_READ.contains(name)));
            if !skipped {
                argument.push(tok);
            }
        }
        // The file ended inside the annotation: what was read goes to the parser, which
        // reports the missing parenthesis.
        self.pending.extend(argument);
    }

    fn next_token(&mut self) -> Option<Spanned<'a>> {
        loop {
            let (raw, range) = self.next_raw()?;
            let (start, end) = (range.start, range.end);
            match raw {
                Ok(tok) => return Some(Ok(self.contextual(tok, start, end))),
                Err(kind) => {
                    let stand_in = match kind {
                        LexErrorKind::UnterminatedString | LexErrorKind::InvalidEscape(_) => {
                            Some(Tok::Raw(RawTok::Str("")))
                        }
                        _ => None,
                    };
                    self.errors.push(LexError { kind, start, end });
                    if let Some(tok) = stand_in {
                        return Some(Ok((start, tok, end)));
                    }
                }
            }
        }
    }
}

impl<'a> Lexer<'a> {
    fn contextual(&mut self, tok: RawTok<'a>, start: usize, end: usize) -> (usize, Tok<'a>, usize) {
        match tok {
            RawTok::Integer(_) | RawTok::Real(_) => {
                if let Some(glued_end) = self.glued_to_number(end) {
                    let kind = LexErrorKind::MalformedNumber;
                    self.errors.push(LexError {
                        kind,
                        start,
                        end: glued_end,
                    });
                    return (start, Tok::Raw(RawTok::Real("0.0")), glued_end);
                }
                (start, Tok::Raw(tok), end)
            }
            RawTok::LBracket => {
                self.bracket_depth += 1;
                (start, Tok::Raw(tok), end)
            }
            RawTok::RBracket => {
                self.bracket_depth = self.bracket_depth.saturating_sub(1);
                (start, Tok::Raw(tok), end)
            }
            RawTok::End if self.bracket_depth > 0 => (start, Tok::EndSubscript, end),
            RawTok::Initial => self
                .fuse_initial(start)
                .unwrap_or((start, Tok::Raw(tok), end)),
            _ => (start, Tok::Raw(tok), end),
        }
    }
}

/// A short human name for a token, used in "expected …, found …" messages.
pub fn describe(tok: &Tok<'_>) -> String {
    match tok {
        Tok::Raw(RawTok::Ident(s)) | Tok::Raw(RawTok::QIdent(s)) => format!("identifier `{s}`"),
        Tok::Raw(RawTok::Dotted(s)) => format!("name `{s}`"),
        Tok::Raw(RawTok::Integer(s)) | Tok::Raw(RawTok::Real(s)) => format!("number `{s}`"),
        Tok::Raw(RawTok::Str(_)) => "string literal".to_string(),
        Tok::EndSubscript => "`end`".to_string(),
        Tok::InitialEquation => "`initial equation`".to_string(),
        Tok::InitialAlgorithm => "`initial algorithm`".to_string(),
        Tok::Raw(raw) => format!("`{}`", raw_text(raw)),
    }
}

/// The fixed spelling of a keyword or operator token.
fn raw_text(tok: &RawTok<'_>) -> String {
    // Debug names are the keyword in CamelCase; operators are listed explicitly.
    let op = match tok {
        RawTok::LParen => "(",
        RawTok::RParen => ")",
        RawTok::LBracket => "[",
        RawTok::RBracket => "]",
        RawTok::LBrace => "{",
        RawTok::RBrace => "}",
        RawTok::Semi => ";",
        RawTok::Comma => ",",
        RawTok::Dot => ".",
        RawTok::Colon => ":",
        RawTok::Assign => "=",
        RawTok::ColonAssign => ":=",
        RawTok::Plus => "+",
        RawTok::Minus => "-",
        RawTok::Star => "*",
        RawTok::Slash => "/",
        RawTok::Caret => "^",
        RawTok::DotPlus => ".+",
        RawTok::DotMinus => ".-",
        RawTok::DotStar => ".*",
        RawTok::DotSlash => "./",
        RawTok::DotCaret => ".^",
        RawTok::Eq => "==",
        RawTok::Ne => "<>",
        RawTok::Lt => "<",
        RawTok::Le => "<=",
        RawTok::Gt => ">",
        RawTok::Ge => ">=",
        other => return format!("{other:?}").to_lowercase(),
    };
    op.to_string()
}

/// True if `word` lexes as a keyword (so it must be quoted to be used as a name).
pub fn is_keyword(word: &str) -> bool {
    let mut lex = RawTok::lexer(word);
    !matches!(lex.next(), Some(Ok(RawTok::Ident(_)))) || lex.next().is_some()
}

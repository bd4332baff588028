//! The file table: every source text mocca reads, addressed by [`FileId`], and byte spans into it.

use codespan_reporting::files::{self, SimpleFiles};

/// Index of a file in the [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A byte range in one source file. Every AST node, flat variable and equation carries one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both (they must be in the same file).
    pub fn to(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }

    pub fn range(self) -> std::ops::Range<usize> {
        self.start as usize..self.end as usize
    }
}

/// All loaded sources. Names are what diagnostics print (a path, or `<stdlib>/…`).
#[derive(Default)]
pub struct SourceMap {
    files: SimpleFiles<String, String>,
    count: u32,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    pub fn add(&mut self, name: impl Into<String>, text: impl Into<String>) -> FileId {
        self.files.add(name.into(), text.into());
        self.count += 1;
        FileId(self.count - 1)
    }

    pub fn text(&self, id: FileId) -> &str {
        self.files
            .get(id.0 as usize)
            .map(|f| f.source().as_str())
            .unwrap_or("")
    }

    pub fn name(&self, id: FileId) -> &str {
        self.files
            .get(id.0 as usize)
            .map(|f| f.name().as_str())
            .unwrap_or("<unknown>")
    }

    /// The source text a span covers.
    pub fn snippet(&self, span: Span) -> &str {
        self.text(span.file).get(span.range()).unwrap_or("")
    }

    /// 1-based line number of a span's start.
    pub fn line(&self, span: Span) -> usize {
        let text = self.text(span.file);
        let end = (span.start as usize).min(text.len());
        text.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1
    }

    pub fn files(&self) -> &SimpleFiles<String, String> {
        &self.files
    }

    pub fn file_ids(&self) -> impl Iterator<Item = FileId> {
        (0..self.count).map(FileId)
    }
}

impl<'a> files::Files<'a> for SourceMap {
    type FileId = FileId;
    type Name = &'a str;
    type Source = &'a str;

    fn name(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        self.files.get(id.0 as usize).map(|f| f.name().as_str())
    }

    fn source(&'a self, id: FileId) -> Result<&'a str, files::Error> {
        self.files.get(id.0 as usize).map(|f| f.source().as_str())
    }

    fn line_index(&'a self, id: FileId, byte_index: usize) -> Result<usize, files::Error> {
        self.files.line_index(id.0 as usize, byte_index)
    }

    fn line_range(
        &'a self,
        id: FileId,
        line_index: usize,
    ) -> Result<std::ops::Range<usize>, files::Error> {
        self.files.line_range(id.0 as usize, line_index)
    }
}

//! The linear-work pattern subset for `pattern` and `patternProperties` keys.
//!
//! A pattern is parsed into regex-syntax's AST and inspected; it is never
//! compiled, so a hostile pattern costs this crate one linear parse and one
//! linear pass. What is allowed is a flat sequence (or a top-level
//! alternation of flat sequences) of pieces: a literal, an escape, `.`, a
//! character class, an anchor `^ $ \b \B`, or one of those atoms under a
//! bounded greedy `?`, `{n}` or `{m,n}`. Everything a backtracking ECMA-262
//! engine can spend super-linear time on needs something outside that list:
//! groups (nested quantifiers, alternation under repetition), backreferences,
//! unbounded or lazy repetition, or two variable-width pieces that compete for
//! the same characters.
//!
//! regex-syntax speaks Rust's dialect, not ECMA-262. Constructs that parse in
//! Rust but mean something else (or nothing) in ECMA-262, such as `\A`, `\z`,
//! `\pL`, `[[:alpha:]]` or class set operations, are reported as syntax so
//! that an accepted pattern means the same thing to every validator.

use regex_syntax::ast::{
    self, parse::Parser, AssertionKind, Ast, ClassPerlKind, ClassSet, ClassSetItem, ClassUnicodeKind, ClassUnicodeOpKind, HexLiteralKind,
    LiteralKind, RepetitionKind, RepetitionRange, SpecialLiteralKind,
};

use std::collections::HashMap;

use crate::limits::{MAX_PATTERN_REPETITION, MAX_PATTERN_TEXT_BYTES, PATTERN_NEST_LIMIT};
use crate::report::Rule;

/// One rule broken by a pattern, with a message naming the first offending
/// construct and its byte offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PatternFault {
    pub(crate) rule: Rule,
    pub(crate) message: String,
    /// Byte offset of the first offending construct; faults are listed in
    /// this order so that reports read left to right through the pattern.
    offset: usize,
}

/// Checks the patterns of one document against the subset.
///
/// Parsing costs about 60 ns per byte of pattern, the largest single cost of
/// a lint, so a pattern seen before is answered from a cache, and distinct
/// pattern text is limited to [`MAX_PATTERN_TEXT_BYTES`] per document: past
/// that, `pattern-budget` is reported once and no further pattern is parsed.
pub(crate) struct PatternChecker<'a> {
    parser: Parser,
    seen: HashMap<&'a str, Vec<PatternFault>>,
    spent: usize,
    exhausted: bool,
}

impl<'a> PatternChecker<'a> {
    pub(crate) fn new() -> PatternChecker<'a> {
        let parser = ast::parse::ParserBuilder::new().nest_limit(PATTERN_NEST_LIMIT).octal(false).ignore_whitespace(false).build();
        PatternChecker { parser, seen: HashMap::new(), spent: 0, exhausted: false }
    }

    /// Every rule the pattern breaks, each reported once at its first
    /// occurrence; empty when the pattern is in the subset (or when the
    /// budget ran out earlier, which was reported then).
    pub(crate) fn check(&mut self, pattern: &'a str) -> Vec<PatternFault> {
        if let Some(faults) = self.seen.get(pattern) {
            return faults.clone();
        }
        if self.exhausted {
            return Vec::new();
        }
        self.spent = self.spent.saturating_add(pattern.len());
        if self.spent > MAX_PATTERN_TEXT_BYTES {
            self.exhausted = true;
            return vec![PatternFault {
                rule: Rule::PatternBudget,
                message: format!("distinct pattern text exceeds {MAX_PATTERN_TEXT_BYTES} bytes here; later patterns were not checked"),
                offset: 0,
            }];
        }
        let faults = self.parse_and_inspect(pattern);
        self.seen.insert(pattern, faults.clone());
        faults
    }

    fn parse_and_inspect(&mut self, pattern: &str) -> Vec<PatternFault> {
        match self.parser.parse(pattern) {
            Err(error) => vec![parse_fault(pattern, &error)],
            Ok(tree) => Faults::collect(&tree),
        }
    }
}

fn parse_fault(pattern: &str, error: &ast::Error) -> PatternFault {
    let offset = error.span().start.offset;
    let at = pattern.get(offset..).unwrap_or("");
    let (rule, what) = match error.kind() {
        ast::ErrorKind::UnsupportedBackreference => (Rule::PatternBackreference, "backreference"),
        ast::ErrorKind::EscapeUnrecognized if at.starts_with("\\k") => (Rule::PatternBackreference, "named backreference"),
        ast::ErrorKind::UnsupportedLookAround => (Rule::PatternGroup, "lookaround group"),
        _ => {
            return PatternFault {
                rule: Rule::PatternSyntax,
                message: format!("pattern does not parse at byte {offset}: {}", error.kind()),
                offset,
            }
        }
    };
    PatternFault { rule, message: format!("{what} at byte {offset} is outside the linear-work pattern subset"), offset }
}

/// The first occurrence of each broken rule, in a fixed order.
#[derive(Default)]
struct Faults {
    found: Vec<PatternFault>,
}

impl Faults {
    fn note(&mut self, rule: Rule, offset: usize, what: &str) {
        if self.found.iter().any(|fault| fault.rule == rule) {
            return;
        }
        let message = match rule {
            Rule::PatternSyntax => format!("{what} at byte {offset} is not portable ECMA-262"),
            Rule::PatternLargeRepetition => {
                format!("{what} at byte {offset} repeats more than {MAX_PATTERN_REPETITION} times")
            }
            _ => format!("{what} at byte {offset} is outside the linear-work pattern subset"),
        };
        self.found.push(PatternFault { rule, message, offset });
    }

    fn collect(tree: &Ast) -> Vec<PatternFault> {
        let mut faults = Faults::default();
        let mut stack = vec![tree];
        let mut flat = true;
        while let Some(node) = stack.pop() {
            match node {
                Ast::Empty(_) | Ast::Dot(_) | Ast::ClassPerl(_) => {}
                Ast::Flags(flags) => {
                    flat = false;
                    faults.note(Rule::PatternGroup, flags.span.start.offset, "inline flag group");
                }
                Ast::Group(group) => {
                    flat = false;
                    faults.note(Rule::PatternGroup, group.span.start.offset, "group");
                    stack.push(&group.ast);
                }
                Ast::Literal(literal) => faults.literal(literal),
                Ast::Assertion(assertion) => faults.assertion(assertion),
                Ast::ClassUnicode(class) => faults.unicode_class(class),
                Ast::ClassBracketed(class) => faults.bracketed(class),
                Ast::Repetition(repetition) => {
                    faults.repetition(repetition);
                    stack.push(&repetition.ast);
                }
                Ast::Alternation(alternation) => {
                    // Alternation is allowed only at the top, where it
                    // needs no group; anywhere else a group was reported.
                    stack.extend(alternation.asts.iter().rev());
                }
                Ast::Concat(concat) => stack.extend(concat.asts.iter().rev()),
            }
        }
        if flat {
            faults.ambiguity(tree);
        }
        faults.found.sort_by_key(|fault| fault.offset);
        faults.found
    }

    fn literal(&mut self, literal: &ast::Literal) {
        let offset = literal.span.start.offset;
        match literal.kind {
            LiteralKind::HexFixed(HexLiteralKind::UnicodeLong) => self.note(Rule::PatternSyntax, offset, "escape \\U"),
            LiteralKind::HexBrace(HexLiteralKind::X | HexLiteralKind::UnicodeLong) => {
                self.note(Rule::PatternSyntax, offset, "braced hex escape")
            }
            LiteralKind::Octal => self.note(Rule::PatternSyntax, offset, "octal escape"),
            LiteralKind::Special(SpecialLiteralKind::Bell | SpecialLiteralKind::Space) => self.note(Rule::PatternSyntax, offset, "escape"),
            _ => {}
        }
    }

    fn assertion(&mut self, assertion: &ast::Assertion) {
        match assertion.kind {
            AssertionKind::StartLine | AssertionKind::EndLine | AssertionKind::WordBoundary | AssertionKind::NotWordBoundary => {}
            _ => self.note(Rule::PatternSyntax, assertion.span.start.offset, "assertion"),
        }
    }

    fn unicode_class(&mut self, class: &ast::ClassUnicode) {
        let portable = match &class.kind {
            ClassUnicodeKind::OneLetter(_) => false,
            ClassUnicodeKind::Named(_) => true,
            ClassUnicodeKind::NamedValue { op, .. } => *op == ClassUnicodeOpKind::Equal,
        };
        if !portable {
            self.note(Rule::PatternSyntax, class.span.start.offset, "Unicode class form");
        }
    }

    fn bracketed(&mut self, class: &ast::ClassBracketed) {
        let mut items: Vec<&ClassSetItem> = Vec::new();
        match &class.kind {
            ClassSet::Item(item) => items.push(item),
            ClassSet::BinaryOp(op) => self.note(Rule::PatternSyntax, op.span.start.offset, "class set operation"),
        }
        while let Some(item) = items.pop() {
            match item {
                ClassSetItem::Empty(_) | ClassSetItem::Range(_) | ClassSetItem::Perl(_) => {}
                ClassSetItem::Literal(literal) => self.literal(literal),
                ClassSetItem::Unicode(unicode) => self.unicode_class(unicode),
                ClassSetItem::Ascii(ascii) => self.note(Rule::PatternSyntax, ascii.span.start.offset, "POSIX class"),
                ClassSetItem::Bracketed(nested) => self.note(Rule::PatternSyntax, nested.span.start.offset, "nested class"),
                ClassSetItem::Union(union) => items.extend(union.items.iter()),
            }
        }
    }

    fn repetition(&mut self, repetition: &ast::Repetition) {
        let offset = repetition.op.span.start.offset;
        let upper = match &repetition.op.kind {
            RepetitionKind::ZeroOrOne => Some(1),
            RepetitionKind::ZeroOrMore | RepetitionKind::OneOrMore => None,
            RepetitionKind::Range(RepetitionRange::AtLeast(_)) => None,
            RepetitionKind::Range(RepetitionRange::Exactly(n)) => Some(*n),
            RepetitionKind::Range(RepetitionRange::Bounded(_, n)) => Some(*n),
        };
        match upper {
            None => self.note(Rule::PatternUnboundedRepetition, offset, "unbounded repetition"),
            Some(n) if n > MAX_PATTERN_REPETITION => self.note(Rule::PatternLargeRepetition, offset, "counted repetition"),
            Some(_) => {}
        }
        if !repetition.greedy {
            self.note(Rule::PatternLazyQuantifier, offset, "lazy quantifier");
        }
        match repetition.ast.as_ref() {
            Ast::Literal(_) | Ast::Dot(_) | Ast::ClassPerl(_) | Ast::ClassUnicode(_) | Ast::ClassBracketed(_) | Ast::Group(_) => {}
            Ast::Repetition(_) => self.note(Rule::PatternAmbiguousRepetition, offset, "repetition of a repetition"),
            _ => self.note(Rule::PatternSyntax, offset, "repetition of a non-character"),
        }
    }

    /// Finds variable-width pieces that compete for the same characters.
    ///
    /// Reading a branch left to right, `carry` over-approximates the
    /// characters that an earlier variable-width piece could hand over to the
    /// piece at hand by matching one more or one fewer character: a fixed
    /// piece passes the hand-over on only if it can match one of those
    /// characters itself, an optional piece also lets it through untouched.
    /// When a variable-width piece meets a non-empty carry, two ways of
    /// splitting the same text exist, which is what makes backtracking
    /// multiply. The sets are coarse (exact for ASCII, 1024-code-point
    /// buckets above), which can only make the check stricter.
    fn ambiguity(&mut self, tree: &Ast) {
        let branches: Vec<&Ast> = match tree {
            Ast::Alternation(alternation) => alternation.asts.iter().collect(),
            other => vec![other],
        };
        for branch in branches {
            let pieces: &[Ast] = match branch {
                Ast::Concat(concat) => &concat.asts,
                single => std::slice::from_ref(single),
            };
            let mut carry = CharSet::EMPTY;
            for piece in pieces {
                let Some((set, min, max, offset)) = piece_shape(piece) else {
                    continue;
                };
                if min != max {
                    if carry.intersects(&set) {
                        self.note(
                            Rule::PatternAmbiguousRepetition,
                            offset,
                            "variable-width piece that can match what the piece before it matches",
                        );
                    }
                    carry = if min == 0 { carry.union(&set) } else { set };
                } else if min > 0 {
                    carry = if carry.intersects(&set) { set } else { CharSet::EMPTY };
                }
            }
        }
    }
}

/// The character set and width range of one piece of a flat branch, or None
/// for zero-width pieces (anchors, empty).
fn piece_shape(piece: &Ast) -> Option<(CharSet, u32, u32, usize)> {
    match piece {
        Ast::Repetition(repetition) => {
            let (min, max) = match &repetition.op.kind {
                RepetitionKind::ZeroOrOne => (0, 1),
                RepetitionKind::ZeroOrMore => (0, u32::MAX),
                RepetitionKind::OneOrMore => (1, u32::MAX),
                RepetitionKind::Range(RepetitionRange::Exactly(n)) => (*n, *n),
                RepetitionKind::Range(RepetitionRange::AtLeast(n)) => (*n, u32::MAX),
                RepetitionKind::Range(RepetitionRange::Bounded(m, n)) => (*m, *n),
            };
            let set = atom_set(&repetition.ast).unwrap_or(CharSet::ALL);
            Some((set, min, max, repetition.op.span.start.offset))
        }
        other => atom_set(other).map(|set| (set, 1, 1, other.span().start.offset)),
    }
}

/// Over-approximated set of characters one atom can match.
fn atom_set(atom: &Ast) -> Option<CharSet> {
    match atom {
        Ast::Literal(literal) => Some(CharSet::of_char(literal.c)),
        Ast::Dot(_) | Ast::ClassUnicode(_) => Some(CharSet::ALL),
        Ast::ClassPerl(perl) => Some(perl_set(perl)),
        Ast::ClassBracketed(class) => Some(bracketed_set(class)),
        _ => None,
    }
}

fn perl_set(perl: &ast::ClassPerl) -> CharSet {
    // The ASCII part is exact under both ECMA-262 and Unicode readings; any
    // non-ASCII character may belong (Unicode digits, letters, spaces).
    let ascii = match perl.kind {
        ClassPerlKind::Digit => CharSet::range_ascii(b'0', b'9'),
        ClassPerlKind::Word => {
            CharSet::range_ascii(b'a', b'z')
                | CharSet::range_ascii(b'A', b'Z')
                | CharSet::range_ascii(b'0', b'9')
                | CharSet::range_ascii(b'_', b'_')
        }
        ClassPerlKind::Space => CharSet::range_ascii(b'\t', b'\r') | CharSet::range_ascii(b' ', b' '),
    };
    CharSet { ascii: if perl.negated { !ascii } else { ascii }, wide: u128::MAX }
}

fn bracketed_set(class: &ast::ClassBracketed) -> CharSet {
    let ClassSet::Item(root) = &class.kind else {
        return CharSet::ALL;
    };
    let mut set = CharSet::EMPTY;
    // The ASCII half stays exact as long as only literals, ranges and Perl
    // classes appear; only then may a negated class complement it.
    let mut exact_ascii = true;
    let mut items = vec![root];
    while let Some(item) = items.pop() {
        match item {
            ClassSetItem::Empty(_) => {}
            ClassSetItem::Literal(literal) => set = set.union(&CharSet::of_char(literal.c)),
            ClassSetItem::Range(range) => set = set.union(&CharSet::of_range(range.start.c, range.end.c)),
            ClassSetItem::Perl(perl) => set = set.union(&perl_set(perl)),
            ClassSetItem::Union(union) => items.extend(union.items.iter()),
            ClassSetItem::Ascii(_) | ClassSetItem::Unicode(_) | ClassSetItem::Bracketed(_) => {
                exact_ascii = false;
                set = CharSet::ALL;
            }
        }
    }
    if !class.negated {
        set
    } else if exact_ascii {
        CharSet { ascii: !set.ascii, wide: u128::MAX }
    } else {
        CharSet::ALL
    }
}

/// A coarse character set: one bit per ASCII character, one bit per bucket of
/// 1024 code points above ASCII (the last bucket takes everything beyond).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CharSet {
    ascii: u128,
    wide: u128,
}

impl CharSet {
    const EMPTY: CharSet = CharSet { ascii: 0, wide: 0 };
    const ALL: CharSet = CharSet { ascii: u128::MAX, wide: u128::MAX };

    fn of_char(c: char) -> CharSet {
        CharSet::of_range(c, c)
    }

    fn of_range(lo: char, hi: char) -> CharSet {
        let (lo, hi) = (u32::from(lo), u32::from(hi));
        let mut set = CharSet::EMPTY;
        if lo <= 0x7f {
            set.ascii = bit_span(lo, hi.min(0x7f));
        }
        if hi >= 0x80 {
            set.wide = bit_span(bucket(lo.max(0x80)), bucket(hi));
        }
        set
    }

    fn range_ascii(lo: u8, hi: u8) -> u128 {
        bit_span(u32::from(lo), u32::from(hi))
    }

    fn union(&self, other: &CharSet) -> CharSet {
        CharSet { ascii: self.ascii | other.ascii, wide: self.wide | other.wide }
    }

    fn intersects(&self, other: &CharSet) -> bool {
        self.ascii & other.ascii != 0 || self.wide & other.wide != 0
    }
}

fn bucket(code: u32) -> u32 {
    ((code.saturating_sub(0x80)) >> 10).min(127)
}

/// Bits `lo..=hi` of a u128 (both below 128, `lo <= hi`); empty otherwise.
fn bit_span(lo: u32, hi: u32) -> u128 {
    if lo > hi || hi > 127 {
        return 0;
    }
    let width = hi - lo + 1;
    let ones = if width == 128 { u128::MAX } else { (1u128 << width) - 1 };
    ones << lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_counts_distinct_text_once() {
        let mut checker = PatternChecker::new();
        let long = "a".repeat(MAX_PATTERN_TEXT_BYTES / 2);
        assert!(checker.check(&long).is_empty());
        assert!(checker.check(&long).is_empty());
        let other = "b".repeat(MAX_PATTERN_TEXT_BYTES / 2);
        assert!(checker.check(&other).is_empty());
        let faults = checker.check("c");
        assert_eq!(faults.len(), 1);
        assert_eq!(faults[0].rule, Rule::PatternBudget);
        assert!(checker.check("d*").is_empty());
        assert_eq!(checker.check(&long), vec![]);
    }

    fn rules(pattern: &str) -> Vec<Rule> {
        PatternChecker::new().check(pattern).into_iter().map(|fault| fault.rule).collect()
    }

    #[test]
    fn accepts_the_subset() {
        for pattern in [
            "",
            "^[a-z][a-z0-9_-]{0,63}$",
            "^\\d{4}-\\d{2}-\\d{2}$",
            "^[A-Z]{2,3}\\.[0-9]{1,4}$",
            "^https://",
            "\\bfoo\\b",
            "^a|^b$",
            "^[^\\s]{1,5}:\\d?$",
            "^\\p{Lu}$",
            "^\\u00e9\\x41\\/\\-$",
            "^[a-z]{1,8}@[a-z]{1,8}\\.[a-z]{2,4}$",
            "^x?y?z?$",
        ] {
            assert_eq!(rules(pattern), Vec::<Rule>::new(), "{pattern}");
        }
    }

    #[test]
    fn rejects_each_construct_with_its_rule() {
        let cases: &[(&str, Rule)] = &[
            ("(ab)", Rule::PatternGroup),
            ("(?:ab)", Rule::PatternGroup),
            ("(?<n>ab)", Rule::PatternGroup),
            ("(?=a)", Rule::PatternGroup),
            ("(?i)abc", Rule::PatternGroup),
            ("(a)\\1", Rule::PatternBackreference),
            ("\\k<n>", Rule::PatternBackreference),
            ("^a*$", Rule::PatternUnboundedRepetition),
            ("^a+$", Rule::PatternUnboundedRepetition),
            ("^a{2,}$", Rule::PatternUnboundedRepetition),
            ("^ab??$", Rule::PatternLazyQuantifier),
            ("^a{1,3}?$", Rule::PatternLazyQuantifier),
            ("^\\d{1,3}\\d{1,3}$", Rule::PatternAmbiguousRepetition),
            ("^[a-z]{0,9}x?[a-z]{1,2}$", Rule::PatternAmbiguousRepetition),
            ("^.{0,9}x.{0,9}$", Rule::PatternAmbiguousRepetition),
            ("^a{2}{3}$", Rule::PatternAmbiguousRepetition),
            ("^a{1000}$", Rule::PatternLargeRepetition),
            ("[", Rule::PatternSyntax),
            ("a{3,1}", Rule::PatternSyntax),
            ("\\Aabc\\z", Rule::PatternSyntax),
            ("\\pL", Rule::PatternSyntax),
            ("[[:alpha:]]", Rule::PatternSyntax),
            ("[a-z&&[^q]]", Rule::PatternSyntax),
            ("\\x{41}", Rule::PatternSyntax),
        ];
        for (pattern, rule) in cases {
            assert_eq!(rules(pattern), vec![*rule], "{pattern}");
        }
    }

    #[test]
    fn reports_every_rule_once() {
        let found = rules("(a+)+b*?");
        assert!(found.contains(&Rule::PatternGroup));
        assert!(found.contains(&Rule::PatternUnboundedRepetition));
        assert!(found.contains(&Rule::PatternLazyQuantifier));
        assert_eq!(found.iter().filter(|r| **r == Rule::PatternGroup).count(), 1);
    }

    #[test]
    fn charset_buckets_and_spans() {
        assert_eq!(bit_span(0, 127), u128::MAX);
        assert_eq!(bit_span(3, 3), 1 << 3);
        assert_eq!(bit_span(5, 4), 0);
        let greek = CharSet::of_range('α', 'ω');
        let cyrillic = CharSet::of_range('а', 'я');
        assert!(!CharSet::of_char('a').intersects(&greek));
        assert!(greek.intersects(&CharSet::of_char('β')));
        // Greek and Cyrillic share a 1024-code-point bucket: coarse, so the
        // check errs on the side of rejecting.
        assert!(greek.intersects(&cyrillic));
        assert!(CharSet::of_char('\u{10FFFF}').intersects(&CharSet::of_char('\u{20000}')));
    }
}

//! `pattern` and `patternProperties` with ECMA-262's meaning, run by the `regex` crate.
//!
//! JSON Schema patterns are ECMA-262 regular expressions; the checks run them with the
//! `regex` crate, which matches in linear time (the checks judge untrusted data). Where the
//! two syntaxes mean different things, the source is translated exactly or refused with a
//! diagnostic that names the construct:
//!
//! - `\d`, `\D`, `\w`, `\W`, `\b`, `\B` are ASCII in ECMA-262 and Unicode in `regex`:
//!   written out as ASCII classes (`[0-9]`, `[0-9A-Za-z_]`, `(?-u:\b)`);
//! - `\s`, `\S` are ECMA-262's own whitespace set (it has U+FEFF, Unicode's has not);
//! - inside a class, `\D`, `\W` and `\S` are written out as the ranges of every other
//!   code point (`[\S@]`);
//! - `.` excludes all four ECMA-262 line terminators, not only `\n`;
//! - `\cX` (X an ASCII letter) is the control character X mod 32, written as `\xNN`;
//! - `$` and `^` already agree (end and start of the text; neither matches before a final
//!   newline without the `m` flag);
//! - a `[` inside a class (POSIX `[[:alpha:]]`, nested classes), `(?flags)`, `&&`, `--`
//!   and `~~` in a class are `regex` syntax that ECMA-262 reads as literal characters or
//!   rejects: refused;
//! - lookaround and backreferences have no linear-time match: refused.
//!
//! The translated source is then compiled here, with the same engine and size limits as
//! at run time, so a pattern that cannot be compiled (`\w{1000}` passes the parser but not
//! the size limit) is a diagnostic instead of a check that rejects every string.

/// ECMA-262 `\s`: WhiteSpace and LineTerminator.
const SPACE: &str = r"\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}";
const WORD: &str = "0-9A-Za-z_";
const DIGIT: &str = "0-9";

/// `set` (the inside of a class: [`SPACE`], [`WORD`], [`DIGIT`]) as the ranges of every code
/// point it leaves out: a class cannot hold a negated class (`[\S@]`), but it can hold
/// these.
fn complement(set: &str) -> String {
    use regex_syntax::hir::{Class, HirKind};
    let mut out = String::new();
    // The three sets are constants of several code points each, so they parse as classes.
    if let Ok(hir) = regex_syntax::parse(&format!("[{set}]")) {
        if let HirKind::Class(Class::Unicode(class)) = hir.kind() {
            let mut class = class.clone();
            class.negate();
            for range in class.ranges() {
                out.push_str(&format!("\\x{{{:X}}}-\\x{{{:X}}}", range.start() as u32, range.end() as u32));
            }
        }
    }
    out
}

/// The `regex` source with `source`'s ECMA-262 meaning, or the construct that has none.
pub fn translate(source: &str) -> Result<String, String> {
    let mut out = String::with_capacity(source.len() + 16);
    let mut chars = source.chars().peekable();
    let mut in_class = false;
    let mut class_start = false;
    while let Some(c) = chars.next() {
        let at_class_start = std::mem::take(&mut class_start);
        match c {
            '\\' => {
                let Some(e) = chars.next() else { return Err("a trailing `\\`".into()) };
                match e {
                    'd' | 'w' | 's' => {
                        let set = match e {
                            'd' => DIGIT,
                            'w' => WORD,
                            _ => SPACE,
                        };
                        out.push_str(&if in_class { set.to_string() } else { format!("[{set}]") });
                    }
                    'D' | 'W' | 'S' if in_class => out.push_str(&complement(match e {
                        'D' => DIGIT,
                        'W' => WORD,
                        _ => SPACE,
                    })),
                    'D' | 'W' | 'S' => {
                        let set = match e {
                            'D' => DIGIT,
                            'W' => WORD,
                            _ => SPACE,
                        };
                        out.push_str(&format!("[^{set}]"));
                    }
                    'b' | 'B' if !in_class => out.push_str(&format!("(?-u:\\{e})")),
                    '1'..='9' => return Err(format!("the backreference `\\{e}`")),
                    'k' if chars.peek() == Some(&'<') => return Err("the named backreference `\\k<…>`".into()),
                    // `\cX`: the control character X mod 32, for an ASCII letter X (either case).
                    'c' => match chars.next() {
                        Some(letter) if letter.is_ascii_alphabetic() => out.push_str(&format!("\\x{:02X}", letter as u32 % 32)),
                        _ => return Err("the control escape `\\c` without an ASCII letter".into()),
                    },
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
            }
            '[' if in_class => return Err("`[` inside a character class (a POSIX class such as `[[:alpha:]]`, or a nested class)".into()),
            '[' => {
                in_class = true;
                class_start = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    // `[]` matches nothing and `[^]` anything in ECMA-262; `regex` reads a
                    // leading `]` as a literal.
                    return Err("an empty character class `[]` or `[^]`".into());
                }
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            '&' | '-' | '~' if in_class && chars.peek() == Some(&c) && !at_class_start => {
                return Err(format!("`{c}{c}` inside a character class (a `regex` set operation)"));
            }
            '.' if !in_class => out.push_str(r"[^\n\r\x{2028}\x{2029}]"),
            '(' if !in_class && chars.peek() == Some(&'?') => {
                chars.next();
                let rest: String = chars.clone().take(2).collect();
                if rest.starts_with(':') {
                    out.push_str("(?");
                } else if rest.starts_with('=') || rest.starts_with('!') || rest == "<=" || rest == "<!" {
                    return Err("lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`)".into());
                } else if rest.starts_with('<') {
                    out.push_str("(?P");
                } else {
                    return Err("an inline flag group `(?…)`".into());
                }
            }
            other => out.push(other),
        }
    }
    Ok(out)
}

/// Translates and compiles `source` as the run time will; `Err` says why it cannot be.
pub fn compile(source: &str) -> Result<String, String> {
    let translated = translate(source).map_err(|construct| {
        format!("the pattern `{source}` uses {construct}, which has no linear-time equivalent with ECMA-262's meaning")
    })?;
    regex::Regex::new(&translated).map_err(|e| format!("the pattern `{source}` cannot be compiled by the `regex` crate: {e}"))?;
    Ok(translated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ecma_classes_are_written_out_and_regex_only_syntax_is_refused() {
        assert_eq!(translate(r"^\d+$").unwrap(), "^[0-9]+$");
        assert_eq!(translate(r"[\w-]").unwrap(), "[0-9A-Za-z_-]");
        assert!(translate("^[[:alpha:]]+$").unwrap_err().contains("POSIX"));
        assert!(translate("(?i)abc").unwrap_err().contains("inline flag"));
        assert!(translate("a(?=b)").unwrap_err().contains("lookaround"));
        assert!(translate(r"(a)\1").unwrap_err().contains("backreference"));
        assert!(translate("[a&&b]").unwrap_err().contains("set operation"));
        assert!(compile(r"\w{1000}").is_ok(), "ASCII \\w is small enough");
        assert!(compile(r"(?:\p{L}{100}){100}").unwrap_err().contains("cannot be compiled"));
        let re = regex::Regex::new(&translate(r"^\d$").unwrap()).unwrap();
        assert!(re.is_match("7") && !re.is_match("٣"), "ECMA-262 \\d is ASCII");
        let re = regex::Regex::new(&translate("^a.b$").unwrap()).unwrap();
        assert!(re.is_match("a-b") && !re.is_match("a\rb") && !re.is_match("a\u{2028}b"));
        let re = regex::Regex::new(&translate(r"^\s$").unwrap()).unwrap();
        assert!(re.is_match("\u{feff}"));
        let re = regex::Regex::new(&translate(r"^\cC[\cj]$").unwrap()).unwrap();
        assert!(re.is_match("\u{3}\n") && !re.is_match("cC\n"), "\\cX is a control character");
        assert!(translate(r"\c1").unwrap_err().contains("control escape"));
        let re = regex::Regex::new(&translate(r"^[\S]+@[^\W_]\.[\D]$").unwrap()).unwrap();
        assert!(!re.is_match("a\u{feff}b@c.x") && re.is_match("ab@c.x") && !re.is_match("ab@_.x") && !re.is_match("ab@c.7"));
    }

    /// Each negated set inside a class is exactly the code points its set leaves out.
    #[test]
    fn negated_sets_inside_a_class_are_the_complements() {
        for set in [SPACE, WORD, DIGIT] {
            let not = complement(set);
            assert!(!not.is_empty(), "{set}");
            let (set, not) = (regex::Regex::new(&format!("^[{set}]$")).unwrap(), regex::Regex::new(&format!("^[{not}]$")).unwrap());
            let mut buffer = [0u8; 4];
            for c in (0..=0x10FFFF).filter_map(char::from_u32) {
                let c = c.encode_utf8(&mut buffer);
                assert_ne!(set.is_match(c), not.is_match(c), "{c:?}");
            }
        }
    }
}

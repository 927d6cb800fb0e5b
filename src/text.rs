//! Text cut to a size on a character boundary: the one way every bounded field, tail and
//! answer of the runtime and the probe is cut.

/// The longest prefix of `text` of at most `max` bytes that ends on a character boundary.
pub fn head(text: &str, max: usize) -> &str {
    let mut at = max.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    &text[..at]
}

/// The longest suffix of `text` of at most `max` bytes that starts on a character boundary.
pub fn tail(text: &str, max: usize) -> &str {
    let mut at = text.len().saturating_sub(max);
    while !text.is_char_boundary(at) {
        at += 1;
    }
    &text[at..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_fall_on_character_boundaries() {
        let text = "aé€b";
        assert_eq!(head(text, 2), "a");
        assert_eq!(head(text, 3), "aé");
        assert_eq!(head(text, 99), text);
        assert_eq!(tail(text, 2), "b");
        assert_eq!(tail(text, 4), "€b");
        assert_eq!(tail(text, 99), text);
    }
}

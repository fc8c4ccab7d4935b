//! Text from a peer, as an error or a log line shows it.

/// `word` escaped, at most 64 characters.
pub fn shown(word: &str) -> String {
    let mut s: String = word
        .chars()
        .take(64)
        .flat_map(char::escape_default)
        .collect();
    if word.chars().count() > 64 {
        s.push('…');
    }
    s
}

/// A character that changes how text around it shows without showing
/// itself: a control character, or a Unicode format character (bidi
/// overrides and isolates, zero-width characters, the byte-order mark,
/// the soft hyphen), which a name must not hold.
pub fn hides(c: char) -> bool {
    c.is_control()
        || matches!(c,
            '\u{00ad}' | '\u{061c}' | '\u{180e}' | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_hide_no_overrides() {
        assert!("a\u{202e}b".chars().any(hides));
        assert!("x\u{2067}".chars().any(hides));
        assert!("\u{200b}".chars().any(hides));
        assert!(!"job-1 über".chars().any(hides));
        assert_eq!(shown(&"é".repeat(70)).chars().count(), 64 * 6 + 1);
    }
}

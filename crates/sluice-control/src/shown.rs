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

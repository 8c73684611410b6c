//! Text kernels of offline ingestion (`graphrecall.ingest`): sentence boundaries and
//! capitalised-phrase spans of many texts in one call. Pyo3-free.
//!
//! Each kernel gives exactly what a Python regular expression of
//! `graphrecall.ingest.chunking` / `graphrecall.ingest.extract` gives, with `re`'s Unicode
//! semantics for `str` patterns (`\s`, `\d`, `\w` as CPython defines them, from the
//! generated `tables`). Offsets are in code points, as Python indexes a `str`.
//!
//! * [`split_sentences`]: the stripped, non-empty pieces between the matches of
//!   `(?<=[.!?])["'”’)\]]*\s+(?=[A-Z0-9"“'‘(\[])|\n\s*\n`;
//! * [`count_tokens`]: the number of matches of `\w+|[^\w\s]`;
//! * [`phrases`]: the matches of `CAP(?:\s+(?:PARTICLE\s+)*CAP)*`, with
//!   `CAP = [A-Z][\w'’&\-]*\.?|\d[\d,.]*\d|\d`.

use rayon::prelude::*;

mod known;
mod link;
mod names;
mod tables;

pub use known::KnownIndex;
pub use link::{call_order, link, LinkInput, LinkOptions, LinkOutput, PairState, PySetOrder};
pub use names::{casefold, normalise, scan_names, ScanNames};

/// Lower-case words that join the capitalised words of one phrase (`University of Oxford`).
pub const PARTICLES: [&str; 18] = [
    "of", "the", "de", "du", "da", "del", "della", "der", "den", "van", "von", "la", "le", "y",
    "di", "al", "bin", "el",
];

fn in_table(table: &[(u32, u32)], c: char) -> bool {
    let c = c as u32;
    table
        .binary_search_by(|&(lo, hi)| {
            if hi < c {
                std::cmp::Ordering::Less
            } else if lo > c {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        })
        .is_ok()
}

/// Python `re`'s `\s` (`str.isspace`).
pub fn is_space(c: char) -> bool {
    if c.is_ascii() {
        matches!(c, '\t'..='\r' | '\x1c'..='\x1f' | ' ')
    } else {
        in_table(tables::SPACE, c)
    }
}

/// Python `re`'s `\d` (`str.isdecimal`).
pub fn is_digit(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        in_table(tables::DIGIT, c)
    }
}

/// Python `re`'s `\w` (`str.isalnum` or `_`).
pub fn is_word(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_alphanumeric() || c == '_'
    } else {
        in_table(tables::WORD, c)
    }
}

/// The number of matches of `\w+|[^\w\s]` in `text` (`chunking.count_tokens`): runs of
/// word characters and single characters that are neither word nor space.
pub fn count_tokens(text: &str) -> usize {
    let mut n = 0;
    let mut in_word = false;
    for c in text.chars() {
        if is_word(c) {
            n += usize::from(!in_word);
            in_word = true;
        } else {
            in_word = false;
            n += usize::from(!is_space(c));
        }
    }
    n
}

/// [`count_tokens`] of each text, in parallel.
pub fn count_tokens_all(texts: &[String]) -> Vec<i64> {
    texts.par_iter().map(|t| count_tokens(t) as i64).collect()
}

/// The sentence boundary match starting at `i`, as its end, if any.
fn boundary_at(t: &[char], i: usize) -> Option<usize> {
    let n = t.len();
    if i > 0 && matches!(t[i - 1], '.' | '!' | '?') {
        let mut j = i;
        while j < n && matches!(t[j], '"' | '\'' | '”' | '’' | ')' | ']') {
            j += 1;
        }
        let spaces = j;
        while j < n && is_space(t[j]) {
            j += 1;
        }
        if j > spaces
            && j < n
            && (t[j].is_ascii_uppercase()
                || t[j].is_ascii_digit()
                || matches!(t[j], '"' | '“' | '\'' | '‘' | '(' | '['))
        {
            return Some(j);
        }
    }
    if t[i] == '\n' {
        let mut j = i + 1;
        let mut last = None;
        while j < n && is_space(t[j]) {
            if t[j] == '\n' {
                last = Some(j + 1);
            }
            j += 1;
        }
        return last;
    }
    None
}

fn strip(t: &[char], mut a: usize, mut b: usize) -> (usize, usize) {
    while a < b && is_space(t[a]) {
        a += 1;
    }
    while b > a && is_space(t[b - 1]) {
        b -= 1;
    }
    (a, b)
}

/// The `[start, end)` code point spans of `text`'s sentences: the pieces between sentence
/// boundaries, stripped of whitespace, empty ones dropped (`chunking.split_sentences`).
pub fn split_sentences(text: &[char]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < text.len() {
        if let Some(end) = boundary_at(text, i) {
            let (a, b) = strip(text, start, i);
            if a < b {
                out.push((a, b));
            }
            start = end;
            i = end;
        } else {
            i += 1;
        }
    }
    let (a, b) = strip(text, start, text.len());
    if a < b {
        out.push((a, b));
    }
    out
}

/// The end of the `CAP` match at `i`, if any.
fn cap_at(t: &[char], i: usize) -> Option<usize> {
    let n = t.len();
    let c = t[i];
    if c.is_ascii_uppercase() {
        let mut j = i + 1;
        while j < n && (is_word(t[j]) || matches!(t[j], '\'' | '’' | '&' | '-')) {
            j += 1;
        }
        if j < n && t[j] == '.' {
            j += 1;
        }
        return Some(j);
    }
    if is_digit(c) {
        let mut j = i + 1;
        while j < n && (is_digit(t[j]) || t[j] == ',' || t[j] == '.') {
            j += 1;
        }
        // `\d[\d,.]*\d` backtracks to the run's last digit; `\d` alone otherwise.
        while j > i + 1 && !is_digit(t[j - 1]) {
            j -= 1;
        }
        return Some(j.max(i + 1));
    }
    None
}

/// The end of the particle (and the whitespace after it) at `i`, if one is there.
fn particle_at(t: &[char], i: usize) -> Option<usize> {
    let mut k = i;
    while k < t.len() && !is_space(t[k]) {
        k += 1;
    }
    if k == t.len() || k - i > 5 {
        return None;
    }
    let word: String = t[i..k].iter().collect();
    if !PARTICLES.contains(&word.as_str()) {
        return None;
    }
    while k < t.len() && is_space(t[k]) {
        k += 1;
    }
    Some(k)
}

/// The end of the phrase match at `i`, if any.
fn phrase_at(t: &[char], i: usize) -> Option<usize> {
    let mut end = cap_at(t, i)?;
    loop {
        let mut j = end;
        while j < t.len() && is_space(t[j]) {
            j += 1;
        }
        if j == end {
            return Some(end);
        }
        while let Some(k) = particle_at(t, j) {
            j = k;
        }
        match (j < t.len()).then(|| cap_at(t, j)).flatten() {
            Some(e) => end = e,
            None => return Some(end),
        }
    }
}

/// The `[start, end)` code point spans of the capitalised phrases of `sentence`, in order
/// (the matches of `extract._PHRASE`'s `finditer`).
pub fn phrases(sentence: &[char]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < sentence.len() {
        if let Some(end) = phrase_at(sentence, i) {
            out.push((i, end));
            i = end;
        } else {
            i += 1;
        }
    }
    out
}

/// A sentence's `[start, end)` span with its phrases' spans.
type Sentence = ((usize, usize), Vec<(usize, usize)>);

/// The sentences and phrases of many texts, as flat arrays.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Scan {
    /// `text_offsets[t]..text_offsets[t + 1]` are text `t`'s sentences (`texts.len() + 1`).
    pub text_offsets: Vec<i64>,
    /// Each sentence's `[start, end)` in its text, in code points.
    pub sentences: Vec<[i64; 2]>,
    /// `sentence_offsets[s]..sentence_offsets[s + 1]` are sentence `s`'s phrases.
    pub sentence_offsets: Vec<i64>,
    /// Each phrase's `[start, end)` in its sentence, in code points.
    pub phrases: Vec<[i64; 2]>,
}

/// [`split_sentences`] of each text and [`phrases`] of each sentence, in parallel.
pub fn scan(texts: &[String]) -> Scan {
    let per_text: Vec<Vec<Sentence>> = texts
        .par_iter()
        .map(|text| {
            let chars: Vec<char> = text.chars().collect();
            split_sentences(&chars)
                .into_iter()
                .map(|(a, b)| ((a, b), phrases(&chars[a..b])))
                .collect()
        })
        .collect();
    let mut out = Scan {
        text_offsets: Vec::with_capacity(texts.len() + 1),
        ..Scan::default()
    };
    out.text_offsets.push(0);
    out.sentence_offsets.push(0);
    for sents in per_text {
        for ((a, b), ps) in sents {
            out.sentences.push([a as i64, b as i64]);
            out.phrases
                .extend(ps.into_iter().map(|(x, y)| [x as i64, y as i64]));
            out.sentence_offsets.push(out.phrases.len() as i64);
        }
        out.text_offsets.push(out.sentences.len() as i64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    fn spans(s: &[char], v: &[(usize, usize)]) -> Vec<String> {
        v.iter().map(|&(a, b)| s[a..b].iter().collect()).collect()
    }

    #[test]
    fn sentences_split_at_boundaries() {
        let t = chars("He went to Paris. \"Then\" he left! (Later.)\n\n  next one 1.5 m. 2 more");
        assert_eq!(
            spans(&t, &split_sentences(&t)),
            [
                "He went to Paris.",
                "\"Then\" he left!",
                "(Later.)",
                "next one 1.5 m.",
                "2 more"
            ]
        );
        let t = chars("  \n\n ");
        assert!(split_sentences(&t).is_empty());
    }

    #[test]
    fn phrases_follow_the_regex() {
        let t =
            chars("The University of Oxford and van der Berg met 1,000. people in eBay's U.S. 2");
        assert_eq!(
            spans(&t, &phrases(&t)),
            [
                "The University of Oxford",
                "Berg",
                "1,000",
                "Bay's U.",
                "S. 2"
            ]
        );
        let t = chars("Visit of the ");
        assert_eq!(spans(&t, &phrases(&t)), ["Visit"]);
    }

    #[test]
    fn classes_match_python() {
        assert!(is_space('\u{85}') && is_space('\u{3000}') && !is_space('\u{200b}'));
        assert!(is_digit('٣') && !is_digit('²'));
        assert!(is_word('²') && is_word('é') && is_word('_') && !is_word('-'));
    }

    #[test]
    fn tokens_are_words_and_marks() {
        assert_eq!(count_tokens("Hello, world! x_1 ²² - é"), 8);
        assert_eq!(count_tokens(" \u{3000}\n"), 0);
        assert_eq!(
            count_tokens_all(&["a b".to_string(), "...".to_string()]),
            [2, 3]
        );
    }

    #[test]
    fn scan_flattens() {
        let s = scan(&["A b. C d".to_string(), String::new()]);
        assert_eq!(s.text_offsets, [0, 2, 2]);
        assert_eq!(s.sentences, [[0, 4], [5, 8]]);
        assert_eq!(s.sentence_offsets, [0, 1, 2]);
        assert_eq!(s.phrases, [[0, 1], [0, 1]]);
    }
}

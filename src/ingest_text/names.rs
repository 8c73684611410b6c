//! The names of each sentence, exactly `graphrecall.ingest.extract.phrase_names` (trimmed
//! capitalised phrases, then quoted phrases), normalised to keys with `str.casefold`'s
//! own mapping (the generated `tables::CASEFOLD`), and interned: many texts in one call.

use rayon::prelude::*;
use rustc_hash::FxHashMap;

use super::{in_table, is_space, phrases, split_sentences, tables, PARTICLES};

/// `extract.STOPWORDS`, sorted: capitalised words that are no names on their own.
pub const STOPWORDS: [&str; 107] = [
    "a", "about", "after", "against", "all", "also", "although", "among", "an", "and", "are", "as",
    "at", "be", "because", "been", "before", "being", "between", "both", "but", "by", "during",
    "each", "eight", "every", "first", "five", "for", "four", "from", "he", "her", "here", "his",
    "how", "however", "i", "if", "in", "into", "is", "it", "its", "many", "more", "most", "my",
    "nine", "no", "not", "of", "on", "one", "only", "onto", "or", "other", "our", "over", "per",
    "second", "seven", "she", "since", "six", "so", "some", "such", "ten", "than", "that", "the",
    "their", "then", "there", "these", "they", "third", "this", "those", "though", "three", "thus",
    "to", "two", "under", "until", "upon", "via", "was", "we", "were", "what", "when", "where",
    "which", "while", "who", "whom", "whose", "why", "with", "within", "without", "you", "your",
];

fn is_stopword(w: &str) -> bool {
    STOPWORDS.binary_search(&w).is_ok()
}

/// Python's `str.isdigit` of one character.
fn is_py_digit(c: char) -> bool {
    if c.is_ascii() {
        c.is_ascii_digit()
    } else {
        in_table(tables::ISDIGIT, c)
    }
}

/// Pushes Python's `c.casefold()` onto `out`.
pub fn push_casefold(out: &mut String, c: char) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
    } else {
        match tables::CASEFOLD.binary_search_by_key(&(c as u32), |&(k, _)| k) {
            Ok(i) => out.push_str(tables::CASEFOLD[i].1),
            Err(_) => out.push(c),
        }
    }
}

/// Python's `str.casefold` (it maps each code point on its own).
pub fn casefold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        push_casefold(&mut out, c);
    }
    out
}

/// Python's `str.split()`: the runs of non-whitespace.
fn py_split(s: &str) -> Vec<&str> {
    s.split(is_space).filter(|w| !w.is_empty()).collect()
}

/// Python's `str.strip(chars)`.
fn py_strip<'a>(s: &'a str, chars: &str) -> &'a str {
    s.trim_matches(|c| chars.contains(c))
}

/// The key of a name (`extract.normalise`): case-folded, whitespace collapsed, a leading
/// `the` and a trailing possessive dropped, outer punctuation stripped.
pub fn normalise(name: &str) -> String {
    let folded = casefold(name);
    let joined = py_split(&folded).join(" ");
    let mut k = py_strip(&joined, " .,;:!?'\"“”‘’()[]{}-");
    if let Some(rest) = k.strip_prefix("the ") {
        k = rest;
    }
    if let Some(rest) = k.strip_suffix("'s").or_else(|| k.strip_suffix("’s")) {
        k = rest;
    }
    py_strip(k, " .,;:'’-").to_string()
}

/// `extract._is_name`: at least two characters, no stopword, and a bare number only when
/// it has four characters (a year).
pub fn is_name(key: &str) -> bool {
    let n = key.chars().count();
    if n < 2 || is_stopword(key) {
        return false;
    }
    let mut digits = key.chars().filter(|&c| c != ',' && c != '.').peekable();
    if digits.peek().is_some() && digits.all(is_py_digit) {
        return n == 4;
    }
    true
}

/// `extract._phrase_name`: the `(key, surface)` of one capitalised phrase (`initial`: it
/// starts the sentence), None when no name is left once function words are trimmed.
pub fn phrase_name(phrase: &str, initial: bool) -> Option<(String, String)> {
    let words = py_split(phrase.trim_end_matches('.'));
    let mut w = &words[..];
    if initial && w.len() >= 3 && PARTICLES.contains(&w[1]) {
        w = &w[2..];
    }
    while let Some(first) = w.first() {
        if !is_stopword(py_strip(&casefold(first), "'’")) {
            break;
        }
        w = &w[1..];
    }
    while let Some(last) = w.last() {
        if !is_stopword(&casefold(last)) {
            break;
        }
        w = &w[..w.len() - 1];
    }
    if w.is_empty() {
        return None;
    }
    let surface = w.join(" ");
    let key = normalise(&surface);
    is_name(&key).then_some((key, surface))
}

/// The quoted phrases of a sentence (`[\"“]([^\"”\n]{2,80})[\"”]`), stripped, those of 1
/// to 8 words.
fn quoted(sentence: &[char]) -> Vec<String> {
    let mut out = Vec::new();
    if !sentence.iter().any(|&c| c == '"' || c == '“') {
        return out;
    }
    let n = sentence.len();
    let mut i = 0;
    while i < n {
        if matches!(sentence[i], '"' | '“') {
            let mut j = i + 1;
            while j < n && j - i - 1 < 80 && !matches!(sentence[j], '"' | '”' | '\n') {
                j += 1;
            }
            if j - i > 2 && j < n && matches!(sentence[j], '"' | '”') {
                let group: String = sentence[i + 1..j].iter().collect();
                let surface = group.trim_matches(is_space);
                if (1..=8).contains(&py_split(surface).len()) {
                    out.push(surface.to_string());
                }
                i = j + 1;
                continue;
            }
        }
        i += 1;
    }
    out
}

/// The sentences and interned names of many texts, as flat arrays.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ScanNames {
    /// `text_offsets[t]..text_offsets[t + 1]` are text `t`'s sentences.
    pub text_offsets: Vec<i64>,
    /// Each sentence's `[start, end)` in its text, in code points.
    pub sentences: Vec<[i64; 2]>,
    /// `sentence_offsets[s]..sentence_offsets[s + 1]` are sentence `s`'s names.
    pub sentence_offsets: Vec<i64>,
    /// Each name's key id (into `keys`).
    pub name_key: Vec<i64>,
    /// Each name's surface id (into `surfaces`).
    pub name_surface: Vec<i64>,
    /// The distinct keys, in order of first appearance.
    pub keys: Vec<String>,
    /// The distinct surface forms, in order of first appearance.
    pub surfaces: Vec<String>,
}

/// A sentence's span, its capitalised phrases (with "starts the sentence") and its quoted
/// phrases, before names are made of them.
struct Raw {
    span: (usize, usize),
    phrases: Vec<(String, bool)>,
    quoted: Vec<String>,
}

/// Interned keys and surfaces, with the name of each distinct phrase remembered.
#[derive(Default)]
struct Interner {
    keys: FxHashMap<String, i64>,
    surfaces: FxHashMap<String, i64>,
    phrase: [FxHashMap<String, Option<(i64, i64)>>; 2],
    quoted: FxHashMap<String, Option<i64>>,
}

fn intern(map: &mut FxHashMap<String, i64>, list: &mut Vec<String>, s: String) -> i64 {
    if let Some(&i) = map.get(&s) {
        return i;
    }
    let i = list.len() as i64;
    list.push(s.clone());
    map.insert(s, i);
    i
}

/// The sentences of each text (`split_sentences`) and the names of each sentence
/// ([`sentence_names`]): sentences and phrases found in parallel, then each distinct
/// phrase made a name once; keys and surfaces interned in order of appearance.
pub fn scan_names(texts: &[String]) -> ScanNames {
    let per_text: Vec<Vec<Raw>> = texts
        .par_iter()
        .map(|text| {
            let chars: Vec<char> = text.chars().collect();
            split_sentences(&chars)
                .into_iter()
                .map(|(a, b)| {
                    let s = &chars[a..b];
                    Raw {
                        span: (a, b),
                        phrases: phrases(s)
                            .into_iter()
                            .map(|(x, y)| (s[x..y].iter().collect(), x == 0))
                            .collect(),
                        quoted: quoted(s),
                    }
                })
                .collect()
        })
        .collect();
    let mut out = ScanNames {
        text_offsets: vec![0],
        sentence_offsets: vec![0],
        ..ScanNames::default()
    };
    let mut it = Interner::default();
    for sents in per_text {
        for raw in sents {
            out.sentences.push([raw.span.0 as i64, raw.span.1 as i64]);
            let start = out.name_key.len();
            for (phrase, initial) in raw.phrases {
                let cache = &mut it.phrase[usize::from(initial)];
                let name = match cache.get(&phrase) {
                    Some(&name) => name,
                    None => {
                        let name = phrase_name(&phrase, initial).map(|(k, f)| {
                            (
                                intern(&mut it.keys, &mut out.keys, k),
                                intern(&mut it.surfaces, &mut out.surfaces, f),
                            )
                        });
                        cache.insert(phrase, name);
                        name
                    }
                };
                if let Some((k, f)) = name {
                    out.name_key.push(k);
                    out.name_surface.push(f);
                }
            }
            let named = out.name_key.len();
            for surface in raw.quoted {
                let key = match it.quoted.get(&surface) {
                    Some(&key) => key,
                    None => {
                        let key = normalise(&surface);
                        let key = is_name(&key).then(|| intern(&mut it.keys, &mut out.keys, key));
                        it.quoted.insert(surface.clone(), key);
                        key
                    }
                };
                if let Some(k) = key {
                    if !out.name_key[start..named].contains(&k) {
                        out.name_key.push(k);
                        out.name_surface
                            .push(intern(&mut it.surfaces, &mut out.surfaces, surface));
                    }
                }
            }
            out.sentence_offsets.push(out.name_key.len() as i64);
        }
        out.text_offsets.push(out.sentences.len() as i64);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `extract.phrase_names` of one sentence from its phrases' spans.
    fn sentence_names(sentence: &[char], spans: &[(usize, usize)]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for &(a, b) in spans {
            let phrase: String = sentence[a..b].iter().collect();
            if let Some(name) = phrase_name(&phrase, a == 0) {
                out.push(name);
            }
        }
        let have: Vec<String> = out.iter().map(|(k, _)| k.clone()).collect();
        for surface in quoted(sentence) {
            let key = normalise(&surface);
            if is_name(&key) && !have.contains(&key) {
                out.push((key, surface));
            }
        }
        out
    }

    fn names(s: &str) -> Vec<(String, String)> {
        let c: Vec<char> = s.chars().collect();
        sentence_names(&c, &phrases(&c))
    }

    fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn names_are_trimmed_and_normalised() {
        assert_eq!(
            names("The University of Oxford met Barack Obama's team in 1999 and 12."),
            pairs(&[
                ("university of oxford", "University of Oxford"),
                ("barack obama", "Barack Obama's"),
                ("1999", "1999"),
            ])
        );
        assert_eq!(
            names("Visit the Louvre with \"Hey Jude\" and “Let It Be”."),
            pairs(&[
                ("louvre", "Louvre"),
                ("hey jude", "Hey Jude"),
                ("let", "Let"),
                ("let it be", "Let It Be"),
            ])
        );
        assert_eq!(casefold("Straße ΣΑΣ"), "strasse σασ");
        assert!(!is_name("the"));
        assert!(!is_name("1,000"));
    }
}

//! Known-name matching of many sentences in one call: exactly
//! `graphrecall.ingest.extract.KnownNames.find` of each (already case-folded) sentence.
//!
//! A sentence's words are its runs of `\w` characters (Python `re`'s `\w`); at each word
//! that starts a known name the match is extended one word at a time while the words so
//! far start some name, the longest full name wins, and its words are not matched again.

use rustc_hash::FxHashMap as HashMap;

use rayon::prelude::*;

use super::is_word;
use super::names::push_casefold;
use crate::{Error, Result};

/// The known names as a map from each word prefix (words joined by one space) to the
/// index of the name it spells in full, if any.
pub struct KnownIndex {
    prefixes: HashMap<String, Option<u32>>,
}

impl KnownIndex {
    /// The index of `names`, each its words joined by one space (name `i` is found as `i`).
    pub fn new(names: &[String]) -> Self {
        let mut prefixes: HashMap<String, Option<u32>> = HashMap::default();
        for (i, name) in names.iter().enumerate() {
            for (pos, _) in name.match_indices(' ') {
                prefixes.entry(name[..pos].to_string()).or_insert(None);
            }
            prefixes.insert(name.clone(), Some(i as u32));
        }
        Self { prefixes }
    }

    /// The indices of the names found in `sentence` (case-folded), in order.
    pub fn find(&self, sentence: &str) -> Vec<u32> {
        let mut words: Vec<&str> = Vec::new();
        let mut start: Option<usize> = None;
        for (pos, c) in sentence.char_indices() {
            if is_word(c) {
                start.get_or_insert(pos);
            } else if let Some(a) = start.take() {
                words.push(&sentence[a..pos]);
            }
        }
        if let Some(a) = start {
            words.push(&sentence[a..]);
        }
        let mut out = Vec::new();
        let mut done = 0;
        let mut phrase = String::new();
        for i in 0..words.len() {
            if i < done {
                continue;
            }
            let Some(&first) = self.prefixes.get(words[i]) else {
                continue;
            };
            let mut best = first;
            let mut end = i + 1;
            phrase.clear();
            phrase.push_str(words[i]);
            for (j, w) in words.iter().enumerate().skip(i + 1) {
                phrase.push(' ');
                phrase.push_str(w);
                match self.prefixes.get(phrase.as_str()) {
                    None => break,
                    Some(&k) => {
                        if k.is_some() {
                            best = k;
                            end = j + 1;
                        }
                    }
                }
            }
            if let Some(b) = best {
                out.push(b);
                done = end;
            }
        }
        out
    }

    /// [`KnownIndex::find`] of each sentence, in parallel: `(offsets, names)`, sentence
    /// `s`'s names at `names[offsets[s]..offsets[s + 1]]`.
    pub fn find_all(&self, sentences: &[String]) -> (Vec<i64>, Vec<i64>) {
        let per: Vec<Vec<u32>> = sentences.par_iter().map(|s| self.find(s)).collect();
        let mut offsets = Vec::with_capacity(sentences.len() + 1);
        offsets.push(0);
        let mut names = Vec::new();
        for f in per {
            names.extend(f.into_iter().map(i64::from));
            offsets.push(names.len() as i64);
        }
        (offsets, names)
    }
}

impl KnownIndex {
    /// [`KnownIndex::find`] of sentences given as code point spans of `texts` (sentence `s`
    /// is `spans[s]` of `texts[sentence_text[s]]`), case-folded here (`str.casefold`), in
    /// parallel: `(offsets, names)` as [`KnownIndex::find_all`] gives them.
    pub fn find_in(
        &self,
        texts: &[String],
        sentence_text: &[i64],
        spans: &[[i64; 2]],
    ) -> Result<(Vec<i64>, Vec<i64>)> {
        if sentence_text.len() != spans.len() {
            return Err(Error::param("spans", "one span per sentence"));
        }
        let per: Vec<Option<Vec<u32>>> = sentence_text
            .par_iter()
            .zip(spans)
            .map(|(&t, &[a, b])| {
                let text = usize::try_from(t).ok().and_then(|t| texts.get(t))?;
                let (a, b) = (usize::try_from(a).ok()?, usize::try_from(b).ok()?);
                let mut folded = String::with_capacity(b.saturating_sub(a) + 8);
                let mut n = 0;
                for c in text.chars().skip(a).take(b.saturating_sub(a)) {
                    push_casefold(&mut folded, c);
                    n += 1;
                }
                (a <= b && n == b - a).then(|| self.find(&folded))
            })
            .collect();
        let mut offsets = Vec::with_capacity(per.len() + 1);
        offsets.push(0);
        let mut names = Vec::new();
        for f in per {
            let f = f.ok_or_else(|| Error::param("spans", "a span outside its text"))?;
            names.extend(f.into_iter().map(i64::from));
            offsets.push(names.len() as i64);
        }
        Ok((offsets, names))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(names: &[&str]) -> KnownIndex {
        KnownIndex::new(&names.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn longest_match_and_no_rematch() {
        let k = index(&["new york", "new york city", "york", "city hall"]);
        assert_eq!(k.find("in new york city hall, york."), vec![1, 2]);
        assert_eq!(k.find("new  york"), vec![0]);
        assert_eq!(k.find("new-york!"), vec![0]);
        assert!(k.find("newyork").is_empty());
    }

    #[test]
    fn falls_back_to_the_first_word() {
        let k = index(&["a", "a b c"]);
        assert_eq!(k.find("a b d"), vec![0]);
        assert_eq!(k.find("a b c"), vec![1]);
        let (off, ids) = k.find_all(&["a b".to_string(), String::new(), "x a".to_string()]);
        assert_eq!(off, vec![0, 1, 1, 2]);
        assert_eq!(ids, vec![0, 0]);
    }
}

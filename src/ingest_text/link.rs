//! Entity ids, mention counts, co-occurrence and title-link counts of one batch of documents:
//! exactly the bookkeeping of `graphrecall.ingest.builder.Ingestor._link`, on integer ids.
//!
//! Python interns every name key (`kid`) and surface form (`sid`) of the batch and gives the
//! names of each sentence as id arrays; the walk over documents, chunks and sentences runs
//! here in two passes:
//!
//! 1. [`call_order`]: the distinct `(tenant, key)` pairs in the order in which `_link` first
//!    asks for their entity (Python resolves near-duplicate keys in that order, which is
//!    what makes the merge deterministic);
//! 2. [`link`]: given each pair's entity before the batch and its canonical key, the entity
//!    of every mention, the new entities, and the counts, each list of distinct pairs in
//!    order of first appearance (the insertion order of Python's `Counter`s).
//!
//! The title links of a chunk follow the iteration order of the Python `set` of the chunk's
//! entity ids ([`PySetOrder`]), so the first-appearance order of the title-link pairs is
//! Python's.

use rustc_hash::FxHashMap as HashMap;

use crate::{Error, Result};

/// One batch of documents as offsets and id arrays (every offsets array has one entry more
/// than the items it splits, starting at 0 and ending at the length of what it indexes).
pub struct LinkInput<'a> {
    /// Each document's tenant (an interned id).
    pub doc_tenant: &'a [i64],
    /// Each document's title key id, -1 when it has no title entity.
    pub doc_title_key: &'a [i64],
    /// Each document's title surface id (read only where it has a title key).
    pub doc_title_surface: &'a [i64],
    /// Document `d`'s chunks are `doc_chunks[d]..doc_chunks[d + 1]`.
    pub doc_chunks: &'a [i64],
    /// Chunk `c`'s sentences are `chunk_sentences[c]..chunk_sentences[c + 1]`.
    pub chunk_sentences: &'a [i64],
    /// Sentence `s`'s names are `sentence_names[s]..sentence_names[s + 1]`.
    pub sentence_names: &'a [i64],
    /// Each name's key id.
    pub name_key: &'a [i64],
    /// Each name's surface id.
    pub name_surface: &'a [i64],
    /// Sentence `s`'s known names are `sentence_known[s]..sentence_known[s + 1]`; empty when
    /// known names are not matched.
    pub sentence_known: &'a [i64],
    /// Each known name's key id (its surface is the key itself: `key_surface`).
    pub known_key: &'a [i64],
    /// For each key id, the key id of its last word when the key has a space, else -1.
    pub key_last_word: &'a [i64],
    /// For each key id, the surface id of the key string itself, -1 when not needed (only
    /// keys with a space and known names are used as surfaces).
    pub key_surface: &'a [i64],
    /// Number of surface ids.
    pub n_surfaces: usize,
    /// Id of the first chunk of the batch.
    pub first_chunk: i64,
}

/// The result of [`link`]; every pair list is in order of first appearance.
#[derive(Debug, Default, PartialEq)]
pub struct LinkOutput {
    /// Each new entity's `(tenant, name surface id)`, in id order from `first_entity`.
    pub new_entities: Vec<[i64; 2]>,
    /// New `(tenant, key id, entity)` entries of the entity map.
    pub registered: Vec<[i64; 3]>,
    /// Distinct `(entity, surface id, always)` surface forms met (`always` = 1: added even
    /// when it equals the entity's name).
    pub surfaces: Vec<[i64; 3]>,
    /// Each document's title entity, -1 when none.
    pub title_entity: Vec<i64>,
    /// `(chunk, entity, count)`.
    pub mentions: Vec<[i64; 3]>,
    /// `(entity, entity, count)` with the smaller id first.
    pub cooccurs: Vec<[i64; 3]>,
    /// `(title entity, entity, count)`.
    pub title_links: Vec<[i64; 3]>,
}

/// Options of [`link`].
#[derive(Clone, Copy, Debug)]
pub struct LinkOptions {
    /// Count co-occurrences.
    pub cooccurrence: bool,
    /// Count title links.
    pub title_edges: bool,
    /// Most entities of one sentence paired into co-occurrences (the first ones).
    pub max_sentence_entities: usize,
}

fn bad(name: &'static str, problem: &str) -> Error {
    Error::param(name, problem)
}

fn check_offsets(name: &'static str, off: &[i64], items: usize, of: usize) -> Result<()> {
    if off.len() != items + 1 || off.first() != Some(&0) || off.last() != Some(&(of as i64)) {
        return Err(bad(
            name,
            "offsets must have one entry per item plus one, from 0 to the length",
        ));
    }
    if off.windows(2).any(|w| w[0] > w[1]) {
        return Err(bad(name, "offsets must not decrease"));
    }
    Ok(())
}

fn check_ids(name: &'static str, ids: &[i64], lo: i64, n: usize) -> Result<()> {
    if ids.iter().any(|&i| i < lo || i >= n as i64) {
        return Err(bad(name, "id out of range"));
    }
    Ok(())
}

impl LinkInput<'_> {
    /// Checks every offsets array and id against the lengths it indexes.
    pub fn validate(&self) -> Result<()> {
        let n_docs = self.doc_tenant.len();
        if self.doc_title_key.len() != n_docs || self.doc_title_surface.len() != n_docs {
            return Err(bad(
                "doc_title_key",
                "one title key and surface per document",
            ));
        }
        let n_chunks = self.chunk_sentences.len().saturating_sub(1);
        let n_sents = self.sentence_names.len().saturating_sub(1);
        check_offsets("doc_chunks", self.doc_chunks, n_docs, n_chunks)?;
        check_offsets("chunk_sentences", self.chunk_sentences, n_chunks, n_sents)?;
        check_offsets(
            "sentence_names",
            self.sentence_names,
            n_sents,
            self.name_key.len(),
        )?;
        if !self.sentence_known.is_empty() {
            check_offsets(
                "sentence_known",
                self.sentence_known,
                n_sents,
                self.known_key.len(),
            )?;
        }
        if self.name_surface.len() != self.name_key.len() {
            return Err(bad("name_surface", "one surface per name"));
        }
        let n_keys = self.key_last_word.len();
        if self.key_surface.len() != n_keys {
            return Err(bad("key_surface", "one entry per key"));
        }
        check_ids("doc_tenant", self.doc_tenant, 0, usize::MAX >> 1)?;
        check_ids("doc_title_key", self.doc_title_key, -1, n_keys)?;
        for (&k, &s) in self.doc_title_key.iter().zip(self.doc_title_surface) {
            if k >= 0 && (s < 0 || s >= self.n_surfaces as i64) {
                return Err(bad("doc_title_surface", "id out of range"));
            }
        }
        check_ids("name_key", self.name_key, 0, n_keys)?;
        check_ids("name_surface", self.name_surface, 0, self.n_surfaces)?;
        check_ids("known_key", self.known_key, 0, n_keys)?;
        check_ids("key_last_word", self.key_last_word, -1, n_keys)?;
        check_ids("key_surface", self.key_surface, -1, self.n_surfaces)?;
        let need_surface = |k: i64| self.key_surface[k as usize] < 0;
        if self.known_key.iter().any(|&k| need_surface(k))
            || (0..n_keys).any(|k| self.key_last_word[k] >= 0 && need_surface(k as i64))
        {
            return Err(bad(
                "key_surface",
                "known names and keys with a space need a surface",
            ));
        }
        Ok(())
    }
}

/// One step of the walk: an entity asked for, or the end of a sentence / chunk.
enum Step {
    /// A document's title entity.
    Title {
        tenant: i64,
        key: i64,
        surface: i64,
    },
    /// A mention in the current sentence; `full`: the key is the document's multi-word name
    /// of a single word (its surface is added to the entity unconditionally).
    Name {
        tenant: i64,
        key: i64,
        surface: i64,
        full: Option<i64>,
    },
    EndSentence,
    EndChunk {
        chunk: i64,
    },
    EndDocument,
}

/// Walks the batch in `_link`'s order, calling `f` for each step.
fn walk(inp: &LinkInput<'_>, mut f: impl FnMut(Step)) {
    let known = !inp.sentence_known.is_empty();
    let mut keys: Vec<(i64, i64)> = Vec::new();
    let mut sent_keys: Vec<(usize, usize)> = Vec::new();
    let mut all: Vec<(i64, i64)> = Vec::new();
    let mut last_word: HashMap<i64, i64> = HashMap::default(); // word -> key, -1 = ambiguous
    for d in 0..inp.doc_tenant.len() {
        let tenant = inp.doc_tenant[d];
        let tk = inp.doc_title_key[d];
        if tk >= 0 {
            f(Step::Title {
                tenant,
                key: tk,
                surface: inp.doc_title_surface[d],
            });
        }
        let (c0, c1) = (inp.doc_chunks[d] as usize, inp.doc_chunks[d + 1] as usize);
        let s0 = inp.chunk_sentences[c0] as usize;
        let s1 = inp.chunk_sentences[c1] as usize;
        // Sentence keys (names, then known names not named), then the short-form aliases.
        all.clear();
        sent_keys.clear();
        last_word.clear();
        for s in s0..s1 {
            let a = all.len();
            let (n0, n1) = (
                inp.sentence_names[s] as usize,
                inp.sentence_names[s + 1] as usize,
            );
            keys.clear();
            keys.extend((n0..n1).map(|i| (inp.name_key[i], inp.name_surface[i])));
            if known {
                let (k0, k1) = (
                    inp.sentence_known[s] as usize,
                    inp.sentence_known[s + 1] as usize,
                );
                for &k in &inp.known_key[k0..k1] {
                    if !inp.name_key[n0..n1].contains(&k) {
                        keys.push((k, inp.key_surface[k as usize]));
                    }
                }
            }
            for &(k, _) in &keys {
                let w = inp.key_last_word[k as usize];
                if w >= 0 {
                    let e = last_word.entry(w).or_insert(k);
                    if *e != k {
                        *e = -1;
                    }
                }
            }
            all.extend_from_slice(&keys);
            sent_keys.push((a, all.len()));
        }
        let mut s = s0;
        for c in c0..c1 {
            let e = inp.chunk_sentences[c + 1] as usize;
            while s < e {
                let (a, b) = sent_keys[s - s0];
                for &(k, surface) in &all[a..b] {
                    let full = if inp.key_last_word[k as usize] < 0 {
                        last_word.get(&k).copied().filter(|&f| f >= 0)
                    } else {
                        None
                    };
                    f(Step::Name {
                        tenant,
                        key: k,
                        surface,
                        full,
                    });
                }
                f(Step::EndSentence);
                s += 1;
            }
            f(Step::EndChunk {
                chunk: inp.first_chunk + c as i64,
            });
        }
        f(Step::EndDocument);
    }
}

/// The distinct `(tenant, key id)` pairs whose entity `_link` asks for, in the order of
/// the first request (a single word standing for the document's multi-word name asks for
/// the name's entity).
pub fn call_order(inp: &LinkInput<'_>) -> Result<Vec<[i64; 2]>> {
    inp.validate()?;
    let mut seen: HashMap<(i64, i64), ()> = HashMap::default();
    let mut out = Vec::new();
    let mut ask = |t: i64, k: i64| {
        if seen.insert((t, k), ()).is_none() {
            out.push([t, k]);
        }
    };
    walk(inp, |step| match step {
        Step::Title { tenant, key, .. } => ask(tenant, key),
        Step::Name {
            tenant, key, full, ..
        } => ask(tenant, full.unwrap_or(key)),
        _ => {}
    });
    Ok(out)
}

/// The iteration order of a CPython `set` of non-negative `int`s (hash = the value) filled
/// by `add` in order: open addressing with 9 linear probes, then perturbed probing, and a
/// resize to 4x the used count once 3/5 full (CPython 3.7 onwards, `setobject.c`).
#[derive(Default)]
pub struct PySetOrder {
    table: Vec<Option<u64>>,
    used: usize,
    fill: usize,
}

const LINEAR_PROBES: usize = 9;
const PERTURB_SHIFT: u32 = 5;

impl PySetOrder {
    /// An empty set (8 slots).
    pub fn new() -> Self {
        Self {
            table: vec![None; 8],
            used: 0,
            fill: 0,
        }
    }

    /// Empties the set back to 8 slots.
    pub fn clear(&mut self) {
        self.table.clear();
        self.table.resize(8, None);
        self.used = 0;
        self.fill = 0;
    }

    fn insert_clean(table: &mut [Option<u64>], key: u64) {
        let mask = table.len() - 1;
        let mut perturb = key;
        let mut i = (key as usize) & mask;
        loop {
            if table[i].is_none() {
                table[i] = Some(key);
                return;
            }
            if i + LINEAR_PROBES <= mask {
                for j in 1..=LINEAR_PROBES {
                    if table[i + j].is_none() {
                        table[i + j] = Some(key);
                        return;
                    }
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = (i
                .wrapping_mul(5)
                .wrapping_add(1)
                .wrapping_add(perturb as usize))
                & mask;
        }
    }

    /// Adds `key` (a no-op when present).
    pub fn add(&mut self, key: u64) {
        let mask = self.table.len() - 1;
        let mut perturb = key;
        let mut i = (key as usize) & mask;
        let slot = 'probe: loop {
            let probes = if i + LINEAR_PROBES <= mask {
                LINEAR_PROBES
            } else {
                0
            };
            for j in 0..=probes {
                match self.table[i + j] {
                    None => break 'probe i + j,
                    Some(k) if k == key => return,
                    Some(_) => {}
                }
            }
            perturb >>= PERTURB_SHIFT;
            i = (i
                .wrapping_mul(5)
                .wrapping_add(1)
                .wrapping_add(perturb as usize))
                & mask;
        };
        self.table[slot] = Some(key);
        self.fill += 1;
        self.used += 1;
        if self.fill * 5 < mask * 3 {
            return;
        }
        let minused = if self.used > 50000 {
            self.used * 2
        } else {
            self.used * 4
        };
        let mut size = 8;
        while size <= minused {
            size <<= 1;
        }
        let mut table = vec![None; size];
        for k in self.table.iter().flatten() {
            Self::insert_clean(&mut table, *k);
        }
        self.table = table;
        self.fill = self.used;
    }

    /// The keys in iteration order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.table.iter().flatten().copied()
    }
}

/// Distinct pairs with counts, in order of first appearance.
#[derive(Default)]
struct PairCounts {
    index: HashMap<(i64, i64), usize>,
    rows: Vec<[i64; 3]>,
}

impl PairCounts {
    fn add(&mut self, a: i64, b: i64) {
        let rows = &mut self.rows;
        let i = *self.index.entry((a, b)).or_insert_with(|| {
            rows.push([a, b, 0]);
            rows.len() - 1
        });
        self.rows[i][2] += 1;
    }
}

/// The state of each pair before the batch, aligned with [`call_order`]'s pairs.
pub struct PairState<'a> {
    /// The pair's entity before the batch, -1 when none.
    pub entity: &'a [i64],
    /// The key id of the pair's canonical key (itself when not merged).
    pub canonical: &'a [i64],
    /// The entity of `(tenant, canonical key)` before the batch, -1 when none.
    pub canonical_entity: &'a [i64],
}

/// The bookkeeping of `_link` for the whole batch (see the module doc); `first_entity` is
/// the id the next new entity gets.
pub fn link(
    inp: &LinkInput<'_>,
    state: &PairState<'_>,
    first_entity: i64,
    opts: LinkOptions,
) -> Result<LinkOutput> {
    let pairs = call_order(inp)?;
    let n = pairs.len();
    if state.entity.len() != n || state.canonical.len() != n || state.canonical_entity.len() != n {
        return Err(bad("entity", "one entry per pair of call_order"));
    }
    let n_keys = inp.key_last_word.len();
    check_ids("canonical", state.canonical, 0, n_keys)?;
    let pair_index: HashMap<(i64, i64), usize> = pairs
        .iter()
        .enumerate()
        .map(|(i, p)| ((p[0], p[1]), i))
        .collect();
    let mut out = LinkOutput::default();
    let mut ent: HashMap<(i64, i64), i64> = HashMap::default(); // entries new in this batch
    let mut canon_before: HashMap<(i64, i64), i64> = HashMap::default();
    for (p, pair) in pairs.iter().enumerate() {
        if state.canonical_entity[p] >= 0 {
            canon_before.insert((pair[0], state.canonical[p]), state.canonical_entity[p]);
        }
    }
    let mut names: Vec<i64> = Vec::new(); // each new entity's name surface
    let mut surfaces: HashMap<(i64, i64, bool), ()> = HashMap::default();
    let mut add_surface = |out: &mut LinkOutput, e: i64, s: i64, always: bool| {
        if surfaces.insert((e, s, always), ()).is_none() {
            out.surfaces.push([e, s, i64::from(always)]);
        }
    };
    // `Ingestor._entity`: the pair's entity, created under its canonical key when new.
    let mut entity = |out: &mut LinkOutput, t: i64, k: i64, s: i64| -> i64 {
        let p = pair_index[&(t, k)];
        let mut e = ent.get(&(t, k)).copied().unwrap_or(state.entity[p]);
        if e < 0 {
            let c = state.canonical[p];
            e = ent
                .get(&(t, c))
                .copied()
                .or_else(|| canon_before.get(&(t, c)).copied())
                .unwrap_or(-1);
            if e < 0 {
                e = first_entity + names.len() as i64;
                names.push(s);
                out.new_entities.push([t, s]);
                ent.insert((t, c), e);
                out.registered.push([t, c, e]);
            }
            if c != k {
                ent.insert((t, k), e);
                out.registered.push([t, k, e]);
            }
        }
        e
    };
    let mut mentions = PairCounts::default();
    let mut cooccurs = PairCounts::default();
    let mut title_links = PairCounts::default();
    let mut title: i64 = -1;
    let mut ids: Vec<i64> = Vec::new();
    let mut named: Vec<i64> = Vec::new();
    let mut in_chunk = PySetOrder::new();
    let max = opts.max_sentence_entities;
    walk(inp, |step| match step {
        Step::Title {
            tenant,
            key,
            surface,
        } => {
            title = entity(&mut out, tenant, key, surface);
            add_surface(&mut out, title, surface, false);
            out.title_entity.push(title);
            named.push(title);
        }
        Step::Name {
            tenant,
            key,
            surface,
            full,
        } => {
            let e = match full {
                Some(f) => {
                    let fs = inp.key_surface[f as usize];
                    let e = entity(&mut out, tenant, f, fs);
                    add_surface(&mut out, e, fs, false);
                    add_surface(&mut out, e, surface, true);
                    e
                }
                None => {
                    let e = entity(&mut out, tenant, key, surface);
                    add_surface(&mut out, e, surface, false);
                    e
                }
            };
            named.push(e);
            if !ids.contains(&e) {
                ids.push(e);
            }
        }
        Step::EndSentence => {
            for &e in &ids {
                in_chunk.add(e as u64);
            }
            if opts.cooccurrence && ids.len() > 1 {
                let top = &ids[..ids.len().min(max)];
                for (i, &a) in top.iter().enumerate() {
                    for &b in &top[i + 1..] {
                        cooccurs.add(a.min(b), a.max(b));
                    }
                }
            }
            ids.clear();
        }
        Step::EndChunk { chunk } => {
            for &e in &named {
                mentions.add(chunk, e);
            }
            if opts.title_edges && title >= 0 {
                for e in in_chunk.iter() {
                    if e as i64 != title {
                        title_links.add(title, e as i64);
                    }
                }
            }
            in_chunk.clear();
            named.clear();
            if title >= 0 {
                named.push(title);
            }
        }
        Step::EndDocument => {
            if title < 0 {
                out.title_entity.push(-1);
            }
            title = -1;
            named.clear();
        }
    });
    out.mentions = mentions.rows;
    out.cooccurs = cooccurs.rows;
    out.title_links = title_links.rows;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(keys: &[u64]) -> Vec<u64> {
        let mut s = PySetOrder::new();
        for &k in keys {
            s.add(k);
        }
        s.iter().collect()
    }

    #[test]
    fn set_order_is_cpythons() {
        // `list(s)` after `s.add(k)` for each k in CPython 3.11.
        assert_eq!(order(&[5, 13, 3, 21]), vec![21, 13, 3, 5]);
        assert_eq!(order(&[100, 7, 64, 1, 9, 2]), vec![64, 1, 2, 100, 7, 9]);
        assert_eq!(
            order(&[40, 8, 16, 24, 32, 0, 48, 56, 1]),
            vec![32, 0, 1, 40, 8, 16, 48, 24, 56]
        );
        assert_eq!(order(&[3, 3, 1]), vec![1, 3]);
    }
}

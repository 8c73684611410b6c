//! The passages that support ranked facts (seed 000's passage context): for each fact in
//! rank order, the chunks mentioning both its ends, else its subject.

use rustc_hash::FxHashSet;

use super::chunks::{bad_value, MentionCsr};
use crate::batch::*;
use crate::Result;

/// The supporting chunks of a batch of queries, flat: query `q`'s are
/// `chunks[offsets[q]..offsets[q + 1]]`, with the score of the fact that listed each and
/// how often that fact's subject is mentioned there.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SupportingChunks {
    pub chunks: Vec<i64>,
    pub scores: Vec<f64>,
    pub counts: Vec<i64>,
    pub offsets: Vec<usize>,
}

/// For each query's facts in rank order (`facts[fact_offsets[q]..fact_offsets[q + 1]]`,
/// dense rows into `fact_subject` / `fact_object`, with `scores`), the chunks mentioning
/// both the fact's subject and its object (else its subject, when none mentions both or the
/// object is a literal, below 0), most subject mentions first, ties by chunk; each chunk is
/// listed once per query, at its best-ranked fact, carrying that fact's score, and a query
/// stops at `k` chunks.
///
/// # Errors
/// `LengthMismatch` when `scores` and `facts` (or the fact columns, or the CSR's chunks and
/// counts) differ in length; `InvalidParameter` for broken `fact_offsets`; `InvalidValue`
/// for a fact outside the columns, a subject or object outside the CSR, or a broken CSR
/// range (met in the order the walk reaches them).
pub fn supporting_chunks(
    csr: MentionCsr<'_>,
    fact_subject: &[i64],
    fact_object: &[i64],
    facts: &[i64],
    scores: &[f64],
    fact_offsets: &[usize],
    k: usize,
) -> Result<SupportingChunks> {
    check_len("facts", "object", fact_subject.len(), fact_object.len())?;
    check_len("facts", "scores", facts.len(), scores.len())?;
    check_offsets(fact_offsets, "fact_offsets", facts.len())?;
    csr.n_entities()?;
    let n_queries = fact_offsets.len() - 1;
    let cols = FactEnds {
        subject: fact_subject,
        object: fact_object,
    };
    let per = per_query(n_queries, facts.len(), |q| {
        let rows = span(fact_offsets, q);
        let first = rows.start;
        query_support(csr, cols, &facts[rows.clone()], &scores[rows], first, k)
    });
    let mut out = SupportingChunks {
        offsets: Vec::with_capacity(n_queries + 1),
        ..SupportingChunks::default()
    };
    out.offsets.push(0);
    for one in per {
        let (c, s, n) = one?;
        out.chunks.extend(c);
        out.scores.extend(s);
        out.counts.extend(n);
        out.offsets.push(out.chunks.len());
    }
    Ok(out)
}

#[derive(Clone, Copy)]
struct FactEnds<'a> {
    subject: &'a [i64],
    object: &'a [i64],
}

impl FactEnds<'_> {
    /// The (subject, object) of fact `f` (input row `row`, for errors).
    fn of(&self, row: usize, f: i64) -> Result<(i64, i64)> {
        if f < 0 || f as usize >= self.subject.len() {
            return Err(bad_value(row, "fact", f, "outside the fact columns"));
        }
        Ok((self.subject[f as usize], self.object[f as usize]))
    }
}

type Support = (Vec<i64>, Vec<f64>, Vec<i64>);

/// One query's walk (see [`supporting_chunks`]); `first` is its first fact's input row.
fn query_support(
    csr: MentionCsr<'_>,
    cols: FactEnds<'_>,
    facts: &[i64],
    scores: &[f64],
    first: usize,
    k: usize,
) -> Result<Support> {
    let (mut chunks, mut out_scores, mut counts) = (Vec::new(), Vec::new(), Vec::new());
    if k == 0 {
        return Ok((chunks, out_scores, counts));
    }
    let mut seen: FxHashSet<i64> = FxHashSet::default();
    let mut objects: FxHashSet<i64> = FxHashSet::default();
    // (mentions, chunk) of the current fact's subject.
    let mut pairs: Vec<(i64, i64)> = Vec::new();
    for (i, (&f, &s)) in facts.iter().zip(scores).enumerate() {
        let row = first + i;
        let (subject, object) = cols.of(row, f)?;
        let slots = csr.range(row, subject)?;
        if slots.is_empty() {
            continue;
        }
        let sub_chunks = &csr.chunks[slots.clone()];
        let sub_counts = &csr.counts[slots];
        pairs.clear();
        if object >= 0 {
            let theirs = &csr.chunks[csr.range(row, object)?];
            objects.clear();
            objects.extend(theirs.iter().copied());
            pairs.extend(
                sub_counts
                    .iter()
                    .zip(sub_chunks)
                    .filter(|(_, c)| objects.contains(c))
                    .map(|(&n, &c)| (n, c)),
            );
        }
        if pairs.is_empty() {
            pairs.extend(sub_counts.iter().copied().zip(sub_chunks.iter().copied()));
        }
        // Most mentions first, ties by chunk row.
        pairs.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(n, c) in &pairs {
            if seen.insert(c) {
                chunks.push(c);
                out_scores.push(s);
                counts.push(n);
                if chunks.len() >= k {
                    return Ok((chunks, out_scores, counts));
                }
            }
        }
    }
    Ok((chunks, out_scores, counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entities 0..3; entity 0 in chunks 5 (2), 7 (2), 9 (1); entity 1 in 7 (1), 9 (3);
    /// entity 2 in 1 (4).
    const OFFSETS: [i64; 4] = [0, 3, 5, 6];
    const CHUNKS: [i64; 6] = [5, 7, 9, 7, 9, 1];
    const COUNTS: [i64; 6] = [2, 2, 1, 1, 3, 4];

    fn csr() -> MentionCsr<'static> {
        MentionCsr {
            offsets: &OFFSETS,
            chunks: &CHUNKS,
            counts: &COUNTS,
        }
    }

    #[test]
    fn both_ends_first_then_subject_then_dedupe() -> Result<()> {
        // fact 0: 0 -> 1 (both: 7, 9); fact 1: 0 -> literal (5, 7, 9); fact 2: 2 -> 0 (none
        // in both: subject's 1).
        let subject = [0, 0, 2];
        let object = [1, -1, 0];
        let out = supporting_chunks(
            csr(),
            &subject,
            &object,
            &[0, 1, 2],
            &[3.0, 2.0, 1.0],
            &[0, 3],
            10,
        )?;
        assert_eq!(out.chunks, vec![7, 9, 5, 1]);
        assert_eq!(out.scores, vec![3.0, 3.0, 2.0, 1.0]);
        assert_eq!(out.counts, vec![2, 1, 2, 4]);
        assert_eq!(out.offsets, vec![0, 4]);
        Ok(())
    }

    #[test]
    fn stops_at_k_per_query() -> Result<()> {
        let subject = [0, 2];
        let object = [-1, -1];
        let out = supporting_chunks(
            csr(),
            &subject,
            &object,
            &[0, 1, 1, 0],
            &[1.0, 0.5, 0.9, 0.1],
            &[0, 2, 4],
            2,
        )?;
        assert_eq!(out.chunks, vec![5, 7, 1, 5]);
        assert_eq!(out.offsets, vec![0, 2, 4]);
        let none = supporting_chunks(csr(), &subject, &object, &[0], &[1.0], &[0, 1], 0)?;
        assert_eq!(none.offsets, vec![0, 0]);
        Ok(())
    }

    #[test]
    fn bad_rows_are_errors() {
        let subject = [0, 7];
        let object = [-1, -1];
        assert!(supporting_chunks(csr(), &subject, &object, &[2], &[1.0], &[0, 1], 3).is_err());
        assert!(supporting_chunks(csr(), &subject, &object, &[1], &[1.0], &[0, 1], 3).is_err());
        assert!(supporting_chunks(csr(), &subject, &object, &[0], &[], &[0, 1], 3).is_err());
        assert!(supporting_chunks(csr(), &subject, &object, &[0], &[1.0], &[0, 2], 3).is_err());
    }
}

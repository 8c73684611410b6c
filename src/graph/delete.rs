//! Deletes without a rebuild: a new base without some entities, facts and chunks, made in
//! one pass over the current generation's rows.
//!
//! A fresh build of the tables without the deleted rows numbers the rows that stay in
//! order (dense indices shift down after a deleted row), so every room that reads "graph
//! index == table row" keeps reading it. Dropping rows and renumbering the rest in order
//! keeps every row's order (confidence descending, fact id ascending; entities and chunks
//! ascending): walking the current out-rows, in-rows and mention rows and skipping the
//! dead ones lays out exactly the arrays a fresh build lays out, with no sort, no
//! validation of the rows that stay and no re-encoding of their columns.

use std::sync::Arc;

use super::{Column, FactRec, KnowledgeGraph, NONE};
use crate::alloc;
use crate::error::{Error, Result};

/// New index of each old index (`NONE` for a deleted one) of `dead`, checked and sorted.
fn renumbered(n: usize, dead: &[u32], what: &'static str) -> Result<(Vec<u32>, u32)> {
    let mut new = alloc::filled(n, 0u32, what)?;
    for &i in dead {
        new[i as usize] = NONE;
    }
    let mut next = 0u32;
    for v in &mut new {
        if *v != NONE {
            *v = next;
            next += 1;
        }
    }
    Ok((new, next))
}

/// CSR of `n_rows` rows from a row -> (keys, counts) reader, keeping the kept keys
/// renumbered (`new_key`) of the kept rows (`new_row`).
fn csr<'a>(
    n_rows: usize,
    new_row: &[u32],
    new_key: &[u32],
    row: impl Fn(u32) -> (&'a [u32], &'a [u32]),
) -> Result<(Vec<u32>, Vec<u32>, Vec<u32>)> {
    let mut offsets = alloc::with_capacity(n_rows + 1, "mention offsets")?;
    offsets.push(0u32);
    let (mut keys, mut counts) = (Vec::new(), Vec::new());
    for (r, &nr) in new_row.iter().enumerate() {
        if nr == NONE {
            continue;
        }
        let (ks, ns) = row(r as u32);
        for (&k, &n) in ks.iter().zip(ns) {
            let nk = new_key[k as usize];
            if nk != NONE {
                keys.push(nk);
                counts.push(n);
            }
        }
        offsets.push(keys.len() as u32);
    }
    Ok((offsets, keys, counts))
}

/// The fact arrays of a new base: records, optional time columns, out-offsets, fact
/// positions, in-offsets, in-positions and in-subjects.
#[derive(Debug, PartialEq)]
struct FactArrays {
    rec: Vec<FactRec>,
    times: [Option<Vec<i64>>; 4],
    out_offsets: Vec<u32>,
    fact_to_pos: Vec<u32>,
    in_offsets: Vec<u32>,
    in_pos: Vec<u32>,
    in_subject: Vec<u32>,
}

/// The number of values of `sorted` below `x`.
#[inline]
fn rank(sorted: &[u32], x: u32) -> u32 {
    sorted.partition_point(|&d| d < x) as u32
}

/// `dead` sorted, each checked to be below `n` and given once.
fn sorted_dead(dead: &[u32], n: usize, table: &'static str) -> Result<Vec<u32>> {
    for (k, &i) in dead.iter().enumerate() {
        if i as usize >= n {
            return Err(Error::InvalidValue {
                table,
                row: k,
                column: "id",
                value: i.to_string(),
                problem: format!("out of range (the graph has {n} {table})"),
            });
        }
    }
    let mut sorted = alloc::copied(dead, "deleted rows")?;
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
        let row = dead.iter().rposition(|&i| i == w[0]).unwrap_or(0);
        return Err(Error::Duplicate {
            table,
            row,
            what: format!("{table} {} (deleted twice in one change)", w[0]),
        });
    }
    Ok(sorted)
}

/// Deletes at most one in this many facts take the streaming path on a base.
const STREAMING_BELOW: usize = 64;

impl KnowledgeGraph {
    /// A new base without the entities, facts and chunks given (dense indices of this
    /// generation): the rows that stay are renumbered in order and every array is laid
    /// out as a fresh build of the remaining rows lays it out, so that a query answers
    /// the same, bit for bit. The mentions of a deleted entity or chunk go with it, and
    /// the generation's tombstones ([`KnowledgeGraph::with_tombstones`]) go too.
    /// `self` is left as it is (readers keep it); the cost is one pass over its rows.
    ///
    /// # Errors
    /// An index out of range or given twice; a fact that stays while its subject or
    /// object is deleted (delete the entity's facts with it); `OutOfMemory`.
    pub fn without(
        &self,
        entities: &[u32],
        facts: &[u32],
        chunks: &[u32],
    ) -> Result<KnowledgeGraph> {
        let mut de = sorted_dead(entities, self.n_entities as usize, "entities")?;
        if !self.dead_entities().is_empty() {
            // Deleted entities go too: they are in no row and no listing already.
            de.extend_from_slice(self.dead_entities());
            de.sort_unstable();
            de.dedup();
        }
        let mut df = sorted_dead(facts, self.n_facts as usize, "facts")?;
        if !self.dead_facts().is_empty() {
            // Tombstones go too: they are in no row already.
            df.extend_from_slice(self.dead_facts());
            df.sort_unstable();
            df.dedup();
        }
        let mut dc = sorted_dead(chunks, self.n_chunks as usize, "chunks")?;
        if !self.dead_chunks().is_empty() {
            // Deleted chunks go too: they hold no mention already.
            dc.extend_from_slice(self.dead_chunks());
            dc.sort_unstable();
            dc.dedup();
        }
        let n_ent = self.n_entities - de.len() as u32;
        let n_chunks = self.n_chunks - dc.len() as u32;
        let is_base =
            self.ov.is_none() && self.rec.ext().is_empty() && self.in_pos.ext().is_empty();
        let fa = if is_base && df.len() * STREAMING_BELOW <= self.n_facts as usize {
            self.base_facts_without(&de, &df)?
        } else {
            let (new_ent, _) = renumbered(self.n_entities as usize, &de, "entities")?;
            self.facts_without(&new_ent, &df)?
        };

        // Entities, tenants and mentions: shared when no entity or chunk goes.
        let mut out = KnowledgeGraph {
            n_facts: self.n_facts - df.len() as u32,
            rec: Column::from(fa.rec),
            fact_to_pos: Arc::new(fa.fact_to_pos),
            out_offsets: Arc::new(fa.out_offsets),
            in_offsets: Arc::new(fa.in_offsets),
            in_pos: Column::from(fa.in_pos),
            in_subject: Column::from(fa.in_subject),
            ov: None,
            ..self.clone()
        };
        let [created_at, valid_from, valid_to, sequence] = fa.times;
        out.created_at = created_at.map(Column::from);
        out.valid_from = valid_from.map(Column::from);
        out.valid_to = valid_to.map(Column::from);
        out.sequence = sequence.map(Column::from);
        if de.is_empty() && dc.is_empty() && self.ov.is_none() {
            return Ok(out);
        }
        let (new_ent, _) = renumbered(self.n_entities as usize, &de, "entities")?;
        let (new_chunk, _) = renumbered(self.n_chunks as usize, &dc, "chunks")?;
        let mut entity_tenant = alloc::with_capacity(n_ent as usize, "entity tenants")?;
        for (e, &ne) in new_ent.iter().enumerate() {
            if ne != NONE {
                entity_tenant.push(self.entity_tenant[e]);
            }
        }
        let mut chunk_tenant = alloc::with_capacity(n_chunks as usize, "chunk tenants")?;
        for (c, &nc) in new_chunk.iter().enumerate() {
            if nc != NONE {
                chunk_tenant.push(self.chunk_tenant[c]);
            }
        }
        let n_tenants = entity_tenant
            .iter()
            .chain(chunk_tenant.iter())
            .copied()
            .max()
            .map_or(0, |t| t + 1);
        let mut tenant_offsets = alloc::filled(n_tenants as usize + 1, 0u32, "tenant offsets")?;
        for &t in &entity_tenant {
            tenant_offsets[t as usize + 1] += 1;
        }
        for t in 0..n_tenants as usize {
            tenant_offsets[t + 1] += tenant_offsets[t];
        }
        let mut cursor = alloc::copied(&tenant_offsets, "tenant offsets")?;
        let mut tenant_entities = alloc::filled(n_ent as usize, 0u32, "tenant entities")?;
        for (e, &t) in entity_tenant.iter().enumerate() {
            tenant_entities[cursor[t as usize] as usize] = e as u32;
            cursor[t as usize] += 1;
        }
        let (chunk_offsets, chunk_entity, chunk_count) =
            csr(self.n_chunks as usize, &new_chunk, &new_ent, |c| {
                self.chunk_mentions(c)
            })?;
        let (mention_offsets, mention_chunk, mention_count) =
            csr(self.n_entities as usize, &new_ent, &new_chunk, |e| {
                self.entity_mentions(e)
            })?;
        out.n_entities = n_ent;
        out.n_tenants = n_tenants;
        out.n_chunks = n_chunks;
        out.entity_tenant = Arc::new(entity_tenant);
        out.tenant_offsets = Arc::new(tenant_offsets);
        out.tenant_entities = Arc::new(tenant_entities);
        out.chunk_tenant = Arc::new(chunk_tenant);
        out.chunk_offsets = Arc::new(chunk_offsets);
        out.chunk_entity = Arc::new(chunk_entity);
        out.chunk_count = Arc::new(chunk_count);
        out.mention_offsets = Arc::new(mention_offsets);
        out.mention_chunk = Arc::new(mention_chunk);
        out.mention_count = Arc::new(mention_count);
        Ok(out)
    }

    /// The optional time columns (created_at, valid_from, valid_to, sequence) and an
    /// empty buffer of capacity `n` for each one the graph holds.
    #[allow(clippy::type_complexity)]
    fn time_buffers(&self, n: usize) -> Result<([&Option<Column<i64>>; 4], [Option<Vec<i64>>; 4])> {
        let cols = [
            &self.created_at,
            &self.valid_from,
            &self.valid_to,
            &self.sequence,
        ];
        let mut times: [Option<Vec<i64>>; 4] = [None, None, None, None];
        for (t, col) in cols.iter().enumerate() {
            if col.is_some() {
                times[t] = Some(alloc::with_capacity(n, "fact times")?);
            }
        }
        Ok((cols, times))
    }

    /// The fact arrays of a base without a few facts (`df`, sorted) and entities (`de`,
    /// sorted): the base's arrays with the dead positions cut out, each index lowered by
    /// the dead ones below it. Every pass reads the old arrays in order (a binary search
    /// in the short dead lists per element, no random read of an n-sized map).
    fn base_facts_without(&self, de: &[u32], df: &[u32]) -> Result<FactArrays> {
        let holds = |sorted: &[u32], x: u32| sorted.binary_search(&x).is_ok();
        for &e in de {
            for p in self.out_range(e) {
                if !holds(df, self.rec[p].fact) {
                    return Err(dangling(self.rec[p].fact, "subject"));
                }
            }
            for i in self.in_range(e) {
                let f = self.rec[self.in_pos[i] as usize].fact;
                if !holds(df, f) {
                    return Err(dangling(f, "object"));
                }
            }
        }
        let mut dp = alloc::with_capacity(df.len(), "deleted positions")?;
        dp.extend(df.iter().map(|&f| self.fact_to_pos[f as usize]));
        dp.sort_unstable();
        let n = self.n_facts as usize - df.len();
        let n_ent = self.n_entities as usize - de.len();
        let lower = |sorted: &[u32], x: u32| {
            if x == NONE {
                NONE
            } else {
                x - rank(sorted, x)
            }
        };

        let mut rec = alloc::with_capacity(n, "fact records")?;
        let (cols, mut times) = self.time_buffers(n)?;
        let mut next_dead = dp.iter().peekable();
        for (p, r) in self.rec.base().iter().enumerate() {
            if next_dead.peek().is_some_and(|&&d| d as usize == p) {
                next_dead.next();
                continue;
            }
            rec.push(FactRec {
                fact: lower(df, r.fact),
                object: lower(de, r.object),
                ..*r
            });
            for (t, col) in cols.iter().enumerate() {
                if let (Some(out), Some(c)) = (times[t].as_mut(), col.as_ref()) {
                    out.push(c.base()[p]);
                }
            }
        }
        let mut out_offsets = alloc::with_capacity(n_ent + 1, "out offsets")?;
        out_offsets.push(0u32);
        let mut fact_to_pos = alloc::with_capacity(n, "fact positions")?;
        let mut next_dead = df.iter().peekable();
        for (f, &p) in self.fact_to_pos.iter().enumerate() {
            if next_dead.peek().is_some_and(|&&d| d as usize == f) {
                next_dead.next();
                continue;
            }
            fact_to_pos.push(p - rank(&dp, p));
        }
        let mut in_offsets = alloc::with_capacity(n_ent + 1, "in offsets")?;
        in_offsets.push(0u32);
        let mut in_pos = alloc::with_capacity(n, "in positions")?;
        let mut in_subject = alloc::with_capacity(n, "in subjects")?;
        let (base_pos, base_subject) = (self.in_pos.base(), self.in_subject.base());
        for e in 0..self.n_entities {
            if holds(de, e) {
                continue;
            }
            let end = self.out_offsets[e as usize + 1];
            out_offsets.push(end - rank(&dp, end));
            for i in self.in_range(e) {
                let p = base_pos[i];
                let r = rank(&dp, p);
                if dp.get(r as usize) == Some(&p) {
                    continue;
                }
                in_pos.push(p - r);
                in_subject.push(lower(de, base_subject[i]));
            }
            in_offsets.push(in_pos.len() as u32);
        }
        Ok(FactArrays {
            rec,
            times,
            out_offsets,
            fact_to_pos,
            in_offsets,
            in_pos,
            in_subject,
        })
    }

    /// The fact arrays of any generation without the facts `df` (sorted) and the
    /// entities `new_ent` marks `NONE`: its out-rows and in-rows walked in order.
    fn facts_without(&self, new_ent: &[u32], df: &[u32]) -> Result<FactArrays> {
        let (new_fact, n_facts) = renumbered(self.n_facts as usize, df, "facts")?;
        let dead_fact = |f: u32| new_fact[f as usize] == NONE;
        let n = n_facts as usize;
        let mut rec: Vec<FactRec> = alloc::with_capacity(n, "fact records")?;
        let (time_cols, mut times) = self.time_buffers(n)?;
        let mut new_pos = alloc::filled(self.rec.len(), NONE, "positions")?;
        let mut out_offsets = alloc::with_capacity(new_ent.len() + 1, "out offsets")?;
        out_offsets.push(0u32);
        for (e, &ne) in new_ent.iter().enumerate() {
            let row = self.out_range(e as u32);
            if ne == NONE {
                if let Some(p) = row.clone().find(|&p| !dead_fact(self.rec[p].fact)) {
                    return Err(dangling(self.rec[p].fact, "subject"));
                }
                continue;
            }
            for p in row {
                let r = self.rec[p];
                if dead_fact(r.fact) {
                    continue;
                }
                if r.object != NONE && new_ent[r.object as usize] == NONE {
                    return Err(dangling(r.fact, "object"));
                }
                new_pos[p] = rec.len() as u32;
                rec.push(FactRec {
                    fact: new_fact[r.fact as usize],
                    object: if r.object == NONE {
                        NONE
                    } else {
                        new_ent[r.object as usize]
                    },
                    ..r
                });
                for (t, col) in time_cols.iter().enumerate() {
                    if let (Some(out), Some(c)) = (times[t].as_mut(), col.as_ref()) {
                        out.push(c[p]);
                    }
                }
            }
            out_offsets.push(rec.len() as u32);
        }
        let mut fact_to_pos = alloc::filled(n, 0u32, "fact positions")?;
        for (p, r) in rec.iter().enumerate() {
            fact_to_pos[r.fact as usize] = p as u32;
        }
        let mut in_offsets = alloc::with_capacity(new_ent.len() + 1, "in offsets")?;
        in_offsets.push(0u32);
        let mut in_pos = alloc::with_capacity(n, "in positions")?;
        let mut in_subject = alloc::with_capacity(n, "in subjects")?;
        for (e, &ne) in new_ent.iter().enumerate() {
            if ne == NONE {
                continue;
            }
            for i in self.in_range(e as u32) {
                let np = new_pos[self.in_pos[i] as usize];
                if np != NONE {
                    in_pos.push(np);
                    in_subject.push(new_ent[self.in_subject[i] as usize]);
                }
            }
            in_offsets.push(in_pos.len() as u32);
        }
        Ok(FactArrays {
            rec,
            times,
            out_offsets,
            fact_to_pos,
            in_offsets,
            in_pos,
            in_subject,
        })
    }
}

fn dangling(fact: u32, column: &'static str) -> Error {
    Error::InvalidValue {
        table: "facts",
        row: fact as usize,
        column,
        value: fact.to_string(),
        problem: format!("the fact stays but its {column} is deleted"),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

    use proptest::prelude::*;

    use super::super::tests::{arb_cols, Cols};
    use super::*;

    /// `c` without the rows marked, renumbered in order (what a fresh build reads).
    pub(crate) fn kept(c: &Cols, ent: &[bool], fact: &[bool], chunk: &[bool]) -> Cols {
        let renum = |dead: &[bool]| {
            let mut next = 0u32;
            dead.iter()
                .map(|&d| {
                    if d {
                        NONE
                    } else {
                        next += 1;
                        next - 1
                    }
                })
                .collect::<Vec<u32>>()
        };
        let (ne, nc) = (renum(ent), renum(chunk));
        let mut out = Cols {
            tenant: c
                .tenant
                .iter()
                .zip(ent)
                .filter(|(_, &d)| !d)
                .map(|(&t, _)| t)
                .collect(),
            chunk_tenant: c
                .chunk_tenant
                .iter()
                .zip(chunk)
                .filter(|(_, &d)| !d)
                .map(|(&t, _)| t)
                .collect(),
            valid_from: c.valid_from.as_ref().map(|_| Vec::new()),
            valid_to: c.valid_to.as_ref().map(|_| Vec::new()),
            sequence: c.sequence.as_ref().map(|_| Vec::new()),
            ..Cols::default()
        };
        for f in (0..c.subject.len()).filter(|&f| !fact[f]) {
            out.subject.push(ne[c.subject[f] as usize]);
            let o = c.object[f];
            out.object
                .push(if o == NONE { NONE } else { ne[o as usize] });
            out.predicate.push(c.predicate[f]);
            out.confidence.push(c.confidence[f]);
            out.strength.push(c.strength[f]);
            out.status.push(c.status[f]);
            out.source.push(c.source[f]);
            out.access.push(c.access[f]);
            out.last.push(c.last[f]);
            for (dst, src) in [
                (&mut out.valid_from, &c.valid_from),
                (&mut out.valid_to, &c.valid_to),
                (&mut out.sequence, &c.sequence),
            ] {
                if let (Some(d), Some(s)) = (dst.as_mut(), src.as_ref()) {
                    d.push(s[f]);
                }
            }
        }
        for k in 0..c.m_chunk.len() {
            let (ch, e) = (nc[c.m_chunk[k] as usize], ne[c.m_entity[k] as usize]);
            if ch != NONE && e != NONE {
                out.m_chunk.push(ch);
                out.m_entity.push(e);
                out.m_count.push(c.m_count[k]);
            }
        }
        out
    }

    pub(crate) fn picked(n: usize, picks: &[usize]) -> Vec<bool> {
        let mut dead = vec![false; n];
        if n > 0 {
            for &p in picks {
                dead[p % n] = true;
            }
        }
        dead
    }

    pub(crate) fn indices(dead: &[bool]) -> Vec<u32> {
        (0..dead.len() as u32)
            .filter(|&i| dead[i as usize])
            .collect()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Deleting entities (with their facts), facts and chunks from a base or from a
        /// generation with an overlay gives the arrays of a fresh build of the rows that
        /// stay.
        #[test]
        fn delete_equals_fresh_build(
            c in arb_cols(),
            ents in proptest::collection::vec(any::<usize>(), 0..3),
            facts in proptest::collection::vec(any::<usize>(), 0..6),
            chunks in proptest::collection::vec(any::<usize>(), 0..3),
            changed in proptest::collection::vec((any::<usize>(), 0u8..8), 0..4),
            rule in crate::graph::overlay::tests::arb_rule(),
        ) {
            let mut c = c;
            let mut g = c.graph();
            // An overlay first: confidences changed through a generation.
            let nf = c.subject.len();
            if nf > 0 && !changed.is_empty() {
                let mut ids: Vec<u32> = changed.iter().map(|&(f, _)| (f % nf) as u32).collect();
                ids.sort_unstable();
                ids.dedup();
                for (k, &f) in ids.iter().enumerate() {
                    c.confidence[f as usize] = f32::from(changed[k % changed.len()].1) / 8.0;
                }
                let rows = kept(
                    &c,
                    &vec![false; c.tenant.len()],
                    &(0..nf).map(|f| !ids.contains(&(f as u32))).collect::<Vec<_>>(),
                    &vec![false; c.chunk_tenant.len()],
                );
                // `kept` renumbers the changed rows to 0..; with_facts takes the old ids.
                g = g.with_facts_by(&ids, &rows.input(), rule).unwrap();
            }
            let ent = picked(c.tenant.len(), &ents);
            let mut fact = picked(nf, &facts);
            for f in 0..nf {
                let o = c.object[f];
                if ent[c.subject[f] as usize] || (o != NONE && ent[o as usize]) {
                    fact[f] = true;
                }
            }
            let chunk = picked(c.chunk_tenant.len(), &chunks);
            if g.ov.is_none() {
                // The streaming path of a base lays out what the general walk does.
                let (de, df) = (indices(&ent), indices(&fact));
                let (new_ent, _) = renumbered(ent.len(), &de, "entities").unwrap();
                prop_assert_eq!(
                    g.base_facts_without(&de, &df).unwrap(),
                    g.facts_without(&new_ent, &df).unwrap()
                );
            }
            let got = g.without(&indices(&ent), &indices(&fact), &indices(&chunk)).unwrap();
            let fresh = kept(&c, &ent, &fact, &chunk).graph();
            prop_assert_eq!(got.to_parts().unwrap(), fresh.to_parts().unwrap());
            prop_assert_eq!(got.n_tenants(), fresh.n_tenants());
            prop_assert_eq!(got.overlay_len(), 0);
        }
    }

    #[test]
    fn bad_deletes_are_refused() {
        let mut c = Cols {
            tenant: vec![0, 0],
            ..Cols::default()
        };
        c.push(0, 1, 0.5);
        let g = c.graph();
        assert!(g.without(&[], &[1], &[]).is_err()); // no fact 1
        assert!(g.without(&[], &[0, 0], &[]).is_err()); // twice
        assert!(g.without(&[1], &[], &[]).is_err()); // its fact stays
        assert!(g.without(&[0], &[], &[]).is_err());
        let h = g.without(&[1], &[0], &[]).unwrap();
        assert_eq!((h.n_entities(), h.n_facts()), (1, 0));
        assert_eq!(g.n_facts(), 1); // the old generation is unchanged
    }
}

//! Tenant changes of existing entities and chunks as a new generation
//! ([`KnowledgeGraph::with_tenants`]): the per-entity and per-chunk tenant codes are copied
//! with the changes written, and the tenants' entity listings counted again; facts,
//! adjacency and mentions are shared with the previous generation.

use std::sync::Arc;

use super::build::MAX_TENANTS;
use super::KnowledgeGraph;
use crate::error::{Error, Result};

/// Tenants -> entities (entity ascending in each tenant, a counting sort), without the
/// deleted entities `dead` (sorted): the offsets (`n_tenants + 1`) and the entities.
pub(crate) fn tenant_listing(
    entity_tenant: &[u32],
    n_tenants: u32,
    dead: &[u32],
) -> (Vec<u32>, Vec<u32>) {
    let n_t = n_tenants as usize;
    let mut offsets = vec![0u32; n_t + 1];
    for &t in entity_tenant {
        offsets[t as usize + 1] += 1;
    }
    for t in 0..n_t {
        offsets[t + 1] += offsets[t];
    }
    let mut cursor = offsets[..n_t].to_vec();
    let mut entities = vec![0u32; entity_tenant.len()];
    for (e, &t) in entity_tenant.iter().enumerate() {
        entities[cursor[t as usize] as usize] = e as u32;
        cursor[t as usize] += 1;
    }
    if !dead.is_empty() {
        // Deleted entities stay out of their tenants' listings.
        let mut at = 0usize;
        for t in 0..n_t {
            let r = offsets[t] as usize..offsets[t + 1] as usize;
            offsets[t] = at as u32;
            for k in r {
                let e = entities[k];
                if dead.binary_search(&e).is_err() {
                    entities[at] = e;
                    at += 1;
                }
            }
        }
        offsets[n_t] = at as u32;
        entities.truncate(at);
    }
    (offsets, entities)
}

impl KnowledgeGraph {
    /// A new generation in which entity `entities[k]` has tenant `entity_tenant[k]` and
    /// chunk `chunks[k]` has tenant `chunk_tenant[k]` (codes the graph holds), as a fresh
    /// build of the tables with these tenants gives. The rows that name a moved entity or
    /// chunk (facts, mentions) are not checked here: the caller checks that none joins two
    /// tenants. The cost is the per-entity and per-chunk tenant arrays, not the facts.
    ///
    /// # Errors
    /// Lengths that differ, an index beyond the graph, or a tenant code the graph does not
    /// hold (a new tenant moves the codes of the sorted tenants: that takes a build).
    pub fn with_tenants(
        &self,
        entities: &[u32],
        entity_tenant: &[u32],
        chunks: &[u32],
        chunk_tenant: &[u32],
    ) -> Result<KnowledgeGraph> {
        for (table, rows, tenants, n) in [
            ("entities", entities, entity_tenant, self.n_entities),
            ("chunks", chunks, chunk_tenant, self.n_chunks),
        ] {
            if rows.len() != tenants.len() {
                return Err(Error::LengthMismatch {
                    table,
                    column: "tenant",
                    expected: rows.len(),
                    got: tenants.len(),
                });
            }
            if let Some(k) = rows.iter().position(|&r| r >= n) {
                return Err(Error::InvalidValue {
                    table,
                    row: k,
                    column: "id",
                    value: rows[k].to_string(),
                    problem: format!("beyond the {n} rows of the graph"),
                });
            }
            if let Some(k) = tenants.iter().position(|&t| t >= self.n_tenants) {
                let problem = if tenants[k] >= MAX_TENANTS {
                    format!("beyond the tenant code limit {MAX_TENANTS}")
                } else {
                    let n_t = self.n_tenants;
                    format!("not a tenant of the graph ({n_t} tenants)")
                };
                return Err(Error::InvalidValue {
                    table,
                    row: k,
                    column: "tenant",
                    value: tenants[k].to_string(),
                    problem,
                });
            }
        }
        let mut out = self.clone();
        if !entities.is_empty() {
            let mut et = self.entity_tenant.to_vec();
            for (&e, &t) in entities.iter().zip(entity_tenant) {
                et[e as usize] = t;
            }
            let (offsets, listed) = tenant_listing(&et, self.n_tenants, self.dead_entities());
            out.entity_tenant = Arc::new(et);
            out.tenant_offsets = Arc::new(offsets);
            out.tenant_entities = Arc::new(listed);
        }
        if !chunks.is_empty() {
            let mut ct = self.chunk_tenant.to_vec();
            for (&c, &t) in chunks.iter().zip(chunk_tenant) {
                ct[c as usize] = t;
            }
            out.chunk_tenant = Arc::new(ct);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

    use proptest::prelude::*;

    use super::super::tests::arb_cols;
    use super::*;

    proptest! {
        /// Moving entities and chunks to other tenants gives the tenants of a fresh build
        /// of the columns with the moves (where that build accepts them).
        #[test]
        fn moved_tenants_are_a_fresh_builds(
            c in arb_cols(),
            moves in proptest::collection::vec((any::<usize>(), any::<usize>()), 0..4),
            chunk_moves in proptest::collection::vec((any::<usize>(), any::<usize>()), 0..3),
        ) {
            let g = c.graph();
            let n_t = g.n_tenants();
            let mut want = c.clone();
            let (mut es, mut ets, mut cs, mut cts) = (vec![], vec![], vec![], vec![]);
            for &(e, t) in &moves {
                let e = (e % c.tenant.len()) as u32;
                let t = (t % n_t) as u32;
                if es.contains(&e) {
                    continue;
                }
                want.tenant[e as usize] = t;
                es.push(e);
                ets.push(t);
            }
            if !c.chunk_tenant.is_empty() {
                for &(ch, t) in &chunk_moves {
                    let ch = (ch % c.chunk_tenant.len()) as u32;
                    let t = (t % n_t) as u32;
                    if cs.contains(&ch) {
                        continue;
                    }
                    want.chunk_tenant[ch as usize] = t;
                    cs.push(ch);
                    cts.push(t);
                }
            }
            let h = g.with_tenants(&es, &ets, &cs, &cts).unwrap();
            let fresh = match KnowledgeGraph::build(&want.input()) {
                Ok(f) => f,
                Err(_) => return Ok(()), // a fact or mention would cross tenants
            };
            prop_assert_eq!(&h.entity_tenant, &fresh.entity_tenant);
            prop_assert_eq!(&h.chunk_tenant, &fresh.chunk_tenant);
            for t in 0..n_t.min(fresh.n_tenants()) as u32 {
                prop_assert_eq!(h.tenant_entities(t).unwrap(), fresh.tenant_entities(t).unwrap());
            }
            prop_assert_eq!(&g.entity_tenant[..], &c.tenant[..]); // the old generation stays
        }
    }

    #[test]
    fn tenant_moves_refuse_bad_input() {
        let c = super::super::tests::Cols {
            tenant: vec![0, 1],
            chunk_tenant: vec![0],
            ..Default::default()
        };
        let g = c.graph();
        assert!(g.with_tenants(&[0], &[2], &[], &[]).is_err()); // no tenant 2
        assert!(g.with_tenants(&[2], &[0], &[], &[]).is_err()); // no entity 2
        assert!(g.with_tenants(&[0], &[], &[], &[]).is_err()); // lengths differ
        assert!(g.with_tenants(&[], &[], &[1], &[0]).is_err()); // no chunk 1
        let h = g.with_tenants(&[0], &[1], &[0], &[1]).unwrap();
        assert_eq!(h.tenant_entities(1).unwrap(), &[0, 1]);
        assert_eq!(h.tenant_entities(0).unwrap().len(), 0);
        assert_eq!(h.chunk_tenant[0], 1);
        assert_eq!(g.tenant_entities(0).unwrap(), &[0]); // the old generation stays
    }
}

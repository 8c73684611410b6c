//! Tests of fact and entity deletes as tombstones ([`KnowledgeGraph::with_tombstones`],
//! [`KnowledgeGraph::with_dead_entities`]): a deleted fact is cut out of its rows at once and keeps its id until a compaction renumbers the
//! facts that stay, so every generation in between walks the rows of a fresh build of the
//! remaining facts (under the old ids), and the compaction is that fresh build.
#![allow(clippy::panic, clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;

use super::delete::tests::{indices, kept, picked};
use super::overlay::tests::arb_rule;
use super::tests::arb_cols;
use super::{KnowledgeGraph, NONE};

/// Old id of each fact a fresh build of the facts that stay numbers `0..`.
fn old_ids(dead: &[bool]) -> Vec<u32> {
    (0..dead.len() as u32)
        .filter(|&f| !dead[f as usize])
        .collect()
}

/// `g` (tombstones under old ids) walks the rows of `fresh` (the facts that stay).
fn same_rows(
    g: &KnowledgeGraph,
    fresh: &KnowledgeGraph,
    old: &[u32],
) -> std::result::Result<(), TestCaseError> {
    prop_assert_eq!(g.n_entities(), fresh.n_entities());
    let map = |v: Vec<u32>| v.into_iter().map(|f| old[f as usize]).collect::<Vec<u32>>();
    for e in 0..g.n_entities() as u32 {
        prop_assert_eq!(g.out_facts(e).unwrap(), map(fresh.out_facts(e).unwrap()));
        prop_assert_eq!(g.in_facts(e).unwrap(), map(fresh.in_facts(e).unwrap()));
        prop_assert_eq!(g.degree(e).unwrap(), fresh.degree(e).unwrap());
    }
    for (k, &f) in old.iter().enumerate() {
        prop_assert_eq!(g.fact(f).unwrap(), fresh.fact(k as u32).unwrap());
    }
    for &f in g.dead_facts() {
        prop_assert!(g.fact(f).is_err());
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Tombstones in several batches, over a base or an overlay of changed facts, walk
    /// the rows of a fresh build of the facts that stay, and compact to that build.
    #[test]
    fn tombstones_equal_fresh_build(
        c in arb_cols(),
        batches in proptest::collection::vec(
            proptest::collection::vec(any::<usize>(), 0..4), 1..4),
        changed in proptest::collection::vec((any::<usize>(), 0u8..8), 0..4),
        rule in arb_rule(),
    ) {
        let mut c = c;
        let mut g = c.graph();
        let nf = c.subject.len();
        let none = |n: usize| vec![false; n];
        if nf > 0 && !changed.is_empty() {
            let mut ids: Vec<u32> = changed.iter().map(|&(f, _)| (f % nf) as u32).collect();
            ids.sort_unstable();
            ids.dedup();
            for (k, &f) in ids.iter().enumerate() {
                c.confidence[f as usize] = f32::from(changed[k % changed.len()].1) / 8.0;
            }
            let rows = kept(
                &c,
                &none(c.tenant.len()),
                &(0..nf).map(|f| !ids.contains(&(f as u32))).collect::<Vec<_>>(),
                &none(c.chunk_tenant.len()),
            );
            g = g.with_facts_by(&ids, &rows.input(), rule).unwrap();
        }
        let mut dead = none(nf);
        for batch in &batches {
            let now = picked(nf, batch);
            let new: Vec<u32> = indices(&now).into_iter().filter(|&f| !dead[f as usize]).collect();
            for &f in &new {
                dead[f as usize] = true;
            }
            let before = g.clone();
            g = g.with_tombstones(&new).unwrap();
            prop_assert_eq!(before.dead_facts().len() + new.len(), g.dead_facts().len());
            let fresh = kept(&c, &none(c.tenant.len()), &dead, &none(c.chunk_tenant.len())).graph();
            same_rows(&g, &fresh, &old_ids(&dead))?;
            prop_assert_eq!(g.overlay_len() >= g.dead_facts().len(), true);
            let compact = g.compacted().unwrap();
            prop_assert_eq!(compact.to_parts().unwrap(), fresh.to_parts().unwrap());
            prop_assert!(compact.dead_facts().is_empty());
        }
    }
}

/// The facts touching any entity of `dead` (as subject or object).
fn facts_of(c: &super::tests::Cols, dead: &[bool]) -> Vec<u32> {
    (0..c.subject.len() as u32)
        .filter(|&f| {
            let (s, o) = (c.subject[f as usize], c.object[f as usize]);
            dead[s as usize] || (o != NONE && dead[o as usize])
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Entity deletes in several batches (their facts as tombstones, their mentions cut,
    /// out of their tenants' listings) walk the rows of a fresh build of the rows that
    /// stay, under the old indices, and `without` gives that fresh build.
    #[test]
    fn entity_tombstones_equal_fresh_build(
        c in arb_cols(),
        batches in proptest::collection::vec(
            proptest::collection::vec(any::<usize>(), 0..3), 1..4),
    ) {
        let mut g = c.graph();
        let ne = c.tenant.len();
        let none = |n: usize| vec![false; n];
        let mut dead_e = none(ne);
        let mut dead_f = none(c.subject.len());
        for batch in &batches {
            let now = picked(ne, batch);
            let new: Vec<u32> = indices(&now).into_iter().filter(|&e| !dead_e[e as usize]).collect();
            for &e in &new {
                dead_e[e as usize] = true;
            }
            let facts: Vec<u32> = facts_of(&c, &dead_e)
                .into_iter()
                .filter(|&f| !dead_f[f as usize])
                .collect();
            for &f in &facts {
                dead_f[f as usize] = true;
            }
            g = g.with_dead_entities(&new, &facts).unwrap();
            prop_assert_eq!(g.dead_entities().to_vec(), indices(&dead_e));
            let fresh = kept(&c, &dead_e, &dead_f, &none(c.chunk_tenant.len())).graph();
            let old_e = old_ids(&dead_e);
            let old_f = old_ids(&dead_f);
            let map_f = |v: Vec<u32>| v.into_iter().map(|f| old_f[f as usize]).collect::<Vec<u32>>();
            let map_e = |v: &[u32]| v.iter().map(|&e| old_e[e as usize]).collect::<Vec<u32>>();
            for (k, &e) in old_e.iter().enumerate() {
                prop_assert_eq!(g.out_facts(e).unwrap(), map_f(fresh.out_facts(k as u32).unwrap()));
                prop_assert_eq!(g.in_facts(e).unwrap(), map_f(fresh.in_facts(k as u32).unwrap()));
                let (ch, n) = g.entity_mentions(e);
                let (fch, fnn) = fresh.entity_mentions(k as u32);
                prop_assert_eq!((ch, n), (fch, fnn));
            }
            for &e in &indices(&dead_e) {
                prop_assert!(g.out_facts(e).unwrap().is_empty() && g.in_facts(e).unwrap().is_empty());
                prop_assert!(g.entity_mentions(e).0.is_empty());
            }
            for ch in 0..g.n_chunks {
                let (es, n) = g.chunk_mentions(ch);
                let (fes, fnn) = fresh.chunk_mentions(ch);
                prop_assert_eq!((es.to_vec(), n), (map_e(fes), fnn));
            }
            for t in 0..fresh.n_tenants {
                prop_assert_eq!(
                    g.tenant_entities(t).unwrap().to_vec(),
                    map_e(fresh.tenant_entities(t).unwrap())
                );
            }
            let base = g.without(&[], &[], &[]).unwrap();
            prop_assert_eq!(base.to_parts().unwrap(), fresh.to_parts().unwrap());
            prop_assert!(base.dead_entities().is_empty());
            // Entities added after a delete keep the dead ones out of the listings.
            let grown = g.with_entities(&[0]).unwrap();
            prop_assert_eq!(grown.dead_entities(), g.dead_entities());
            for &e in g.dead_entities() {
                let t = grown.entity_tenant[e as usize];
                prop_assert!(!grown.tenant_entities(t).unwrap().contains(&e));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Chunk deletes in several batches (their mentions cut) give the mention rows of a
    /// fresh build of the chunks that stay, under the old indices, and `without` gives
    /// that fresh build.
    #[test]
    fn chunk_tombstones_equal_fresh_build(
        c in arb_cols(),
        batches in proptest::collection::vec(
            proptest::collection::vec(any::<usize>(), 0..3), 1..4),
    ) {
        let mut g = c.graph();
        let nc = c.chunk_tenant.len();
        let none = |n: usize| vec![false; n];
        let mut dead_c = none(nc);
        for batch in &batches {
            let now = picked(nc, batch);
            let new: Vec<u32> = indices(&now).into_iter().filter(|&k| !dead_c[k as usize]).collect();
            for &k in &new {
                dead_c[k as usize] = true;
            }
            g = g.with_dead_chunks(&new).unwrap();
            prop_assert_eq!(g.dead_chunks().to_vec(), indices(&dead_c));
            let fresh = kept(&c, &none(c.tenant.len()), &none(c.subject.len()), &dead_c).graph();
            let old_c = old_ids(&dead_c);
            let map_c = |v: &[u32]| v.iter().map(|&k| old_c[k as usize]).collect::<Vec<u32>>();
            for e in 0..g.n_entities {
                let (ch, n) = g.entity_mentions(e);
                let (fch, fnn) = fresh.entity_mentions(e);
                prop_assert_eq!((ch.to_vec(), n), (map_c(fch), fnn));
            }
            for (k, &ch) in old_c.iter().enumerate() {
                prop_assert_eq!(g.chunk_mentions(ch), fresh.chunk_mentions(k as u32));
            }
            for &ch in g.dead_chunks() {
                prop_assert!(g.chunk_mentions(ch).0.is_empty());
            }
            let base = g.without(&[], &[], &[]).unwrap();
            prop_assert_eq!(base.to_parts().unwrap(), fresh.to_parts().unwrap());
            prop_assert!(base.dead_chunks().is_empty());
        }
    }
}

#[test]
fn bad_tombstones_are_refused() {
    let mut c = super::tests::Cols {
        tenant: vec![0, 0],
        ..super::tests::Cols::default()
    };
    c.push(0, 1, 0.5);
    c.push(1, NONE, 0.5);
    let g = c.graph();
    assert!(g.with_tombstones(&[2]).is_err()); // no fact 2
    assert!(g.with_tombstones(&[0, 0]).is_err()); // twice
    let h = g.with_tombstones(&[0]).unwrap();
    assert!(h.with_tombstones(&[0]).is_err()); // already deleted
    assert!(h.fact(0).is_err());
    assert_eq!(h.out_facts(0).unwrap(), Vec::<u32>::new());
    assert_eq!(h.in_facts(1).unwrap(), Vec::<u32>::new());
    assert_eq!((h.n_facts(), h.overlay_len()), (2, 1));
    // A deleted entity's facts: the tombstones go with `without`.
    let k = h.without(&[], &[], &[]).unwrap();
    assert_eq!((k.n_facts(), k.out_facts(1).unwrap()), (1, vec![0]));
    assert_eq!(g.n_facts(), 2); // the old generation is unchanged
}

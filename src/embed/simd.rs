//! The AVX-512 VNNI form of [`super::kernel::rows_portable`]: the only `unsafe` of the
//! encoder (the intrinsics' unaligned loads, and the call into a function compiled for
//! features that [`std::is_x86_feature_detected`] has confirmed at run time).

use super::kernel::{QActs, QMat, LANE, ROWS};

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

/// The running sums of `rows` rows from `r0` for token `t` on AVX-512 VNNI; false (and
/// nothing written) when the CPU lacks it or the width is not a multiple of 64.
pub(super) fn rows_vnni(
    w: &QMat,
    a: &QActs,
    r0: usize,
    rows: usize,
    t: usize,
    dwx: &[f32],
    sums: &mut [[f32; 16]; ROWS],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if w.nin % 64 != 0 || !vnni_available() {
            return false;
        }
        let nin = w.nin;
        let lanes = nin / LANE;
        assert!(a.q.len() >= (t + 1) * nin && a.scale.len() >= (t + 1) * lanes);
        assert!(a.start.len() >= (t + 1) * lanes && dwx.len() >= rows * lanes);
        assert!(w.w.len() >= (r0 + rows) * nin && rows <= ROWS);
        // SAFETY: the features were detected above; every pointer read below stays within
        // the slices whose lengths were asserted (64 bytes or 16 lanes per step, `nin / 64`
        // steps).
        #[allow(unsafe_code)]
        unsafe {
            vnni(w, a, r0, rows, t, dwx, sums)
        };
        true
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (w, a, r0, rows, t, dwx, sums);
        false
    }
}

#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
unsafe fn vnni(
    w: &QMat,
    a: &QActs,
    r0: usize,
    rows: usize,
    t: usize,
    dwx: &[f32],
    sums: &mut [[f32; 16]; ROWS],
) {
    use std::arch::x86_64::*;
    let nin = w.nin;
    let lanes = nin / LANE;
    let aq = a.q.as_ptr().add(t * nin);
    let da = a.scale.as_ptr().add(t * lanes);
    let st = a.start.as_ptr().add(t * lanes);
    let wp = w.w.as_ptr().add(r0 * nin);
    let dp = dwx.as_ptr();
    let mut acc = [_mm512_setzero_ps(); ROWS];
    for p in 0..nin / 64 {
        let av = _mm512_loadu_si512(aq.add(p * 64).cast());
        let sv = _mm512_loadu_si512(st.add(p * 16).cast());
        let dav = _mm512_loadu_ps(da.add(p * 16));
        for r in 0..rows {
            let wv = _mm512_loadu_si512(wp.add(r * nin + p * 64).cast());
            let s = _mm512_dpbusd_epi32(sv, wv, av);
            let scale = _mm512_mul_ps(_mm512_loadu_ps(dp.add(r * lanes + p * 16)), dav);
            acc[r] = _mm512_add_ps(acc[r], _mm512_mul_ps(_mm512_cvtepi32_ps(s), scale));
        }
    }
    for r in 0..rows {
        _mm512_storeu_ps(sums[r].as_mut_ptr(), acc[r]);
    }
}

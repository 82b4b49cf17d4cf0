//! Runs `mil-core` inference on a Cortex-M4 (QEMU `mps2-an386`): parses the embedded model
//! (any kind: a projection alone, pooled linear, Citation-kNN, M³IC, a set-kernel SVM
//! estimating its box kernel on the device, an MI-kernel SVM, or MILES), classifies every
//! embedded bag and prints, per bag, the label, the scores and the
//! instructions it took; then the stack high-water mark of inference. The host test
//! `tests/firmware.rs` writes the data, builds this crate, runs it and checks the output.
//!
//! `bags.bin` layout (little-endian): `u32` bags, `u32` features D, then per bag a `u32`
//! instance count n followed by n × D `f32` raw features. Quantised models quantise them
//! on the device with [`Model::quantize_instance`].
#![no_std]
#![no_main]

use core::panic::PanicInfo;

use cortex_m as _; // the critical-section implementation
use cortex_m::peripheral::syst::SystClkSource;

use cortex_m_rt::entry;
use cortex_m_semihosting::debug;
#[cfg(not(feature = "panic-check"))]
use cortex_m_semihosting::hprintln;
#[cfg(feature = "svm")]
use mil_core::attention::Attention;
use mil_core::container::Aligned;
use mil_core::keyword::Keyword;
#[cfg(feature = "svm")]
use mil_core::mi_svm::MiKernelSvm;
#[cfg(feature = "svm")]
use mil_core::miles::Miles;
#[cfg(feature = "svm")]
use mil_core::svm::{SetKernelSvm, SvmScratch};
use mil_core::{Decision, Encoding, Error, Instances, Model, ModelKind};

/// The model on an 8-byte boundary (`Aligned`): its Q15 weights are then read a
/// doubleword at a time.
static MODEL_ALIGNED: &Aligned<[u8]> = &Aligned(*include_bytes!(concat!(
    env!("MIL_FIRMWARE_DATA"),
    "/model.milm"
)));
static MODEL: &[u8] = &MODEL_ALIGNED.0;
static BAGS: &[u8] = include_bytes!(concat!(env!("MIL_FIRMWARE_DATA"), "/bags.bin"));

/// The embedded data, hidden from the optimiser in the `panic-check` build: fat LTO would
/// otherwise fold the model's kind and encoding and link only the paths that one model
/// takes; hidden, every kind and encoding is linked, so one build checks them all.
#[inline(always)]
fn embedded(data: &'static [u8]) -> &'static [u8] {
    #[cfg(feature = "panic-check")]
    return core::hint::black_box(data);
    #[cfg(not(feature = "panic-check"))]
    data
}

/// Largest bag, in values (instances × features).
const MAX_VALUES: usize = 16 * 1024;
/// Scratch for inference, in `f32` values: the largest need among the models the tests
/// embed is musk1's raw-feature Citation-kNN (n × 166 projected values of its largest bag,
/// one distance per reference bag, 166 scales: about 7 Ki).
const MAX_SCRATCH: usize = 16 * 1024;
/// Largest number of classes or clusters.
const MAX_OUT: usize = 64;
/// Set-kernel SVM buffers: largest feature count, and estimator floats (point pairs).
#[cfg(feature = "svm")]
const MAX_DIM: usize = 1024;
#[cfg(feature = "svm")]
const MAX_PAIRS: usize = 4 * 1024;
/// Bytes of stack painted below the current stack pointer before each inference.
const PAINT: usize = 64 * 1024;
const PATTERN: u32 = 0xDEAD_BEEF;
/// Iterations of the calibration loop.
const CALIBRATION: u32 = 1_000_000;

/// Reports a line through semihosting; in the `panic-check` build the arguments are kept
/// alive (so inference is not optimised away) but never formatted: `core::fmt`'s float
/// printing and semihosting's `RefCell` carry panic paths of their own, which are not the
/// core's.
macro_rules! say {
    ($fmt:literal $(, $arg:expr)* $(,)?) => {{
        #[cfg(not(feature = "panic-check"))]
        hprintln!($fmt $(, $arg)*);
        #[cfg(feature = "panic-check")]
        {
            $(core::hint::black_box(&$arg);)*
        }
    }};
}

fn word(at: usize) -> Option<u32> {
    embedded(BAGS)
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Fills `PAINT` bytes below the current stack pointer with the pattern; returns the
/// painted range's bottom and top.
fn paint_stack() -> (usize, usize) {
    let sp = cortex_m::register::msp::read() as usize;
    let top = (sp - 64) & !3; // keep clear of this function's own frame
    let bottom = top - PAINT;
    for a in (bottom..top).step_by(4) {
        // SAFETY: RAM below the stack pointer is unused by anything live; the region
        // lies inside the 4 MiB RAM well above .bss (checked against `__sheap` in main).
        unsafe { core::ptr::write_volatile(a as *mut u32, PATTERN) };
    }
    (bottom, top)
}

/// Bytes of the painted range that were overwritten since [`paint_stack`].
fn stack_used(bottom: usize, top: usize) -> usize {
    let mut a = bottom;
    // SAFETY: reads the region painted above.
    while a < top && unsafe { core::ptr::read_volatile(a as *const u32) } == PATTERN {
        a += 4;
    }
    top - a
}

fn fail(what: &str) -> ! {
    say!("error: {}", what);
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

/// Checks the core's fixed-point dot products and squared distances on the device against
/// plain `i64` sums:
/// every length 0..=40, weights and inputs at word-aligned and half-word-misaligned
/// addresses (the `LDRD` and the `LDR` loops of `fixed::dsp`), values including the
/// extremes. Returns the number of cases checked; fails the run on a mismatch.
#[cfg(not(feature = "panic-check"))]
fn dsp_self_test() -> usize {
    const N: usize = 40;
    let mut w0 = Aligned([0u8; 2 * N + 8]);
    let mut w1 = Aligned([0u8; 2 * N + 8]);
    let mut x = Aligned([0i16; N + 4]);
    let value = |i: usize, salt: usize| -> i16 {
        match (i * 7 + salt) % 5 {
            0 => i16::MAX,
            1 => i16::MIN + (salt % 2) as i16,
            _ => ((i * 2_654_435_761 + salt * 40_503) % 65_535) as i32 as i16,
        }
    };
    for i in 0..N + 4 {
        x.0[i] = value(i, 3);
        let (a, b) = (value(i, 1).max(-32767), value(i, 2).max(-32767));
        w0.0[2 * i..2 * i + 2].copy_from_slice(&a.to_le_bytes());
        w1.0[2 * i..2 * i + 2].copy_from_slice(&b.to_le_bytes());
    }
    // The squared-distance loop takes values within ±16383 (`fixed::DIST_MAX`).
    let mut wc = Aligned([0u8; 2 * N + 8]);
    let mut xc = Aligned([0i16; N + 4]);
    for i in 0..N + 4 {
        xc.0[i] = x.0[i].clamp(-16383, 16383);
        let c = value(i, 1).clamp(-16383, 16383);
        wc.0[2 * i..2 * i + 2].copy_from_slice(&c.to_le_bytes());
    }
    let q = |w: &[u8], j: usize| i16::from_le_bytes([w[2 * j], w[2 * j + 1]]) as i64;
    let mut cases = 0;
    for n in 0..=N {
        for (ow, ox) in [(0, 0), (2, 0), (0, 1), (2, 1)] {
            let (a, b) = (&w0.0[ow..ow + 2 * n], &w1.0[ow..ow + 2 * n]);
            let xs = &x.0[ox..ox + n];
            let want0: i64 = (0..n).map(|j| q(a, j) * xs[j] as i64).sum();
            let want1: i64 = (0..n).map(|j| q(b, j) * xs[j] as i64).sum();
            // A second input at the other alignment, for one row against two inputs.
            let x2 = &xc.0[1 - ox..1 - ox + n];
            let want2: i64 = (0..n).map(|j| q(a, j) * x2[j] as i64).sum();
            // A Q7 row pair: the values of `a` read as stored pairs (every i16 is 256·a + b
            // for the a, b that `unpack_q7_pair` gives).
            let pair = |j: usize| mil_core::fixed::unpack_q7_pair(q(a, j) as i16);
            let want7a: i64 = (0..n).map(|j| pair(j).0 as i64 * xs[j] as i64).sum();
            let want7b: i64 = (0..n).map(|j| pair(j).1 as i64 * xs[j] as i64).sum();
            let (c, xcs) = (&wc.0[ow..ow + 2 * n], &xc.0[ox..ox + n]);
            let want_sq: u64 = (0..n)
                .map(|j| ((xcs[j] as i64 - q(c, j)) * (xcs[j] as i64 - q(c, j))) as u64)
                .sum();
            if mil_core::fixed::dot_q15(a, xs) != want0
                || mil_core::fixed::dot2_q15(a, b, xs) != (want0, want1)
                || mil_core::fixed::dot_q15_twice(a, xs, x2) != (want0, want2)
                || mil_core::fixed::dot2_q7_paired(a, xs) != (want7a, want7b)
                || mil_core::fixed::sq_dist_q15(xcs, c) != want_sq
            {
                say!("error: dsp self-test n {} offsets {} {}", n, ow, ox);
                debug::exit(debug::EXIT_FAILURE);
            }
            cases += 1;
        }
    }
    cases
}

#[entry]
fn main() -> ! {
    let mut cp = cortex_m::Peripherals::take().unwrap_or_else(|| fail("peripherals"));
    let f =
        cortex_m::singleton!(: [f32; MAX_VALUES] = [0.0; MAX_VALUES]).unwrap_or_else(|| fail("f"));
    let q =
        cortex_m::singleton!(: [i16; MAX_VALUES] = [0; MAX_VALUES]).unwrap_or_else(|| fail("q"));
    let raw =
        cortex_m::singleton!(: [i16; MAX_VALUES] = [0; MAX_VALUES]).unwrap_or_else(|| fail("raw"));
    let q2 =
        cortex_m::singleton!(: [i16; MAX_VALUES] = [0; MAX_VALUES]).unwrap_or_else(|| fail("q2"));
    let scratch = cortex_m::singleton!(: [f32; MAX_SCRATCH] = [0.0; MAX_SCRATCH])
        .unwrap_or_else(|| fail("scratch"));
    let svm_buffers = cortex_m::singleton!(: SvmBuffers = SvmBuffers::new())
        .unwrap_or_else(|| fail("svm buffers"));
    extern "C" {
        static __sheap: u32;
    }
    // Only the address of the linker symbol is taken.
    let heap_start = core::ptr::addr_of!(__sheap) as usize;
    let sp = cortex_m::register::msp::read() as usize;
    if sp < heap_start + PAINT + 1024 {
        fail("stack region too small to paint");
    }

    #[cfg(not(feature = "panic-check"))]
    say!("dsp self-test: {} cases", dsp_self_test());

    // SysTick on the core clock as an instruction counter (QEMU -icount shift=0).
    cp.SYST.set_clock_source(SystClkSource::Core);
    cp.SYST.set_reload(0x00FF_FFFF);
    cp.SYST.clear_current();
    cp.SYST.enable_counter();
    // One SysTick period is 2²⁴ ticks (≈ 671 M instructions at the calibrated 40 per
    // tick): longer inferences (a set-kernel SVM on large bags) cannot be timed this way.
    let ticks =
        |start: u32| start.wrapping_sub(cortex_m::peripheral::SYST::get_current()) & 0x00FF_FFFF;

    // Calibration: a loop of exactly 2·CALIBRATION instructions (subs, bne).
    let t0 = cortex_m::peripheral::SYST::get_current();
    // SAFETY: a register-only countdown loop.
    unsafe {
        core::arch::asm!(
            "2:",
            "subs {0}, #1",
            "bne 2b",
            inout(reg) CALIBRATION => _,
            options(nomem, nostack)
        );
    }
    say!(
        "calibration ticks {} instructions {}",
        ticks(t0),
        2 * CALIBRATION
    );

    let (bottom, top) = paint_stack();
    let t0 = cortex_m::peripheral::SYST::get_current();
    let parsed = Model::parse(embedded(MODEL));
    let parse_ticks = ticks(t0);
    let parse_stack = stack_used(bottom, top);
    let model = match parsed {
        Ok(m) => m,
        Err(e) => {
            say!("error: model: {}", e);
            debug::exit(debug::EXIT_FAILURE);
            loop {
                cortex_m::asm::wfi();
            }
        }
    };
    say!(
        "model bytes {} kind {} format {} input {} output {} parse_ticks {} parse_stack {}",
        MODEL.len(),
        model.kind().name(),
        model.encoding().name(),
        model.input_dim(),
        model.output_dim(),
        parse_ticks,
        parse_stack
    );

    let n_bags = word(0).unwrap_or_else(|| fail("bags header")) as usize;
    let dim = word(4).unwrap_or_else(|| fail("bags header")) as usize;
    if dim != model.input_dim() {
        fail("bags and model disagree on the number of features");
    }
    let mut at = 8;
    let mut max_stack = 0;
    let mut scores = [0.0f32; MAX_OUT];
    let out = model.output_dim().min(MAX_OUT);
    for b in 0..n_bags {
        let n = word(at).unwrap_or_else(|| fail("bag header")) as usize;
        at += 4;
        let len = n * dim;
        if len > MAX_VALUES {
            fail("bag larger than MAX_VALUES");
        }
        // Panic-free slicing (the `panic-check` build links only without panic paths).
        let (Some(fb), Some(qb), Some(rb), Some(q2b)) = (
            f.get_mut(..len),
            q.get_mut(..len),
            raw.get_mut(..len),
            q2.get_mut(..len),
        ) else {
            fail("bag larger than its buffers")
        };
        for (i, v) in fb.iter_mut().enumerate() {
            *v = f32::from_bits(word(at + 4 * i).unwrap_or_else(|| fail("bag values")));
        }
        at += 4 * len;
        // Quantised models take i16 instances: quantise on the device (timed apart).
        let t0 = cortex_m::peripheral::SYST::get_current();
        let mut quantised = Ok(0);
        // Models with input steps take i16 instances; the SVMs take raw features.
        let takes_i16 = model.input_exponent(0).is_some();
        if takes_i16 {
            for i in 0..n {
                let range = i * dim..(i + 1) * dim;
                if let (Some(x), Some(y)) = (fb.get(range.clone()), qb.get_mut(range)) {
                    quantised = quantised.and(model.quantize_instance(x, y));
                }
            }
        }
        let tq = ticks(t0);
        // Integer-valued features (musk1's are) also arrive as i16, as from an ADC: the
        // integer path must give the same quantised instance (timed apart; 0 when the bag
        // has non-integer values or the model is f32).
        let integral = fb
            .iter()
            .all(|&v| v == (v as i16) as f32 && v.abs() <= 32767.0);
        let mut tq_fixed = 0;
        if takes_i16 && integral {
            for (r, &v) in rb.iter_mut().zip(fb.iter()) {
                *r = v as i16;
            }
            let t0 = cortex_m::peripheral::SYST::get_current();
            for i in 0..n {
                let range = i * dim..(i + 1) * dim;
                if let (Some(x), Some(y)) = (rb.get(range.clone()), q2b.get_mut(range)) {
                    if model.quantize_fixed(x, 0, y).is_err() {
                        fail("quantize_fixed");
                    }
                }
            }
            tq_fixed = ticks(t0);
            if q2b != qb {
                fail("quantize_fixed and quantize_instance disagree");
            }
        }
        let (bottom, top) = paint_stack();
        let t0 = cortex_m::peripheral::SYST::get_current();
        let result = quantised.and_then(|_| {
            infer(
                &model,
                fb,
                qb,
                dim,
                &mut scratch[..],
                scores.get_mut(..out).unwrap_or_default(),
                svm_buffers,
            )
        });
        let t = ticks(t0);
        max_stack = max_stack.max(stack_used(bottom, top));
        // The projection stage alone (quantised models with one), timed apart: its
        // arithmetic floor is its multiply-adds.
        let t0 = cortex_m::peripheral::SYST::get_current();
        if model.encoding() != Encoding::F32 && model.projection().is_some() {
            for i in 0..n {
                if let Some(x) = qb.get(i * dim..(i + 1) * dim) {
                    let projected = model.project(Instances::I16(x), &mut scratch[..]);
                    core::hint::black_box(&projected);
                }
            }
        }
        let tp = ticks(t0);
        match result {
            Ok(d) => {
                say!(
                    "bag {} n {} label {} ticks {} quantise_ticks {} quantise_i16_ticks {} project_ticks {} witness {} scores {:?}",
                    b,
                    n,
                    d.label,
                    t,
                    tq,
                    tq_fixed,
                    tp,
                    d.witness.map_or(-1, |w| w as i64),
                    scores.get(..out).unwrap_or_default()
                );
            }
            Err(e) => {
                say!("error: bag {}: {}", b, e);
                debug::exit(debug::EXIT_FAILURE);
            }
        }
    }
    say!("stack parse {} classify {}", parse_stack, max_stack);
    say!("done");
    debug::exit(debug::EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}

/// One bag's inference by the model's head — its own frame, called below the painted
/// stack top, so that the `stack … classify` line counts everything inference puts on the
/// stack (inlined into `main`, its locals would sit in `main`'s frame, above the paint).
#[inline(never)]
#[cfg_attr(not(feature = "svm"), allow(unused_variables))]
fn infer(
    model: &Model<'_>,
    fb: &[f32],
    qb: &[i16],
    dim: usize,
    scratch: &mut [f32],
    scores: &mut [f32],
    svm_buffers: &mut SvmBuffers,
) -> Result<Decision, Error> {
    #[cfg(feature = "svm")]
    if let Some(svm) = model.svm() {
        return svm_decide(svm, fb, svm_buffers, scores);
    }
    #[cfg(feature = "svm")]
    if let Some(svm) = model.mi_svm() {
        return mi_svm_decide(svm, fb, &mut svm_buffers.x, scratch, scores);
    }
    #[cfg(feature = "svm")]
    if let Some(miles) = model.miles() {
        // The estimator's integers are free here: they hold the nearest instances.
        let SvmBuffers { x, ints, .. } = svm_buffers;
        return miles_decide(miles, fb, x, scratch, ints, scores);
    }
    #[cfg(feature = "svm")]
    if let Some(net) = model.attention() {
        // One pass over the bag's f32 features in the model's scratch (whatever the bag's
        // size): the f32 scratch, the i16 scratch from the SVM buffers.
        return attention_decide(net, fb, scratch, &mut svm_buffers.net, scores);
    }
    #[cfg(feature = "svm")]
    if let Some(vlad) = model.mi_vlad() {
        // The estimator's floats hold the residual sums.
        let SvmBuffers { x, floats, .. } = svm_buffers;
        return Ok(report(vlad.decide(widen(fb, x), scratch, floats)?, scores));
    }
    let bag = if model.encoding() == Encoding::F32 {
        Instances::F32(fb)
    } else {
        Instances::I16(qb)
    };
    if model.kind() == ModelKind::Projection {
        return project_bag(model, bag, dim, scratch, scores);
    }
    model.classify(bag, scratch, scores)
}

/// A projection-only model (kind `projection`) on one bag: projects each instance and
/// reports the sum of the projected instances (`f32`, in order) as the scores, label 0.
fn project_bag(
    model: &Model<'_>,
    bag: Instances<'_>,
    dim: usize,
    out: &mut [f32],
    scores: &mut [f32],
) -> Result<Decision, Error> {
    scores.iter_mut().for_each(|s| *s = 0.0);
    let mut each = |x: Instances<'_>| -> Result<(), Error> {
        model.project(x, out)?;
        for (s, &v) in scores.iter_mut().zip(out.iter()) {
            *s += v;
        }
        Ok(())
    };
    match bag {
        Instances::F32(v) => v
            .chunks_exact(dim.max(1))
            .try_for_each(|x| each(Instances::F32(x)))?,
        Instances::I16(v) => v
            .chunks_exact(dim.max(1))
            .try_for_each(|x| each(Instances::I16(x)))?,
    }
    Ok(Decision {
        label: 0,
        score: 0.0,
        witness: None,
    })
}

#[cfg(feature = "svm")]
/// The estimator's integers in their short form (`ScratchLen::ints_min`): 4 per
/// dimension and a bit per point of the two bags; no column copy of the bags.
const SVM_INTS: usize = 4 * MAX_DIM + (2 * MAX_VALUES).div_ceil(32);

#[cfg(not(feature = "svm"))]
/// Builds without the SVMs have no SVM buffers.
struct SvmBuffers;

#[cfg(not(feature = "svm"))]
impl SvmBuffers {
    const fn new() -> Self {
        SvmBuffers
    }
}

#[cfg(feature = "svm")]
/// Static buffers of the set-kernel SVM: the bag in f64 (the grid can be finer than f32),
/// and the decision's scratch.
struct SvmBuffers {
    x: [f64; MAX_VALUES],
    grid: [u32; MAX_DIM],
    query: [u32; MAX_VALUES],
    reference: [u32; MAX_VALUES],
    floats: [f64; MAX_PAIRS],
    ints: [u32; SVM_INTS],
    /// An attention network's `i16` scratch.
    net: [i16; NET_INTS],
}

#[cfg(feature = "svm")]
impl SvmBuffers {
    const fn new() -> Self {
        SvmBuffers {
            x: [0.0; MAX_VALUES],
            grid: [0; MAX_DIM],
            query: [0; MAX_VALUES],
            reference: [0; MAX_VALUES],
            floats: [0.0; MAX_PAIRS],
            ints: [0; SVM_INTS],
            net: [0; NET_INTS],
        }
    }
}

#[cfg(feature = "svm")]
/// The SVM's decision on one bag, reported like a two-class score vector (0, f).
fn svm_decide(
    svm: &SetKernelSvm<'_>,
    bag: &[f32],
    buffers: &mut SvmBuffers,
    scores: &mut [f32],
) -> Result<Decision, Error> {
    let x = widen(bag, &mut buffers.x);
    let mut scratch = SvmScratch {
        grid: &mut buffers.grid,
        query: &mut buffers.query,
        reference: &mut buffers.reference,
        floats: &mut buffers.floats,
        ints: &mut buffers.ints,
    };
    Ok(report(svm.decide(x, &mut scratch)?, scores))
}

#[cfg(feature = "svm")]
/// The MI-kernel SVM's decision on one bag (raw features widened into `wide`, the
/// scaled instance in `query`), reported like a two-class score vector (0, f).
fn mi_svm_decide(
    svm: &MiKernelSvm<'_>,
    bag: &[f32],
    wide: &mut [f64],
    query: &mut [f32],
    scores: &mut [f32],
) -> Result<Decision, Error> {
    Ok(report(svm.decide(widen(bag, wide), query)?, scores))
}

#[cfg(feature = "svm")]
/// MILES's decision on one bag (raw features widened into `wide`; the z-scored instance
/// and the running minima in `scratch`, the nearest instances in `nearest`), reported
/// like a two-class score vector (0, f).
fn miles_decide(
    miles: &Miles<'_>,
    bag: &[f32],
    wide: &mut [f64],
    scratch: &mut [f32],
    nearest: &mut [u32],
    scores: &mut [f32],
) -> Result<Decision, Error> {
    Ok(report(
        miles.decide(widen(bag, wide), scratch, nearest)?,
        scores,
    ))
}

#[cfg(feature = "svm")]
/// `i16` scratch of an attention network: D + hidden + 2·embed + attend
/// (`Attention::ints_len`; musk1's at the paper's size: 742).
const NET_INTS: usize = 4 * 1024;

#[cfg(feature = "svm")]
/// An attention network's decision on one bag and its witness: the
/// logits in `scores` ((0, logit) for two classes, as the SVMs report).
fn attention_decide(
    net: &Attention<'_>,
    bag: &[f32],
    scratch: &mut [f32],
    ints: &mut [i16],
    scores: &mut [f32],
) -> Result<Decision, Error> {
    let mut logits = [0.0f32; MAX_OUT];
    let logits = logits.get_mut(..net.n_logits()).unwrap_or_default();
    let d = net.decide_f32(bag, scratch, ints, logits)?;
    match (logits, &mut *scores) {
        ([logit], [zero, value, ..]) => {
            *zero = 0.0;
            *value = *logit;
        }
        (logits, scores) => scores
            .iter_mut()
            .zip(logits.iter())
            .for_each(|(s, &l)| *s = l),
    }
    Ok(Decision {
        label: d.label,
        score: d.value,
        witness: Some(d.witness),
    })
}

#[cfg(feature = "svm")]
/// The bag's features in `f64` (the SVMs' input), in the front of `wide`.
fn widen<'w>(bag: &[f32], wide: &'w mut [f64]) -> &'w [f64] {
    let x = wide.get_mut(..bag.len()).unwrap_or_default();
    for (y, &v) in x.iter_mut().zip(bag) {
        *y = f64::from(v);
    }
    x
}

#[cfg(feature = "svm")]
/// An SVM's decision reported like a two-class score vector (0, f).
fn report(d: mil_core::svm::SvmDecision, scores: &mut [f32]) -> Decision {
    if let [zero, value, ..] = scores {
        *zero = 0.0;
        *value = d.value as f32;
    }
    Decision {
        label: d.label,
        score: d.value as f32,
        witness: d.witness,
    }
}

/// `--features panic-check`: the panic handler calls a function that exists nowhere, so
/// the firmware links only if no panic path survives in it (parse, quantisation and
/// inference of every model kind the build supports). Built, not run, by
/// `tests/firmware.rs`.
#[cfg(feature = "panic-check")]
#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    extern "Rust" {
        fn mil_firmware_has_a_reachable_panic() -> !;
    }
    // SAFETY: never called when the check passes: the link fails instead.
    unsafe { mil_firmware_has_a_reachable_panic() }
}

#[cfg(not(feature = "panic-check"))]
#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    hprintln!("panic: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

//! Runs `mil-core` inference on a Cortex-M4 (QEMU `mps2-an386`): parses the embedded model
//! (any kind: pooled linear, Citation-kNN, M³IC, or a set-kernel SVM estimating its box
//! kernel on the device), classifies every embedded bag and prints, per bag, the label, the scores and the
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
use cortex_m_semihosting::{debug, hprintln};
use mil_core::keyword::Keyword;
#[cfg(feature = "svm")]
use mil_core::svm::{SetKernelSvm, SvmScratch};
use mil_core::{Encoding, Instances, Model};

static MODEL: &[u8] = include_bytes!(concat!(env!("MIL_FIRMWARE_DATA"), "/model.milm"));
static BAGS: &[u8] = include_bytes!(concat!(env!("MIL_FIRMWARE_DATA"), "/bags.bin"));

/// Largest bag, in values (instances × features).
const MAX_VALUES: usize = 16 * 1024;
/// Scratch for inference, in `f32` values.
const MAX_SCRATCH: usize = 4 * 1024;
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

fn word(at: usize) -> Option<u32> {
    BAGS.get(at..at + 4)
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
    hprintln!("error: {}", what);
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

#[entry]
fn main() -> ! {
    let mut cp = cortex_m::Peripherals::take().unwrap_or_else(|| fail("peripherals"));
    let f =
        cortex_m::singleton!(: [f32; MAX_VALUES] = [0.0; MAX_VALUES]).unwrap_or_else(|| fail("f"));
    let q =
        cortex_m::singleton!(: [i16; MAX_VALUES] = [0; MAX_VALUES]).unwrap_or_else(|| fail("q"));
    let scratch = cortex_m::singleton!(: [f32; MAX_SCRATCH] = [0.0; MAX_SCRATCH])
        .unwrap_or_else(|| fail("scratch"));
    #[cfg(feature = "svm")]
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
    hprintln!(
        "calibration ticks {} instructions {}",
        ticks(t0),
        2 * CALIBRATION
    );

    let (bottom, top) = paint_stack();
    let t0 = cortex_m::peripheral::SYST::get_current();
    let parsed = Model::parse(MODEL);
    let parse_ticks = ticks(t0);
    let parse_stack = stack_used(bottom, top);
    let model = match parsed {
        Ok(m) => m,
        Err(e) => {
            hprintln!("error: model: {}", e);
            debug::exit(debug::EXIT_FAILURE);
            loop {
                cortex_m::asm::wfi();
            }
        }
    };
    hprintln!(
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
        for (i, v) in f[..len].iter_mut().enumerate() {
            *v = f32::from_bits(word(at + 4 * i).unwrap_or_else(|| fail("bag values")));
        }
        at += 4 * len;
        // Quantised models take i16 instances: quantise on the device (timed apart).
        let t0 = cortex_m::peripheral::SYST::get_current();
        let mut quantised = Ok(0);
        if model.encoding() != Encoding::F32 {
            for (x, y) in f[..len]
                .chunks_exact(dim)
                .zip(q[..len].chunks_exact_mut(dim))
            {
                quantised = quantised.and(model.quantize_instance(x, y));
            }
        }
        let tq = ticks(t0);
        let (bottom, top) = paint_stack();
        let t0 = cortex_m::peripheral::SYST::get_current();
        let result = quantised.and_then(|_| {
            #[cfg(feature = "svm")]
            if let Some(svm) = model.svm() {
                return svm_decide(svm, &f[..len], svm_buffers, &mut scores[..out]);
            }
            let bag = if model.encoding() == Encoding::F32 {
                Instances::F32(&f[..len])
            } else {
                Instances::I16(&q[..len])
            };
            model.classify(bag, &mut scratch[..], &mut scores[..out])
        });
        let t = ticks(t0);
        max_stack = max_stack.max(stack_used(bottom, top));
        match result {
            Ok(d) => {
                hprintln!(
                    "bag {} n {} label {} ticks {} quantise_ticks {} scores {:?}",
                    b,
                    n,
                    d.label,
                    t,
                    tq,
                    &scores[..out]
                );
            }
            Err(e) => {
                hprintln!("error: bag {}: {}", b, e);
                debug::exit(debug::EXIT_FAILURE);
            }
        }
    }
    hprintln!("stack parse {} classify {}", parse_stack, max_stack);
    hprintln!("done");
    debug::exit(debug::EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
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
    ints: [u32; 4 * MAX_DIM],
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
            ints: [0; 4 * MAX_DIM],
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
) -> Result<mil_core::Decision, mil_core::Error> {
    let x = &mut buffers.x[..bag.len()];
    for (y, &v) in x.iter_mut().zip(bag) {
        *y = f64::from(v);
    }
    let mut scratch = SvmScratch {
        grid: &mut buffers.grid,
        query: &mut buffers.query,
        reference: &mut buffers.reference,
        floats: &mut buffers.floats,
        ints: &mut buffers.ints,
    };
    let d = svm.decide(x, &mut scratch)?;
    if let [zero, value, ..] = scores {
        *zero = 0.0;
        *value = d.value as f32;
    }
    Ok(mil_core::Decision {
        label: d.label,
        score: d.value as f32,
    })
}

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    hprintln!("panic: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

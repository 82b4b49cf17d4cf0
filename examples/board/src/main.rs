//! A starting point for a board: `mil-core` classifies bags on a Cortex-M with buffers
//! sized at compile time from the model it embeds.
//!
//! - `data/model.milm`: a model written by `mil export … --format q15 --input integer`
//!   (here musk1's B-MIDA d = 10 + MILR, 3,876 bytes; `make-data.sh` regenerates it). Any model that
//!   [`Model::classify`] runs fits: linear (MILR, MI-ALM), Citation-kNN, M³IC.
//! - `data/bags.bin`: the instances as a sensor front end delivers them — `i16` counts
//!   (musk1's features are integers), little-endian: `u32` bags, `u32` features D, then
//!   per bag a `u32` instance count n and n × D `i16`.
//!
//! The model is parsed and checked once at start; each instance is quantised with
//! integer shifts only ([`Model::quantize_fixed`], no FPU needed; a copy here, since
//! `--input integer` gave every feature step 1, the counts' own) and each bag gets one
//! line `bag B: label L` over semihosting (a debugger or QEMU prints it; on a board
//! without one, send the label elsewhere). `cargo run --release` runs it under QEMU's
//! Cortex-M4; `cargo build --release --target thumbv6m-none-eabi` builds it for a
//! Cortex-M0.
#![no_std]
#![no_main]

use core::panic::PanicInfo;

use cortex_m as _; // the critical-section implementation
use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use mil_core::container::Aligned;
use mil_core::model::{header_dims, scratch_bound};
use mil_core::{Instances, Model};

/// The exported model, in flash, on an 8-byte boundary (`Aligned`: the Q15 weights are
/// then read a doubleword at a time; plain `include_bytes!` is 1-byte aligned).
static MODEL_ALIGNED: &Aligned<[u8]> = &Aligned(*include_bytes!("../data/model.milm"));
const MODEL: &[u8] = &MODEL_ALIGNED.0;
/// The bags to classify, in flash (on a board they would come from a sensor).
const BAGS: &[u8] = include_bytes!("../data/bags.bin");
/// The largest bag the firmware accepts, in instances.
const MAX_INSTANCES: usize = 40;
/// Features D and classes, read from the model's header at compile time.
const D: usize = header_dims(MODEL).0;
const CLASSES: usize = header_dims(MODEL).1;
/// `f32` scratch [`Model::classify`] needs for bags of `MAX_INSTANCES`, from the model's
/// own figures at compile time (16 for this model: d + 3 × classes).
const SCRATCH: usize = scratch_bound(MODEL, MAX_INSTANCES);

#[panic_handler]
fn panic(_: &PanicInfo) -> ! {
    loop {
        cortex_m::asm::nop();
    }
}

fn stop(ok: bool) -> ! {
    debug::exit(if ok {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    loop {
        cortex_m::asm::nop();
    }
}

/// The little-endian `u32` at `at` of [`BAGS`].
fn word(at: usize) -> Option<usize> {
    let b = BAGS.get(at..at + 4)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
}

#[entry]
fn main() -> ! {
    let model = match Model::parse(MODEL) {
        Ok(m) => m,
        Err(e) => {
            hprintln!("error: the model: {}", e);
            stop(false)
        }
    };
    let (Some(raw), Some(q), Some(scratch), Some(scores)) = (
        cortex_m::singleton!(: [i16; D] = [0; D]),
        cortex_m::singleton!(: [i16; MAX_INSTANCES * D] = [0; MAX_INSTANCES * D]),
        cortex_m::singleton!(: [f32; SCRATCH] = [0.0; SCRATCH]),
        cortex_m::singleton!(: [f32; CLASSES] = [0.0; CLASSES]),
    ) else {
        stop(false)
    };
    let (Some(n_bags), Some(d)) = (word(0), word(4)) else {
        stop(false)
    };
    if d != D {
        hprintln!("error: the bags have {} features, the model {}", d, D);
        stop(false);
    }
    let mut at = 8;
    for b in 0..n_bags {
        let Some(n) = word(at).filter(|&n| (1..=MAX_INSTANCES).contains(&n)) else {
            hprintln!("error: bag {}: size out of range", b);
            stop(false)
        };
        at += 4;
        for (i, row) in q.chunks_exact_mut(D).take(n).enumerate() {
            let Some(bytes) = BAGS.get(at + 2 * D * i..at + 2 * D * (i + 1)) else {
                stop(false)
            };
            for (v, pair) in raw.iter_mut().zip(bytes.chunks_exact(2)) {
                *v = i16::from_le_bytes([pair[0], pair[1]]);
            }
            // Integer counts: 0 fractional bits.
            if model.quantize_fixed(&raw[..], 0, row).is_err() {
                stop(false)
            }
        }
        at += 2 * D * n;
        match model.classify(
            Instances::I16(&q[..n * D]),
            &mut scratch[..],
            &mut scores[..],
        ) {
            Ok(decision) => hprintln!("bag {}: label {}", b, decision.label),
            Err(e) => {
                hprintln!("error: bag {}: {}", b, e);
                stop(false)
            }
        }
    }
    stop(true)
}

//! A starting point for a board: `mil-core` classifies bags on a Cortex-M with buffers
//! sized at compile time from the model it embeds.
//!
//! - `data/model.milm`: a model written by `mil export` (here musk1's B-MIDA d = 10 +
//!   MILR in Q15 with `--input integer`, 3,876 bytes; `make-data.sh` regenerates it, and
//!   `make-data.sh miles` writes musk1's MILES model instead). Any model that
//!   [`Model::classify`] runs fits — linear (MILR, MI-ALM), Citation-kNN, M³IC — and
//!   MILES, miVLAD and miFV (`make-data.sh mi-vlad`, `make-data.sh mi-fv`) and the
//!   attention network (`make-data.sh attention`), which have their own entry points
//!   ([`mil_core::miles::Miles::begin`], [`mil_core::mi_vlad::MiVlad::begin`],
//!   [`mil_core::attention::Attention::begin`]): the model's kind, read from its header
//!   at compile time, chooses the path and sizes its buffers.
//! - `data/bags.bin`: the instances as a sensor front end delivers them — `i16` counts
//!   (musk1's features are integers), little-endian: `u32` bags, `u32` features D, then
//!   per bag a `u32` instance count n and n × D `i16`.
//!
//! `MIL_BOARD_DATA=DIR` embeds `DIR/model.milm` and `DIR/bags.bin` instead of `data/`'s
//! (tests/firmware.rs runs a MILES model so).
//!
//! The model is parsed and checked once at start. For [`Model::classify`] each instance
//! is quantised with integer shifts only ([`Model::quantize_fixed`], no FPU needed; a
//! copy here, since `--input integer` gave every feature step 1, the counts' own).
//! MILES, miVLAD/miFV and the attention network take raw features: each instance's
//! counts are widened as they are read and added to one pass over the bag
//! ([`mil_core::miles::MilesPass`], [`mil_core::mi_vlad::MiVladPass`],
//! [`mil_core::attention::AttentionPass`]), so the firmware holds one instance, not the
//! bag. Each bag gets one line
//! `bag B: label L` over semihosting (a debugger or QEMU prints it; on a board without
//! one, send the label elsewhere). `cargo run --release` runs it under QEMU's
//! Cortex-M4; `cargo build --release --target thumbv6m-none-eabi` builds it for a
//! Cortex-M0.
#![no_std]
#![no_main]

use core::panic::PanicInfo;

use cortex_m as _; // the critical-section implementation
use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};
use mil_core::container::{Aligned, ModelKind};
use mil_core::model::{
    attention_buffers, header_dims, header_kind, mi_vlad_buffers, miles_buffers, scratch_bound,
};
use mil_core::{Error, Instances, Model};

/// The exported model, in flash, on an 8-byte boundary (`Aligned`: the Q15 weights are
/// then read a doubleword at a time; plain `include_bytes!` is 1-byte aligned).
static MODEL_ALIGNED: &Aligned<[u8]> =
    &Aligned(*include_bytes!(concat!(env!("OUT_DIR"), "/model.milm")));
const MODEL: &[u8] = &MODEL_ALIGNED.0;
/// The bags to classify, in flash (on a board they would come from a sensor).
const BAGS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/bags.bin"));
/// The largest bag the firmware accepts, in instances.
const MAX_INSTANCES: usize = 40;
/// Features D and classes, read from the model's header at compile time.
const D: usize = header_dims(MODEL).0;
const CLASSES: usize = header_dims(MODEL).1;
/// A MILES model (its own entry point, one instance at a time), from the header.
const MILES: bool = matches!(header_kind(MODEL), Some(ModelKind::Miles));
const NET: bool = matches!(header_kind(MODEL), Some(ModelKind::Attention));
/// A miVLAD or miFV model (one instance at a time, like MILES), from the header.
const VLAD: bool = matches!(
    header_kind(MODEL),
    Some(ModelKind::MiVlad | ModelKind::MiFv)
);
/// Models that take each instance's raw features, widened, one at a time.
const RAW: bool = MILES || NET || VLAD;
/// The quantised bag [`Model::classify`] takes (none for the raw-feature kinds).
const BAG_VALUES: usize = if RAW { 0 } else { MAX_INSTANCES * D };
/// `f32` scratch [`Model::classify`] needs for bags of `MAX_INSTANCES`, from the model's
/// own figures at compile time (16 for the MILR model: d + 3 × classes; 0 for MILES).
const SCRATCH: usize = scratch_bound(MODEL, MAX_INSTANCES);
/// The instance widened to `f64` (D for the raw-feature kinds, 0 for the others).
const WIDE: usize = if RAW { D } else { 0 };
/// MILES's buffers (0 for other kinds): D + 3K `f32` of scratch and K `u32` (K
/// prototypes; 166 + 120 and 40 for musk1's MILES model).
const MILES_SCRATCH: usize = miles_buffers(MODEL).0;
const PROTOTYPES: usize = miles_buffers(MODEL).1;
const NET_SCRATCH: usize = attention_buffers(MODEL).0;
const NET_INTS: usize = attention_buffers(MODEL).1;
/// miVLAD's and miFV's buffers (0 for other kinds): D + k `f32` of scratch and
/// 2·width + k `f64` of sums (k centres; 166 + 1 and 333 for musk1's miVLAD model).
const VLAD_SCRATCH: usize = mi_vlad_buffers(MODEL).0;
const VLAD_SUMS: usize = mi_vlad_buffers(MODEL).1;

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

/// One instance's `i16` counts (2D little-endian bytes) into `raw`.
fn read_counts(bytes: &[u8], raw: &mut [i16; D]) {
    for (v, pair) in raw.iter_mut().zip(bytes.chunks_exact(2)) {
        *v = i16::from_le_bytes([pair[0], pair[1]]);
    }
}

/// One instance's counts (2D bytes) widened to `f64` in `wide`, for the kinds that take
/// raw features.
fn widen(counts: &[u8], raw: &mut [i16; D], wide: &mut [f64]) {
    read_counts(counts, raw);
    for (w, &c) in wide.iter_mut().zip(raw.iter()) {
        *w = f64::from(c);
    }
}

/// The label of [`Model::classify`] on a bag's counts (`bag`: n × 2D bytes).
fn classify_label(
    model: &Model<'_>,
    bag: &[u8],
    raw: &mut [i16; D],
    q: &mut [i16],
    scratch: &mut [f32],
    scores: &mut [f32],
) -> Result<usize, Error> {
    let values = bag.len() / 2;
    let got = q.len();
    let q = q.get_mut(..values).ok_or(Error::BufferTooSmall {
        needed: values,
        got,
    })?;
    for (row, counts) in q.chunks_exact_mut(D).zip(bag.chunks_exact(2 * D)) {
        read_counts(counts, raw);
        // Integer counts: 0 fractional bits.
        model.quantize_fixed(&raw[..], 0, row)?;
    }
    Ok(model.classify(Instances::I16(q), scratch, scores)?.label)
}

/// The label of a MILES model on a bag's counts, each instance widened to `f64` and
/// added to the pass as it is read.
fn miles_label(
    model: &Model<'_>,
    bag: &[u8],
    raw: &mut [i16; D],
    wide: &mut [f64],
    scratch: &mut [f32],
    nearest: &mut [u32],
) -> Result<usize, Error> {
    let miles = model.miles().ok_or(Error::WrongModelKind)?;
    let mut pass = miles.begin(scratch, nearest)?;
    for counts in bag.chunks_exact(2 * D) {
        widen(counts, raw, wide);
        pass.add(wide)?;
    }
    Ok(pass.finish()?.label)
}

/// A miVLAD or miFV model's label on a bag's counts, each instance widened to `f64`
/// and added to the pass as it is read (D + k `f32` and 2·width + k `f64`, whatever the
/// bag's size).
fn mi_vlad_label(
    model: &Model<'_>,
    bag: &[u8],
    raw: &mut [i16; D],
    wide: &mut [f64],
    scratch: &mut [f32],
    sums: &mut [f64],
) -> Result<usize, Error> {
    let vlad = model.mi_vlad().ok_or(Error::WrongModelKind)?;
    let mut pass = vlad.begin(scratch, sums)?;
    for counts in bag.chunks_exact(2 * D) {
        widen(counts, raw, wide);
        pass.add(wide)?;
    }
    Ok(pass.finish()?.label)
}

/// An attention network's label of one bag of counts: each instance widened and added to
/// one pass (scratch of O(D + hidden), whatever the bag's size).
fn attention_label(
    model: &Model<'_>,
    bag: &[u8],
    raw: &mut [i16; D],
    wide: &mut [f64],
    scratch: &mut [f32],
    ints: &mut [i16],
    logits: &mut [f32],
) -> Result<usize, Error> {
    let net = model.attention().ok_or(Error::WrongModelKind)?;
    let mut pass = net.begin(scratch, ints)?;
    for counts in bag.chunks_exact(2 * D) {
        widen(counts, raw, wide);
        pass.add(wide)?;
    }
    Ok(pass.finish(logits)?.label)
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
        cortex_m::singleton!(: [i16; BAG_VALUES] = [0; BAG_VALUES]),
        cortex_m::singleton!(: [f32; SCRATCH] = [0.0; SCRATCH]),
        cortex_m::singleton!(: [f32; CLASSES] = [0.0; CLASSES]),
    ) else {
        stop(false)
    };
    let (Some(wide), Some(miles_scratch), Some(nearest)) = (
        cortex_m::singleton!(: [f64; WIDE] = [0.0; WIDE]),
        cortex_m::singleton!(: [f32; MILES_SCRATCH] = [0.0; MILES_SCRATCH]),
        cortex_m::singleton!(: [u32; PROTOTYPES] = [0; PROTOTYPES]),
    ) else {
        stop(false)
    };
    let (Some(net_scratch), Some(net_ints), Some(vlad_scratch), Some(vlad_sums)) = (
        cortex_m::singleton!(: [f32; NET_SCRATCH] = [0.0; NET_SCRATCH]),
        cortex_m::singleton!(: [i16; NET_INTS] = [0; NET_INTS]),
        cortex_m::singleton!(: [f32; VLAD_SCRATCH] = [0.0; VLAD_SCRATCH]),
        cortex_m::singleton!(: [f64; VLAD_SUMS] = [0.0; VLAD_SUMS]),
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
        let Some(bag) = BAGS.get(at..at + 2 * D * n) else {
            hprintln!("error: bag {}: truncated", b);
            stop(false)
        };
        at += 2 * D * n;
        let label = if MILES {
            miles_label(&model, bag, raw, wide, miles_scratch, nearest)
        } else if VLAD {
            mi_vlad_label(&model, bag, raw, wide, vlad_scratch, vlad_sums)
        } else if NET {
            attention_label(&model, bag, raw, wide, net_scratch, net_ints, scores)
        } else {
            classify_label(&model, bag, raw, q, scratch, scores)
        };
        match label {
            Ok(label) => hprintln!("bag {}: label {}", b, label),
            Err(e) => {
                hprintln!("error: bag {}: {}", b, e);
                stop(false)
            }
        }
    }
    stop(true)
}

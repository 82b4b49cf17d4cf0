//! The Armv7E-M loops of [`super::dot2_q15`] and its siblings: the crate's one `unsafe`
//! code, compiled for `cfg(mil_dsp)` only (`core/build.rs`), with a plain-Rust twin of
//! every loop in the parent module that the tests compare against.

/// One input pair of both rows: a word of two inputs and a word of two weights of
/// each row, loaded with post-increment, and two `SMLALD`s.
macro_rules! pair_step {
    () => {
        "ldr {t0}, [{x}], #4
         ldr {t1}, [{w0}], #4
         smlald {lo0}, {hi0}, {t1}, {t0}
         ldr {t1}, [{w1}], #4
         smlald {lo1}, {hi1}, {t1}, {t0}"
    };
}

/// Two input pairs of both rows from word-aligned addresses: a doubleword of four
/// inputs and a doubleword of four weights of each row (`LDRD`, post-increment), and
/// four `SMLALD`s: 7 instructions for 8 multiply-adds.
macro_rules! quad_step {
    () => {
        "ldrd {t0}, {t1}, [{x}], #8
         ldrd {a}, {b}, [{w0}], #8
         smlald {lo0}, {hi0}, {a}, {t0}
         smlald {lo0}, {hi0}, {b}, {t1}
         ldrd {a}, {b}, [{w1}], #8
         smlald {lo1}, {hi1}, {a}, {t0}
         smlald {lo1}, {hi1}, {b}, {t1}"
    };
}

/// Two input pairs of one row from word-aligned addresses: a doubleword of four
/// inputs and of four weights (`LDRD`, post-increment), two `SMLALD`s.
macro_rules! row_quad {
    () => {
        "ldrd {t0}, {t1}, [{x}], #8
         ldrd {a}, {b}, [{w}], #8
         smlald {lo}, {hi}, {a}, {t0}
         smlald {lo}, {hi}, {b}, {t1}"
    };
}

/// One row's exact sum over the first `2·pairs` inputs, as [`dot2_q15_pairs`] for
/// one row. When `x` and `w` are word-aligned: 16 inputs per pass (four `LDRD`
/// pairs and eight `SMLALD`s, `cmp`/`bne`: 18 instructions), then at most one step
/// of 8 and one of 4 inputs without a loop; what is left (or everything, unaligned)
/// goes a word at a time.
pub(super) fn dot_q15_pairs(w: &[u8], x: &[i16], pairs: usize) -> i64 {
    let pairs = pairs.min(w.len() / 4).min(x.len() / 2);
    let (mut lo, mut hi) = (0u32, 0u32);
    let (mut px, mut pw) = (x.as_ptr(), w.as_ptr());
    let aligned = (px as usize | pw as usize) & 3 == 0;
    let mut left = pairs;
    if aligned && left >= 8 {
        let end = px.wrapping_add(16 * (left / 8));
        left %= 8;
        // SAFETY: each quarter of a pass reads 8 bytes at x and at w (`LDRD` from
        // word-aligned addresses, checked above and kept by the 8-byte increments)
        // and advances both by 8; pairs/8 passes read 32·(pairs/8) ≤ 4·pairs bytes of
        // each slice, within both (`pairs` is clamped above). SMLALD as in
        // `dot2_q15_pairs`. `cmp` sets the flags; nothing is written to memory.
        unsafe {
            core::arch::asm!(
                "2:",
                row_quad!(),
                row_quad!(),
                row_quad!(),
                row_quad!(),
                "cmp {x}, {end}",
                "bne 2b",
                x = inout(reg) px,
                w = inout(reg) pw,
                end = in(reg) end,
                lo = inout(reg) lo,
                hi = inout(reg) hi,
                t0 = out(reg) _,
                t1 = out(reg) _,
                a = out(reg) _,
                b = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    if aligned && left >= 4 {
        left -= 4;
        // SAFETY: 16 more bytes of x and of w from where the loop above left the
        // pointers (still word-aligned), within both: at least 4 of the `pairs`
        // pairs were left. SMLALD as above; nothing is written to memory.
        unsafe {
            core::arch::asm!(
                row_quad!(),
                row_quad!(),
                x = inout(reg) px,
                w = inout(reg) pw,
                lo = inout(reg) lo,
                hi = inout(reg) hi,
                t0 = out(reg) _,
                t1 = out(reg) _,
                a = out(reg) _,
                b = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    if aligned && left >= 2 {
        left -= 2;
        // SAFETY: 8 more bytes of each, as above, with at least 2 pairs left.
        unsafe {
            core::arch::asm!(
                row_quad!(),
                x = inout(reg) px,
                w = inout(reg) pw,
                lo = inout(reg) lo,
                hi = inout(reg) hi,
                t0 = out(reg) _,
                t1 = out(reg) _,
                a = out(reg) _,
                b = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    if left > 0 {
        let end = px.wrapping_add(2 * left);
        // SAFETY: `left` ≥ 1 more pairs from where the code above left the pointers
        // (byte 4·(pairs − left) of each slice), one word of x and of w per pass
        // (unaligned `LDR` is valid on Armv7E-M), ending at byte 4·pairs, within both.
        // SMLALD as above; `cmp` sets the flags; nothing is written to memory.
        unsafe {
            core::arch::asm!(
                "2:",
                "ldr {t0}, [{x}], #4",
                "ldr {a}, [{w}], #4",
                "smlald {lo}, {hi}, {a}, {t0}",
                "cmp {x}, {end}",
                "bne 2b",
                x = inout(reg) px => _,
                w = inout(reg) pw => _,
                end = in(reg) end,
                lo = inout(reg) lo,
                hi = inout(reg) hi,
                t0 = out(reg) _,
                a = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    ((u64::from(hi) << 32) | u64::from(lo)) as i64
}

/// `Σ (q_k − r_k)²` over the first `2·pairs` coordinates, as [`super::sq_dist_q15`]
/// requires (both within ±16383, so `SSUB16`'s differences are exact): one word of
/// each per pass (unaligned `LDR` is valid on Armv7E-M; the query often lives on the
/// stack at a half-word boundary), `SSUB16`, `SMLALD` of the difference with itself.
#[inline]
pub(super) fn sq_dist_q15_pairs(q: &[i16], r: &[u8], pairs: usize) -> u64 {
    let pairs = pairs.min(r.len() / 4).min(q.len() / 2);
    let (mut lo, mut hi) = (0u32, 0u32);
    if pairs > 0 {
        let (pq, pr) = (q.as_ptr(), r.as_ptr());
        let end = pq.wrapping_add(2 * pairs);
        // SAFETY: `pairs` ≥ 1 passes (clamped above to both slices), each reading one
        // word of q and of r and advancing both by 4 bytes, ending at byte 4·pairs,
        // within both. SSUB16/SMLALD only touch registers; `cmp` sets the flags;
        // nothing is written to memory.
        unsafe {
            core::arch::asm!(
                "2:",
                "ldr {t0}, [{q}], #4",
                "ldr {a}, [{r}], #4",
                "ssub16 {a}, {t0}, {a}",
                "smlald {lo}, {hi}, {a}, {a}",
                "cmp {q}, {end}",
                "bne 2b",
                q = inout(reg) pq => _,
                r = inout(reg) pr => _,
                end = in(reg) end,
                lo = inout(reg) lo,
                hi = inout(reg) hi,
                t0 = out(reg) _,
                a = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    (u64::from(hi) << 32) | u64::from(lo)
}

/// The exact sums of both rows over the first `2·pairs` inputs; the caller keeps
/// `2·pairs` within `x` and `4·pairs` bytes within both rows.
///
/// When all three start on a word boundary (the container aligns every section, and
/// rows of an even length keep the alignment) the loop reads doublewords, 7.5
/// instructions per 4 inputs of both rows (four quads and the loop's `cmp`/`bne` per
/// pass); otherwise words, 12 per 4 inputs (`LDRD` faults on unaligned addresses, `LDR`
/// does not).
pub(super) fn dot2_q15_pairs(w0: &[u8], w1: &[u8], x: &[i16], pairs: usize) -> (i64, i64) {
    pairs_against_two(as_bytes(x), w0, w1, pairs)
}

/// One row `w` against two inputs `x0`, `x1`: [`dot2_q15_pairs`] with the roles of
/// the shared operand and the two others exchanged (`SMLALD`'s products do not
/// depend on the order of their factors), so each weight word is loaded once for
/// both inputs.
pub(super) fn dot_q15_twice_pairs(w: &[u8], x0: &[i16], x1: &[i16], pairs: usize) -> (i64, i64) {
    pairs_against_two(w, as_bytes(x0), as_bytes(x1), pairs)
}

/// Four inputs of a Q7 row pair stored as `i16` values h = 256·a + b
/// ([`super::pack_q7_pair`]): a doubleword of inputs and one of four stored values,
/// `SMLALD` of the values as they are (Σ x·h = 256·Σ x·a + Σ x·b into the first
/// accumulator), `SXTB16` of each word's low bytes (the b's, sign-extended) and
/// `SMLALD` of those (Σ x·b into the second): 8 instructions for 8 multiply-adds.
macro_rules! paired_q7_quad {
    () => {
        "ldrd {t0}, {t1}, [{x}], #8
         ldrd {a}, {b}, [{w}], #8
         smlald {flo}, {fhi}, {a}, {t0}
         sxtb16 {a}, {a}
         smlald {llo}, {lhi}, {a}, {t0}
         smlald {flo}, {fhi}, {b}, {t1}
         sxtb16 {b}, {b}
         smlald {llo}, {lhi}, {b}, {t1}"
    };
}

/// Two inputs of a Q7 row pair, as `paired_q7_quad!` with word loads (valid
/// unaligned on Armv7E-M).
macro_rules! paired_q7_step {
    () => {
        "ldr {t0}, [{x}], #4
         ldr {a}, [{w}], #4
         smlald {flo}, {fhi}, {a}, {t0}
         sxtb16 {a}, {a}
         smlald {llo}, {lhi}, {a}, {t0}"
    };
}

/// Over the first `2·pairs` inputs (clamped to what both hold), the exact sums
/// (Σ x·h, Σ x·b) of a Q7 row pair `w` stored as values h = 256·a + b (see
/// [`super::dot2_q7_paired`]). When `x` and `w` are word-aligned: 16 inputs per pass
/// (four `paired_q7_quad!`s and `cmp`/`bne`: 34 instructions), then 4 at a time; what
/// is left (or everything, unaligned) goes a word at a time.
pub(super) fn paired_q7_sums(w: &[u8], x: &[i16], pairs: usize) -> (i64, i64) {
    let pairs = pairs.min(w.len() / 4).min(x.len() / 2);
    let (mut flo, mut fhi, mut llo, mut lhi) = (0u32, 0u32, 0u32, 0u32);
    let (mut px, mut pw) = (x.as_ptr(), w.as_ptr());
    let aligned = (px as usize | pw as usize) & 3 == 0;
    let mut left = pairs;
    if aligned && left >= 8 {
        let end = px.wrapping_add(16 * (left / 8));
        left %= 8;
        // SAFETY: each quad reads 8 bytes at x and at w (`LDRD` from word-aligned
        // addresses, checked above and kept by the 8-byte increments) and advances
        // both by 8; pairs/8 passes of four read 32·(pairs/8) ≤ 4·pairs bytes of each
        // slice, within both (`pairs` is clamped above). SXTB16 only moves register
        // bytes; SMLALD adds two exact 16 × 16 products to a 64-bit hi:lo (in little
        // endian the low half of each word is the earlier value, so value j of one
        // meets value j of the other). `cmp` sets the flags (not preserved); nothing
        // is written to memory. The pointers come back advanced past what was read.
        unsafe {
            core::arch::asm!(
                "2:",
                paired_q7_quad!(),
                paired_q7_quad!(),
                paired_q7_quad!(),
                paired_q7_quad!(),
                "cmp {x}, {end}",
                "bne 2b",
                x = inout(reg) px,
                w = inout(reg) pw,
                end = in(reg) end,
                flo = inout(reg) flo,
                fhi = inout(reg) fhi,
                llo = inout(reg) llo,
                lhi = inout(reg) lhi,
                t0 = out(reg) _,
                t1 = out(reg) _,
                a = out(reg) _,
                b = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    if aligned && left >= 2 {
        let end = px.wrapping_add(4 * (left / 2));
        left %= 2;
        // SAFETY: as above, one quad per pass from where the loop left the (still
        // aligned) pointers: left/2 passes read 8·(left/2) ≤ 4·left bytes of each
        // slice, which the `left` pairs still hold.
        unsafe {
            core::arch::asm!(
                "2:",
                paired_q7_quad!(),
                "cmp {x}, {end}",
                "bne 2b",
                x = inout(reg) px,
                w = inout(reg) pw,
                end = in(reg) end,
                flo = inout(reg) flo,
                fhi = inout(reg) fhi,
                llo = inout(reg) llo,
                lhi = inout(reg) lhi,
                t0 = out(reg) _,
                t1 = out(reg) _,
                a = out(reg) _,
                b = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    if left > 0 {
        let end = px.wrapping_add(2 * left);
        // SAFETY: `left` ≥ 1 more pairs from where the code above left the pointers
        // (byte 4·(pairs − left) of each slice), one word of x and of w per pass
        // (unaligned `LDR` is valid on Armv7E-M), ending at byte 4·pairs, within
        // both. SXTB16/SMLALD as above; `cmp` sets the flags; nothing is written to
        // memory.
        unsafe {
            core::arch::asm!(
                "2:",
                paired_q7_step!(),
                "cmp {x}, {end}",
                "bne 2b",
                x = inout(reg) px => _,
                w = inout(reg) pw => _,
                end = in(reg) end,
                flo = inout(reg) flo,
                fhi = inout(reg) fhi,
                llo = inout(reg) llo,
                lhi = inout(reg) lhi,
                t0 = out(reg) _,
                a = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    let wide = |lo: u32, hi: u32| ((u64::from(hi) << 32) | u64::from(lo)) as i64;
    (wide(flo, fhi), wide(llo, lhi))
}

/// The bytes of `i16` values in memory order (little endian on Arm: the low byte of
/// each value first, as the container stores Q15 weights).
fn as_bytes(x: &[i16]) -> &[u8] {
    // SAFETY: `i16` has no padding bytes and `u8` no alignment requirement; the
    // slice covers exactly the 2·len bytes of `x`, borrowed for its lifetime.
    unsafe { core::slice::from_raw_parts(x.as_ptr().cast::<u8>(), 2 * x.len()) }
}

/// The exact sums over the first `2·pairs` pairs of 16-bit values of `shared`
/// against those of `w0` and of `w1`: the loops of [`dot2_q15_pairs`], all three
/// read as bytes.
fn pairs_against_two(shared: &[u8], w0: &[u8], w1: &[u8], pairs: usize) -> (i64, i64) {
    let pairs = pairs
        .min(w0.len() / 4)
        .min(w1.len() / 4)
        .min(shared.len() / 4);
    let (mut lo0, mut hi0, mut lo1, mut hi1) = (0u32, 0u32, 0u32, 0u32);
    let (mut px, mut p0, mut p1) = (shared.as_ptr(), w0.as_ptr(), w1.as_ptr());
    let aligned = (px as usize | p0 as usize | p1 as usize) & 3 == 0;
    let mut left = pairs;
    if aligned && left >= 4 {
        // Passes of 8 pairs (four quad steps), then at most one of 4 and one of 2.
        let passes = left / 8;
        let end = px.wrapping_add(32 * passes);
        left -= 8 * passes;
        if passes > 0 {
            // SAFETY: each quad step reads 8 bytes at `shared` (`x`), w0 and w1 (two
            // `LDRD`s from word-aligned addresses, checked above, and kept aligned by
            // the 8-byte increments) and advances each by 8; `passes` = pairs/8
            // passes of four steps read 32·passes ≤ 4·pairs bytes of every slice,
            // within all three (`pairs` is clamped above). SMLALD adds the two signed
            // 16 × 16 products of its operands' halves to the 64-bit accumulator
            // hi:lo exactly; in little endian the low half of each word is the
            // earlier value, so value j of one meets value j of the other. `cmp` sets
            // the flags (not preserved); nothing is written to memory. The pointers
            // come back advanced past what was read.
            unsafe {
                core::arch::asm!(
                    "2:",
                    quad_step!(),
                    quad_step!(),
                    quad_step!(),
                    quad_step!(),
                    "cmp {x}, {end}",
                    "bne 2b",
                    x = inout(reg) px,
                    w0 = inout(reg) p0,
                    w1 = inout(reg) p1,
                    end = in(reg) end,
                    lo0 = inout(reg) lo0,
                    hi0 = inout(reg) hi0,
                    lo1 = inout(reg) lo1,
                    hi1 = inout(reg) hi1,
                    t0 = out(reg) _,
                    t1 = out(reg) _,
                    a = out(reg) _,
                    b = out(reg) _,
                    options(readonly, nostack),
                );
            }
        }
        if left >= 4 {
            left -= 4;
            // SAFETY: two quad steps from where the loop left the (still aligned)
            // pointers, at byte 32·passes of each slice, ending 16 bytes on, within
            // all three since at least 4 pairs were left. As above otherwise; flags
            // untouched.
            unsafe {
                core::arch::asm!(
                    quad_step!(),
                    quad_step!(),
                    x = inout(reg) px,
                    w0 = inout(reg) p0,
                    w1 = inout(reg) p1,
                    lo0 = inout(reg) lo0,
                    hi0 = inout(reg) hi0,
                    lo1 = inout(reg) lo1,
                    hi1 = inout(reg) hi1,
                    t0 = out(reg) _,
                    t1 = out(reg) _,
                    a = out(reg) _,
                    b = out(reg) _,
                    options(readonly, nostack, preserves_flags),
                );
            }
        }
        if left >= 2 {
            left -= 2;
            // SAFETY: one quad step from where the steps above left the (still
            // aligned) pointers, ending 8 bytes on, within all three since at least 2
            // pairs were left. As above otherwise; flags untouched.
            unsafe {
                core::arch::asm!(
                    quad_step!(),
                    x = inout(reg) px,
                    w0 = inout(reg) p0,
                    w1 = inout(reg) p1,
                    lo0 = inout(reg) lo0,
                    hi0 = inout(reg) hi0,
                    lo1 = inout(reg) lo1,
                    hi1 = inout(reg) hi1,
                    t0 = out(reg) _,
                    t1 = out(reg) _,
                    a = out(reg) _,
                    b = out(reg) _,
                    options(readonly, nostack, preserves_flags),
                );
            }
        }
    } else if left >= 2 {
        let end = px.wrapping_add(8 * (left / 2));
        left %= 2;
        // SAFETY: each step reads one word at x, w0 and w1 and advances each by 4
        // bytes; pairs/2 passes of two steps read 8·(pairs/2) ≤ 4·pairs bytes of every
        // slice, within all three (`pairs` is clamped above). Unaligned word loads are
        // valid on Armv7E-M (LDR, not LDRD/LDM). SMLALD as above. `cmp` sets the
        // flags (not preserved); nothing is written to memory. The pointers come back
        // advanced past what was read.
        unsafe {
            core::arch::asm!(
                "2:",
                pair_step!(),
                pair_step!(),
                "cmp {x}, {end}",
                "bne 2b",
                x = inout(reg) px,
                w0 = inout(reg) p0,
                w1 = inout(reg) p1,
                end = in(reg) end,
                lo0 = inout(reg) lo0,
                hi0 = inout(reg) hi0,
                lo1 = inout(reg) lo1,
                hi1 = inout(reg) hi1,
                t0 = out(reg) _,
                t1 = out(reg) _,
                options(readonly, nostack),
            );
        }
    }
    if left == 1 {
        // SAFETY: the last pair: one word step, whose words start where the code
        // above left the pointers, at byte 4·(pairs − 1) of each slice (both branches
        // consumed all pairs but this one), and end at byte 4·pairs, within all
        // three. Unaligned loads as above; flags untouched.
        unsafe {
            core::arch::asm!(
                pair_step!(),
                x = inout(reg) px => _,
                w0 = inout(reg) p0 => _,
                w1 = inout(reg) p1 => _,
                lo0 = inout(reg) lo0,
                hi0 = inout(reg) hi0,
                lo1 = inout(reg) lo1,
                hi1 = inout(reg) hi1,
                t0 = out(reg) _,
                t1 = out(reg) _,
                options(readonly, nostack, preserves_flags),
            );
        }
    }
    let wide = |lo: u32, hi: u32| ((u64::from(hi) << 32) | u64::from(lo)) as i64;
    (wide(lo0, hi0), wide(lo1, hi1))
}

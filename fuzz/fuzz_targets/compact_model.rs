//! The core's compact model parser (what a device reads from flash): any bytes are a
//! model or an error, and inference on an accepted model returns values or errors.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mil_core::{Instances, Model};

fuzz_target!(|data: &[u8]| {
    let Ok(model) = Model::parse(data) else {
        return;
    };
    let dim = model.input_dim().min(64);
    for n in [1usize, 3] {
        let f: Vec<f32> = (0..n * dim).map(|i| (i % 11) as f32 - 5.0).collect();
        let q: Vec<i16> = (0..n * dim)
            .map(|i| (i as i16).wrapping_mul(4099))
            .collect();
        let mut scratch = vec![0.0f32; model.scratch_len(n).min(1 << 16)];
        let mut scores = vec![0.0f32; model.output_dim().min(1 << 10)];
        let _ = model.classify(Instances::F32(&f), &mut scratch, &mut scores);
        let _ = model.classify(Instances::I16(&q), &mut scratch, &mut scores);
        let mut y = vec![0.0f32; model.projected_dim().min(1 << 10)];
        let _ = model.project(Instances::F32(&f[..dim]), &mut y);
        let _ = model.project(Instances::I16(&q[..dim]), &mut y);
        let mut out = vec![0i16; dim];
        let _ = model.quantize_instance(&f[..dim], &mut out);
    }
});

//! Lab only: per-CTA timer stamps of one Hopper prefill launch, for a kernel build with
//! `NVCC_FLAGS=-DFATTN_LAB_STAMPS=K` (kernels/fwd_sm90.cu stores them for the process's
//! launch K). Runs a dense bf16 problem K + 2 times on GPU 0, then prints one line per
//! consumer item of launch K: `cta consumer item tile kb_lo kb_hi start_ns end_ns` (ns after
//! the CTA's entry), after comment lines with every CTA's entry in ns after the first one's,
//! every CTA's SM id and the phases of every CTA's first item (`# phase cta role t0 … t11`).
//! A build without the define has no `g_lab_stamps`: the read fails.
//! ```text
//! NVCC_FLAGS=-DFATTN_LAB_STAMPS=5 cargo run --release --features cuda --example lab_stamps -- 16 16 16 2048 128 [causal]
//! ```
//! Arguments: batch, q heads, kv heads, sequence length (queries = keys), head dim, and
//! `causal` to mask. K must match the build's define (default 5; `LAB_STAMPS_LAUNCH`).

use candle_core::{DType, Device, Result, Tensor};
use candle_fused_attn::{attention, AttnParams};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (b, h, hkv, s, d) = (num(0, 16), num(1, 16), num(2, 16), num(3, 2048), num(4, 128));
    let causal = args.iter().any(|a| a == "causal");
    let launch: usize = std::env::var("LAB_STAMPS_LAUNCH").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let dev = Device::new_cuda(0)?;
    let randn = |heads: usize| Tensor::randn(0f32, 1., (b, s, heads, d), &dev)?.to_dtype(DType::BF16);
    let (q, k, v) = (randn(h)?, randn(hkv)?, randn(hkv)?);
    let params = AttnParams::new(1.0 / (d as f32).sqrt()).causal(causal);
    for _ in 0..launch + 2 {
        attention(&q, &k, &v, &params)?;
    }
    dev.synchronize()?;
    // Each CTA's entry (absolute %globaltimer ns), printed relative to the first one.
    let entries = candle_fused_attn::lab_read_global(&dev, "kernels/fwd_sm90.cu", "g_lab_entry")?;
    let entries: Vec<u64> = entries
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
        .filter(|&t| t > 0)
        .collect();
    let first = entries.iter().copied().min().unwrap_or(0);
    let bytes = candle_fused_attn::lab_read_global(&dev, "kernels/fwd_sm90.cu", "g_lab_stamps")?;
    let words: Vec<u64> = bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    // [cta][consumer (3)][item (64)][4]: tile, lo | hi << 16, start, end (kernels/fwd_sm90.cu).
    const ITEMS: usize = 64;
    println!("# b {b} h {h} hkv {hkv} s {s} d {d} causal {causal} launch {launch}");
    let spread: Vec<u64> = entries.iter().map(|t| t - first).collect();
    println!("# cta entries (ns after the first): {spread:?}");
    // Each CTA's SM (%smid), for per-SM tile times (the d128 rows' 31st tiles end 20 µs apart
    // by block, session 28).
    let smids = candle_fused_attn::lab_read_global(&dev, "kernels/fwd_sm90.cu", "g_lab_smid")?;
    let smids: Vec<u32> =
        smids.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).take(entries.len()).collect();
    println!("# cta sm ids: {smids:?}");
    // Each CTA's item FATTN_LAB_PHASE_ITEM (the build's define, default 0: the first) in
    // phases (kernels/fwd_sm90.cu `g_lab_phase`, ns after the CTA's entry, 0: not reached):
    // per role (consumer warpgroups 0-2, 3 the producer), one line `# phase cta role t0 t1
    // ... t17`. Consumer phases: 0 warpgroup start (always the first item), 16 the item's loop
    // top (before its tile is named and set up), 17 set up (before the wait for its Q), 1 item start,
    // 2 Q landed, 3 first K landed, 4 first Q·Kᵀ done, 5 first softmax done, 6 key loop done,
    // 7 last V landed, 8 last P·V done, 9 cluster partial sent (rank 1) or received (rank 0),
    // 10 epilogue start, 12 its first barrier passed, 13 O staged in shared memory, 14 the
    // proxy fence and second barrier passed, 15 the TMA store issued (or the threads'
    // stores done), 11 the item's end (after the persistent release). Producer: 0 start, 1
    // before Q's copy, 2 after it, 3 every K/V copy of the item issued.
    const PHASES: usize = 18;
    let phases = candle_fused_attn::lab_read_global(&dev, "kernels/fwd_sm90.cu", "g_lab_phase")?;
    let phases: Vec<u64> = phases.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect();
    for (slot, ph) in phases.chunks_exact(PHASES).enumerate() {
        if ph.iter().all(|&t| t == 0) {
            continue;
        }
        let times: Vec<String> = ph.iter().map(|t| t.to_string()).collect();
        println!("# phase {} {} {}", slot / 4, slot % 4, times.join(" "));
    }
    for (slot, st) in words.chunks_exact(4).enumerate() {
        if st[3] == 0 {
            continue;
        }
        let (cta, cw, item) = (slot / (3 * ITEMS), slot / ITEMS % 3, slot % ITEMS);
        println!("{cta} {cw} {item} {} {} {} {} {}", st[0], st[1] & 0xffff, st[1] >> 16, st[2], st[3]);
    }
    Ok(())
}

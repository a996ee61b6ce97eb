//! Lab only: timer stamps of one dense decode launch (the split kernel and its combine), for a
//! kernel build with `NVCC_FLAGS=-DFATTN_LAB_DECODE_STAMPS=K` (kernels/decode_sm80.cu stores
//! them for the process's dense decode launch K, kernels/decode_sm90.cu for the combine's).
//! Runs a bf16 decode step (sq = 1) K + 2 times on GPU 0, each after a 256 MiB L2 flush (as
//! the bench), then prints, in ns after the first split block's entry:
//! * `split BLOCK SM ENTRY W0… W3` per split block, each warp's phases `p0,p1,…` (ns after the
//!   block's entry; 0: not reached): 0 warp start, 1 Q landed, 2 + 2n tile n landed, 3 + 2n
//!   tile n done (n < 8), 18 partials stored, 19 block end (one-split launches);
//! * `comb BLOCK SM ENTRY WAIT DONE` per combine block (WAIT and DONE in ns after its entry);
//! * `#` summary lines: each phase's spread over every stamped warp, the spread of the split
//!   blocks' entries and partial stores, and of the combine's entries, wait releases and ends.
//! * `# call K between events`: the stamped call's time between CUDA events on candle's stream
//!   (as the bench times it), the stamped window (first split entry to the last end) and the
//!   difference: the launch and the grids' teardown; then the same timing's floor: events around
//!   nothing, around one small kernel in place (`zero_set`, no allocation), around one small
//!   candle op (an output allocated, one kernel; its output dropped right after the end event,
//!   inside, or kept to the end) and around two; with batch 1, the same call as one packed
//!   sequence, allocating its output or written into one made beforehand.
//!
//! A build without the define has no `g_lab_dec*`: the read fails.
//! ```text
//! NVCC_FLAGS=-DFATTN_LAB_DECODE_STAMPS=5 cargo run --release --features cuda --example lab_decode_stamps -- 1 32 8 2048 128
//! ```
//! Arguments: batch, q heads, kv heads, keys, head dim. K must match the build's define
//! (default 5; `LAB_STAMPS_LAUNCH`).

use candle_core::{DType, Device, Result, Tensor};
use candle_fused_attn::{attention, attention_varlen, attention_varlen_into, AttnParams, Varlen};

fn words64(bytes: &[u8]) -> Vec<u64> {
    bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
}

fn words32(bytes: &[u8]) -> Vec<u32> {
    bytes.chunks_exact(4).map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes"))).collect()
}

/// min / median / max of `v`, or "-" when empty.
fn spread(v: &mut [i64]) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.sort_unstable();
    format!("{} / {} / {}", v[0], v[v.len() / 2], v[v.len() - 1])
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, d: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(d);
    let (b, h, hkv, sk, d) = (num(0, 1), num(1, 32), num(2, 8), num(3, 2048), num(4, 128));
    let launch: usize = std::env::var("LAB_STAMPS_LAUNCH").ok().and_then(|v| v.parse().ok()).unwrap_or(5);
    let dev = Device::new_cuda(0)?;
    let q = Tensor::randn(0f32, 1., (b, 1, h, d), &dev)?.to_dtype(DType::BF16)?;
    let k = Tensor::randn(0f32, 1., (b, sk, hkv, d), &dev)?.to_dtype(DType::BF16)?;
    let v = Tensor::randn(0f32, 1., (b, sk, hkv, d), &dev)?.to_dtype(DType::BF16)?;
    let flush = Tensor::zeros(64 << 20, DType::F32, &dev)?;
    let params = AttnParams::new(1.0 / (d as f32).sqrt());
    // CUDA events around each call on candle's stream, as the bench times it: what the call
    // costs beyond the stamped window (first split block's entry to the last combine block's
    // end) is its launch and teardown.
    let mut call_ms = Vec::new();
    for _ in 0..launch + 2 {
        flush.zero_set()?;
        let start = record(&dev)?;
        attention(&q, &k, &v, &params)?;
        call_ms.push((start, record(&dev)?));
    }
    dev.synchronize()?;
    let call_ms: Vec<f64> = call_ms.into_iter().map(|(a, b)| elapsed_ms(a, b)).collect::<Result<_>>()?;
    // The floor of that timing, the same way (flush, event, op, event; medians of 9): nothing,
    // one candle op that allocates its output and launches one small kernel, and two of them.
    // An op returns what it made, dropped right after the end event (as the bench drops a
    // call's output, so that the next rep's allocation can reuse it) or, with `keep`, only
    // after every rep (each allocation then takes new memory), unless it drops it itself.
    let floor_with = |keep: bool, op: &dyn Fn() -> Result<Option<Tensor>>| -> Result<f64> {
        let mut marks = Vec::new();
        let mut kept = Vec::new();
        for _ in 0..9 {
            flush.zero_set()?;
            let start = record(&dev)?;
            let made = op()?;
            marks.push((start, record(&dev)?));
            if keep {
                kept.push(made);
            }
        }
        dev.synchronize()?;
        let mut ms: Vec<f64> = marks.into_iter().map(|(a, b)| elapsed_ms(a, b)).collect::<Result<_>>()?;
        ms.sort_by(f64::total_cmp);
        Ok(ms[ms.len() / 2] * 1e6)
    };
    let small = Tensor::zeros(4096, DType::F32, &dev)?;
    let floor = |op: &dyn Fn() -> Result<Option<Tensor>>| floor_with(false, op);
    let floors = [
        floor(&|| Ok(None))?,
        floor(&|| small.zero_set().map(|_| None))?,
        floor(&|| small.affine(1.0, 0.0).map(Some))?,
        floor(&|| small.affine(1.0, 0.0).map(|_| None))?,
        floor(&|| small.affine(1.0, 0.0)?.affine(1.0, 0.0).map(Some))?,
        floor_with(true, &|| small.affine(1.0, 0.0).map(Some))?,
    ];
    // The same decode as one packed sequence (batch 1 only), allocating its output or written
    // into one made beforehand: what the output's allocation costs this call.
    let packed = if b == 1 {
        let (q1, k1, v1) = (q.squeeze(0)?, k.squeeze(0)?, v.squeeze(0)?);
        let cu = |n: u32| Tensor::new(&[0u32, n], &Device::Cpu);
        let vl = Varlen::new(&cu(1)?, &cu(sk as u32)?, 1, sk);
        let out = Tensor::zeros(q1.dims(), q1.dtype(), &dev)?;
        Some([
            floor(&|| attention_varlen(&q1, &k1, &v1, &vl, &params).map(Some))?,
            floor(&|| attention_varlen_into(&out, &q1, &k1, &v1, &vl, &params).map(|_| None))?,
        ])
    } else {
        None
    };
    // The stamps live in kernels/decode_sm80.cu's namespace `fattn_decode`: C++-mangled names.
    let read = |file: &str, name: &str| {
        candle_fused_attn::lab_read_global(&dev, file, &format!("_ZN12fattn_decode{}{name}E", name.len()))
    };
    let entries = words64(&read("kernels/decode_sm80.cu", "g_lab_dec_entry")?);
    let smids = words32(&read("kernels/decode_sm80.cu", "g_lab_dec_smid")?);
    let phases = words64(&read("kernels/decode_sm80.cu", "g_lab_dec")?);
    let c_entries = words64(&read("kernels/decode_sm90.cu", "g_lab_comb_entry")?);
    let c_smids = words32(&read("kernels/decode_sm90.cu", "g_lab_comb_smid")?);
    let c_phases = words64(&read("kernels/decode_sm90.cu", "g_lab_comb")?);
    let Some(t0) = entries.iter().copied().filter(|&t| t > 0).min() else {
        candle_core::bail!("no split block stamped launch {launch}: is the build's FATTN_LAB_DECODE_STAMPS {launch}?")
    };
    let rel = |t: u64| t as i64 - t0 as i64;
    println!("# b {b} h {h} hkv {hkv} sk {sk} d {d} launch {launch}");
    const PHASES: usize = 20;
    let (mut split_entry, mut split_stored) = (Vec::new(), Vec::new());
    for (blk, &e) in entries.iter().enumerate().filter(|(_, &e)| e > 0) {
        let warps: Vec<String> = (0..4)
            .map(|w| {
                let ph = &phases[(blk * 4 + w) * PHASES..(blk * 4 + w + 1) * PHASES];
                let end = ph[18].max(ph[19]);
                if end > 0 {
                    split_stored.push(rel(e) + end as i64);
                }
                ph.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(",")
            })
            .collect();
        split_entry.push(rel(e));
        println!("split {blk} {} {} {}", smids[blk], rel(e), warps.join(" "));
    }
    let (mut c_entry, mut c_wait, mut c_done) = (Vec::new(), Vec::new(), Vec::new());
    for (blk, &e) in c_entries.iter().enumerate().filter(|(_, &e)| e > 0) {
        let (w, dn) = (c_phases[blk * 2], c_phases[blk * 2 + 1]);
        c_entry.push(rel(e));
        if w > 0 {
            c_wait.push(rel(e) + w as i64);
        }
        if dn > 0 {
            c_done.push(rel(e) + dn as i64);
        }
        println!("comb {blk} {} {} {w} {dn}", c_smids[blk], rel(e));
    }
    // Each phase over every stamped warp of every block: where a warp's time goes.
    for k in 0..PHASES {
        let mut at: Vec<i64> = (0..entries.len())
            .filter(|&blk| entries[blk] > 0)
            .flat_map(|blk| (0..4).map(move |w| (blk * 4 + w) * PHASES + k))
            .map(|i| phases[i] as i64)
            .filter(|&t| t > 0)
            .collect();
        if !at.is_empty() {
            println!("# split phase {k:2} (ns after the block's entry): {}", spread(&mut at));
        }
    }
    println!("# split entries (ns, min / median / max): {}", spread(&mut split_entry));
    println!("# split warps' partials stored: {}", spread(&mut split_stored));
    println!("# combine entries: {}", spread(&mut c_entry));
    println!("# combine waits released: {}", spread(&mut c_wait));
    let window = c_done.iter().copied().max().unwrap_or(0).max(split_stored.iter().copied().max().unwrap_or(0));
    println!("# combine ends: {}", spread(&mut c_done));
    println!(
        "# call {launch} between events: {:.0} ns, the stamped window {window} ns, outside it {:.0} ns (calls: {})",
        call_ms[launch] * 1e6,
        call_ms[launch] * 1e6 - window as f64,
        call_ms.iter().map(|ms| format!("{:.0}", ms * 1e6)).collect::<Vec<_>>().join(" ")
    );
    println!(
        "# events around nothing {:.0} ns; one small kernel in place (no allocation) {:.0} ns; one small candle op (its output allocated, one kernel) {:.0} ns, its output also freed inside {:.0} ns, every output kept to the end {:.0} ns; two ops {:.0} ns",
        floors[0], floors[1], floors[2], floors[3], floors[5], floors[4]
    );
    if let Some([alloc, into]) = packed {
        println!("# the call as one packed sequence: its output allocated {alloc:.0} ns, into an output made beforehand {into:.0} ns");
    }
    Ok(())
}

#[cfg(feature = "cuda")]
type Mark = candle_core::cuda_backend::cudarc::driver::CudaEvent;
/// Without CUDA there is nothing to record (and `record` fails first).
#[cfg(not(feature = "cuda"))]
struct Mark;

/// An event recorded on `dev`'s stream now.
#[cfg(feature = "cuda")]
fn record(dev: &Device) -> Result<Mark> {
    use candle_core::cuda_backend::cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT;
    let Device::Cuda(cuda) = dev else { candle_core::bail!("lab_decode_stamps runs on a CUDA device") };
    cuda.cuda_stream()
        .record_event(Some(CU_EVENT_DEFAULT))
        .map_err(|e| candle_core::Error::Msg(format!("CUDA event: {e:?}")))
}
#[cfg(not(feature = "cuda"))]
fn record(_: &Device) -> Result<Mark> {
    candle_core::bail!("lab_decode_stamps needs the `cuda` feature")
}

#[cfg(feature = "cuda")]
fn elapsed_ms(start: Mark, end: Mark) -> Result<f64> {
    start.elapsed_ms(&end).map(f64::from).map_err(|e| candle_core::Error::Msg(format!("CUDA event: {e:?}")))
}
#[cfg(not(feature = "cuda"))]
fn elapsed_ms(_: Mark, _: Mark) -> Result<f64> {
    Ok(0.0)
}

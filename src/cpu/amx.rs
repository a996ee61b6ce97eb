//! AMX-BF16 tile kernels for the two tile products of a bf16 prefill item (the
//! `avx512-amx` path, `head_dim % 32 == 0`), in `asm!` (the AMX intrinsics are not stable
//! Rust).
//!
//! All eight tile registers are configured as 16 rows × 64 bytes: an A tile is 16 rows of
//! 32 bf16, a B tile 16 rows of 16 bf16 pairs (the pair layout of `SharedKv`: Kᵀ pair row
//! `u` lane `j` = `(k[j][2u], k[j][2u+1])`, V pair row `w` lane `c` = `(v[2w][c],
//! v[2w+1][c])`), a C tile 16 rows of 16 f32. `tdpbf16ps C, A, B` adds `A·B` with bf16
//! products and f32 sums. Each kernel keeps a 2 × 2 block of C tiles (`tmm0`–`tmm3`; 32 rows
//! × 32 columns) and loads two A tiles (`tmm4`, `tmm5`) and two B tiles (`tmm6`, `tmm7`)
//! per 32-deep step; an odd last row tile runs 1 × 2.
//!
//! The Linux kernel hands out the tile data state only to a process that asks for it:
//! [`os_permits_amx`] asks once (`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`), and
//! the path is unavailable when the answer is no (or off Linux).
//!
//! The kernels take Kᵀ and V as panels (the stored key tiles of `SharedKv`), so that one
//! call covers the forward's AMX step of several tiles (`forward::AMX_KEYS`).
//!
//! Measured (dev Xeon, KVM, 2 vCPUs, model 167; `examples/bench_cpu.rs`, 2 threads on
//! cores 0,1, load 2.0–2.1, 5 runs alternating with the previous code, medians): the
//! (1,16,16,2048,2048,64) bf16 row in 20.5 ms (26.3 before: steps of 1024 keys instead of
//! 256), causal 13.1 ms (16.3), (1,8,8,512,512,64) 0.955 ms (1.066). Single-thread, the
//! tile kernels are about half of the 2048 row's time, the `2^x`→bf16 pass 16%. Later
//! (load 2.0–2.2, 5 pairs): the 512 row 0.904 → 0.822 ms with the first step's fresh
//! accumulator (`accumulate`'s `fresh`) and one pool entry per call. The
//! record: `lab/cpu-history.md` (issue 15's sections).

use std::arch::asm;
use std::sync::OnceLock;

/// Rows (and columns of f32 or bf16 pairs) of one tile.
pub(super) const TILE: usize = 16;

/// The `ldtilecfg` operand: palette 1, tiles 0–7 of 16 rows × 64 bytes.
#[repr(C, align(64))]
struct TileConfig([u8; 64]);

static CONFIG: TileConfig = {
    let mut c = [0u8; 64];
    c[0] = 1;
    let mut t = 0;
    while t < 8 {
        c[16 + 2 * t] = 64; // bytes per row (u16, little endian)
        c[48 + t] = TILE as u8; // rows
        t += 1;
    }
    TileConfig(c)
};

/// Whether the CPU has AMX-TILE and AMX-BF16 (CPUID leaf 7, EDX bits 24 and 22).
/// Asked once: CPUID traps to the hypervisor in a VM (measured: 5% of a 2 ms call when it
/// was asked on every call).
pub(super) fn cpu_has_amx() -> bool {
    static HAS: OnceLock<bool> = OnceLock::new();
    *HAS.get_or_init(|| {
        if std::arch::x86_64::__get_cpuid_max(0).0 < 7 {
            return false;
        }
        let edx = std::arch::x86_64::__cpuid_count(7, 0).edx;
        edx & (1 << 24) != 0 && edx & (1 << 22) != 0
    })
}

/// Whether the OS lets this process use the AMX tile data: asked once, on Linux, with
/// `arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)` (which also succeeds when the
/// permission is already held); false elsewhere, when the CPU lacks AMX, or when the kernel
/// refuses (kernels before 5.16, or a signal stack too small for the tile state).
pub(super) fn os_permits_amx() -> bool {
    static PERMITTED: OnceLock<bool> = OnceLock::new();
    *PERMITTED.get_or_init(|| {
        #[cfg(target_os = "linux")]
        {
            const SYS_ARCH_PRCTL: usize = 158;
            const ARCH_REQ_XCOMP_PERM: usize = 0x1023;
            const XFEATURE_XTILEDATA: usize = 18;
            if !cpu_has_amx() {
                return false;
            }
            let ret: isize;
            // SAFETY: the arch_prctl system call with two integer arguments; it reads and
            // writes no memory of ours; `syscall` clobbers rcx and r11.
            unsafe {
                asm!(
                    "syscall",
                    inlateout("rax") SYS_ARCH_PRCTL as isize => ret,
                    in("rdi") ARCH_REQ_XCOMP_PERM,
                    in("rsi") XFEATURE_XTILEDATA,
                    lateout("rcx") _,
                    lateout("r11") _,
                    options(nostack, preserves_flags)
                )
            };
            ret == 0
        }
        #[cfg(not(target_os = "linux"))]
        false
    })
}

/// Loads the tile configuration.
///
/// # Safety
/// The CPU has AMX and [`os_permits_amx`] returned true.
#[inline(always)]
unsafe fn config() {
    // SAFETY: the caller's contract; CONFIG is 64 readable, aligned bytes.
    unsafe { asm!("ldtilecfg [{c}]", c = in(reg) CONFIG.0.as_ptr(), options(nostack, readonly, preserves_flags)) }
}

/// Zeros the tile state and releases it (so that context switches do not save it).
///
/// # Safety
/// As [`config`].
#[inline(always)]
pub(super) unsafe fn release() {
    // SAFETY: the caller's contract.
    unsafe { asm!("tilerelease", options(nostack, nomem, preserves_flags)) }
}

/// Tile `T` = the 16 rows of 64 bytes at `p`, `stride` bytes apart.
///
/// # Safety
/// As [`config`], after it; the 16 rows are readable.
#[inline(always)]
unsafe fn load<const T: u8>(p: *const u8, stride: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        asm!("tileloadd tmm{t}, [{p} + {s}*1]", t = const T, p = in(reg) p, s = in(reg) stride,
             options(nostack, readonly, preserves_flags))
    }
}

/// The 16 rows of 64 bytes at `p`, `stride` bytes apart, = tile `T`.
///
/// # Safety
/// As [`config`], after it; the 16 rows are writable.
#[inline(always)]
unsafe fn store<const T: u8>(p: *mut u8, stride: usize) {
    // SAFETY: the caller's contract.
    unsafe {
        asm!("tilestored [{p} + {s}*1], tmm{t}", t = const T, p = in(reg) p, s = in(reg) stride,
             options(nostack, preserves_flags))
    }
}

/// Tile `T` = 0.
///
/// # Safety
/// As [`config`], after it.
#[inline(always)]
unsafe fn zero<const T: u8>() {
    // SAFETY: the caller's contract.
    unsafe { asm!("tilezero tmm{t}", t = const T, options(nostack, nomem, preserves_flags)) }
}

/// Tile `C` += tile `A` · tile `B` (bf16 pairs, f32 sums).
///
/// # Safety
/// As [`config`], after it.
#[inline(always)]
unsafe fn dp<const C: u8, const A: u8, const B: u8>() {
    // SAFETY: the caller's contract.
    unsafe {
        asm!("tdpbf16ps tmm{c}, tmm{a}, tmm{b}", c = const C, a = const A, b = const B,
             options(nostack, nomem, preserves_flags))
    }
}

/// `s[r·s_ld + j] = Σ_{t < d} q[r·q_ld + t] · k[j][t]` for `r < rows`, `j < cols`: the score
/// tile of bf16 Q rows against Kᵀ pair panels of `panel` keys each (`d/2` pair rows of
/// `kt_ld` pairs; keys `j` lie in panel `kt[j / panel]`, column `j % panel`).
///
/// # Safety
/// The CPU has AMX-BF16 and [`os_permits_amx`] returned true; `rows`, `cols`, `panel` and
/// `d` are multiples of 32 (`rows` of 16 is allowed too); each panel of `kt` that a key
/// `j < cols` falls in holds `d/2` rows of `min(panel, cols - first key)` readable pairs at
/// stride `kt_ld`; `q` holds `rows` rows of `d` readable bf16 at stride `q_ld`; `s` has
/// `rows` rows of `cols` writable floats at stride `s_ld`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn scores(
    q: *const u16,
    q_ld: usize,
    rows: usize,
    d: usize,
    (kt, panel): (&[*const u32], usize),
    kt_ld: usize,
    cols: usize,
    s: *mut f32,
    s_ld: usize,
) {
    debug_assert!(rows.is_multiple_of(TILE) && cols.is_multiple_of(2 * TILE) && d.is_multiple_of(2 * TILE));
    debug_assert!(panel.is_multiple_of(2 * TILE) && kt.len() * panel >= cols);
    let (qs, ks, ss) = (2 * q_ld, 4 * kt_ld, 4 * s_ld);
    // SAFETY: the caller's contract; every tile below lies inside its bounds.
    unsafe {
        config();
        for j in (0..cols).step_by(2 * TILE) {
            let mut r = 0;
            while r < rows {
                let two = r + 2 * TILE <= rows;
                for t in 0..4 {
                    match t {
                        0 => zero::<0>(),
                        1 => zero::<1>(),
                        2 if two => zero::<2>(),
                        3 if two => zero::<3>(),
                        _ => {}
                    }
                }
                for t in (0..d).step_by(2 * TILE) {
                    let a = q.add(r * q_ld + t).cast::<u8>();
                    let b = kt[j / panel].add((t / 2) * kt_ld + j % panel).cast::<u8>();
                    load::<4>(a, qs);
                    load::<6>(b, ks);
                    load::<7>(b.add(4 * TILE), ks);
                    dp::<0, 4, 6>();
                    dp::<1, 4, 7>();
                    if two {
                        load::<5>(a.add(TILE * qs), qs);
                        dp::<2, 5, 6>();
                        dp::<3, 5, 7>();
                    }
                }
                let c = s.add(r * s_ld + j).cast::<u8>();
                store::<0>(c, ss);
                store::<1>(c.add(4 * TILE), ss);
                if two {
                    store::<2>(c.add(TILE * ss), ss);
                    store::<3>(c.add(TILE * ss + 4 * TILE), ss);
                }
                r += if two { 2 * TILE } else { TILE };
            }
        }
    }
}

/// `acc[r·d + c] += Σ_{w < keys} p[r·p_ld + w] · v[w][c]` for `r < rows`, `c < d`: `P V`
/// with bf16 P rows and V pair panels of `panel` keys each (`panel/2` pair rows of `v_ld`
/// pairs; key `w` lies in panel `v[w / panel]`, pair row `(w % panel)/2`); the caller has
/// rescaled `acc`. With `fresh`, `acc = Σ …` instead: the C tiles start at zero, and `acc`
/// is only written (an item's first step; the same sums as adding to a zeroed `acc`).
///
/// # Safety
/// As [`scores`]: `rows` a multiple of 16, `d`, `panel` and `keys` of 32; `acc` holds
/// `rows·d` floats; `p` holds `rows` rows of `keys` readable bf16 at stride `p_ld`; each
/// panel of `v` that a key `w < keys` falls in holds `min(panel, keys - first key)/2` rows
/// of `d` readable pairs at stride `v_ld`.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn accumulate(
    fresh: bool,
    acc: *mut f32,
    d: usize,
    rows: usize,
    p: *const u16,
    p_ld: usize,
    (v, panel): (&[*const u32], usize),
    v_ld: usize,
    keys: usize,
) {
    debug_assert!(rows.is_multiple_of(TILE) && keys.is_multiple_of(2 * TILE) && d.is_multiple_of(2 * TILE));
    debug_assert!(panel.is_multiple_of(2 * TILE) && v.len() * panel >= keys);
    let (cs, ps, vs) = (4 * d, 2 * p_ld, 4 * v_ld);
    // SAFETY: the caller's contract; every tile below lies inside its bounds.
    unsafe {
        config();
        for c in (0..d).step_by(2 * TILE) {
            let mut r = 0;
            while r < rows {
                let two = r + 2 * TILE <= rows;
                let ct = acc.add(r * d + c).cast::<u8>();
                if fresh {
                    zero::<0>();
                    zero::<1>();
                    if two {
                        zero::<2>();
                        zero::<3>();
                    }
                } else {
                    load::<0>(ct, cs);
                    load::<1>(ct.add(4 * TILE), cs);
                    if two {
                        load::<2>(ct.add(TILE * cs), cs);
                        load::<3>(ct.add(TILE * cs + 4 * TILE), cs);
                    }
                }
                for w in (0..keys).step_by(2 * TILE) {
                    let a = p.add(r * p_ld + w).cast::<u8>();
                    let b = v[w / panel].add((w % panel / 2) * v_ld + c).cast::<u8>();
                    load::<4>(a, ps);
                    load::<6>(b, vs);
                    load::<7>(b.add(4 * TILE), vs);
                    dp::<0, 4, 6>();
                    dp::<1, 4, 7>();
                    if two {
                        load::<5>(a.add(TILE * ps), ps);
                        dp::<2, 5, 6>();
                        dp::<3, 5, 7>();
                    }
                }
                store::<0>(ct, cs);
                store::<1>(ct.add(4 * TILE), cs);
                if two {
                    store::<2>(ct.add(TILE * cs), cs);
                    store::<3>(ct.add(TILE * cs + 4 * TILE), cs);
                }
                r += if two { 2 * TILE } else { TILE };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both kernels against f64 loops over the same bf16 values, on 16, 48 and 64 rows.
    #[test]
    fn tiles_match_f64_loops() {
        if !(cpu_has_amx() && os_permits_amx()) {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "SKIPPED: cpu::amx::tiles_match_f64_loops: no AMX (CPU or OS)");
            return;
        }
        let val = |i: usize| half::bf16::from_f32((((i * 7919) % 113) as f32 - 56.0) / 37.0);
        for (rows, d, cols) in [(16, 32, 32), (48, 64, 256), (64, 128, 96)] {
            let (q_ld, kt_ld, s_ld) = (d + 32, cols + 16, cols + 16);
            let q: Vec<u16> = (0..rows * q_ld).map(|i| val(i).to_bits()).collect();
            // k[j][t] = val(j·1000 + t)
            let k = |j: usize, t: usize| val(j * 1000 + t + 1);
            let mut kt = vec![0u32; d / 2 * kt_ld];
            for u in 0..d / 2 {
                for j in 0..cols {
                    kt[u * kt_ld + j] = k(j, 2 * u).to_bits() as u32 | (k(j, 2 * u + 1).to_bits() as u32) << 16;
                }
            }
            let mut s = vec![0f32; rows * s_ld];
            // SAFETY: AMX is usable; the buffers hold what the kernel reads and writes.
            unsafe { scores(q.as_ptr(), q_ld, rows, d, (&[kt.as_ptr()], cols), kt_ld, cols, s.as_mut_ptr(), s_ld) };
            // The same keys as panels of 32 (pointers into the one buffer): the same sums.
            let panels: Vec<*const u32> = (0..cols / 32).map(|p| kt[32 * p..].as_ptr()).collect();
            let mut s2 = vec![0f32; rows * s_ld];
            // SAFETY: as above; panel p is columns 32p.. of the same rows.
            unsafe { scores(q.as_ptr(), q_ld, rows, d, (&panels, 32), kt_ld, cols, s2.as_mut_ptr(), s_ld) };
            assert!(s.iter().zip(&s2).all(|(a, b)| a.to_bits() == b.to_bits()), "panels {rows} {d} {cols}");
            for r in 0..rows {
                for j in 0..cols {
                    let want: f64 =
                        (0..d).map(|t| half::bf16::from_bits(q[r * q_ld + t]).to_f64() * k(j, t).to_f64()).sum();
                    assert!((s[r * s_ld + j] as f64 - want).abs() < 1e-4 * (1.0 + want.abs()), "{rows} {d} {cols}");
                }
            }
            // P V with keys = cols, p = q's values (rows × cols bf16 at stride p_ld).
            let p_ld = cols + 32;
            let p: Vec<u16> = (0..rows * p_ld).map(|i| val(i + 3).to_bits()).collect();
            let v = |w: usize, c: usize| val(w * 777 + c + 9);
            let v_ld = d + 16;
            let mut vp = vec![0u32; cols / 2 * v_ld];
            for w in 0..cols / 2 {
                for c in 0..d {
                    vp[w * v_ld + c] = v(2 * w, c).to_bits() as u32 | (v(2 * w + 1, c).to_bits() as u32) << 16;
                }
            }
            let acc0: Vec<f32> = (0..rows * d).map(|i| val(i + 5).to_f32()).collect();
            let mut acc = acc0.clone();
            // SAFETY: as above.
            unsafe {
                accumulate(false, acc.as_mut_ptr(), d, rows, p.as_ptr(), p_ld, (&[vp.as_ptr()], cols), v_ld, cols)
            };
            let panels: Vec<*const u32> = (0..cols / 32).map(|w| vp[16 * w * v_ld..].as_ptr()).collect();
            let mut acc2 = acc0.clone();
            // SAFETY: as above; panel w is pair rows 16w.. of the same buffer.
            unsafe { accumulate(false, acc2.as_mut_ptr(), d, rows, p.as_ptr(), p_ld, (&panels, 32), v_ld, cols) };
            assert!(acc.iter().zip(&acc2).all(|(a, b)| a.to_bits() == b.to_bits()), "pv panels {rows} {d} {cols}");
            // `fresh` over garbage: the sums added to a zeroed accumulator, bit for bit.
            let (mut zeroed, mut garbage) = (vec![0f32; rows * d], vec![f32::NAN; rows * d]);
            // SAFETY: as above.
            unsafe {
                accumulate(false, zeroed.as_mut_ptr(), d, rows, p.as_ptr(), p_ld, (&panels, 32), v_ld, cols);
                accumulate(true, garbage.as_mut_ptr(), d, rows, p.as_ptr(), p_ld, (&panels, 32), v_ld, cols);
            }
            assert!(zeroed.iter().zip(&garbage).all(|(a, b)| a.to_bits() == b.to_bits()), "fresh {rows} {d} {cols}");
            for r in 0..rows {
                for c in 0..d {
                    let want = acc0[r * d + c] as f64
                        + (0..cols)
                            .map(|w| half::bf16::from_bits(p[r * p_ld + w]).to_f64() * v(w, c).to_f64())
                            .sum::<f64>();
                    assert!((acc[r * d + c] as f64 - want).abs() < 1e-4 * (1.0 + want.abs()), "pv {rows} {d} {cols}");
                }
            }
        }
        // SAFETY: AMX is usable.
        unsafe { release() };
    }
}

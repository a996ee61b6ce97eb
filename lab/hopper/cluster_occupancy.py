#!/usr/bin/env python3
"""How many thread-block clusters of 1, 2, 4 and 8 CTAs a Hopper GPU holds at once, for a block
shaped like one of our prefill instances (threads, dynamic shared memory), and which SMs they
land on. Written in session 53 for session 54's plan item 2 (lab/README.md): before K multicast
over clusters of 4, see whether clusters of 4 of the plain d128 instance (384 threads, 197 736
bytes: one block an SM) can cover all 132 SMs, or whether the GPCs' uneven SM counts leave some
idle (which a persistent grid of one block per SM would pay for on every row).

For each cluster size N: the driver's cuOccupancyMaxActiveClusters, then a launch of a probe
kernel (same threads and shared memory, clusters of N) over the largest multiple of N blocks
not above the SM count, each block spinning SPIN_MS on %globaltimer and recording %smid,
%clusterid.x and its start time: "first wave" blocks are those that started within SPIN_MS/2
of the first; the distinct SMs of the first wave are what a persistent grid could use.

    python3 lab/hopper/cluster_occupancy.py [--threads 384] [--smem 197736] [--spin-ms 2]

Needs a GPU, its driver (libcuda.so.1) and nvcc on PATH (the probe is compiled to an sm_90
cubin here: no JIT). Timing nothing: the spin only keeps every block resident while the
first wave is placed.
"""
import argparse
import ctypes as C
import os
import subprocess
import sys
import tempfile

PROBE = r"""
extern "C" __global__ void probe(unsigned long long* out, unsigned long long spin_ns) {
    extern __shared__ unsigned char smem[];
    if (threadIdx.x == 0) {
        unsigned smid, cid, rank;
        unsigned long long t0, t;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
        asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(cid));
        asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        smem[0] = 1;  // touch the dynamic shared memory
        t = t0;
        while (t - t0 < spin_ns) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
        unsigned long long* o = out + 4ull * blockIdx.x;
        o[0] = smid;
        o[1] = cid;
        o[2] = rank;
        o[3] = t0;
    }
}
"""

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = 4
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16


class LaunchAttr(C.Structure):
    _fields_ = [("id", C.c_int), ("pad", C.c_char * 4), ("value", C.c_ubyte * 64)]


class LaunchConfig(C.Structure):
    _fields_ = [
        ("gx", C.c_uint), ("gy", C.c_uint), ("gz", C.c_uint),
        ("bx", C.c_uint), ("by", C.c_uint), ("bz", C.c_uint),
        ("smem", C.c_uint), ("stream", C.c_void_p),
        ("attrs", C.POINTER(LaunchAttr)), ("nattrs", C.c_uint),
    ]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=384)
    ap.add_argument("--smem", type=int, default=197736)
    ap.add_argument("--spin-ms", type=float, default=2.0)
    args = ap.parse_args()

    cu = C.CDLL("libcuda.so.1")

    def check(rc, what):
        if rc != 0:
            name = C.c_char_p()
            cu.cuGetErrorName(rc, C.byref(name))
            sys.exit(f"cluster_occupancy: {what} failed: {rc} {name.value.decode() if name.value else ''}")

    check(cu.cuInit(0), "cuInit")
    dev = C.c_int()
    check(cu.cuDeviceGet(C.byref(dev), 0), "cuDeviceGet")
    ctx = C.c_void_p()
    check(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    sms = C.c_int()
    check(cu.cuDeviceGetAttribute(C.byref(sms), CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "SM count")
    sms = sms.value

    with tempfile.TemporaryDirectory() as tmp:
        src, cubin = os.path.join(tmp, "probe.cu"), os.path.join(tmp, "probe.cubin")
        open(src, "w").write(PROBE)
        subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", src, "-o", cubin], check=True)
        mod = C.c_void_p()
        check(cu.cuModuleLoad(C.byref(mod), cubin.encode()), "cuModuleLoad")
    fn = C.c_void_p()
    check(cu.cuModuleGetFunction(C.byref(fn), mod, b"probe"), "cuModuleGetFunction")
    check(cu.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, args.smem), "max dynamic smem")

    out = C.c_uint64()
    check(cu.cuMemAlloc_v2(C.byref(out), C.c_size_t(4 * 8 * sms)), "cuMemAlloc")
    spin_ns = int(args.spin_ms * 1e6)
    print(f"GPU 0: {sms} SMs; block {args.threads} threads, {args.smem} bytes of dynamic shared memory")
    print("| cluster size | max active clusters (driver) | CTAs at once | SMs idle | probe grid | first-wave blocks | first-wave SMs |")
    print("|---|---|---|---|---|---|---|")
    for n in (1, 2, 4, 8):
        attr = LaunchAttr()
        attr.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        dims = (C.c_uint * 3)(n, 1, 1)
        C.memmove(attr.value, dims, C.sizeof(dims))
        grid = sms // n * n
        cfg = LaunchConfig(grid, 1, 1, args.threads, 1, 1, args.smem, None, C.pointer(attr), 1)
        clusters = C.c_int()
        check(cu.cuOccupancyMaxActiveClusters(C.byref(clusters), fn, C.byref(cfg)), f"max active clusters of {n}")
        p_out, p_spin = C.c_uint64(out.value), C.c_uint64(spin_ns)
        params = (C.c_void_p * 2)(C.cast(C.byref(p_out), C.c_void_p), C.cast(C.byref(p_spin), C.c_void_p))
        check(cu.cuMemsetD8_v2(out, 0, C.c_size_t(4 * 8 * sms)), "cuMemsetD8")
        check(cu.cuLaunchKernelEx(C.byref(cfg), fn, params, None), f"launch in clusters of {n}")
        check(cu.cuCtxSynchronize(), f"synchronize after clusters of {n}")
        host = (C.c_uint64 * (4 * sms))()
        check(cu.cuMemcpyDtoH_v2(host, out, C.c_size_t(4 * 8 * sms)), "cuMemcpyDtoH")
        rows = [tuple(host[4 * b: 4 * b + 4]) for b in range(grid)]
        t_first = min(r[3] for r in rows)
        first = [r for r in rows if r[3] - t_first < spin_ns // 2]
        active = clusters.value * n
        print(f"| {n} | {clusters.value} | {active} | {sms - min(active, sms)} | {grid} | {len(first)} | {len({r[0] for r in first})} |")
    cu.cuMemFree_v2(out)


if __name__ == "__main__":
    main()

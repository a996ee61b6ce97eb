#!/usr/bin/env python3
"""Writes an outside oracle for the fused attention op: PyTorch SDPA in float64.

For each case it draws fresh random q, k, v with torch (the seed is printed; pass
--seed to reproduce a run), rounds them to the case's dtype, and computes
`torch.nn.functional.scaled_dot_product_attention` in float64 on the upcast rounded
inputs, with everything made explicit so that no torch default decides the semantics:

* masks are built by hand, bottom-right aligned like FlashAttention-2 and our crate:
  with diag(i) = i + sk - sq, causal keeps j <= diag(i), window (l, r) keeps
  diag(i) - l <= j <= diag(i) + r;
* GQA/MQA expands K/V by `repeat_interleave` (q head i reads kv head i // (h // hkv));
* ALiBi goes in as an additive float mask, -slope_h * |diag(i) - j|;
* a row with no visible key is set to zeros explicitly (our documented semantics),
  and what torch itself returned for such rows is printed.

Each case is one safetensors file, in the crate's (batch, seq, heads, head_dim) layout:
`q`, `k`, `v` (the case's dtype), `out` (float64), `alibi_slopes` (f32, only with ALiBi),
and `params` (float64: [softmax_scale, causal, window_left, window_right], -1 = none).
tests/gpu.rs (`gpu_torch_oracle`) reads them from $FUSED_ATTN_ORACLE_DIR.

    python3 scripts/torch_oracle.py --out /tmp/oracle [--seed N] [--device cuda]
"""

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}

# (name, batch, heads, kv_heads, sq, sk, head_dim, dtype, causal, window_left, window_right, alibi)
# window_* = None means unbounded. Together they cover: bottom-right causal with sq < sk and
# sq > sk (fully masked leading rows), GQA 2/4/8 and MQA, odd lengths and odd head dims,
# windows, ALiBi, every dtype, and decode shapes (sq 1..16 against sk up to 32k).
CASES = [
    ("causal_sq_lt_sk_bf16", 2, 8, 8, 77, 203, 64, "bf16", True, None, None, False),
    ("causal_sq_gt_sk_f16", 1, 4, 4, 130, 61, 64, "f16", True, None, None, False),
    ("causal_sq_gt_sk_gqa2_bf16", 2, 6, 3, 97, 33, 128, "bf16", True, None, None, False),
    ("causal_square_gqa4_bf16", 2, 16, 4, 257, 257, 128, "bf16", True, None, None, False),
    ("full_mqa_f16", 1, 8, 1, 100, 333, 96, "f16", False, None, None, False),
    ("full_odd_hd59_f32", 2, 3, 3, 45, 71, 59, "f32", False, None, None, False),
    ("causal_hd40_gqa2_bf16", 1, 4, 2, 191, 191, 40, "bf16", True, None, None, False),
    ("causal_hd256_f32", 1, 4, 4, 300, 300, 256, "f32", True, None, None, False),
    ("causal_hd256_bf16", 1, 4, 2, 129, 515, 256, "bf16", True, None, None, False),
    ("window_37_5_gqa4_bf16", 1, 8, 2, 300, 300, 64, "bf16", False, 37, 5, False),
    ("window_left_sq_lt_sk_f16", 2, 4, 4, 64, 999, 128, "f16", False, 100, 0, False),
    ("window_sq_gt_sk_bf16", 1, 4, 1, 200, 90, 64, "bf16", False, 20, 3, False),
    ("alibi_causal_bf16", 2, 8, 8, 129, 129, 64, "bf16", True, None, None, True),
    ("alibi_full_gqa4_f32", 1, 8, 2, 33, 250, 128, "f32", False, None, None, True),
    ("prefill_2k_causal_bf16", 1, 8, 8, 2048, 2048, 128, "bf16", True, None, None, False),
    ("prefill_1k_full_f16", 1, 8, 4, 1031, 1031, 64, "f16", False, None, None, False),
    # Decode: a KV-cache step (sq 1) and speculative steps (sq > 1) against long caches.
    ("decode_sq1_sk8k_gqa4_bf16", 2, 32, 8, 1, 8192, 128, "bf16", True, None, None, False),
    ("decode_sq1_sk32k_gqa4_bf16", 1, 32, 8, 1, 32768, 128, "bf16", True, None, None, False),
    ("decode_sq4_sk32k_gqa8_f16", 1, 32, 4, 4, 32768, 128, "f16", True, None, None, False),
    ("decode_sq16_sk4097_gqa1_bf16", 1, 16, 16, 16, 4097, 64, "bf16", True, None, None, False),
    ("decode_sq7_sk2049_mqa_bf16", 3, 32, 1, 7, 2049, 128, "bf16", True, None, None, False),
    ("decode_sq1_sk32k_full_f32", 1, 8, 8, 1, 32768, 128, "f32", False, None, None, False),
    ("decode_sq3_sk1000_window_bf16", 2, 8, 2, 3, 1000, 64, "bf16", False, 255, 0, False),
    ("decode_sq1_sk5_gqa8_f16", 4, 8, 1, 1, 5, 32, "f16", True, None, None, False),
]


def visible_mask(sq, sk, causal, wl, wr, device):
    """(sq, sk) bool, True where row i may see key j (bottom-right aligned)."""
    i = torch.arange(sq, device=device).unsqueeze(1)
    j = torch.arange(sk, device=device).unsqueeze(0)
    diag = i + sk - sq
    keep = torch.ones(sq, sk, dtype=torch.bool, device=device)
    if causal:
        wr = 0 if wr is None else min(wr, 0)
    if wl is not None:
        keep &= j >= diag - wl
    if wr is not None:
        keep &= j <= diag + wr
    return keep


def alibi_slopes_for(heads, device):
    """The ALiBi paper's geometric slopes (for any head count), as f32."""
    n = 2 ** math.floor(math.log2(heads))
    base = [2 ** (-8 * (k + 1) / n) for k in range(n)]
    extra = [2 ** (-4 * (2 * k + 1) / n) for k in range(heads - n)]
    return torch.tensor(base + extra, dtype=torch.float32, device=device)


def run_case(case, gen, device):
    name, b, h, hkv, sq, sk, d, dt, causal, wl, wr, alibi = case
    dtype = DTYPES[dt]
    scale = 1.0 / math.sqrt(d)
    # Drawn in f32, rounded to the case dtype: the f64 oracle sees exactly the inputs we do.
    q = torch.randn(b, sq, h, d, generator=gen, device=device).to(dtype)
    k = torch.randn(b, sk, hkv, d, generator=gen, device=device).to(dtype)
    v = torch.randn(b, sk, hkv, d, generator=gen, device=device).to(dtype)

    group = h // hkv
    q64 = q.double().transpose(1, 2)  # (b, h, sq, d)
    k64 = k.double().transpose(1, 2).repeat_interleave(group, dim=1)
    v64 = v.double().transpose(1, 2).repeat_interleave(group, dim=1)
    keep = visible_mask(sq, sk, causal, wl, wr, device)
    tensors = {}
    if alibi:
        slopes = alibi_slopes_for(h, device)
        tensors["alibi_slopes"] = slopes.cpu().contiguous()
        i = torch.arange(sq, device=device, dtype=torch.float64).unsqueeze(1)
        j = torch.arange(sk, device=device, dtype=torch.float64).unsqueeze(0)
        dist = (i + sk - sq - j).abs()
        bias = -slopes.double().view(1, h, 1, 1) * dist  # (1, h, sq, sk)
        mask = bias.masked_fill(~keep, float("-inf"))
    else:
        mask = keep  # bool: True = attend
    out = F.scaled_dot_product_attention(q64, k64, v64, attn_mask=mask, scale=scale)

    empty_rows = ~keep.any(dim=1)  # (sq,)
    n_empty = int(empty_rows.sum())
    torch_on_empty = "none"
    if n_empty:
        got = out[:, :, empty_rows, :]
        torch_on_empty = f"{int(got.isnan().sum())} NaN, max |x| {got.nan_to_num().abs().max().item():.3g}"
        out[:, :, empty_rows, :] = 0.0
    out = out.transpose(1, 2).contiguous()  # (b, sq, h, d)
    assert torch.isfinite(out).all(), f"{name}: non-finite oracle output outside empty rows"

    none = -1.0
    params = torch.tensor(
        [scale, 1.0 if causal else 0.0, none if wl is None else float(wl), none if wr is None else float(wr)],
        dtype=torch.float64,
    )
    tensors.update(
        q=q.cpu().contiguous(), k=k.cpu().contiguous(), v=v.cpu().contiguous(), out=out.cpu(), params=params
    )
    meta = {
        "name": name,
        "shape_b_h_hkv_sq_sk_d": f"{b},{h},{hkv},{sq},{sk},{d}",
        "dtype": dt,
        "causal": str(causal),
        "window": f"{wl},{wr}",
        "alibi": str(alibi),
    }
    return tensors, meta, n_empty, torch_on_empty


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the .safetensors files")
    ap.add_argument("--seed", type=int, default=None, help="default: fresh from os.urandom")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--only", default=None, help="substring filter on case names")
    args = ap.parse_args()

    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    print(f"torch_oracle: seed {seed} (rerun with --seed {seed}), torch {torch.__version__}, device {args.device}")
    gen = torch.Generator(device=args.device)
    gen.manual_seed(seed)
    os.makedirs(args.out, exist_ok=True)
    manifest = {"seed": seed, "torch": torch.__version__, "cases": []}
    for case in CASES:
        if args.only and args.only not in case[0]:
            continue
        t0 = time.time()
        tensors, meta, n_empty, on_empty = run_case(case, gen, args.device)
        path = os.path.join(args.out, f"{case[0]}.safetensors")
        save_file(tensors, path, metadata=meta)
        manifest["cases"].append(meta | {"empty_rows": n_empty, "torch_on_empty_rows": on_empty})
        print(
            f"  {case[0]:34s} {meta['shape_b_h_hkv_sq_sk_d']:>24s} {meta['dtype']:4s} "
            f"empty rows {n_empty:3d} (torch gave: {on_empty})  {time.time() - t0:.2f}s"
        )
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"torch_oracle: wrote {len(manifest['cases'])} cases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Times PyTorch's FlashAttention-2 varlen forward on the packed batch of the crate's
`cuda_varlen_bf16` bench group (benches/attention.rs): 64 sequences of 100-4000 tokens from
the same fixed-seed LCG, LLaMA-3-8B heads (32 q / 8 kv, d128), bf16, causal and not.

The op: `torch.ops.aten._flash_attention_forward(q, k, v, cum_seq_q, cum_seq_k, max_q, max_k,
dropout_p=0, is_causal, return_debug_mask=False, scale=...)`, q (total, 32, 128), k/v
(total, 8, 128): FA2's varlen kernel with GQA. If it refuses GQA, K/V are expanded to 32
heads and the row says so. Causal sequences are square (len_q = len_k), where FA2's top-left
and our bottom-right masks agree.

Method: `triton.testing.do_bench(..., return_mode="median")` (CUDA events, L2 flushed per rep),
as scripts/bench_torch.py. TF/s on the FA convention: Σ 4·len²·H·D per sequence, halved for
causal. Writes bench_torch_varlen.json and .md into --out.

    python3 scripts/bench_torch_varlen.py --out /tmp/bench
"""

import argparse
import json
import os

import torch
import triton
import triton.testing

H, HKV, D = 32, 8, 128


def lengths():
    """The 64 lengths of benches/attention.rs `varlen_lengths` (same LCG, same seed)."""
    x = 20261123
    out = []
    for _ in range(64):
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append(100 + (x >> 33) % 3901)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--rep-ms", type=int, default=200)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    lens = lengths()
    total, mx = sum(lens), max(lens)
    cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0).tolist()), dtype=torch.int32, device="cuda")
    g = torch.Generator(device="cuda").manual_seed(0)
    q = torch.randn(total, H, D, device="cuda", dtype=torch.bfloat16, generator=g)
    k = torch.randn(total, HKV, D, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(total, HKV, D, device="cuda", dtype=torch.bfloat16, generator=g)
    results = []
    for causal in (False, True):
        flops = sum(4.0 * l * l * H * D for l in lens) / (2 if causal else 1)
        row = {"causal": causal, "total_tokens": total, "max_len": mx, "flops": flops}
        for kk, vv, note in ((k, v, "gqa"), (None, None, "expanded")):
            if kk is None:
                kk = k.repeat_interleave(H // HKV, dim=1)
                vv = v.repeat_interleave(H // HKV, dim=1)

            def run():
                return torch.ops.aten._flash_attention_forward(
                    q, kk, vv, cu, cu, mx, mx, 0.0, causal, False, scale=D**-0.5
                )

            try:
                run()
                torch.cuda.synchronize()
            except Exception as e:  # noqa: BLE001 - recorded, then the next form is tried
                row[f"error_{note}"] = str(e).splitlines()[0]
                continue
            ms = triton.testing.do_bench(run, rep=args.rep_ms, return_mode="median")
            row.update({"kv": note, "ms": ms, "tflops": flops / ms / 1e9})
            break
        print(json.dumps(row))
        results.append(row)
    meta = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(), "lengths": lens}
    with open(os.path.join(args.out, "bench_torch_varlen.json"), "w") as f:
        json.dump({"meta": meta, "results": results}, f, indent=1)
    with open(os.path.join(args.out, "bench_torch_varlen.md"), "w") as f:
        f.write(f"torch {meta['torch']} on {meta['gpu']}, FA2 varlen forward, bf16, 64 seqs, {total} tokens\n\n")
        f.write("| causal | K/V | median ms | TF/s |\n|---|---|---|---|\n")
        for r in results:
            f.write(f"| {r['causal']} | {r.get('kv', '-')} | {r.get('ms', float('nan')):.3f} | {r.get('tflops', 0):.1f} |\n")


if __name__ == "__main__":
    main()

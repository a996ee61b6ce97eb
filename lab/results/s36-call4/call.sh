# Session 36 call 4: issue 14's table on main's kept kernels (pack s35u, full: the kept trim,
# d771714's SASS), synccheck of the sanitizer subset, torch run 1 (cuDNN, FA2), our
# cuda_fused_attn_bf16 rows, torch run 2 (lab/decode/check_ab.sh table_call).
. lab/decode/check_ab.sh
archived table_call s35u

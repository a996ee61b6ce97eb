# Session 30 call 7: the kept version (pack s30f: the conditional rescale on every Hopper
# prefill instance but d128's plain and `_mods`; SASS-identical to s30e's instances where on,
# to HEAD 3f5ad68's where off): synccheck of the sanitizer subset (the change adds a warp vote),
# then issue 14's table (torch, ours, torch) in one call.
. lab/decode/check_ab.sh
# (Rewritten in session 31 to call the same commands through check_ab.sh table_call.)
body() { table_call s30f; }
archived body

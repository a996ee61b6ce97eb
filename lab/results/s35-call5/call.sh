# Session 35 call 5: call 4 again on pack s35st2 (branch s35-decode-stamps' second commit: each
# warp's time at a quarter, half and three quarters of its tiles too, one launch per 134 ms
# window), 2 s per row.
PACK=s35st2 MT=2 bash lab/results/s35-call4/call.sh

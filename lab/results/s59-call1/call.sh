# Session 59, call 1: session 58's call 6 script (written then, not run), run as it is; the
# device tool ran a copy of it whose only difference was its first comment line.
exec bash lab/results/s58-call6/call.sh

#!/usr/bin/env python3
"""Runs a command on this CPU as if it had no AMX: the OS refuses the AMX tile state.

    python3 scripts/no_amx.py CMD [ARGS...]

Linux (5.16+) gives a process the AMX tile state only after it asks with
`arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)`; without that permission every
AMX instruction faults. This script installs a seccomp filter that makes exactly that
request fail with EPERM (every other system call, and every other arch_prctl, passes),
then replaces itself with CMD, which inherits the filter, as do its children and threads.

So a program that asks first (oneDNN inside PyTorch; our CPU path in src/cpu/amx.rs)
finds no AMX and takes its next-best kernels, as on an AVX-512 CPU without AMX, such
as Ice Lake or Zen 4/5: the same machine, same cores, same clock, only AMX gone. It is
the fair way to time both sides "without AMX" (issue 15): an ISA cap like
ONEDNN_MAX_CPU_ISA reaches only code that reads it. A program that runs AMX
instructions without asking dies of SIGILL, which shows it loudly.

It prints one line to stderr first, which `--check` turns into a test of the filter: it
asks for the permission itself and exits 0 only if the request was refused.
"""
import ctypes
import os
import struct
import sys

# Linux x86-64 constants (uapi headers).
NR_ARCH_PRCTL = 158
ARCH_REQ_XCOMP_PERM = 0x1023
XFEATURE_XTILEDATA = 18
AUDIT_ARCH_X86_64 = 0xC000003E
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
EPERM = 1
# BPF opcodes: ld|w|abs, jmp|jeq|k, ret|k.
LD_W_ABS, JEQ_K, RET_K = 0x20, 0x15, 0x06
# struct seccomp_data offsets: nr, arch, instruction_pointer, args[6].
OFF_NR, OFF_ARCH, OFF_ARG0 = 0, 4, 16


def insn(code, jt, jf, k):
    return struct.pack("HBBI", code, jt, jf, k)


def install():
    prog = b"".join([
        insn(LD_W_ABS, 0, 0, OFF_ARCH),
        insn(JEQ_K, 1, 0, AUDIT_ARCH_X86_64),
        insn(RET_K, 0, 0, SECCOMP_RET_ALLOW),  # another ABI: not ours to filter
        insn(LD_W_ABS, 0, 0, OFF_NR),
        insn(JEQ_K, 1, 0, NR_ARCH_PRCTL),
        insn(RET_K, 0, 0, SECCOMP_RET_ALLOW),
        insn(LD_W_ABS, 0, 0, OFF_ARG0),  # the low 32 bits of the option
        insn(JEQ_K, 1, 0, ARCH_REQ_XCOMP_PERM),
        insn(RET_K, 0, 0, SECCOMP_RET_ALLOW),
        insn(RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM),
    ])
    n = len(prog) // 8
    buf = ctypes.create_string_buffer(prog, len(prog))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(n, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, None, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP)")
    return libc


def ask_amx(libc):
    """The AMX permission request, as oneDNN and src/cpu/amx.rs make it: (rc, errno)."""
    libc.syscall.restype = ctypes.c_long
    rc = libc.syscall(ctypes.c_long(NR_ARCH_PRCTL), ctypes.c_long(ARCH_REQ_XCOMP_PERM),
                      ctypes.c_long(XFEATURE_XTILEDATA))
    return rc, ctypes.get_errno()


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    libc = install()
    if sys.argv[1] == "--check":
        rc, err = ask_amx(libc)
        print(f"no_amx: ARCH_REQ_XCOMP_PERM after the filter: rc {rc}, errno {err}", file=sys.stderr)
        sys.exit(0 if rc == -1 and err == EPERM else 1)
    print(f"no_amx: the AMX permission request (arch_prctl {ARCH_REQ_XCOMP_PERM:#x}) now fails with EPERM; "
          f"running {sys.argv[1:]}", file=sys.stderr)
    os.execvp(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()

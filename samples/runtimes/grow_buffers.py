# samples/runtimes/grow_buffers.py: a Python program's growth three calls
# deep: main() calls build(), which calls grow_buffers(), which keeps
# 64 KiB buffers (each 16 page faults as it is filled with zeros).
#
# Usage: python3.12 -X perf grow_buffers.py [N]
#        python3.13 -X perf_jit grow_buffers.py [N]
#
# Prints the truth: the buffers kept and the function that kept them.
import sys


def grow_buffers(n):
    out = []
    for _ in range(n):
        out.append(bytearray(64 * 1024))
    return out


def build(n):
    return grow_buffers(n)


def main():
    kept = build(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
    print(f"grow_buffers: {len(kept)} buffers of 65536 bytes from grow_buffers")


main()

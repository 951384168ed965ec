#!/usr/bin/env python3
"""Fixtures and checks for the `flashsinkhorn hvp` CLI test, standard library only.

  hvp_fixtures.py make DIR                     x.npy (7,2), y.npy (6,2), dir_a.npy, dir_b.npy (7,2),
                                               dir_y.npy (6,2), dir_bad.npy (6,2)
  hvp_fixtures.py symmetric A HA B HB          check <B, H A> = <A, H B> (relative 1e-8)
  hvp_fixtures.py same U V                     check U = V (relative 1e-9 of max |V|)
  hvp_fixtures.py summed S U V                 check S = U + V (relative 1e-9 of max |S|)
"""
import os
import random
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from npy_fixtures import npy_bytes, read_npy, write  # noqa: E402

N, M, D = 7, 6, 2


def values(path):
    header, payload = read_npy(path)
    code = {"<f4": "<%df", "<f8": "<%dd"}[header["descr"]]
    count = 1
    for s in header["shape"]:
        count *= s
    return struct.unpack(code % count, payload)


def make(directory):
    rng = random.Random(7)
    def cloud(rows):
        return [rng.uniform(-1, 1) for _ in range(rows * D)]
    write(os.path.join(directory, "x.npy"), npy_bytes("<f8", (N, D), cloud(N)))
    write(os.path.join(directory, "y.npy"), npy_bytes("<f8", (M, D), cloud(M)))
    write(os.path.join(directory, "dir_a.npy"), npy_bytes("<f8", (N, D), cloud(N)))
    write(os.path.join(directory, "dir_b.npy"), npy_bytes("<f8", (N, D), cloud(N)))
    write(os.path.join(directory, "dir_y.npy"), npy_bytes("<f4", (M, D), cloud(M)))
    write(os.path.join(directory, "dir_bad.npy"), npy_bytes("<f8", (M, D), cloud(M)))


def symmetric(a, ha, b, hb):
    a, ha, b, hb = values(a), values(ha), values(b), values(hb)
    left = sum(u * v for u, v in zip(b, ha))
    right = sum(u * v for u, v in zip(a, hb))
    scale = max(abs(left), abs(right), 1e-300)
    if abs(left - right) > 1e-8 * scale:
        raise SystemExit("<B, HA> = %.17g but <A, HB> = %.17g" % (left, right))


def close(got, want, what):
    scale = max(max(abs(w) for w in want), 1e-300)
    worst = max(abs(g - w) for g, w in zip(got, want))
    if len(got) != len(want) or worst > 1e-9 * scale:
        raise SystemExit("%s: max difference %.3g of max %.3g" % (what, worst, scale))


def same(u, v):
    close(values(u), values(v), "%s vs %s" % (u, v))


def summed(s, u, v):
    close(values(s), [a + b for a, b in zip(values(u), values(v))], "%s vs %s + %s" % (s, u, v))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "symmetric":
        symmetric(*sys.argv[2:6])
    elif sys.argv[1] == "same":
        same(*sys.argv[2:4])
    elif sys.argv[1] == "summed":
        summed(*sys.argv[2:5])
    else:
        raise SystemExit("unknown command " + sys.argv[1])

#!/usr/bin/env python3
"""Fixture files and output checks for the CLI tests, with the standard library only (no numpy).

  npy_fixtures.py make DIR                 write every fixture the shell tests use into DIR
  npy_fixtures.py check FILE DESCR SHAPE   check that FILE is a .npy with that dtype and shape
                                           (SHAPE like "7" or "7,2") and only finite values
  npy_fixtures.py same-cost A.json B.json  check that two JSON summaries report the same cost
                                           (relative difference below 1e-6)
"""
import json
import math
import os
import random
import struct
import sys
import zipfile

N, M, D = 7, 6, 2


def npy_bytes(descr, shape, values, fortran_order=False):
    """The bytes numpy writes for an array (format 1.0, header padded to 64 bytes)."""
    shape_text = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, "True" if fortran_order else "False", shape_text)
    padding = (64 - (10 + len(header) + 1) % 64) % 64
    header = header + " " * padding + "\n"
    code = {"<f4": "<%df", "<f8": "<%dd", ">f8": ">%dd", "<i8": "<%dq"}[descr]
    data = struct.pack(code % len(values), *values)
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + data


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def cloud(rows, dims, rng):
    return [rng.uniform(-1, 1) for _ in range(rows * dims)]


def make(directory):
    rng = random.Random(0)
    x, y = cloud(N, D, rng), cloud(M, D, rng)
    a = [rng.uniform(0.1, 1) for _ in range(N)]
    b = [rng.uniform(0.1, 1) for _ in range(M)]
    p = lambda name: os.path.join(directory, name)

    write(p("x.npy"), npy_bytes("<f8", (N, D), x))
    write(p("y.npy"), npy_bytes("<f8", (M, D), y))
    write(p("x32.npy"), npy_bytes("<f4", (N, D), x))
    write(p("x_big_endian.npy"), npy_bytes(">f8", (N, D), x))
    write(p("a.npy"), npy_bytes("<f8", (N,), a))
    write(p("b.npy"), npy_bytes("<f8", (M,), b))

    def with_value(values, index, value):
        copy = list(values)
        copy[index] = value
        return copy

    write(p("x_nan.npy"), npy_bytes("<f8", (N, D), with_value(x, 3, math.nan)))
    write(p("y_inf.npy"), npy_bytes("<f8", (M, D), with_value(y, 2, math.inf)))
    write(p("a_nan.npy"), npy_bytes("<f8", (N,), with_value(a, 1, math.nan)))
    write(p("b_negative.npy"), npy_bytes("<f8", (M,), with_value(b, 4, -0.5)))
    write(p("b_zero.npy"), npy_bytes("<f8", (M,), [0.0] * M))
    write(p("a_short.npy"), npy_bytes("<f8", (N - 2,), a[: N - 2]))
    write(p("y_d3.npy"), npy_bytes("<f8", (M, 3), cloud(M, 3, rng)))
    write(p("x_empty.npy"), npy_bytes("<f8", (0, D), []))
    write(p("x_int64.npy"), npy_bytes("<i8", (N, D), list(range(N * D))))
    write(p("x_fortran.npy"), npy_bytes("<f8", (N, D), x, fortran_order=True))
    write(p("x_rank3.npy"), npy_bytes("<f8", (N, D, 1), x))
    write(p("x_truncated.npy"), npy_bytes("<f8", (N, D), x)[:-20])
    write(p("x_bad_magic.npy"), b"NOTNUMPY" + npy_bytes("<f8", (N, D), x)[8:])
    write(p("x.txt"), "\n".join(",".join(repr(v) for v in x[i * D:(i + 1) * D]) for i in range(N)).encode())

    # The same points as text: with a header line in X, without one in Y.
    rows = lambda values, dims: [",".join(repr(v) for v in values[i * dims:(i + 1) * dims])
                                 for i in range(len(values) // dims)]
    write(p("x.csv"), ("u,v\n" + "\n".join(rows(x, D)) + "\n").encode())
    write(p("y.csv"), ("\r\n".join(rows(y, D)) + "\r\n").encode())
    write(p("x_ragged.csv"), ("1,2\n3,4,5\n").encode())

    for name, method in (("x_stored.npz", zipfile.ZIP_STORED), ("x_deflated.npz", zipfile.ZIP_DEFLATED)):
        with zipfile.ZipFile(p(name), "w", compression=method) as archive:
            archive.writestr("x.npy", npy_bytes("<f8", (N, D), x))
    with zipfile.ZipFile(p("xy.npz"), "w") as archive:
        archive.writestr("x.npy", npy_bytes("<f8", (N, D), x))
        archive.writestr("y.npy", npy_bytes("<f8", (M, D), y))


def read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:6] != b"\x93NUMPY" or data[6] != 1:
        raise ValueError("bad magic or version")
    (header_length,) = struct.unpack("<H", data[8:10])
    header = eval(data[10:10 + header_length].decode("latin1"))  # a dict literal we wrote ourselves
    if (10 + header_length) % 64 != 0:
        raise ValueError("header not padded to 64 bytes")
    return header, data[10 + header_length:]


def check(path, descr, shape_text):
    header, payload = read_npy(path)
    shape = tuple(int(s) for s in shape_text.split(","))
    if header["descr"] != descr or header["shape"] != shape or header["fortran_order"]:
        raise SystemExit("%s: header %r, expected descr %s shape %s" % (path, header, descr, shape))
    count = math.prod(shape)
    code = {"<f4": "<%df", "<f8": "<%dd"}[descr]
    if len(payload) != struct.calcsize(code % count):
        raise SystemExit("%s: %d data bytes for shape %s" % (path, len(payload), shape))
    values = struct.unpack(code % count, payload)
    if not all(math.isfinite(v) for v in values):
        raise SystemExit("%s: non-finite values" % path)


def same_cost(first, second):
    with open(first) as f:
        cost_a = json.load(f)["cost"]
    with open(second) as f:
        cost_b = json.load(f)["cost"]
    if abs(cost_a - cost_b) > 1e-6 * max(1.0, abs(cost_a)):
        raise SystemExit("costs differ: %r (%s) vs %r (%s)" % (cost_a, first, cost_b, second))


if __name__ == "__main__":
    command = sys.argv[1]
    if command == "make":
        make(sys.argv[2])
    elif command == "check":
        check(*sys.argv[2:5])
    elif command == "same-cost":
        same_cost(*sys.argv[2:4])
    else:
        raise SystemExit("unknown command " + command)

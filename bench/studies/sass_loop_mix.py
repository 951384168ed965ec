#!/usr/bin/env python3
"""The instruction mix of a kernel's hottest loop, read from its SASS without a GPU: per kernel whose
name matches, the backward-branch loop with the most MUFU.EX2 (the exponentials of an online softmax),
its instructions per exponential by opcode, its issue slots against the MUFU clocks of its ex2s (and
the exponentials it computes on the FMA pipe instead, FLASHSINKHORN_EXP2=split), and the kernel's
registers (cuobjdump -res-usage).

A softmin or plan pass at d ≤ 16 is bound by issue slots and the MUFU, not by memory: instructions
per exponential against the MUFU's 16 a clock per SM (4 issue slots a clock, 32 lanes) says how far a
kernel can be from its floor before profiling it on the device. Example (this VM, CUDA 13; cuobjdump
comes as a PyPI wheel: pip download --no-deps nvidia-cuda-cuobjdump, then unzip; --cuobjdump PATH):

  python3 bench/studies/sass_loop_mix.py build/src/cuda/CMakeFiles/flashsinkhorn_cuda.dir/softmin_launch.cu.o \\
      'softmin_narrow_kernelILi3E' --cuobjdump /tmp/cuobj/x/nvidia/cu13/bin/cuobjdump
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys

_INSTRUCTION = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_BRANCH = re.compile(r"\bBRA\s+(0x[0-9a-f]+)")
_FUNCTION = re.compile(r"Function\s*:\s*(\S+)")


def functions(sass: str) -> dict[str, list[tuple[int, str]]]:
    """Each function of a cuobjdump -sass listing: [(address, instruction)] in order."""
    out: dict[str, list[tuple[int, str]]] = {}
    current = None
    for line in sass.splitlines():
        named = _FUNCTION.search(line)
        if named:
            current = out.setdefault(named.group(1), [])
            continue
        m = _INSTRUCTION.match(line)
        if m and current is not None:
            current.append((int(m.group(1), 16), m.group(2).strip()))
    return out


def opcode(instruction: str) -> str:
    """The opcode without its predicate (@P0, @!P1)."""
    return re.sub(r"^@!?U?P[T\d]+\s+", "", instruction).split()[0]


# A warp's MUFU.EX2 holds its scheduler's share of the MUFU (16 lanes a clock an SM, 4 a scheduler) for
# 8 clocks; every instruction takes one issue slot of its scheduler (one a clock).
MUFU_CLOCKS_PER_EX2 = 8
# The marker of an exponential computed on the FMA pipe instead (math/exp2_cubic.hpp: one FFMA.SAT each;
# FLASHSINKHORN_EXP2=split).
EMULATED_EXP2 = "FFMA.SAT"


def loops(code: list[tuple[int, str]]) -> list[dict]:
    """Every loop (a backward branch and its target) that holds a MUFU.EX2, the most exponentials first:
    its bounds, instructions, exponentials (MUFU.EX2; `emulated`: the FFMA.SATs of exp2_cubic) and opcode
    mix per exponential, and a warp's issue slots against the MUFU clocks its ex2s hold (`bound`: the
    larger, if the scheduler's warps hide every latency)."""
    out = []
    for address, instruction in code:
        target = _BRANCH.search(instruction)
        if not target or int(target.group(1), 16) >= address:
            continue
        start = int(target.group(1), 16)
        body = [opcode(t) for a, t in code if start <= a <= address]
        exponentials = body.count("MUFU.EX2")
        if exponentials:
            mix = collections.Counter(body)
            mufu_clocks = MUFU_CLOCKS_PER_EX2 * exponentials
            out.append(dict(start=hex(start), end=hex(address), instructions=len(body), exponentials=exponentials,
                            emulated=body.count(EMULATED_EXP2), per_exponential=round(len(body) / exponentials, 2),
                            issue_slots=len(body), mufu_clocks=mufu_clocks,
                            bound="mufu" if mufu_clocks > len(body) else "issue",
                            mix={k: round(v / exponentials, 2) for k, v in mix.most_common()}))
    return sorted(out, key=lambda loop: -loop["exponentials"])


def hottest_loop(code: list[tuple[int, str]]) -> dict | None:
    """The loop holding the most MUFU.EX2; None without one."""
    found = loops(code)
    return found[0] if found else None


def registers(resource_usage: str) -> dict[str, int]:
    """Registers per function from cuobjdump -res-usage."""
    out, current = {}, None
    for line in resource_usage.splitlines():
        named = re.search(r"Function\s+(\S+?):?$", line.strip())
        if named:
            current = named.group(1)
        reg = re.search(r"REG:(\d+)", line)
        if reg and current:
            out[current] = int(reg.group(1))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("object", help="an object file or executable with sm_90a SASS")
    ap.add_argument("kernel", help="a regular expression on the mangled kernel names")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--cuobjdump", default=shutil.which("cuobjdump") or "cuobjdump")
    ap.add_argument("--all-loops", action="store_true",
                    help="every loop with exponentials (e.g. a kernel's fast path and its fallback), not the hottest")
    args = ap.parse_args(argv)
    try:
        sass = subprocess.run([args.cuobjdump, "-sass", "-arch", args.arch, args.object], capture_output=True,
                              text=True, check=True).stdout
        usage = subprocess.run([args.cuobjdump, "-res-usage", "-arch", args.arch, args.object], capture_output=True,
                               text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"sass_loop_mix: cuobjdump failed: {e}", file=sys.stderr)
        return 1
    regs = registers(usage)
    found = 0
    for name, code in functions(sass).items():
        if not re.search(args.kernel, name):
            continue
        found += 1
        found_loops = loops(code) if args.all_loops else hottest_loop(code)
        print(json.dumps(dict(kernel=name, registers=regs.get(name),
                              **({"loops": found_loops} if args.all_loops else {"loop": found_loops}))))
    if not found:
        print(f"sass_loop_mix: no kernel matches {args.kernel!r}", file=sys.stderr)
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())

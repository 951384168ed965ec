"""bench/studies/sass_loop_mix.py on a hand-written SASS listing through a stand-in cuobjdump: it picks
the loop with the most exponentials (not the first loop, nor straight-line code), counts opcodes
without their predicates, weighs issue slots against MUFU clocks, and joins the registers of -res-usage."""

from __future__ import annotations

import importlib.util
import json
import stat
from pathlib import Path

STUDY = Path(__file__).resolve().parents[2] / "bench" / "studies" / "sass_loop_mix.py"

SASS = """
	code for sm_90a
		Function : _Z6kernelv
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   MUFU.EX2 R2, R2 ;
        /*0020*/                   FADD R3, R3, 1 ;
        /*0030*/               @P0 BRA 0x10 ;
        /*0040*/                   FFMA R4, R4, R5, R6 ;
        /*0050*/                   FMNMX R7, R7, R4, !PT ;
        /*0060*/                   MUFU.EX2 R8, R4 ;
        /*0070*/               @P1 MUFU.EX2 R9, R4 ;
        /*0080*/                   FADD R10, R10, R8 ;
        /*0090*/                   FFMA R4, R4, R5, R6 ;
        /*00a0*/              @!P2 BRA 0x40 ;
        /*00b0*/                   MUFU.EX2 R11, R11 ;
        /*00c0*/                   EXIT ;
		Function : _Z5otherv
        /*0000*/                   EXIT ;
"""

USAGE = """
 Function _Z6kernelv:
  REG:42 STACK:0 SHARED:0 LOCAL:0
 Function _Z5otherv:
  REG:8 STACK:0 SHARED:0 LOCAL:0
"""


def _load():
    spec = importlib.util.spec_from_file_location("sass_loop_mix", STUDY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_hottest_loop_and_its_mix_per_exponential(tmp_path, capsys):
    study = _load()
    (tmp_path / "sass.txt").write_text(SASS)
    (tmp_path / "usage.txt").write_text(USAGE)
    tool = tmp_path / "cuobjdump"
    tool.write_text(f'#!/bin/sh\nif [ "$1" = -sass ]; then cat {tmp_path}/sass.txt; else cat {tmp_path}/usage.txt; fi\n')
    tool.chmod(tool.stat().st_mode | stat.S_IEXEC)
    assert study.main(["any.o", "kernel", "--cuobjdump", str(tool)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == 1 and rows[0]["kernel"] == "_Z6kernelv" and rows[0]["registers"] == 42
    loop = rows[0]["loop"]
    # 0x40 … 0xa0 (two exponentials) rather than 0x10 … 0x30 (one)
    assert (loop["start"], loop["end"], loop["instructions"], loop["exponentials"]) == ("0x40", "0xa0", 7, 2)
    assert loop["per_exponential"] == 3.5
    # 7 issue slots against 2 × 8 MUFU clocks; no FFMA.SAT, so nothing emulated
    assert (loop["issue_slots"], loop["mufu_clocks"], loop["bound"], loop["emulated"]) == (7, 16, "mufu", 0)
    assert loop["mix"] == {"FFMA": 1.0, "MUFU.EX2": 1.0, "FMNMX": 0.5, "FADD": 0.5, "BRA": 0.5}
    assert study.main(["any.o", "kernel", "--cuobjdump", str(tool), "--all-loops"]) == 0
    both = json.loads(capsys.readouterr().out)["loops"]
    assert [(x["start"], x["exponentials"]) for x in both] == [("0x40", 2), ("0x10", 1)]
    assert study.main(["any.o", "nothing_like_it", "--cuobjdump", str(tool)]) == 1

"""The device's operand roundings in NumPy, for the studies (src/core/operand_rounding.hpp): float32
values rounded to tf32 (10 explicit mantissa bits) or bf16 (7), nearest-even, as the preparation stores
them; and tf32 by truncation, what a tensor core reads from a float32 operand nobody rounded."""

import numpy as np


def _keep_top_bits(v, dropped: int, nearest: bool):
    bits = np.asarray(v, np.float32).view(np.uint32).astype(np.uint64)
    if nearest:  # + half an ulp − 1, + 1 more when the kept part is odd: ties to even
        bits = bits + ((1 << (dropped - 1)) - 1) + ((bits >> dropped) & 1)
    bits = (bits >> dropped) << dropped
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def tf32(v):
    return _keep_top_bits(v, 13, nearest=True)


def tf32_truncated(v):
    return _keep_top_bits(v, 13, nearest=False)


def bf16(v):
    return _keep_top_bits(v, 16, nearest=True)

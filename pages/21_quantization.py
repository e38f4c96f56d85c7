"""Quantization: the model's weights stored in float16, int8, int4 (one scale per row or per matrix,
with and without outliers kept aside), their bytes, bits per character on validation text, how
often the top token still agrees with float32, one matrix against its grid, and links that open
any page on a quantised copy.

The page's sections are functions in ui/quantization.py (docs/ADD_A_PAGE.md): this script reads
as the page's table of contents."""

import ui
from ui import quantization

ctx = ui.context()

quantization.intro()
measurement = quantization.measured_precisions(ctx)  # every precision (cached); stops when short
quantization.bytes_against_bits(ctx, measurement)
quantization.one_matrix(measurement)
quantization.through_the_layers(ctx, measurement)
quantization.open_a_copy()

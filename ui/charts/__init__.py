"""Figure builders: arrays and labels in, a plotly figure out; never streamlit.

One module per concept; shared colour scales, sizes and label helpers live in `common`, so every
page looks like the same product.
"""

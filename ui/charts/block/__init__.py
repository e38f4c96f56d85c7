"""Inside one block, the figures of the Inside a block page, a module for each of its parts (as
ui/inside_block/ has one for each section):

walk.py      a token's vector at each step of the block
matrices.py  the matrices of a whole prompt side by side, a head's circuits (singular values,
             token maps)
gradient.py  one gradient step: the gradient per group, the loss along it, what it moved
lookup.py    attention as a look-up: exact, nearest, soft
context.py   contextual embeddings: a token's occurrences in their contexts, station by station
probes.py    linear probes' accuracy by station
shared.py    what they share: the block's colours and a colour range one outlier cannot wash out

Arrays and labels in, plotly figures out. Signed values use the diverging scale centred on 0,
attention weights the sequential one, as on the Attention page.
"""

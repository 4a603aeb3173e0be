"""`kctl produce` (produce.py) and what only it uses: the ISR check before acks=all records
(insync), where transactions cut the input (linebatches) and the --rate pacing (pacing)."""

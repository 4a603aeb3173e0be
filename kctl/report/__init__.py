"""`kctl report` (report.py): a `kctl watch --record` file read back as timelines
(recording), drawn with matplotlib (chart) into an SVG or a self-contained HTML page (page),
with the anomalies of a `kctl verify` history marked (history)."""

"""Ranking quality on the labelled corpora: `python -m bench.quality` measures the product's
pipeline, `bench.quality.ablation` explores indexer variants without a database, and
`bench.quality.calibrate` chooses the band cut points from the kept rankings."""

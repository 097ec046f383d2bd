"""Measurements run by hand, not tests: one command per module (`python -m bench.run`,
`bench.quality`, `bench.importing`, `bench.load.harness`, `bench.quality.ablation`,
`bench.quality.calibrate`, `bench.latency.vector_storage` and the others bench/README.md
lists by the question each answers), their code in a folder per kind (latency/, quality/,
importing/, load/, search/), what the kinds share in common/, and their figures in results/."""

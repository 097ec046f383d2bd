"""Measurements run by hand, not tests: one command per module here (`python -m bench.run`,
`bench.quality`, `bench.importing`, `bench.loadtest`, `bench.ablation`, `bench.calibrate`,
`bench.vector_storage`), their code in a folder per kind (latency/, quality/, importing/,
load/), what the kinds share in common/, and their figures in results/."""

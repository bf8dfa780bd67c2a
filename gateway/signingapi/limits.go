package signingapi

// MaxBatchPairs is the most did/kid pairs one batch key lookup may name.
const MaxBatchPairs = maxBatchPairs

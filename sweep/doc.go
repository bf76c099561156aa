// Package sweep holds a sweep step's algorithms: the samplers that propose
// trials (grid, random with the random or sobol rule, and bayesian, a
// Tree-structured Parzen Estimator) and the early-termination policies
// (bandit, median_stopping, truncation_selection), with Azure ML's semantics.
//
// Everything here is a pure function of its inputs: no clock, environment,
// I/O or global random state. Randomness comes from math/rand/v2 PCG sources
// seeded from the sweep's seed and the trial's index, so the same inputs give
// the same outputs in a local activity, in workflow code and under replay,
// and a sampler restarted with started = k (after a continue-as-new) proposes
// exactly what one long-lived sampler would have proposed from trial k on.
//
// # Search spaces
//
// A trial's value for each kind of parameter, with b the logbase (e unless
// the random algorithm's logbase says otherwise):
//
//	choice{values}          one of the values; a dict value also sets its entries
//	randint{upper}          an integer in 0..upper-1
//	uniform{min, max}       U(min, max)
//	loguniform{min, max}    b^U(min, max)
//	normal{mu, sigma}       N(mu, sigma)
//	lognormal{mu, sigma}    b^N(mu, sigma)
//	q<kind>{..., q}         round(x/q)*q of the kind's value x
//
// Azure documents logbase only as "a positive number or e to be used as base
// for log based random sampling"; porch reads it as the base of the log forms
// above, so logbase 10 makes loguniform{-4, -1} span 1e-4..1e-1.
package sweep

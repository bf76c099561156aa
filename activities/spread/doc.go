// Package spread holds instances of steps spread over workers: a held
// instance tells its step which node has it and where the others reach it,
// and lasts until the step lets it go.
package spread

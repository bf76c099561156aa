package plan

// StepSweep is a sweep step: a hyperparameter search whose trials each run
// the step's trial (a command, or a whole pipeline) with sampled inputs.
//
// A sweep step's trial lives in the Step's own fields: Command for a command
// trial, Pipeline for a pipeline-component trial; Inputs bind every trial
// input, those the search space sets with ValueSearchSpace; Outputs are the
// trial's outputs, which the sweep reports from its best trial.
const StepSweep StepType = "sweep"

// ValueSearchSpace is an input each trial sets from its sampled parameters;
// Input names the parameter.
const ValueSearchSpace ValueKind = "search_space"

// Sweep is a sweep step's settings. The compiler fills every default.
type Sweep struct {
	// SearchSpace is the parameters, sorted by name.
	SearchSpace []Parameter `json:"search_space"`
	Sampling    Sampling    `json:"sampling"`
	Objective   Objective   `json:"objective"`
	Limits      SweepLimits `json:"limits"`
	// EarlyTermination is nil for none.
	EarlyTermination *EarlyTermination `json:"early_termination,omitempty"`
	// MetricStep is, for a pipeline trial, the path (inside the trial
	// pipeline) of the step that reports the primary metric; "" means any
	// step that reports it.
	MetricStep string `json:"metric_step,omitempty"`
}

// Parameter kinds, as Azure ML names them.
const (
	ParamChoice      = "choice"
	ParamRandint     = "randint"
	ParamUniform     = "uniform"
	ParamLogUniform  = "loguniform"
	ParamQUniform    = "quniform"
	ParamQLogUniform = "qloguniform"
	ParamNormal      = "normal"
	ParamLogNormal   = "lognormal"
	ParamQNormal     = "qnormal"
	ParamQLogNormal  = "qlognormal"
)

// Parameter is one search-space dimension.
type Parameter struct {
	Name string `json:"name"`
	// Kind is one of the Param* constants.
	Kind string `json:"kind"`
	// Choices are a choice's values.
	Choices []Choice `json:"choices,omitempty"`
	// Upper is randint's exclusive upper bound.
	Upper int `json:"upper,omitempty"`
	// Min and Max bound uniform and loguniform (and their q forms);
	// loguniform's are exponents: exp(U(Min, Max)).
	Min float64 `json:"min,omitempty"`
	Max float64 `json:"max,omitempty"`
	// Mu and Sigma are the normal forms' parameters.
	Mu    float64 `json:"mu,omitempty"`
	Sigma float64 `json:"sigma,omitempty"`
	// Q is the q forms' step: a value is round(x/Q)*Q.
	Q   float64 `json:"q,omitempty"`
	Pos Pos     `json:"pos"`
}

// Choice is one value of a choice: a scalar, or a dict whose entries are
// fixed scalars or nested parameters.
type Choice struct {
	// Literal is a scalar as written ("0.01", "adam", "true").
	Literal string `json:"literal,omitempty"`
	// Nested is set for a dict value: each entry is a parameter named by
	// its key (a fixed scalar is a choice of one literal). A trial that
	// samples this choice also sets the inputs these keys name.
	Nested []Parameter `json:"nested,omitempty"`
}

// Sampling algorithms.
const (
	SamplingRandom   = "random"
	SamplingGrid     = "grid"
	SamplingBayesian = "bayesian"
)

// Sampling is sampling_algorithm.
type Sampling struct {
	// Algorithm is random, grid or bayesian.
	Algorithm string `json:"algorithm"`
	// Seed is the random seed; nil means the sweep draws one (and records
	// it in its history).
	Seed *int64 `json:"seed,omitempty"`
	// Rule is random's rule: random (default) or sobol.
	Rule string `json:"rule,omitempty"`
	// Logbase is random's logbase as written: "e" or a number; "" for none.
	Logbase string `json:"logbase,omitempty"`
}

// Goals.
const (
	GoalMaximize = "maximize"
	GoalMinimize = "minimize"
)

// Objective is the metric trials are ranked by.
type Objective struct {
	PrimaryMetric string `json:"primary_metric"`
	// Goal is maximize or minimize (lower case).
	Goal string `json:"goal"`
}

// SweepLimits are limits:.
type SweepLimits struct {
	MaxTotalTrials int `json:"max_total_trials"`
	// MaxConcurrentTrials defaults to MaxTotalTrials.
	MaxConcurrentTrials int `json:"max_concurrent_trials"`
	// TimeoutSeconds bounds the whole sweep (default 60 days).
	TimeoutSeconds int `json:"timeout_seconds"`
	// TrialTimeoutSeconds bounds each trial; 0 means none.
	TrialTimeoutSeconds int `json:"trial_timeout_seconds,omitempty"`
}

// Early termination policies.
const (
	PolicyBandit              = "bandit"
	PolicyMedianStopping      = "median_stopping"
	PolicyTruncationSelection = "truncation_selection"
)

// EarlyTermination is early_termination:.
type EarlyTermination struct {
	// Policy is bandit, median_stopping or truncation_selection.
	Policy             string `json:"policy"`
	EvaluationInterval int    `json:"evaluation_interval"`
	DelayEvaluation    int    `json:"delay_evaluation"`
	// SlackFactor or SlackAmount (bandit; exactly one is set).
	SlackFactor float64 `json:"slack_factor,omitempty"`
	SlackAmount float64 `json:"slack_amount,omitempty"`
	// TruncationPercentage and ExcludeFinishedJobs (truncation_selection).
	TruncationPercentage int  `json:"truncation_percentage,omitempty"`
	ExcludeFinishedJobs  bool `json:"exclude_finished_jobs,omitempty"`
}

package schedule

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/porch-pipelines/porch/compiler"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// Job is what a schedule runs: a pipeline job file, with what create_job
// overrides in it, in the form of porch run's --set keys.
type Job struct {
	// File is the pipeline job file's path: relative paths in the
	// schedule are relative to the schedule file's folder, as in Azure ML.
	File string
	// Set holds the overrides, as --set KEY=VALUE would give them.
	Set map[string]string
	// At is where each override is written in the schedule file.
	At map[string]plan.Pos
	// ExperimentName is create_job's experiment_name, "" for none.
	ExperimentName string
}

// Keys of an inline create_job, and those of its inputs and outputs.
var (
	jobKeys       = []string{"type", "job", "settings", "inputs", "outputs", "tags", "experiment_name", "display_name", "description", "compute"}
	jobSilent     = []string{"name"}
	jobInputKeys  = []string{"type", "path", "mode", "value"}
	jobOutputKeys = []string{"type", "path", "mode"}
)

// triggerRef is a ${{...}} Azure ML fills in a scheduled job's inputs.
var triggerRef = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// Refs a scheduled job's inputs may hold, filled as each run starts.
const (
	RefName        = plan.ScheduledRunName
	RefTriggerTime = plan.ScheduledTriggerTime
)

// readJob reads create_job: a path, or a pipeline job with overrides.
func (r *reader) readJob(e entry, dir string) Job {
	j := Job{Set: map[string]string{}, At: map[string]plan.Pos{}}
	if !e.present() {
		r.errorf(e.key, "create_job", "write create_job: ./pipeline.yml, or create_job: {type: pipeline, job: ./pipeline.yml, ...}",
			"the schedule has no create_job")
		return j
	}
	if e.val.Kind == yaml.ScalarNode {
		j.File = r.jobFile(e.val, "create_job", dir)
		return j
	}
	all := r.mapping(e.val, "create_job", append(jobKeys, jobSilent...), false)
	if all == nil {
		return j
	}
	switch typ := r.str(all["type"], "create_job.type"); typ {
	case "pipeline":
	case "":
		r.errorf(e.val, "create_job.type", "write type: pipeline", "create_job has no type")
	default:
		r.errorf(all["type"].val, "create_job.type", "porch schedules pipeline jobs, as Azure ML does: write type: pipeline", "%q is not a job type a schedule runs", typ)
	}
	if all["name"].present() {
		r.warnf(all["name"].key, "create_job.name", "each run is named <schedule>-<time>", "a scheduled job's name is ignored")
	}
	if !all["job"].present() {
		r.errorf(e.val, "create_job.job", "write job: ./pipeline.yml", "create_job names no job")
	} else {
		j.File = r.jobFile(all["job"].val, "create_job.job", dir)
	}
	j.ExperimentName = r.str(all["experiment_name"], "create_job.experiment_name")
	for _, k := range []string{"experiment_name", "display_name", "description", "compute"} {
		r.override(&j, all[k], "create_job."+k, k)
	}
	r.overrides(&j, all["settings"], "create_job.settings", "settings", nil, nil)
	r.overrides(&j, all["tags"], "create_job.tags", "tags", nil, nil)
	r.overrides(&j, all["inputs"], "create_job.inputs", "inputs", jobInputKeys, &dir)
	r.overrides(&j, all["outputs"], "create_job.outputs", "outputs", jobOutputKeys, &dir)
	return j
}

// jobFile resolves a job path. A registered job (azureml:NAME) is refused:
// porch keeps no job definitions, only the file.
func (r *reader) jobFile(n *yaml.Node, field, dir string) string {
	v := strings.TrimSpace(n.Value)
	if strings.HasPrefix(v, "azureml:") {
		r.errorf(n, field, "porch keeps no registered jobs: name the pipeline job file instead, as create_job: ./pipeline.yml",
			"%q names a registered Azure ML job", v)
		return ""
	}
	v = strings.TrimPrefix(v, "file:")
	if v == "" {
		r.errorf(n, field, "write the pipeline job file's path, as ./pipeline.yml", "the job's path is empty")
		return ""
	}
	path := v
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		r.errorf(n, field, "give the pipeline job file's path, relative to the schedule file's folder "+dir, "no job file %q", v)
		return ""
	case fi.IsDir():
		r.errorf(n, field, "give the pipeline job file's path, not a folder", "%q is a folder", v)
		return ""
	}
	return path
}

// override records one override of a header field (experiment_name, ...).
func (r *reader) override(j *Job, e entry, field, key string) {
	if !e.present() {
		return
	}
	if e.val.Kind != yaml.ScalarNode {
		r.errorf(e.val, field, "write a single value", "expected a value, found %s", compiler.KindName(e.val))
		return
	}
	j.Set[key], j.At[key] = e.val.Value, r.pos(e.val)
}

// overrides records a mapping of overrides: settings and tags (values),
// inputs and outputs (a value or a mapping of fields, when fields is set).
// Local paths are made absolute against dir.
func (r *reader) overrides(j *Job, e entry, field, prefix string, fields []string, dir *string) {
	m := r.mapping(e.val, field, nil, false)
	for name, ent := range m {
		key, f := prefix+"."+name, field+"."+name
		if fields == nil || ent.val.Kind == yaml.ScalarNode {
			if prefix == "outputs" {
				r.errorf(ent.val, f, "write the output's fields: {path: ..., type: ..., mode: ...}", "expected a mapping, found %s", compiler.KindName(ent.val))
				continue
			}
			if prefix == "inputs" {
				r.checkRefs(ent.val, f)
			}
			r.override(j, ent, f, key)
			continue
		}
		for fname, fe := range r.mapping(ent.val, f, fields, false) {
			if prefix == "inputs" && fname == "value" {
				r.checkRefs(fe.val, f+"."+fname)
			}
			r.override(j, fe, f+"."+fname, key+"."+fname)
			if fname == "path" && dir != nil && fe.present() {
				j.Set[key+"."+fname] = localPath(j.Set[key+"."+fname], *dir)
			}
		}
	}
}

// localPath makes a relative local path absolute against dir; URIs,
// references and absolute paths stay as they are.
func localPath(v, dir string) string {
	if v == "" || strings.Contains(v, "://") || strings.HasPrefix(v, "azureml:") || strings.Contains(v, "${{") || filepath.IsAbs(v) {
		return v
	}
	return filepath.Join(dir, v)
}

// checkRefs allows in a scheduled job's input only the references Azure
// ML fills per run, and writes them in one spelling.
func (r *reader) checkRefs(n *yaml.Node, field string) {
	if n == nil || n.Kind != yaml.ScalarNode {
		return
	}
	for _, m := range triggerRef.FindAllStringSubmatchIndex(n.Value, -1) {
		ref := n.Value[m[2]:m[3]]
		if !slices.Contains([]string{"name", "creation_context.trigger_time"}, ref) {
			r.report(compiler.Error, r.valuePos(n, m[0]), field, "a scheduled job's input may hold ${{name}} (the run's name) and "+
				"${{creation_context.trigger_time}} (when the schedule fired), filled as each run starts", "unknown reference %q", n.Value[m[0]:m[1]])
		}
	}
	n.Value = triggerRef.ReplaceAllString(n.Value, "$${{$1}}")
}

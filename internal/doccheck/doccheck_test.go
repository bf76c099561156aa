package doccheck

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const sample = `# A page

Intro with [a link](other.md#part) and ![an image](pic.png).

<!-- doctest: run -->

    porch dev &
    porch run samples/hello/pipeline.yml
    porch job list

## A heading: with ` + "`code`" + `, punctuation!

<!-- doctest: file bad.yml -->
` + "```yaml" + `
type: pipeline
` + "```" + `

<!-- doctest: run fails output -->
` + "```" + `
$ porch validate bad.yml
bad.yml:1:1: error: ... has no jobs
` + "```" + `

<!-- doctest: check
stdout hello
-->

1. A list item:

   <!-- doctest: skip needs a cluster -->

       porch worker --address temporal.example:7233

## A heading: with ` + "`code`" + `, punctuation!

    porch run unmarked.yml
`

func TestParseReadsMarkersBlocksLinksAndAnchors(t *testing.T) {
	p, err := Parse("page.md", []byte(sample))
	require.NoError(t, err)
	require.Equal(t, []Link{{Line: 3, Dest: "other.md#part"}, {Line: 3, Dest: "pic.png"}}, p.Links)
	require.True(t, p.Anchors["a-page"])
	require.True(t, p.Anchors["a-heading-with-code-punctuation"])
	require.True(t, p.Anchors["a-heading-with-code-punctuation-1"], "a second heading of the same text gets -1, as on GitHub")

	var kinds []string
	for _, s := range p.Steps {
		kinds = append(kinds, s.Marker.Kind+" "+strings.Join(s.Marker.Args, " "))
	}
	require.Equal(t, []string{"run ", "file bad.yml", "run fails output", "check ", "skip needs a cluster"}, kinds)
	require.Equal(t, "porch dev &\nporch run samples/hello/pipeline.yml\nporch job list\n", p.Steps[0].Block.Text)
	require.Equal(t, "yaml", p.Steps[1].Block.Lang)
	require.Equal(t, []string{"stdout hello"}, p.Steps[3].Marker.Body)
	require.Nil(t, p.Steps[3].Block)
	require.Equal(t, "porch worker --address temporal.example:7233\n", p.Steps[4].Block.Text, "a block in a list item, its indentation removed")

	last := p.Blocks[len(p.Blocks)-1]
	require.False(t, last.Marked)
	require.True(t, RunsCommands(last.Text))
	require.Equal(t, 36, last.Line)
}

func TestParseRefusesMarkersItCannotUse(t *testing.T) {
	for src, want := range map[string]string{
		"<!-- doctest: skip -->\n\n    porch run x.yml\n": "page.md:1: doctest skip needs a reason",
		"<!-- doctest: run -->\n\nsome text\n":            "page.md:1: doctest marker \"run\" stands before no code block",
		"<!-- doctest: rnu -->\n\n    porch run x.yml\n":  "page.md:1: doctest \"rnu\" is none of run, skip, file, check",
		"<!-- doctest: file -->\n\n    x\n":               "page.md:1: doctest file needs one file name",
		"text\n\n<!-- doctest: run -->\n":                 "page.md:3: doctest marker \"run\" stands before no code block",
		"<!-- doctest run -->\n\n    porch run x.yml\n":   "page.md:1: a doctest marker reads",
	} {
		_, err := Parse("page.md", []byte(src))
		require.ErrorContains(t, err, want, src)
	}
}

func TestRunsCommandsTellsCommandsFromOutput(t *testing.T) {
	for block, want := range map[string]bool{
		"porch run samples/hello/pipeline.yml\n":              true,
		"$ porch job show first\nrun first: completed\n":      true,
		"PORCH_PYTHON=/usr/bin/python3 porch run x.yml\n":     true,
		"temporal workflow list --query x\n":                  true,
		"porch: cannot connect to the temporal server\n":      false,
		"\tporch runs pipeline and sweep jobs: make ...\n":    false,
		"train.yml:1:1: error: file is a command component\n": false,
	} {
		require.Equal(t, want, RunsCommands(block), block)
	}
}

func TestCommandsSplitsPromptsOutputAndContinuations(t *testing.T) {
	cmds := Commands("$ porch validate a.yml \\\n    --set x=1\nok\n...\n$ porch job list\nRUN  STATUS\n")
	require.Equal(t, []Command{
		{Line: "porch validate a.yml --set x=1", Output: []string{"ok", "..."}},
		{Line: "porch job list", Output: []string{"RUN  STATUS"}},
	}, cmds)
	require.Equal(t, []Command{{Line: "porch job list   # the runs"}}, Commands("# a comment\n\nporch job list   # the runs\n"))
}

func TestOutputPatternMatchesTheLineItShows(t *testing.T) {
	re := regexp.MustCompile(outputPattern("a     succeeded  ..."))
	require.True(t, re.MatchString("x\na     succeeded  0.7s      1        -         \ny"))
	require.False(t, re.MatchString("a     failed  0.7s"))
	re = regexp.MustCompile(outputPattern("run first: completed (started ..., took ...; from its record .../first/porch-run.json)"))
	require.True(t, re.MatchString("run first: completed (started 2026-11-27 22:06:57, took 1.0s; from its record /w/home/datastores/workspaceblobstore/azureml/first/porch-run.json)"))
	require.False(t, re.MatchString("run first: completed (started 2026-11-27, took 1.0s)"))
	require.Empty(t, outputPattern("..."))
}

func TestScriptRunsThePageInOrder(t *testing.T) {
	p, err := Parse("page.md", []byte(sample))
	require.NoError(t, err)
	script, err := Script(p)
	require.NoError(t, err)
	for _, want := range []string{
		"exec porch dev --port $DOC_PORT --ui-port $DOC_UI_PORT &dev1&\ndevaddr\nexec sh -x doctest/7-1.sh\n",
		"! exec sh -c '( " + temporalFunc + "porch validate bad.yml ) 2>&1'\nstdout '(?m)^\\s*bad\\.yml:1:1:\\s+error:\\s+.*\\s+has\\s+no\\s+jobs\\s*$'\n",
		"stdout hello\n",
		"kill -INT dev1\nwait dev1\n",
		"-- bad.yml --\ntype: pipeline\n",
		"-- doctest/7-1.sh --\nset -e\n" + temporalFunc + "\nporch run samples/hello/pipeline.yml\nporch job list\n",
	} {
		require.Contains(t, script, want)
	}
	require.NotContains(t, script, "porch worker", "a skipped block does not run")
}

func TestScriptRefusesABackgroundCommandOtherThanPorchDev(t *testing.T) {
	p, err := Parse("page.md", []byte("<!-- doctest: run -->\n\n    minio server /tmp/x &\n"))
	require.NoError(t, err)
	_, err = Script(p)
	require.ErrorContains(t, err, `only porch dev may run in the background in a doctest, not "minio server /tmp/x &"`)
}

func TestSlugIsGitHubs(t *testing.T) {
	require.Equal(t, "scaling-out-a-real-temporal-cluster-and-porch-worker", Slug("Scaling out: a real Temporal cluster and porch worker"))
	require.Equal(t, "catalogue-datastores-data-assets-components", Slug("Catalogue: datastores, data assets, components"))
	require.Equal(t, "porch_home-and-logs", Slug("PORCH_HOME and logs"))
}

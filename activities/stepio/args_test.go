package stepio

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSplitArgs(t *testing.T) {
	cases := map[string][]string{
		"":                                 nil,
		"  --model /m  --k 3 ":             {"--model", "/m", "--k", "3"},
		"--name 'a b' --x \"c \\\"d\\\"\"": {"--name", "a b", "--x", `c "d"`},
		"a\\ b\n--flag=''":                 {"a b", "--flag="},
		`--path "/x/$HOME"`:                {"--path", "/x/$HOME"},
	}
	for in, want := range cases {
		got, err := SplitArgs(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := SplitArgs("--name 'open")
	require.ErrorContains(t, err, "unterminated ' quote")
}

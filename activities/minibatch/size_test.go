package minibatch

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int64
		unit bool
		err  string
	}{
		{in: "10", n: 10},
		{in: "0", n: 0},
		{in: "007", n: 7},
		{in: "10kb", n: 10 << 10, unit: true},
		{in: "10KB", n: 10 << 10, unit: true},
		{in: "1mb", n: 1 << 20, unit: true},
		{in: "1Mb", n: 1 << 20, unit: true},
		{in: "2gb", n: 2 << 30, unit: true},
		{in: "8589934591gb", n: 8589934591 << 30, unit: true},
		{in: "8589934592gb", err: `mini_batch_size "8589934592gb" is too large`},
		{in: "99999999999999999999", err: `mini_batch_size "99999999999999999999" is too large`},
		{in: "", err: `mini_batch_size "" is malformed: write a number of files (10) or a size (10kb, 1mb, 1gb)`},
		{in: "10 kb", err: `mini_batch_size "10 kb" is malformed`},
		{in: "10k", err: `mini_batch_size "10k" is malformed`},
		{in: "1tb", err: `mini_batch_size "1tb" is malformed`},
		{in: "-1", err: `mini_batch_size "-1" is malformed`},
		{in: "1.5mb", err: `mini_batch_size "1.5mb" is malformed`},
		{in: "kb", err: `mini_batch_size "kb" is malformed`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			n, unit, err := ParseSize(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				var ie *InputError
				require.True(t, errors.As(err, &ie))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.n, n)
			require.Equal(t, tc.unit, unit)
		})
	}
}

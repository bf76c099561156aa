package quota

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func claim(id string, cores int) Claim { return Claim{ID: id, Cores: cores} }

func ids(cs []Claim) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func TestGrantIsFirstComeFirstServed(t *testing.T) {
	s := State{Pool: Pool{Kind: Size, Name: "Standard_D4"}, Cores: 16}
	for _, c := range []Claim{claim("a", 4), claim("b", 8), claim("c", 8), claim("d", 2)} {
		require.True(t, s.Add(c))
	}
	assert.Equal(t, []string{"a", "b"}, ids(s.Grant()), "c (8) does not fit in the 4 left")
	// d (2) would fit, but c arrived first: it does not overtake.
	assert.Equal(t, []string{"c", "d"}, ids(s.Waiters))
	assert.Equal(t, 12, s.InUse())

	assert.True(t, s.Release("b"))
	assert.Equal(t, []string{"c", "d"}, ids(s.Grant()))
	assert.Equal(t, 14, s.InUse())
	assert.Empty(t, s.Waiters)
	assert.False(t, s.Release("b"), "a claim is released once")
}

func TestAddIsIdempotentByClaimant(t *testing.T) {
	s := State{Cores: 4}
	require.True(t, s.Add(claim("a", 4)))
	assert.False(t, s.Add(claim("a", 4)), "waiting")
	s.Grant()
	assert.False(t, s.Add(claim("a", 4)), "holding")
	assert.True(t, s.Holds("a"))
	assert.Len(t, s.Holders, 1)
}

func TestReleaseOfAWaiterLetsTheNextOneRun(t *testing.T) {
	s := State{Cores: 4}
	s.Add(claim("a", 4))
	s.Add(claim("big", 8))
	s.Add(claim("c", 2))
	s.Grant()
	s.Release("a")
	assert.Empty(t, s.Grant(), "big waits for a quota it does not fit, and c waits behind it")
	s.Release("big") // cancelled
	assert.Equal(t, []string{"c"}, ids(s.Grant()))
}

func TestDescribeAndWaiting(t *testing.T) {
	s := State{Pool: Pool{Kind: Size, Name: "Standard_D4"}, Cores: 16}
	for _, id := range []string{"r1/train", "r2/train", "r3/train", "r4/train", "r5/train"} {
		s.Add(claim(id, 4))
	}
	s.Grant()
	s.Release("r4/train")
	s.Grant()
	// r1-r4 fill the quota; r4 ends and r5 takes its cores.
	assert.Equal(t, "16 of 16 cores of Standard_D4 in use by 4 jobs", s.Describe())
	s.Release("r5/train")
	s.Add(claim("r6/train", 8))
	s.Add(claim("r7/train", 4))
	s.Grant()
	assert.Equal(t, "waiting for quota: 12 of 16 cores of Standard_D4 in use by 3 jobs", s.Waiting("r6/train"))
	assert.Equal(t, "waiting for quota: 12 of 16 cores of Standard_D4 in use by 3 jobs, 1 ahead in line", s.Waiting("r7/train"))
	assert.Equal(t, "", s.Waiting("r1/train"), "a holder does not wait")

	one := State{Pool: Pool{Kind: Compute, Name: "gpu"}, Cores: 2}
	one.Add(claim("x", 2))
	one.Grant()
	one.Add(claim("y", 4))
	assert.Equal(t, "waiting for quota: 2 of 2 cores of gpu in use by 1 job; this step needs 4 cores, more than the quota: raise it with porch quota set",
		one.Waiting("y"))
}

func TestCheckGivesAzuresAdvice(t *testing.T) {
	p := Pool{Kind: Size, Name: "Standard_D4"}
	assert.NoError(t, Check(p, 16, 4, 4))
	assert.NoError(t, Check(p, 0, 100, 4), "no quota set")
	err := Check(p, 16, 5, 4)
	require.Error(t, err)
	assert.Equal(t, "the step needs 20 cores (5 × 4) but the quota of size Standard_D4 is 16 cores, so it could never run: "+
		"lower resources.instance_count to 4, choose another size, or ask your administrator for more quota "+
		"(porch quota set size Standard_D4 --cores N)", err.Error())
	err = Check(Pool{Kind: Compute, Name: "gpu"}, 4, 1, 8)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "one instance needs 8 cores, so instance_count cannot help, choose another size")
}

func TestParsePool(t *testing.T) {
	p, err := ParsePool("size", "Standard_D4")
	require.NoError(t, err)
	assert.Equal(t, "porch-quota/size/Standard_D4", p.WorkflowID())
	assert.Equal(t, "size Standard_D4", p.String())
	_, err = ParsePool("family", "x")
	assert.EqualError(t, err, `quota kind "family": expected compute or size`)
	_, err = ParsePool("compute", "")
	assert.Error(t, err)
}

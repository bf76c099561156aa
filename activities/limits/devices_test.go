package limits

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDeviceSetSpreadsAndGivesBack(t *testing.T) {
	s := newDeviceSet([]int{0, 1, 2, 3})
	a, giveA := s.take(2)
	b, giveB := s.take(1)
	c, _ := s.take(2)
	assert.Equal(t, []int{0, 1}, a)
	assert.Equal(t, []int{2}, b)
	assert.Equal(t, []int{0, 3}, c, "the unused core first, then the least used, lowest first")
	giveA()
	giveB()
	d, _ := s.take(8)
	assert.Equal(t, []int{0, 1, 2, 3}, d, "no more than there are")
}

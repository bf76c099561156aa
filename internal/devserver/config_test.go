package devserver

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
)

// TestTheServerReadsTheTunedSettings reads settings of the tuned dynamic
// config as the server's services do, through its typed settings: a key the
// server does not know (a misspelt one, or one a server version renamed) is
// silently ignored, and the setting keeps its default. The history cache's
// was: history.cacheHostLevelMaxSize rather than hostLevelCacheMaxSize.
func TestTheServerReadsTheTunedSettings(t *testing.T) {
	c := dynamicconfig.NewCollection(dynamicConfig(true), log.NewNoopLogger())
	assert.Equal(t, 4096, dynamicconfig.HistoryCacheHostLevelMaxSize.Get(c)())
	assert.Equal(t, 10000, dynamicconfig.TransferProcessorMaxPollRPS.Get(c)())
	assert.Equal(t, 10000, dynamicconfig.TimerProcessorMaxPollRPS.Get(c)())
	assert.Equal(t, 100000, dynamicconfig.FrontendMaxNamespaceRPSPerInstance.Get(c)(""))
	assert.Equal(t, 1, dynamicconfig.MatchingNumTaskqueueReadPartitions.Get(c)("", "", 0))

	untuned := dynamicconfig.NewCollection(dynamicConfig(false), log.NewNoopLogger())
	assert.Equal(t, 128000, dynamicconfig.HistoryCacheHostLevelMaxSize.Get(untuned)(), "the server's default")
}

package worker

import (
	"context"
	"fmt"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	sdkworker "go.temporal.io/sdk/worker"

	"github.com/porch-pipelines/porch/workflows"
)

// maxCachedPlans bounds the plans a worker process keeps: a run reads its
// plan as it starts and at each continue-as-new, its nested pipelines
// theirs; a few plans cover the runs a worker serves at once.
const maxCachedPlans = 16

// planChunks is the local activity through which a workflow reads its
// stored plan: each chunk is read once from the server (the input of its
// PlanStore workflow), then from this process's cache, by hash.
type planChunks struct {
	client client.Client
	mu     sync.Mutex
	// chunks are the cached plans' chunks by hash, order the hashes in
	// the order they were cached, oldest first.
	chunks map[string][][]byte
	order  []string
}

func newPlanChunks(c client.Client) *planChunks {
	return &planChunks{client: c, chunks: map[string][][]byte{}}
}

func (p *planChunks) register(w sdkworker.ActivityRegistry) {
	w.RegisterActivityWithOptions(p.load, activity.RegisterOptions{Name: workflows.LoadPlanChunkName})
}

// load returns chunk i of the plan ref names.
func (p *planChunks) load(ctx context.Context, ref workflows.PlanRef, i int) (workflows.PlanChunk, error) {
	if i < 0 || i >= ref.Chunks {
		return workflows.PlanChunk{}, fmt.Errorf("plan %s has %d chunks, not %d", ref.Hash, ref.Chunks, i+1)
	}
	p.mu.Lock()
	cached := p.chunks[ref.Hash]
	p.mu.Unlock()
	if cached == nil {
		var err error
		if cached, err = workflows.ReadPlanChunks(ctx, p.client, ref); err != nil {
			return workflows.PlanChunk{}, err
		}
		p.keep(ref.Hash, cached)
	}
	return workflows.PlanChunk{Hash: ref.Hash, Index: i, Data: cached[i]}, nil
}

// keep caches a plan's chunks, dropping the oldest plan past
// maxCachedPlans.
func (p *planChunks) keep(hash string, chunks [][]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.chunks[hash]; ok {
		return
	}
	p.chunks[hash] = chunks
	p.order = append(p.order, hash)
	if len(p.order) > maxCachedPlans {
		delete(p.chunks, p.order[0])
		p.order = p.order[1:]
	}
}

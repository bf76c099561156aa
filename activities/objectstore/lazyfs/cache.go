package lazyfs

import (
	"container/list"
	"context"
	"io"
	"sync"

	"github.com/porch-pipelines/porch/activities/objectstore"
)

// chunkCache holds the chunks a mount fetched, least recently used first out.
// Each chunk is fetched once however many reads wait for it.
type chunkCache struct {
	ctx   context.Context // the mount's: cancelled on unmount
	store *objectstore.Store
	size  int64
	max   int

	mu     sync.Mutex
	chunks map[chunkKey]*chunk
	lru    *list.List // of chunkKey, most recent at the front
}

type chunkKey struct {
	path  string
	index int64
}

type chunk struct {
	ready chan struct{} // closed when data or err is set
	data  []byte
	err   error
	elem  *list.Element
}

func newChunkCache(ctx context.Context, s *objectstore.Store, opts Options) *chunkCache {
	c := &chunkCache{ctx: ctx, store: s, size: opts.ChunkSize, max: opts.CacheChunks,
		chunks: map[chunkKey]*chunk{}, lru: list.New()}
	if c.size <= 0 {
		c.size = 1 << 20
	}
	if c.max <= 0 {
		c.max = 16
	}
	return c
}

// readAt fills dest from offset off of the object p of the given size, and
// returns how many bytes it filled (fewer only at the end of the object).
func (c *chunkCache) readAt(ctx context.Context, p string, size int64, dest []byte, off int64) (int, error) {
	n := 0
	for n < len(dest) && off+int64(n) < size {
		pos := off + int64(n)
		data, err := c.get(ctx, p, size, pos/c.size)
		if err != nil {
			return n, err
		}
		n += copy(dest[n:], data[pos%c.size:])
	}
	return n, nil
}

// readAhead is how many chunks past a sequential read are fetched before
// they are asked for: enough requests in flight to hide their latency.
const readAhead = 4

// prefetch starts fetching the readAhead chunks from the one that holds
// offset off, those inside the object and not cached yet.
func (c *chunkCache) prefetch(p string, size, off int64) {
	for i := off / c.size; i < off/c.size+readAhead && i*c.size < size; i++ {
		if ch, fresh := c.lookup(p, i); fresh {
			go c.fill(ch, p, size, i)
		}
	}
}

// get returns chunk index of p, fetching it unless it is cached or being
// fetched.
func (c *chunkCache) get(ctx context.Context, p string, size, index int64) ([]byte, error) {
	ch, fresh := c.lookup(p, index)
	if fresh {
		// Fetched apart from this read, so an interrupted read returns at
		// once and the chunk still lands for the next one.
		go c.fill(ch, p, size, index)
	}
	select {
	case <-ch.ready:
		return ch.data, ch.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// lookup finds chunk index of p, or makes an empty one (fresh) that the
// caller must fill, dropping the least recently used chunks over the limit.
func (c *chunkCache) lookup(p string, index int64) (ch *chunk, fresh bool) {
	key := chunkKey{p, index}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.chunks[key]; ch != nil {
		c.lru.MoveToFront(ch.elem)
		return ch, false
	}
	ch = &chunk{ready: make(chan struct{}), elem: c.lru.PushFront(key)}
	c.chunks[key] = ch
	for c.lru.Len() > c.max {
		// Readers waiting on a dropped chunk still get it: they hold it.
		old := c.lru.Remove(c.lru.Back()).(chunkKey)
		delete(c.chunks, old)
	}
	return ch, true
}

// fill fetches a chunk with one ranged GET. A failed fetch is forgotten, so
// the next read tries again. An object shorter than its listing said (it
// changed while mounted) fails the read rather than showing a cut file.
func (c *chunkCache) fill(ch *chunk, p string, size, index int64) {
	start := index * c.size
	buf := &sliceWriter{buf: make([]byte, min(c.size, size-start))}
	_, err := c.store.GetRange(c.ctx, p, start, int64(len(buf.buf)), buf)
	ch.err = err
	if err == nil {
		ch.data = buf.buf
	} else {
		c.mu.Lock()
		if c.chunks[chunkKey{p, index}] == ch {
			delete(c.chunks, chunkKey{p, index})
			c.lru.Remove(ch.elem)
		}
		c.mu.Unlock()
	}
	close(ch.ready)
}

// sliceWriter fills buf, and refuses bytes beyond it.
type sliceWriter struct {
	buf []byte
	n   int
}

func (w *sliceWriter) Write(p []byte) (int, error) {
	if len(p) > len(w.buf)-w.n {
		return 0, io.ErrShortBuffer
	}
	w.n += copy(w.buf[w.n:], p)
	return len(p), nil
}

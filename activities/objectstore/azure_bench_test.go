package objectstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/porch-pipelines/porch/activities/objectstore/azuritetest"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// BenchmarkAzureFolder moves a 1 GiB folder of 1,000 files (1 MiB each) to
// and from Azurite through porch (Store.Upload and Store.Download: commit
// marker, clean-up of an earlier attempt, listing, temporary files renamed
// into place) and through the Azure SDK alone (UploadFile and DownloadFile
// of each file, as many at a time as porch moves), in one run. Each round
// moves the folder both ways with both, the order of porch and the SDK
// swapped every round, so a machine's load falls on both alike; the
// metrics are the medians over the rounds, in MB/s, and of porch's share
// of the SDK's in each round (porch/sdk). PORCH_BENCH_FILES makes the
// folder smaller (e.g. 100), PORCH_BENCH_ROUNDS sets the rounds (5), and
// PORCH_BENCH_LATENCY (e.g. 20ms) delays every request of both by that
// much, as a service across a network does: Azurite on loopback answers in
// well under a millisecond, so without it the benchmark measures the
// machine's CPU.
func BenchmarkAzureFolder(b *testing.B) {
	files, rounds := envInt("PORCH_BENCH_FILES", 1000), envInt("PORCH_BENCH_ROUNDS", 5)
	latency, err := time.ParseDuration(cmp.Or(os.Getenv("PORCH_BENCH_LATENCY"), "0s"))
	require.NoError(b, err)
	transport := delayed{http.DefaultTransport, latency}
	const size = 1 << 20
	srv, name := azuritetest.Start(b, azuritetest.Account)
	b.Setenv(EnvConnectionString, srv.ConnectionString(azuritetest.Account))
	s, err := OpenWith(plan.Datastore{Name: "bench", Type: plan.DatastoreAzureBlob, AccountName: azuritetest.Account, ContainerName: name}, transport)
	require.NoError(b, err)
	cred, err := azblob.NewSharedKeyCredential(azuritetest.Account, azuritetest.Key)
	require.NoError(b, err)
	c, err := container.NewClientWithSharedKeyCredential(srv.Endpoint(azuritetest.Account)+"/"+name, cred,
		&container.ClientOptions{ClientOptions: azcore.ClientOptions{Transport: &http.Client{Transport: transport}}})
	require.NoError(b, err)
	src := b.TempDir()
	buf := make([]byte, size)
	for i := range files {
		_, _ = rand.Read(buf)
		require.NoError(b, os.WriteFile(filepath.Join(src, fmt.Sprintf("part-%04d.bin", i)), buf, 0o644))
	}
	ctx := context.Background()
	mb := float64(files) * size / 1e6

	passes := []struct {
		name string
		run  func(dst string) error
	}{
		{"up-porch", func(string) error { _, err := s.Upload(ctx, src, "porch"); return err }},
		{"up-sdk", func(string) error { return sdkUpload(ctx, c, src, "sdk/") }},
		{"down-porch", func(dst string) error { _, err := s.Download(ctx, "porch", dst); return err }},
		{"down-sdk", func(dst string) error { return sdkDownload(ctx, c, "sdk/", dst) }},
	}
	rates := map[string][]float64{}
	for b.Loop() {
		for r := range rounds {
			order := []int{0, 1, 2, 3}
			if r%2 == 1 {
				order = []int{1, 0, 3, 2}
			}
			for _, i := range order {
				dst := filepath.Join(b.TempDir(), "out")
				start := time.Now()
				require.NoError(b, passes[i].run(dst), passes[i].name)
				rates[passes[i].name] = append(rates[passes[i].name], mb/time.Since(start).Seconds())
				require.NoError(b, os.RemoveAll(dst))
			}
		}
	}
	for _, p := range passes {
		b.ReportMetric(median(rates[p.name]), p.name+"-MB/s")
	}
	// The ratios pair porch and the SDK within each round, moments apart,
	// before taking the median: the load moves between rounds.
	for _, dir := range []string{"up", "down"} {
		var ratios []float64
		for r := range rates[dir+"-porch"] {
			ratios = append(ratios, rates[dir+"-porch"][r]/rates[dir+"-sdk"][r])
		}
		b.ReportMetric(median(ratios), dir+"-porch/sdk")
	}
}

// sdkUpload uploads every file of the folder src to prefix with the SDK
// alone, transferWidth files at a time.
func sdkUpload(ctx context.Context, c *container.Client, src, prefix string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	var g errgroup.Group
	g.SetLimit(transferWidth)
	for _, e := range entries {
		g.Go(func() error {
			f, err := os.Open(filepath.Join(src, e.Name()))
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = c.NewBlockBlobClient(prefix+e.Name()).UploadFile(ctx, f, nil)
			return err
		})
	}
	return g.Wait()
}

// sdkDownload downloads every blob under prefix into the folder dst with
// the SDK alone, transferWidth blobs at a time.
func sdkDownload(ctx context.Context, c *container.Client, prefix, dst string) error {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	var g errgroup.Group
	g.SetLimit(transferWidth)
	pager := c.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			_ = g.Wait()
			return err
		}
		for _, item := range page.Segment.BlobItems {
			g.Go(func() error {
				f, err := os.Create(filepath.Join(dst, filepath.Base(*item.Name)))
				if err != nil {
					return err
				}
				defer f.Close()
				_, err = c.NewBlobClient(*item.Name).DownloadFile(ctx, f, nil)
				return err
			})
		}
	}
	return g.Wait()
}

// delayed is a transport whose requests each wait delay before they go.
type delayed struct {
	rt    http.RoundTripper
	delay time.Duration
}

func (d delayed) RoundTrip(r *http.Request) (*http.Response, error) {
	if d.delay > 0 {
		select {
		case <-time.After(d.delay):
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return d.rt.RoundTrip(r)
}

// envInt is the integer in the environment variable name, else def.
func envInt(name string, def int) int {
	if v := os.Getenv(name); v != "" {
		_, _ = fmt.Sscan(v, &def)
	}
	return def
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[len(xs)/2]
}

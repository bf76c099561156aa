package objectstore

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/stretchr/testify/require"

	"github.com/porch-pipelines/porch/activities/objectstore/azuritetest"
	"github.com/porch-pipelines/porch/compiler/plan"
)

// BenchmarkAzureFolder moves a 1 GiB folder of 1,000 files (1 MiB each) to
// and from Azurite, through porch (Store.Upload, Store.Download: staging,
// commit marker, listing) and through the Azure SDK alone (UploadFile and
// DownloadFile of each file, in the same order, one at a time as porch
// does), in one run: the sub-benchmarks' MB/s compare. PORCH_BENCH_FILES
// makes the folder smaller (e.g. 100) for a quick check.
func BenchmarkAzureFolder(b *testing.B) {
	files := 1000
	if n := os.Getenv("PORCH_BENCH_FILES"); n != "" {
		_, _ = fmt.Sscan(n, &files)
	}
	const size = 1 << 20
	srv, name := azuritetest.Start(b, azuritetest.Account)
	b.Setenv(EnvConnectionString, srv.ConnectionString(azuritetest.Account))
	s, err := Open(plan.Datastore{Name: "bench", Type: plan.DatastoreAzureBlob, AccountName: azuritetest.Account, ContainerName: name})
	require.NoError(b, err)
	c, err := srv.Container(azuritetest.Account, name)
	require.NoError(b, err)
	src := b.TempDir()
	buf := make([]byte, size)
	for i := range files {
		_, _ = rand.Read(buf)
		require.NoError(b, os.WriteFile(filepath.Join(src, fmt.Sprintf("part-%04d.bin", i)), buf, 0o644))
	}
	ctx := context.Background()
	total := int64(files) * size

	b.Run("upload/porch", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			_, err := s.Upload(ctx, src, "porch")
			require.NoError(b, err)
		}
	})
	b.Run("upload/sdk", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			for i := range files {
				f, err := os.Open(filepath.Join(src, fmt.Sprintf("part-%04d.bin", i)))
				require.NoError(b, err)
				_, err = c.NewBlockBlobClient(fmt.Sprintf("sdk/part-%04d.bin", i)).UploadFile(ctx, f, nil)
				f.Close()
				require.NoError(b, err)
			}
		}
	})
	b.Run("download/porch", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			dst := filepath.Join(b.TempDir(), "out")
			_, err := s.Download(ctx, "porch", dst)
			require.NoError(b, err)
		}
	})
	b.Run("download/sdk", func(b *testing.B) {
		b.SetBytes(total)
		for b.Loop() {
			dst := b.TempDir()
			pager := c.NewListBlobsFlatPager(nil)
			for pager.More() {
				page, err := pager.NextPage(ctx)
				require.NoError(b, err)
				for _, item := range page.Segment.BlobItems {
					if !strings.HasPrefix(*item.Name, "sdk/") {
						continue
					}
					f, err := os.Create(filepath.Join(dst, filepath.Base(*item.Name)))
					require.NoError(b, err)
					_, err = c.NewBlobClient(*item.Name).DownloadFile(ctx, f, &blob.DownloadFileOptions{})
					f.Close()
					require.NoError(b, err)
				}
			}
		}
	})
}

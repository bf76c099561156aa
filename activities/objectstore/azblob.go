package objectstore

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
)

// azBackend is a container of an Azure Storage account (an ADLS Gen2 file
// system through its blob API), reached with the Azure SDK for Go.
type azBackend struct {
	client *container.Client
	auth   azureAuth
	// container and account name it in messages.
	container, account string
}

// deref is *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func (b *azBackend) blob(key string) *blob.Client { return b.client.NewBlobClient(key) }

func (b *azBackend) stat(ctx context.Context, key string) (objInfo, error) {
	p, err := b.blob(key).GetProperties(ctx, nil)
	if err != nil {
		return objInfo{}, err
	}
	info := objInfo{key: key, size: deref(p.ContentLength), etag: contentTag(p.ContentMD5, p.ETag),
		modTime: deref(p.LastModified)}
	if folderMarker(p.Metadata) {
		// An ADLS Gen2 directory seen through the blob API: a folder, not
		// an object.
		return objInfo{}, errFolder
	}
	return info, nil
}

// contentTag is what Object.ETag holds for a blob: its Content-MD5 when the
// service keeps one (any blob written in one request), so an unchanged
// content has an unchanged tag even when written again, else its ETag.
func contentTag(md5 []byte, etag *azcore.ETag) string {
	if len(md5) > 0 {
		return "md5-" + hex.EncodeToString(md5)
	}
	if etag == nil {
		return ""
	}
	return strings.Trim(string(*etag), `"`)
}

// folderMarker says whether a blob's metadata marks an ADLS Gen2 directory.
func folderMarker(meta map[string]*string) bool {
	for k, v := range meta {
		if strings.EqualFold(k, "hdi_isfolder") && v != nil && strings.EqualFold(*v, "true") {
			return true
		}
	}
	return false
}

func (b *azBackend) get(ctx context.Context, key string, off, n int64) (io.ReadCloser, error) {
	var opts blob.DownloadStreamOptions
	if off > 0 || n > 0 {
		opts.Range = blob.HTTPRange{Offset: off, Count: max(n, 0)}
	}
	resp, err := b.blob(key).DownloadStream(ctx, &opts)
	if err != nil {
		return nil, err
	}
	return resp.Body, nil
}

func (b *azBackend) put(ctx context.Context, key string, r io.Reader, size int64) error {
	bb := b.client.NewBlockBlobClient(key)
	if rs, ok := r.(io.ReadSeeker); ok && size <= blockblob.MaxUploadBlobBytes {
		_, err := bb.Upload(ctx, streaming.NopCloser(rs), nil)
		return err
	}
	_, err := bb.UploadStream(ctx, io.LimitReader(r, size), nil)
	return err
}

func (b *azBackend) putFile(ctx context.Context, key string, f *os.File, size int64) error {
	// One request up to 256 MiB (the service then keeps the blob's
	// Content-MD5), blocks read from the file in place beyond.
	_, err := b.client.NewBlockBlobClient(key).UploadFile(ctx, f, nil)
	return err
}

func (b *azBackend) list(ctx context.Context, prefix string, recursive bool, max int) iter.Seq2[objInfo, error] {
	if recursive {
		return b.listFlat(ctx, prefix, max)
	}
	return b.listLevel(ctx, prefix, max)
}

// listFlat lists every blob under prefix, in name order.
func (b *azBackend) listFlat(ctx context.Context, prefix string, max int) iter.Seq2[objInfo, error] {
	return func(yield func(objInfo, error) bool) {
		opts := &container.ListBlobsFlatOptions{Prefix: &prefix, Include: container.ListBlobsInclude{Metadata: true}}
		if max > 0 {
			opts.MaxResults = to.Ptr(int32(max))
		}
		pager := b.client.NewListBlobsFlatPager(opts)
		n := 0
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				yield(objInfo{}, err)
				return
			}
			for _, item := range page.Segment.BlobItems {
				if !yield(blobInfo(item.Name, item.Properties, item.Metadata), nil) {
					return
				}
				if n++; max > 0 && n >= max {
					return
				}
			}
		}
	}
}

// listLevel lists the blobs and folders of one level under prefix: folders
// first, then blobs, as the service returns them by page. Store sorts.
func (b *azBackend) listLevel(ctx context.Context, prefix string, max int) iter.Seq2[objInfo, error] {
	return func(yield func(objInfo, error) bool) {
		opts := &container.ListBlobsHierarchyOptions{Prefix: &prefix, Include: container.ListBlobsInclude{Metadata: true}}
		if max > 0 {
			opts.MaxResults = to.Ptr(int32(max))
		}
		pager := b.client.NewListBlobsHierarchyPager("/", opts)
		n := 0
		// An ADLS Gen2 directory with something in it is listed twice: as
		// a prefix, and as the blob that marks it a directory.
		dirs := map[string]bool{}
		for pager.More() {
			page, err := pager.NextPage(ctx)
			if err != nil {
				yield(objInfo{}, err)
				return
			}
			var items []objInfo
			for _, p := range page.Segment.BlobPrefixes {
				items = append(items, objInfo{key: deref(p.Name), dir: true})
			}
			for _, item := range page.Segment.BlobItems {
				items = append(items, blobInfo(item.Name, item.Properties, item.Metadata))
			}
			for _, info := range items {
				if info.dir {
					if dirs[info.key] {
						continue
					}
					dirs[info.key] = true
				}
				if !yield(info, nil) {
					return
				}
				if n++; max > 0 && n >= max {
					return
				}
			}
		}
	}
}

// blobInfo is a listed blob; an ADLS Gen2 directory is a folder.
func blobInfo(name *string, p *container.BlobProperties, meta map[string]*string) objInfo {
	info := objInfo{key: deref(name)}
	if folderMarker(meta) {
		info.key, info.dir = strings.TrimSuffix(info.key, "/")+"/", true
		return info
	}
	if p != nil {
		info.size, info.etag, info.modTime = deref(p.ContentLength), contentTag(p.ContentMD5, p.ETag), deref(p.LastModified)
	}
	return info
}

func (b *azBackend) remove(ctx context.Context, keys []string) error {
	// The blob API deletes one blob per request.
	t := newTransfers(ctx)
	for _, k := range keys {
		if !t.start(func(ctx context.Context) error {
			if _, err := b.blob(k).Delete(ctx, nil); err != nil && !b.explain(err).notFound {
				return err
			}
			return nil
		}) {
			break
		}
	}
	return t.wait()
}

// message is the service's answer in one line ("403 Server failed to
// authenticate the request... (AuthorizationFailure)"), not the SDK's
// dump of the request and response.
func (b *azBackend) message(err error) string {
	var re *azcore.ResponseError
	if !errors.As(err, &re) {
		return err.Error()
	}
	status := fmt.Sprintf("%d", re.StatusCode)
	for _, line := range strings.Split(re.Error(), "\n") {
		if rest, ok := strings.CutPrefix(line, "RESPONSE "); ok {
			_, status, _ = strings.Cut(rest, ": ")
			break
		}
	}
	if re.ErrorCode != "" {
		status += " (" + re.ErrorCode + ")"
	}
	return "the service answered " + status
}

func (b *azBackend) uri(key string) string {
	u := strings.TrimSuffix(b.client.URL(), "/")
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i] // a SAS stays out of the URI a command sees
	}
	return u + "/" + (&url.URL{Path: key}).EscapedPath()
}

func (b *azBackend) where() string {
	return fmt.Sprintf("container %q of storage account %q at %s", b.container, b.account, b.auth.endpoint)
}

// explain classifies an Azure Storage error; its hints say which of the
// worker's settings to fix.
func (b *azBackend) explain(err error) failure {
	switch {
	case errors.Is(err, errFolder), bloberror.HasCode(err, bloberror.BlobNotFound):
		return failure{notFound: true}
	case bloberror.HasCode(err, bloberror.ContainerNotFound):
		return failure{permanent: true, hint: fmt.Sprintf("there is no container %q in account %q: create it, or fix the container's name", b.container, b.account)}
	case bloberror.HasCode(err, bloberror.ResourceNotFound):
		if b.auth.kind == authAnonymous {
			return failure{permanent: true, hint: "the container is not public, or does not exist, and this worker has no credentials for account " +
				fmt.Sprintf("%q: %s", b.account, credentialAdvice)}
		}
		return failure{notFound: true}
	case bloberror.HasCode(err, bloberror.AuthenticationFailed),
		// Azurite refuses a bad signature as an AuthorizationFailure.
		bloberror.HasCode(err, bloberror.AuthorizationFailure) && (b.auth.kind == authSharedKey || b.auth.kind == authSAS):
		return failure{permanent: true, hint: b.auth.refused()}
	case bloberror.HasCode(err, bloberror.AuthorizationFailure, bloberror.AuthorizationPermissionMismatch,
		bloberror.AuthorizationResourceTypeMismatch, bloberror.AuthorizationServiceMismatch,
		bloberror.AuthorizationSourceIPMismatch, bloberror.AuthorizationProtocolMismatch, bloberror.InsufficientAccountPermissions):
		return failure{permanent: true, hint: fmt.Sprintf("%s may not do this: grant it read and write on the container (for a SAS: the r, w, d and l permissions; for an identity: Storage Blob Data Contributor)", b.auth.describe())}
	case bloberror.HasCode(err, bloberror.NoAuthenticationInformation):
		return failure{permanent: true, hint: fmt.Sprintf("this worker has no credentials for account %q: %s", b.account, credentialAdvice)}
	}
	var netErr *net.OpError
	var dnsErr *net.DNSError
	if errors.As(err, &netErr) || errors.As(err, &dnsErr) {
		return failure{hint: fmt.Sprintf("cannot reach %s: check the endpoint (the datastore's endpoint:, or BlobEndpoint= in AZURE_STORAGE_CONNECTION_STRING) and that this worker reaches it", b.auth.endpoint)}
	}
	return failure{}
}

// credentialAdvice says where a worker takes Azure Storage credentials.
const credentialAdvice = "set AZURE_STORAGE_CONNECTION_STRING (for this account), AZURE_STORAGE_ACCOUNT with AZURE_STORAGE_KEY or " +
	"AZURE_STORAGE_SAS_TOKEN, or AZURE_TENANT_ID, AZURE_CLIENT_ID and AZURE_CLIENT_SECRET, or sign in with az login, in the worker's environment"

// sasExpiry is when a SAS token expires (its se= field), zero when it has
// none or it cannot be read.
func sasExpiry(token string) time.Time {
	q, err := url.ParseQuery(strings.TrimPrefix(token, "?"))
	if err != nil {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, q.Get("se"))
	if err != nil {
		t, _ = time.Parse("2006-01-02", q.Get("se"))
	}
	return t
}

package plan

import (
	"fmt"
	"net/url"
	"strings"
)

// StorageURI is a data path written as a URI of Azure Storage or the web:
//
//	wasbs://CONTAINER@ACCOUNT.blob.core.windows.net/PATH   (wasb: over http)
//	abfss://FILESYSTEM@ACCOUNT.dfs.core.windows.net/PATH   (abfs: over http)
//	https://ACCOUNT.blob.core.windows.net/CONTAINER/PATH   (or .dfs.)
//	https://any.host/any/file.csv                          (Web: a plain download)
type StorageURI struct {
	// Web says the URI is a plain http(s) URL, not Azure Storage; URL is
	// then all there is.
	Web bool
	URL string
	// Account, Container and Path locate a blob, or a folder of blobs
	// (Path "" for the whole container); Gen2 says the URI names an ADLS
	// Gen2 file system (abfss://, .dfs.).
	Account, Container, Path string
	Gen2                     bool
	// Endpoint is the storage's DNS suffix (core.windows.net) and Protocol
	// https or http, as a datastore has them.
	Endpoint, Protocol string
}

// Datastore is the container the URI names, as an unregistered datastore.
func (u StorageURI) Datastore() Datastore {
	d := Datastore{Type: DatastoreAzureBlob, AccountName: u.Account, ContainerName: u.Container, Endpoint: u.Endpoint}
	if u.Gen2 {
		d = Datastore{Type: DatastoreAzureDataLakeGen2, AccountName: u.Account, Filesystem: u.Container, Endpoint: u.Endpoint}
	}
	if u.Protocol != "https" {
		d.Protocol = u.Protocol
	}
	if d.Endpoint == "core.windows.net" {
		d.Endpoint = ""
	}
	return d
}

// ParseStorageURI reads a wasb(s)://, abfs(s):// or http(s):// data path.
// ok is false for any other form; err says what is wrong with one of
// these schemes that porch cannot use.
func ParseStorageURI(s string) (u StorageURI, ok bool, err error) {
	scheme, rest, found := strings.Cut(strings.TrimSpace(s), "://")
	if !found {
		return u, false, nil
	}
	switch strings.ToLower(scheme) {
	case "wasbs", "wasb", "abfss", "abfs":
		u, err = parseAzureScheme(strings.ToLower(scheme), rest, s)
		return u, true, err
	case "https", "http":
		u, err = parseHTTP(s)
		return u, true, err
	}
	return u, false, nil
}

// parseAzureScheme reads CONTAINER@ACCOUNT.blob.SUFFIX/PATH.
func parseAzureScheme(scheme, rest, s string) (StorageURI, error) {
	gen2 := strings.HasPrefix(scheme, "abfs")
	service, form := "blob", "wasbs://CONTAINER@ACCOUNT.blob.core.windows.net/PATH"
	if gen2 {
		service, form = "dfs", "abfss://FILESYSTEM@ACCOUNT.dfs.core.windows.net/PATH"
	}
	authority, p, _ := strings.Cut(rest, "/")
	container, host, found := strings.Cut(authority, "@")
	account, suffix, dotted := strings.Cut(host, "."+service+".")
	if !found || container == "" || !dotted || account == "" || suffix == "" {
		return StorageURI{}, fmt.Errorf("%q is not a %s:// URI: expected %s", s, scheme, form)
	}
	path, err := url.PathUnescape(p)
	if err != nil {
		return StorageURI{}, fmt.Errorf("%q: %v", s, err)
	}
	protocol := "https"
	if !strings.HasSuffix(scheme, "s") {
		protocol = "http"
	}
	return StorageURI{URL: s, Account: strings.ToLower(account), Container: container, Path: strings.Trim(path, "/"),
		Gen2: gen2, Endpoint: strings.ToLower(suffix), Protocol: protocol}, nil
}

// parseHTTP reads an http(s) URL: a blob's (ACCOUNT.blob.SUFFIX/CONTAINER/PATH)
// or any other, a plain download.
func parseHTTP(s string) (StorageURI, error) {
	parsed, err := url.Parse(strings.TrimSpace(s))
	if err != nil || parsed.Host == "" {
		return StorageURI{}, fmt.Errorf("%q is not a URL: expected https://HOST/PATH", s)
	}
	web := StorageURI{Web: true, URL: parsed.String()}
	host := strings.ToLower(parsed.Hostname())
	for _, service := range []string{"blob", "dfs"} {
		account, suffix, ok := strings.Cut(host, "."+service+".")
		if !ok || account == "" || strings.Contains(account, ".") || !strings.Contains(suffix, ".") || parsed.Port() != "" || parsed.RawQuery != "" {
			continue
		}
		container, path, _ := strings.Cut(strings.TrimPrefix(parsed.Path, "/"), "/")
		if container == "" {
			return web, nil
		}
		return StorageURI{URL: web.URL, Account: account, Container: container, Path: strings.Trim(path, "/"),
			Gen2: service == "dfs", Endpoint: suffix, Protocol: strings.ToLower(parsed.Scheme)}, nil
	}
	return web, nil
}

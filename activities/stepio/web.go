package stepio

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/porch-pipelines/porch/compiler/plan"
)

// webInput makes data at a plain web URL readable by the command in the
// working folder work, as Azure ML reads a web URL input: the file is
// fetched into the worker's cache once per version (webdata), then read
// there (ro_mount: the cache is read-only), copied into the working folder
// (download), or not fetched at all (direct: the command gets the URL). A
// uri_file is the file; a uri_folder a folder holding just it (a single
// archive, as Azure takes one); an mltable cannot be one URL.
func (h *Host) webInput(ctx context.Context, step string, inp plan.Input, work string) (string, error) {
	u := inp.Value.Data.Path
	mode, err := InputMode(step, inp)
	switch {
	case err != nil:
		return "", err
	case mode == ReadDirect:
		return u, nil
	}
	typ := inp.Value.Data.Type
	if typ == "" {
		typ = inp.Type
	}
	if typ == "mltable" {
		return "", Invalid("step %q: input %q: an mltable cannot be a web URL (%s): give the URL of the file as a uri_file, or copy the table's folder to a datastore", step, inp.Name, u)
	}
	f, err := h.WebFile(ctx, u)
	if err != nil {
		return "", StoreError(fmt.Sprintf("step %q: input %q", step, inp.Name), err)
	}
	folder := typ == "uri_folder"
	if work == "" || mode != ReadDownload {
		if folder {
			return filepath.Dir(f.Path), nil // the cache's folder of this content holds just the file
		}
		return f.Path, nil
	}
	dir := filepath.Join(work, ".porch-inputs", inp.Name)
	if err := os.RemoveAll(dir); err != nil {
		return "", fmt.Errorf("step %q: input %q: clear the earlier copy: %w", step, inp.Name, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("step %q: input %q: %w", step, inp.Name, err)
	}
	dst := filepath.Join(dir, filepath.Base(f.Path))
	if err := copyFile(f.Path, dst); err != nil {
		return "", fmt.Errorf("step %q: input %q: copy %s from the cache: %w", step, inp.Name, u, err)
	}
	if folder {
		return dir, nil
	}
	return dst, nil
}

// webData says whether inp is data at a plain web URL.
func webData(inp plan.Input) bool {
	return inp.Value.Kind == plan.ValueData && inp.Value.Data != nil && WebURL(inp.Value.Data.Path)
}

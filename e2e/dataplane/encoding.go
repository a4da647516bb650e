package dataplane

import (
	"compress/gzip"
	"fmt"
	"io"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// flushWriter is a compressing writer that can push what it has
// compressed so far, as Envoy's compressor does at the end of each data
// frame it gets from the backend.
type flushWriter interface {
	io.WriteCloser
	Flush() error
}

// newEncoder compresses into w with a content coding of Envoy's
// compression libraries.
func newEncoder(coding string, w io.Writer) (flushWriter, error) {
	switch coding {
	case "gzip":
		return gzip.NewWriter(w), nil
	case "br":
		return brotli.NewWriter(w), nil
	case "zstd":
		return zstd.NewWriter(w)
	}
	return nil, fmt.Errorf("content coding %q is not one of Envoy's compression libraries", coding)
}

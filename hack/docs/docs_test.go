package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The committed pages are what hack/docs generates now.
func TestDocsAreCurrent(t *testing.T) {
	pages, err := Generate("../..")
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range pages {
		got, err := os.ReadFile(filepath.Join("../..", name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale (%v); run make docs", name, err)
		}
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	"github.com/operator-framework/api/pkg/validation/errors"
)

const root = "../.."

// The committed bundle is what hack/bundle generates from config/ now.
func TestBundleIsCurrent(t *testing.T) {
	files, err := Generate(root, Options{Version: "0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join(root, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale (%v); run make bundle", name, err)
		}
	}
}

// OLM's own validators find nothing wrong with the bundle: the default
// bundle validators, OperatorHub's and the good-practices ones.
func TestBundleValidates(t *testing.T) {
	bundle, err := manifests.GetBundleFromDir(filepath.Join(root, "bundle"))
	if err != nil {
		t.Fatal(err)
	}
	if bundle.CSV == nil || len(bundle.V1CRDs) != 4 {
		t.Fatalf("bundle: CSV %v, %d CRDs, want a CSV, ours and Contour's HTTPProxy, TLSCertificateDelegation and ExtensionService", bundle.CSV != nil, len(bundle.V1CRDs))
	}
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator, validation.StandardCategoriesValidator, validation.StandardCapabilitiesValidator,
		validation.GoodPracticesValidator,
	)
	results := validators.Validate(bundle, bundle.CSV, map[string]string{"k8s-version": "1.36"})
	for _, r := range results {
		for _, e := range r.Errors {
			t.Errorf("%s: %v", r.Name, e)
		}
		for _, w := range r.Warnings {
			t.Logf("warning: %s: %v", r.Name, w)
		}
	}
	if len(results) == 0 {
		t.Fatal("the validators returned no results")
	}
	_ = errors.ErrorInvalidCSV
	if !strings.Contains(bundle.CSV.GetAnnotations()["alm-examples"], "ContourDeployment") {
		t.Error("alm-examples lack the ContourDeployment sample")
	}
	// Every image the operator runs is listed, for mirroring.
	var names []string
	for _, r := range bundle.CSV.Spec.RelatedImages {
		if r.Image != "" {
			names = append(names, r.Name)
		}
	}
	if want := []string{"isobar-operator", "isobar-controller", "envoy"}; !slices.Equal(names, want) {
		t.Errorf("relatedImages %v, want %v", names, want)
	}
}

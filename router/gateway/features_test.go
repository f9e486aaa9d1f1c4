package gateway

import (
	"slices"
	"testing"

	"sigs.k8s.io/gateway-api/pkg/features"
)

// TestSupportedFeaturesAreTheSuitesNamesSorted: each supported feature is
// one the Gateway API's conformance suite knows, and the list is sorted
// (the spec asks it of status.supportedFeatures).
func TestSupportedFeaturesAreTheSuitesNamesSorted(t *testing.T) {
	known := features.SetsToNamesSet(features.AllFeatures)
	for _, f := range SupportedFeatures {
		if !known.Has(features.FeatureName(f)) {
			t.Errorf("feature %q is not one of the conformance suite's", f)
		}
	}
	if !slices.IsSorted(SupportedFeatures) {
		t.Errorf("SupportedFeatures %v are not sorted", SupportedFeatures)
	}
}

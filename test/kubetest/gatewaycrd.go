package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// GatewayAPIVersion is the Gateway API release whose CRDs
// WithGatewayCRDs installs: the one the conformance suite of the same
// version checks them against (its bundle-version annotation).
const GatewayAPIVersion = "v1.6.3"

const gatewayAPIModule = "sigs.k8s.io/gateway-api"

// WithGatewayCRDs installs the Gateway API CRDs of a release channel
// ("standard" or "experimental": one only, as the project requires) from
// the sigs.k8s.io/gateway-api module (the version this binary links, else
// GatewayAPIVersion, from the module cache or the proxy). Start returns
// once they are established. The channel's ValidatingAdmissionPolicy
// against installing older or mixed bundles over them is not applied: a
// test cluster starts empty.
func WithGatewayCRDs(channel string) Option {
	return func(o *options) { o.gatewayChannel = channel }
}

// gatewayCRDs reads the CRDs of a channel.
func gatewayCRDs(channel string) ([]*unstructured.Unstructured, error) {
	if channel != "standard" && channel != "experimental" {
		return nil, fmt.Errorf("gateway API channel %q: standard or experimental", channel)
	}
	dir, err := moduleDir(gatewayAPIModule, GatewayAPIVersion)
	if err != nil {
		return nil, err
	}
	paths, err := filepath.Glob(filepath.Join(dir, "config", "crd", channel, "*.yaml"))
	if err != nil || len(paths) == 0 {
		return nil, fmt.Errorf("no gateway API CRDs in %s (%v)", filepath.Join(dir, "config", "crd", channel), err)
	}
	var crds []*unstructured.Unstructured
	for _, p := range paths {
		if strings.Contains(filepath.Base(p), "_vap_") || filepath.Base(p) == "kustomization.yaml" {
			// (A ValidatingAdmissionPolicy; the experimental
			// channel's kustomize list of the CRDs.)
			continue
		}
		y, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		j, err := yaml.YAMLToJSON(y)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(j); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if obj.GetKind() != "CustomResourceDefinition" {
			return nil, fmt.Errorf("%s: a %s, not a CRD", p, obj.GetKind())
		}
		crds = append(crds, obj)
	}
	return crds, nil
}

// applyGatewayCRDs creates the CRDs of a channel and waits until each is
// established.
func (c *Cluster) applyGatewayCRDs(channel string) error {
	crds, err := gatewayCRDs(channel)
	if err != nil {
		return err
	}
	for _, obj := range crds {
		if err := c.createCRD(obj); err != nil {
			return err
		}
	}
	return nil
}

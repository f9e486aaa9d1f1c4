package manifests

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidationRefusesWhatTheAPIServerRefuses: each fixture (a file a user
// could kubectl apply) breaks one API rule; it is skipped with an error
// naming the file, the line and the rule as the API server words it.
func TestValidationRefusesWhatTheAPIServerRefuses(t *testing.T) {
	tests := []struct {
		file string
		want string
	}{
		// Route: object metadata.
		{"route-name-too-long.yaml", `metadata.name: Invalid value: "aaaaaaaa`},
		{"route-name-too-long.yaml", `must be no more than 253 characters`},
		{"route-name-uppercase.yaml", `metadata.name: Invalid value: "MyApp": a lowercase RFC 1123 subdomain must consist of`},
		{"route-namespace-invalid.yaml", `metadata.namespace: Invalid value: "team_a": a lowercase RFC 1123 label must consist of`},
		{"route-label-invalid.yaml", `metadata.labels: Invalid value: "not valid!"`},
		// Route: the CRD's OpenAPI rules.
		{"route-host-underscore.yaml", `spec.host: Invalid value: "my_app.example.com": spec.host in body should match '^([a-zA-Z0-9]|`},
		{"route-host-too-long.yaml", `spec.host: Too long: may not be more than 253 bytes`},
		{"route-host-label-too-long.yaml", `spec.host in body should match`},
		{"route-subdomain-invalid.yaml", `spec.subdomain: Invalid value: "-frontend": spec.subdomain in body should match`},
		{"route-path-relative.yaml", `spec.path: Invalid value: "api": spec.path in body should match '^/'`},
		{"route-passthrough-path.yaml", `spec: Invalid value: "object": must validate at least one schema (anyOf): spec.path must be empty when spec.tls.termination is passthrough`},
		{"route-tls-termination-unknown.yaml", `spec.tls.termination: Unsupported value: "terminate": supported values: "edge", "reencrypt", "passthrough"`},
		{"route-tls-termination-missing.yaml", `spec.tls.termination: Required value`},
		{"route-insecure-policy-unknown.yaml", `spec.tls.insecureEdgeTerminationPolicy: Unsupported value: "Deny": supported values: "Allow", "None", "Redirect", ""`},
		{"route-passthrough-certificate.yaml", `spec.tls: Invalid value: "object": must validate at least one schema (anyOf): certificate, key, caCertificate and destinationCACertificate must be empty when termination is passthrough`},
		{"route-edge-destination-ca.yaml", `spec.tls: Invalid value: "object": must validate at least one schema (anyOf): destinationCACertificate must be empty when termination is edge`},
		{"route-wildcard-policy-unknown.yaml", `spec.wildcardPolicy: Unsupported value: "All": supported values: "None", "Subdomain", ""`},
		{"route-wildcard-without-host.yaml", `spec: Invalid value: "object": must validate at least one schema (anyOf): spec.host is required when spec.wildcardPolicy is Subdomain`},
		{"route-to-kind.yaml", `spec.to.kind: Unsupported value: "Pod": supported values: "Service", ""`},
		{"route-to-name-missing.yaml", `spec.to.name: Required value`},
		{"route-weight-too-high.yaml", `spec.to.weight: Invalid value: 257: spec.to.weight in body should be less than or equal to 256`},
		{"route-weight-negative.yaml", `spec.alternateBackends[0].weight: Invalid value: -1: spec.alternateBackends[0].weight in body should be greater than or equal to 0`},
		{"route-too-many-backends.yaml", `spec.alternateBackends: Too many: 4: must have at most 3 items`},
		{"route-duplicate-backend.yaml", `spec.alternateBackends[1]: Duplicate value: "{\"kind\":\"Service\",\"name\":\"canary\"}"`},
		{"route-target-port-zero.yaml", `spec.port.targetPort: Required value`},
		{"route-header-name-invalid.yaml", `spec.httpHeaders.actions.request[0].name: Invalid value: "X Bad": spec.httpHeaders.actions.request[0].name in body should match`},
		{"route-header-action-type.yaml", `spec.httpHeaders.actions.request[0].action.type: Unsupported value: "Append": supported values: "Set", "Delete"`},
		{"route-header-duplicate.yaml", `spec.httpHeaders.actions.request[1]: Duplicate value`},
		{"route-header-too-many.yaml", `spec.httpHeaders.actions.request: Too many: 21: must have at most 20 items`},
		// Route: the CRD's CEL rules.
		{"route-passthrough-allow.yaml", `spec.tls: Invalid value: "object": cannot have both spec.tls.termination: passthrough and spec.tls.insecureEdgeTerminationPolicy: Allow`},
		{"route-certificate-and-external.yaml", `spec.tls: Invalid value: "object": cannot have both spec.tls.certificate and spec.tls.externalCertificate`},
		{"route-header-reserved.yaml", `spec.httpHeaders.actions.request[0].name: Invalid value: "Cookie": cookie header may not be modified via header actions`},
		{"route-header-set-missing.yaml", `spec.httpHeaders.actions.request[0].action: Invalid value: "object": set is required when type is Set, and forbidden otherwise`},
		{"route-header-value-fetcher.yaml", `spec.httpHeaders.actions.request: Invalid value: "array": Either the header value provided is not in correct format or the sample fetcher/converter specified is not allowed.`},
		{"route-header-passthrough.yaml", `spec: Invalid value: "object": header actions are not permitted when tls termination is passthrough.`},
		// Service.
		{"service-name-dns1035.yaml", `metadata.name: Invalid value: "1web": a DNS-1035 label must consist of`},
		{"service-port-too-high.yaml", `spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive`},
		{"service-protocol.yaml", `spec.ports[0].protocol: Unsupported value: "HTTP": supported values: "TCP", "UDP", "SCTP"`},
		{"service-port-name-required.yaml", `spec.ports[0].name: Required value`},
		{"service-port-name-duplicate.yaml", `spec.ports[1].name: Duplicate value: "http"`},
		{"service-target-port-name.yaml", `spec.ports[0].targetPort: Invalid value: "http_web"`},
		{"service-type.yaml", `spec.type: Unsupported value: "Internal": supported values: "ClusterIP", "NodePort", "LoadBalancer", "ExternalName"`},
		{"service-no-ports.yaml", `spec.ports: Required value`},
		{"service-external-name-missing.yaml", `spec.externalName: Required value`},
		// EndpointSlice.
		{"endpointslice-address-type.yaml", `addressType: Unsupported value: "IP": supported values: "IPv4", "IPv6", "FQDN"`},
		{"endpointslice-ipv6-in-ipv4.yaml", `endpoints[0].addresses[0]: Invalid value: "fd00::1": must be a valid IPv4 address`},
		{"endpointslice-ipv4-in-ipv6.yaml", `endpoints[0].addresses[0]: Invalid value: "10.0.0.1": must be a valid IPv6 address`},
		{"endpointslice-ipv4-syntax.yaml", `endpoints[0].addresses[0]: Invalid value: "10.0.0.256": must be a valid IP address`},
		{"endpointslice-fqdn.yaml", `endpoints[0].addresses[0]: Invalid value: "not a host"`},
		{"endpointslice-no-address.yaml", `endpoints[0].addresses: Required value: must contain at least 1 address`},
		{"endpointslice-port-zero.yaml", `ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive`},
		{"endpointslice-port-protocol.yaml", `ports[0].protocol: Unsupported value: "ICMP"`},
		{"endpointslice-port-name.yaml", `ports[0].name: Invalid value: "HTTP": a lowercase RFC 1123 label must consist of`},
		{"endpointslice-too-many-endpoints.yaml", `endpoints: Too many: 1001: must have at most 1000 items`},
		{"endpointslice-too-many-ports.yaml", `ports: Too many: 101: must have at most 100 items`},
		{"endpointslice-hostname.yaml", `endpoints[0].hostname: Invalid value: "web_1"`},
		// Endpoints.
		{"endpoints-ip-syntax.yaml", `subsets[0].addresses[0].ip: Invalid value: "10.0.0": must be a valid IP address`},
		{"endpoints-ip-hostname.yaml", `subsets[0].addresses[0].ip: Invalid value: "web.example.com": must be a valid IP address`},
		{"endpoints-no-addresses.yaml", "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`"},
		{"endpoints-port-range.yaml", `subsets[0].ports[0].port: Invalid value: 65536: must be between 1 and 65535, inclusive`},
		{"endpoints-port-name-required.yaml", `subsets[0].ports[0].name: Required value`},
		// Namespace.
		{"namespace-name.yaml", `metadata.name: Invalid value: "Team_A": a lowercase RFC 1123 label must consist of`},
		{"namespace-name-too-long.yaml", `must be no more than 63 characters`},
		// Secret.
		{"secret-tls-missing-key.yaml", `data[tls.key]: Required value`},
		{"secret-data-key.yaml", `data[bad key]: Invalid value: "bad key": a valid config key must consist of`},
		{"secret-name.yaml", `metadata.name: Invalid value: "App.TLS": a lowercase RFC 1123 subdomain must consist of`},
	}
	for _, tt := range tests {
		t.Run(strings.TrimSuffix(tt.file, ".yaml"), func(t *testing.T) {
			path := filepath.Join("testdata", "validate", tt.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			objs, errs := ParseFile(path, data)
			if len(objs) != 0 {
				t.Errorf("got %d objects, want the invalid one skipped", len(objs))
			}
			if len(errs) != 1 {
				t.Fatalf("got errors %v, want one", errs)
			}
			var pe *ParseError
			if !errors.As(errs[0], &pe) || !errors.Is(errs[0], ErrInvalid) {
				t.Fatalf("error %v is not a *ParseError wrapping ErrInvalid", errs[0])
			}
			if pe.File != path || pe.Line != 1 || pe.Object == "" {
				t.Errorf("error names %s:%d %q, want %s:1 and the object", pe.File, pe.Line, pe.Object, path)
			}
			if !strings.Contains(errs[0].Error(), tt.want) {
				t.Errorf("error\n  %v\nwant it to contain\n  %s", errs[0], tt.want)
			}
		})
	}
}

// TestValidationAcceptsObjectsAtTheBounds: objects at the limits of every
// rule (253-character names and hosts, weight 256, three alternate
// backends, allowed header fetchers, each address type...) are accepted.
func TestValidationAcceptsObjectsAtTheBounds(t *testing.T) {
	path := filepath.Join("testdata", "validate", "valid.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	objs, errs := ParseFile(path, data)
	for _, e := range errs {
		t.Errorf("unexpected error: %v", e)
	}
	if want := strings.Count(string(data), "\nkind: "); len(objs) != want {
		t.Errorf("got %d objects, want %d", len(objs), want)
	}
}

// TestValidationReportsEveryInvalidDocumentOfAFile: in a file mixing valid
// and invalid documents, each invalid one is reported at its own line and
// the valid ones are loaded.
func TestValidationReportsEveryInvalidDocumentOfAFile(t *testing.T) {
	data := []byte(`apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: good
spec:
  host: good.example.com
  to:
    name: web
---
apiVersion: route.openshift.io/v1
kind: Route
metadata:
  name: bad
spec:
  host: bad_host.example.com
  to:
    name: web
---
apiVersion: v1
kind: Endpoints
metadata:
  name: web
subsets:
- addresses:
  - ip: 10.0.0.300
`)
	objs, errs := ParseFile("mixed.yaml", data)
	if len(objs) != 1 || objs[0].(object).GetName() != "good" {
		t.Errorf("got objects %v, want only route good", objs)
	}
	want := []string{
		`mixed.yaml:10: route "bad": invalid: spec.host: Invalid value: "bad_host.example.com"`,
		`mixed.yaml:19: endpoints "web": invalid: subsets[0].addresses[0].ip: Invalid value: "10.0.0.300"`,
	}
	if len(errs) != len(want) {
		t.Fatalf("got errors %v, want %d", errs, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(errs[i].Error(), w) {
			t.Errorf("error %d:\n  %v\nwant prefix\n  %s", i, errs[i], w)
		}
	}
}

// Package builder turns the watched objects and the admission decision into
// the model the template is executed with. It is deterministic: the same
// objects always give the same model.
package builder

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	routev1 "github.com/openshift/api/route/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openshift-router-go/router/router/annotations"
	"github.com/openshift-router-go/router/router/model"
	"github.com/openshift-router-go/router/router/store"
)

// Options are the router-wide settings the model carries.
type Options struct {
	WorkingDir           string
	RunDir               string
	DefaultCertificate   string
	DefaultDestinationCA string
	// WatchEndpoints selects Endpoints instead of EndpointSlices.
	WatchEndpoints bool
	HTTPPort       int
	HTTPSPort      int
	StatsPort      int
	StatsUser      string
	StatsPassword  string
	BindPorts      bool
	DisableHTTP2   bool
	MaxConnections int
	// HAProxy are the validated router-wide HAProxy settings.
	HAProxy model.HAProxySettings
}

// Build returns the template data for the admitted routes.
func Build(v store.View, admitted []*routev1.Route, o Options) *model.TemplateData {
	td := &model.TemplateData{
		WorkingDir:           o.WorkingDir,
		RunDir:               o.RunDir,
		State:                make(map[model.ServiceAliasConfigKey]model.ServiceAliasConfig, len(admitted)),
		ServiceUnits:         map[model.ServiceUnitKey]model.ServiceUnit{},
		DefaultCertificate:   o.DefaultCertificate,
		DefaultDestinationCA: o.DefaultDestinationCA,
		StatsUser:            o.StatsUser,
		StatsPassword:        o.StatsPassword,
		StatsPort:            o.StatsPort,
		BindPorts:            o.BindPorts,
		DisableHTTP2:         o.DisableHTTP2,
		HTTPPort:             o.HTTPPort,
		HTTPSPort:            o.HTTPSPort,
		MaxConnections:       o.MaxConnections,
		HAProxy:              o.HAProxy,
	}
	for _, r := range admitted {
		key := model.NewServiceAliasConfigKey(r.Namespace, r.Name)
		td.State[key] = buildAlias(v, td, r, o)
	}
	return td
}

func buildAlias(v store.View, td *model.TemplateData, r *routev1.Route, o Options) model.ServiceAliasConfig {
	key := model.NewServiceAliasConfigKey(r.Namespace, r.Name)
	sum := md5.Sum([]byte(key))
	cfg := model.ServiceAliasConfig{
		Name:             r.Name,
		Namespace:        r.Namespace,
		Host:             strings.ToLower(r.Spec.Host),
		Path:             r.Spec.Path,
		RoutingKeyName:   hex.EncodeToString(sum[:]),
		IsWildcard:       r.Spec.WildcardPolicy == routev1.WildcardPolicySubdomain,
		Annotations:      r.Annotations,
		Certificates:     map[string]model.Certificate{},
		ServiceUnits:     map[model.ServiceUnitKey]int32{},
		ServiceUnitNames: map[model.ServiceUnitKey]int32{},
	}
	if cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	if tls := r.Spec.TLS; tls != nil {
		cfg.TLSTermination = tls.Termination
		cfg.InsecureEdgeTerminationPolicy = tls.InsecureEdgeTerminationPolicy
		if tls.Termination != routev1.TLSTerminationPassthrough {
			if tls.Certificate != "" {
				cfg.Certificates[cfg.Host] = model.Certificate{ID: string(key), Contents: tls.Certificate, PrivateKey: tls.Key}
			}
			if tls.CACertificate != "" {
				cfg.Certificates[cfg.Host+model.CACertPostfix] = model.Certificate{ID: string(key) + model.CACertPostfix, Contents: tls.CACertificate}
			}
			if tls.DestinationCACertificate != "" {
				cfg.Certificates[cfg.Host+model.DestCACertPostfix] = model.Certificate{ID: string(key) + model.DestCACertPostfix, Contents: tls.DestinationCACertificate}
			} else if tls.Termination == routev1.TLSTerminationReencrypt && o.DefaultDestinationCA != "" {
				cfg.VerifyServiceHostname = true
			}
		}
	}

	var problems []annotations.Problem
	cfg.Settings, problems = annotations.Parse(cfg.Annotations, annotations.Input{Termination: string(cfg.TLSTermination), Path: cfg.Path})
	// The controller logs them (once per change); building stays pure.
	for _, p := range problems {
		cfg.AnnotationProblems = append(cfg.AnnotationProblems, p.String())
	}

	backends := append([]routev1.RouteTargetReference{r.Spec.To}, r.Spec.AlternateBackends...)
	var targetPort string
	if r.Spec.Port != nil {
		targetPort = r.Spec.Port.TargetPort.String()
	}
	counts := map[model.ServiceUnitKey]int{}
	for i, b := range backends {
		weight := int32(1)
		if b.Weight != nil {
			weight = *b.Weight
		}
		suKey := model.NewServiceUnitKey(r.Namespace, b.Name)
		cfg.ServiceUnits[suKey] = weight
		su, ok := td.ServiceUnits[suKey]
		if !ok {
			su = buildServiceUnit(v, r.Namespace, b.Name, o.WatchEndpoints)
			td.ServiceUnits[suKey] = su
		}
		if i == 0 {
			cfg.PreferPort = resolvePort(v.Service(r.Namespace, b.Name), su, targetPort)
		}
		counts[suKey] = countEndpoints(su, cfg.PreferPort)
	}
	cfg.ServiceUnitNames = endpointWeights(cfg.ServiceUnits, counts)
	for k, w := range cfg.ServiceUnitNames {
		if w > 0 && counts[k] > 0 {
			cfg.ActiveServiceUnits++
			cfg.ActiveEndpoints += counts[k]
		}
	}
	return cfg
}

// resolvePort returns the port the route prefers, as the endpoint port name
// or number endpointsForAlias matches against. A named or numbered pod
// port is used as given; a number that is a service port (not a pod port)
// is translated to that service port's name; with no target port, a
// multi-port service uses its first port.
func resolvePort(svc *corev1.Service, su model.ServiceUnit, targetPort string) string {
	if targetPort == "" {
		if svc != nil && len(svc.Spec.Ports) > 1 {
			return svc.Spec.Ports[0].Name
		}
		return ""
	}
	if _, err := strconv.Atoi(targetPort); err != nil || svc == nil {
		return targetPort
	}
	for _, ep := range su.EndpointTable {
		if ep.Port == targetPort {
			return targetPort
		}
	}
	for _, p := range svc.Spec.Ports {
		if strconv.Itoa(int(p.Port)) == targetPort && p.Name != "" {
			return p.Name
		}
	}
	return targetPort
}

func countEndpoints(su model.ServiceUnit, preferPort string) int {
	if preferPort == "" {
		return len(su.EndpointTable)
	}
	n := 0
	for _, ep := range su.EndpointTable {
		if ep.PortName == preferPort || ep.Port == preferPort {
			n++
		}
	}
	return n
}

// endpointWeights distributes each service's weight over its endpoints and
// scales the per-endpoint weights so the largest becomes 256 (HAProxy's
// maximum), keeping every non-zero share at least 1 — OpenShift's rule.
func endpointWeights(weights map[model.ServiceUnitKey]int32, counts map[model.ServiceUnitKey]int) map[model.ServiceUnitKey]int32 {
	perEndpoint := make(map[model.ServiceUnitKey]float64, len(weights))
	maxW := 0.0
	for k, w := range weights {
		if n := counts[k]; n > 0 {
			perEndpoint[k] = float64(w) / float64(n)
		}
		if perEndpoint[k] > maxW {
			maxW = perEndpoint[k]
		}
	}
	out := make(map[model.ServiceUnitKey]int32, len(weights))
	for k := range weights {
		w := perEndpoint[k]
		if maxW == 0 || w == 0 {
			out[k] = 0
			continue
		}
		scaled := int32(w * 256 / maxW)
		if scaled < 1 {
			scaled = 1
		}
		out[k] = scaled
	}
	return out
}

func buildServiceUnit(v store.View, namespace, name string, watchEndpoints bool) model.ServiceUnit {
	su := model.ServiceUnit{
		Name:     namespace + "/" + name,
		Hostname: name + "." + namespace + ".svc",
	}
	// Admission only requires a name (as OpenShift does): a name no
	// service can have has no endpoints, and never reaches the config.
	if len(validation.IsDNS1123Label(name)) > 0 {
		return su
	}
	seen := map[string]bool{}
	add := func(ip string, port int32, portName string, ref *corev1.ObjectReference) {
		addr, err := netip.ParseAddr(ip)
		// IPv6 zones (fe80::1%eth0) have no place in a server address.
		if err != nil || addr.Zone() != "" || port < 1 || port > 65535 {
			return
		}
		if portName != "" && len(validation.IsValidPortName(portName)) > 0 {
			return
		}
		ep := model.Endpoint{IP: addr.String(), Port: strconv.Itoa(int(port)), PortName: portName}
		if ref != nil && len(validation.IsDNS1123Subdomain(ref.Name)) == 0 {
			ep.TargetName = ref.Name
		}
		if ref != nil && ref.Kind == "Pod" && ep.TargetName != "" {
			ep.ID = fmt.Sprintf("pod:%s:%s:%s:%s:%s", ep.TargetName, name, portName, ep.IP, ep.Port)
		} else {
			ep.ID = fmt.Sprintf("ept:%s:%s:%s", name, ep.IP, ep.Port)
		}
		if seen[ep.ID] {
			return
		}
		seen[ep.ID] = true
		sum := md5.Sum([]byte(ep.ID))
		ep.IdHash = hex.EncodeToString(sum[:])
		su.EndpointTable = append(su.EndpointTable, ep)
	}
	if watchEndpoints {
		if eps := v.Endpoints(namespace, name); eps != nil {
			for _, ss := range eps.Subsets {
				for _, p := range ss.Ports {
					if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
						continue
					}
					for i := range ss.Addresses {
						a := ss.Addresses[i]
						add(a.IP, p.Port, p.Name, a.TargetRef)
					}
				}
			}
		}
	} else {
		for _, slice := range v.EndpointSlices(namespace, name) {
			// FQDN (and any future type) slices are skipped; the
			// sources log them (endpointfilter).
			if slice.AddressType != discoveryv1.AddressTypeIPv4 && slice.AddressType != discoveryv1.AddressTypeIPv6 {
				continue
			}
			for _, p := range slice.Ports {
				if p.Port == nil || (p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP) {
					continue
				}
				portName := ""
				if p.Name != nil {
					portName = *p.Name
				}
				for _, e := range slice.Endpoints {
					if !endpointReady(e) {
						continue
					}
					for _, a := range e.Addresses {
						add(a, *p.Port, portName, e.TargetRef)
					}
				}
			}
		}
	}
	sort.Slice(su.EndpointTable, func(i, j int) bool { return su.EndpointTable[i].ID < su.EndpointTable[j].ID })
	return su
}

// endpointReady follows the EndpointSlice contract: a nil ready condition
// means ready; terminating endpoints are not ready.
func endpointReady(e discoveryv1.Endpoint) bool {
	if e.Conditions.Ready != nil {
		return *e.Conditions.Ready
	}
	return e.Conditions.Terminating == nil || !*e.Conditions.Terminating
}

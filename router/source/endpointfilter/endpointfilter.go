// Package endpointfilter keeps restricted addresses out of the router's
// backends: endpoint addresses that are unspecified, loopback, link-local,
// multicast, the broadcast address or a cloud metadata service (also when
// an IPv6 address embeds such an IPv4 address: IPv4-mapped,
// IPv4-compatible, NAT64, 6to4) are dropped one by one, each with a log
// line, before the objects reach the store; so is such a cluster IP of a
// Service (what an idled service's route would connect to). Every source
// wraps its sink with Sink.
package endpointfilter

import (
	"fmt"
	"net/netip"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openshift-router-go/router/router/store"
)

// Cloud metadata services outside the link-local range (169.254.169.254,
// the AWS, GCP and Azure IPv4 endpoint, is link-local).
var (
	azureMetadata = netip.AddrFrom4([4]byte{168, 63, 129, 16})
	// 100.100.100.200, Alibaba Cloud's metadata endpoint.
	alibabaMetadata = netip.AddrFrom4([4]byte{100, 100, 100, 200})
	// fd00:ec2::254, the AWS IPv6 metadata endpoint.
	awsIPv6Metadata = netip.AddrFrom16([16]byte{0xfd, 0x00, 0x0e, 0xc2, 13: 0x00, 14: 0x02, 15: 0x54})
	// 255.255.255.255, the limited broadcast address.
	broadcast = netip.AddrFrom4([4]byte{255, 255, 255, 255})
)

// Prefixes of IPv6 addresses that carry an IPv4 address a translator or
// relay reaches: NAT64 (RFC 6052's well-known 64:ff9b::/96 and RFC 8215's
// local-use 64:ff9b:1::/48) and 6to4 (2002::/16).
var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	nat64LocalUse  = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour      = netip.MustParsePrefix("2002::/16")
)

// Options configure the filter.
type Options struct {
	// AllowLoopback keeps loopback addresses (the manifests source: a
	// local, trusted directory whose demo backends listen on 127.0.0.1).
	AllowLoopback bool
	// AllowLoopbackClusterIP keeps loopback cluster IPs of Services (the
	// cluster source: the API server allocates them from the service
	// range the cluster's administrator chose, which a test cluster puts
	// on loopback); every other restriction applies to them.
	AllowLoopbackClusterIP bool
}

// Restricted returns why addr must not be a backend, or nil: the one home
// of the rule, for endpoint addresses and the cluster IPs of idled
// services alike. The address is checked as written and, if it embeds an
// IPv4 address (IPv4-mapped ::ffff:a.b.c.d, IPv4-compatible ::a.b.c.d,
// NAT64 64:ff9b::/96 or 64:ff9b:1::/48, 6to4 2002::/16), as that address
// too.
func Restricted(addr netip.Addr, o Options) error {
	if err := restricted(addr, o); err != nil {
		return err
	}
	for _, e := range embeddedIPv4(addr.WithZone("")) {
		if e.padding && e.v4.IsUnspecified() {
			// Zeros where a shorter NAT64 prefix would put the address.
			continue
		}
		if err := restricted(e.v4, o); err != nil {
			return fmt.Errorf("%w (embedded in %s, %s)", err, addr, e.form)
		}
	}
	return nil
}

func restricted(a netip.Addr, o Options) error {
	a = a.WithZone("")
	switch {
	case a.IsUnspecified():
		return fmt.Errorf("%s is an unspecified address", a)
	case a.IsLoopback() && !o.AllowLoopback:
		return fmt.Errorf("%s is a loopback address", a)
	case a.IsLinkLocalUnicast():
		return fmt.Errorf("%s is a link-local address (cloud metadata services live there)", a)
	case a.IsMulticast():
		return fmt.Errorf("%s is a multicast address", a)
	case a == broadcast:
		return fmt.Errorf("%s is the broadcast address", a)
	case a == azureMetadata || a == alibabaMetadata || a == awsIPv6Metadata:
		return fmt.Errorf("%s is a cloud metadata address", a)
	}
	return nil
}

// embedded is an IPv4 address an IPv6 address carries, and in which form.
// padding: the address is one of several layouts the form allows (the
// local-use NAT64 prefix's length is the operator's choice), where an
// unused layout reads zeros.
type embedded struct {
	v4      netip.Addr
	form    string
	padding bool
}

// embeddedIPv4 returns the IPv4 addresses an IPv6 address carries:
// IPv4-mapped, IPv4-compatible (::/96, deprecated; "::" and "::1" have its
// layout but are IPv6's own unspecified and loopback addresses, which
// restricted has already seen as written), NAT64 (RFC 6052: the well-known
// prefix's last 32 bits; for the local-use /48, every layout of a prefix of
// 48, 56, 64 or 96 bits, skipping the reserved bits 64-71) and 6to4 (bits
// 16-47).
func embeddedIPv4(a netip.Addr) []embedded {
	if !a.Is6() {
		return nil
	}
	b := a.As16()
	v4 := func(i, j, k, l int) netip.Addr { return netip.AddrFrom4([4]byte{b[i], b[j], b[k], b[l]}) }
	switch {
	case a.Is4In6():
		return []embedded{{v4: a.Unmap(), form: "IPv4-mapped"}}
	case netip.PrefixFrom(a, 96).Masked().Addr() == netip.IPv6Unspecified():
		return []embedded{{v4: v4(12, 13, 14, 15), form: "IPv4-compatible"}}
	case nat64WellKnown.Contains(a):
		return []embedded{{v4: v4(12, 13, 14, 15), form: "NAT64"}}
	case nat64LocalUse.Contains(a):
		return []embedded{
			{v4: v4(12, 13, 14, 15), form: "NAT64 /96", padding: true},
			{v4: v4(9, 10, 11, 12), form: "NAT64 /64", padding: true},
			{v4: v4(7, 9, 10, 11), form: "NAT64 /56", padding: true},
			{v4: v4(6, 7, 9, 10), form: "NAT64 /48", padding: true},
		}
	case sixToFour.Contains(a):
		return []embedded{{v4: v4(2, 3, 4, 5), form: "6to4"}}
	}
	return nil
}

// Check parses an address and returns why it must not be a backend, or
// nil.
func Check(address string, o Options) error {
	a, err := netip.ParseAddr(address)
	if err != nil {
		return fmt.Errorf("%q is not an IP address", address)
	}
	return Restricted(a, o)
}

// Filter returns obj without the restricted addresses of an Endpoints or
// EndpointSlice, or a Service without a restricted cluster IP (a copy if
// any is dropped; obj itself is never changed), logging each dropped
// address. An EndpointSlice whose address type is not IPv4 or IPv6 loses
// all its endpoints, with a log line. Other objects are returned as they
// are.
func Filter(obj runtime.Object, o Options, log logr.Logger) runtime.Object {
	switch e := obj.(type) {
	case *corev1.Endpoints:
		return filterEndpoints(e, o, log)
	case *discoveryv1.EndpointSlice:
		return filterSlice(e, o, log)
	case *corev1.Service:
		return filterService(e, o, log)
	}
	return obj
}

// filterService drops a restricted cluster IP: an idled service's route
// connects to its cluster IP (router/builder), which then gets none and no
// server. A manifest may write any address there; the API server
// allocates it from the cluster's service range.
func filterService(s *corev1.Service, o Options, log logr.Logger) *corev1.Service {
	ip := s.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone {
		return s
	}
	err := Check(ip, Options{AllowLoopback: o.AllowLoopback || o.AllowLoopbackClusterIP})
	if err == nil {
		return s
	}
	log.Info("skipping a Service's restricted or invalid cluster IP: its routes get no server for it when it is idled",
		"service", s.Namespace+"/"+s.Name, "address", ip, "reason", err.Error())
	c := s.DeepCopy()
	c.Spec.ClusterIP, c.Spec.ClusterIPs = "", nil
	return c
}

func filterEndpoints(e *corev1.Endpoints, o Options, log logr.Logger) *corev1.Endpoints {
	keep := func(addrs []corev1.EndpointAddress) ([]corev1.EndpointAddress, bool) {
		var out []corev1.EndpointAddress
		dropped := false
		for _, a := range addrs {
			if err := Check(a.IP, o); err != nil {
				log.Info("skipping endpoint address with a restricted or invalid IP", "endpoints", e.Namespace+"/"+e.Name, "address", a.IP, "reason", err.Error())
				dropped = true
				continue
			}
			out = append(out, a)
		}
		return out, dropped
	}
	var c *corev1.Endpoints
	for i, ss := range e.Subsets {
		ready, d1 := keep(ss.Addresses)
		notReady, d2 := keep(ss.NotReadyAddresses)
		if !d1 && !d2 {
			continue
		}
		if c == nil {
			c = e.DeepCopy()
		}
		c.Subsets[i].Addresses, c.Subsets[i].NotReadyAddresses = ready, notReady
	}
	if c == nil {
		return e
	}
	return c
}

func filterSlice(s *discoveryv1.EndpointSlice, o Options, log logr.Logger) *discoveryv1.EndpointSlice {
	key := s.Namespace + "/" + s.Name
	if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
		if len(s.Endpoints) == 0 {
			return s
		}
		log.Info("skipping EndpointSlice whose address type is not IPv4 or IPv6", "endpointSlice", key, "addressType", string(s.AddressType))
		c := s.DeepCopy()
		c.Endpoints = nil
		return c
	}
	var c *discoveryv1.EndpointSlice
	var kept []discoveryv1.Endpoint
	for i, ep := range s.Endpoints {
		var addrs []string
		for _, a := range ep.Addresses {
			if err := Check(a, o); err != nil {
				log.Info("skipping endpoint address with a restricted or invalid IP", "endpointSlice", key, "address", a, "reason", err.Error())
				continue
			}
			addrs = append(addrs, a)
		}
		if c == nil && len(addrs) == len(ep.Addresses) {
			continue
		}
		if c == nil {
			c = s.DeepCopy()
			kept = append(kept, c.Endpoints[:i]...)
		}
		if len(addrs) > 0 {
			e := *c.Endpoints[i].DeepCopy()
			e.Addresses = addrs
			kept = append(kept, e)
		}
	}
	if c == nil {
		return s
	}
	c.Endpoints = kept
	return c
}

// sink filters endpoints on their way to a store.Sink.
type sink struct {
	store.Sink
	o   Options
	log logr.Logger
}

// Sink returns next with Filter applied to every upserted object.
func Sink(next store.Sink, o Options, log logr.Logger) store.Sink {
	return sink{Sink: next, o: o, log: log}
}

func (s sink) Upsert(obj runtime.Object) { s.Sink.Upsert(Filter(obj, s.o, s.log)) }

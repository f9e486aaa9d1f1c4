// Package endpointfilter keeps restricted addresses out of the router's
// backends, as OpenShift's router does: endpoint addresses that are
// unspecified, loopback, link-local, multicast or a cloud metadata service
// (also when written as IPv4-mapped or IPv4-compatible IPv6) are dropped
// one by one, each with a log line, before the objects reach the store.
// Every source wraps its sink with Sink.
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
	// fd00:ec2::254, the AWS IPv6 metadata endpoint.
	awsIPv6Metadata = netip.AddrFrom16([16]byte{0xfd, 0x00, 0x0e, 0xc2, 13: 0x00, 14: 0x02, 15: 0x54})
)

// Options configure the filter.
type Options struct {
	// AllowLoopback keeps loopback addresses (the manifests source: a
	// local, trusted directory whose demo backends listen on 127.0.0.1).
	AllowLoopback bool
}

// Restricted returns why addr must not be a backend, or nil. The address
// is checked as written and, if it embeds an IPv4 address (IPv4-mapped
// ::ffff:a.b.c.d or IPv4-compatible ::a.b.c.d), as that address too.
func Restricted(addr netip.Addr, o Options) error {
	if err := restricted(addr, o); err != nil {
		return err
	}
	if v4, ok := embeddedIPv4(addr); ok {
		if err := restricted(v4, o); err != nil {
			return fmt.Errorf("%w (embedded in %s)", err, addr)
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
	case a == azureMetadata || a == awsIPv6Metadata:
		return fmt.Errorf("%s is a cloud metadata address", a)
	}
	return nil
}

// embeddedIPv4 returns the IPv4 address an IPv4-mapped or IPv4-compatible
// (::/96, deprecated) IPv6 address carries. "::" and "::1" have the
// compatible layout but are IPv6's own unspecified and loopback addresses,
// which restricted has already seen as written.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	if !a.Is6() {
		return netip.Addr{}, false
	}
	if a.Is4In6() {
		return a.Unmap(), true
	}
	b := a.As16()
	for _, x := range b[:12] {
		if x != 0 {
			return netip.Addr{}, false
		}
	}
	return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
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
// EndpointSlice (a copy if any is dropped; obj itself is never changed),
// logging each dropped address. An EndpointSlice whose address type is
// not IPv4 or IPv6 loses all its endpoints, with a log line. Other objects
// are returned as they are.
func Filter(obj runtime.Object, o Options, log logr.Logger) runtime.Object {
	switch e := obj.(type) {
	case *corev1.Endpoints:
		return filterEndpoints(e, o, log)
	case *discoveryv1.EndpointSlice:
		return filterSlice(e, o, log)
	}
	return obj
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

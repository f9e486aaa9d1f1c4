package endpointfilter

import (
	"reflect"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestRestrictedAddresses(t *testing.T) {
	tests := []struct {
		addr string
		// restricted in every source; loopback: restricted except in the
		// manifests source.
		restricted, loopback bool
	}{
		{addr: "10.0.0.1"},
		{addr: "198.51.100.10"},
		{addr: "2001:db8::1"},
		{addr: "fd00::1"},
		{addr: "::ffff:10.0.0.1"},
		{addr: "0.0.0.0", restricted: true},
		{addr: "::", restricted: true},
		{addr: "127.0.0.1", loopback: true},
		{addr: "127.1.2.3", loopback: true},
		{addr: "::1", loopback: true},
		{addr: "::ffff:127.0.0.1", loopback: true},
		{addr: "::127.0.0.1", loopback: true},
		{addr: "169.254.169.254", restricted: true},
		{addr: "169.254.1.1", restricted: true},
		{addr: "fe80::1", restricted: true},
		{addr: "224.0.0.1", restricted: true},
		{addr: "ff02::1", restricted: true},
		{addr: "168.63.129.16", restricted: true},
		{addr: "fd00:ec2::254", restricted: true},
		{addr: "::ffff:169.254.169.254", restricted: true},
		{addr: "::169.254.169.254", restricted: true},
		{addr: "::a9fe:a9fe", restricted: true},
		{addr: "::ffff:168.63.129.16", restricted: true},
		{addr: "::168.63.129.16", restricted: true},
		{addr: "::ffff:0.0.0.0", restricted: true},
		{addr: "::ffff:224.0.0.1", restricted: true},
		{addr: "not-an-ip", restricted: true},
		{addr: "10.0.0.1/32", restricted: true},
		// Alibaba Cloud's metadata service, the broadcast address.
		{addr: "100.100.100.200", restricted: true},
		{addr: "100.100.100.201"},
		{addr: "255.255.255.255", restricted: true},
		{addr: "::ffff:255.255.255.255", restricted: true},
		{addr: "::ffff:100.100.100.200", restricted: true},
		// NAT64, well-known prefix (RFC 6052): the last 32 bits.
		{addr: "64:ff9b::169.254.169.254", restricted: true},
		{addr: "64:ff9b::a9fe:a9fe", restricted: true},
		{addr: "64:ff9b::100.100.100.200", restricted: true},
		{addr: "64:ff9b::168.63.129.16", restricted: true},
		{addr: "64:ff9b::7f00:1", loopback: true},
		{addr: "64:ff9b::e000:1", restricted: true},
		{addr: "64:ff9b::ffff:ffff", restricted: true},
		{addr: "64:ff9b::a00:1"},
		{addr: "64:ff9b::c633:640a"},
		// NAT64, local-use prefix (RFC 8215) with a /96, /64, /56 or /48.
		{addr: "64:ff9b:1::a9fe:a9fe", restricted: true},
		{addr: "64:ff9b:1:0:a9:fea9:fe00:0", restricted: true},
		{addr: "64:ff9b:1:a9:fe:a9fe::", restricted: true},
		{addr: "64:ff9b:1:a9fe:a9:fe00::", restricted: true},
		{addr: "64:ff9b:1::a00:1"},
		{addr: "64:ff9b:1:a00:0:100::"},
		{addr: "64:ff9b:1:abcd::a00:1"},
		// 6to4: bits 16-47.
		{addr: "2002:a9fe:a9fe::", restricted: true},
		{addr: "2002:a9fe:a9fe:1::1", restricted: true},
		{addr: "2002:a9fe:0101::1", restricted: true},
		{addr: "2002:6464:64c8::1", restricted: true},
		{addr: "2002:a83f:8110::1", restricted: true},
		{addr: "2002:7f00:1::1", loopback: true},
		{addr: "2002:c633:640a::1"},
		{addr: "2003:a9fe:a9fe::1"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			cluster := Check(tt.addr, Options{}) != nil
			manifests := Check(tt.addr, Options{AllowLoopback: true}) != nil
			if want := tt.restricted || tt.loopback; cluster != want {
				t.Errorf("cluster sources: restricted=%v, want %v", cluster, want)
			}
			if manifests != tt.restricted {
				t.Errorf("manifests source: restricted=%v, want %v", manifests, tt.restricted)
			}
		})
	}
}

// logged collects the log lines of a funcr logger.
func logged() (*[]string, func(prefix, args string)) {
	var lines []string
	return &lines, func(prefix, args string) { lines = append(lines, args) }
}

func TestSliceLosesRestrictedAddressesOnly(t *testing.T) {
	lines, sink := logged()
	log := funcr.New(sink, funcr.Options{})
	ready := true
	in := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "svc-1"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}},
			{Addresses: []string{"169.254.169.254"}},
			{Addresses: []string{"168.63.129.16", "10.0.0.2"}},
			{Addresses: []string{"10.0.0.3"}},
		},
	}
	orig := in.DeepCopy()
	out := Filter(in, Options{}, log).(*discoveryv1.EndpointSlice)
	if !reflect.DeepEqual(in, orig) {
		t.Fatal("the watched object was changed")
	}
	var got [][]string
	for _, e := range out.Endpoints {
		got = append(got, e.Addresses)
	}
	want := [][]string{{"10.0.0.1"}, {"10.0.0.2"}, {"10.0.0.3"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("endpoints %v, want %v", got, want)
	}
	if out.Endpoints[0].Conditions.Ready == nil || !*out.Endpoints[0].Conditions.Ready {
		t.Fatal("conditions of kept endpoints were lost")
	}
	if len(*lines) != 2 || !strings.Contains((*lines)[0], `"address"="169.254.169.254"`) || !strings.Contains((*lines)[1], `"address"="168.63.129.16"`) ||
		!strings.Contains((*lines)[0], `"endpointSlice"="ns/svc-1"`) {
		t.Fatalf("want one log line per dropped address, got %q", *lines)
	}

	clean := &discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv6, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"2001:db8::1"}}}}
	if Filter(clean, Options{}, log) != clean {
		t.Fatal("a slice without restricted addresses should pass as is")
	}
}

func TestSliceOfAnotherAddressTypeIsSkipped(t *testing.T) {
	for _, typ := range []discoveryv1.AddressType{discoveryv1.AddressTypeFQDN, "Unix"} {
		t.Run(string(typ), func(t *testing.T) {
			lines, sink := logged()
			in := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, AddressType: typ,
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}}
			out := Filter(in, Options{AllowLoopback: true}, funcr.New(sink, funcr.Options{})).(*discoveryv1.EndpointSlice)
			if len(out.Endpoints) != 0 || len(in.Endpoints) != 1 {
				t.Fatalf("endpoints kept: %v", out.Endpoints)
			}
			if len(*lines) != 1 || !strings.Contains((*lines)[0], `"addressType"="`+string(typ)+`"`) {
				t.Fatalf("want one log line naming the type, got %q", *lines)
			}
		})
	}
}

func TestEndpointsLoseRestrictedAddressesOnly(t *testing.T) {
	lines, sink := logged()
	in := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "svc"},
		Subsets: []corev1.EndpointSubset{
			{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "::ffff:169.254.169.254"}}, NotReadyAddresses: []corev1.EndpointAddress{{IP: "fd00:ec2::254"}}},
			{Addresses: []corev1.EndpointAddress{{IP: "127.0.0.1"}, {IP: "10.0.0.2"}}},
		},
	}
	out := Filter(in, Options{}, funcr.New(sink, funcr.Options{})).(*corev1.Endpoints)
	if len(in.Subsets[0].Addresses) != 2 {
		t.Fatal("the watched object was changed")
	}
	if got := out.Subsets[0].Addresses; len(got) != 1 || got[0].IP != "10.0.0.1" || len(out.Subsets[0].NotReadyAddresses) != 0 {
		t.Fatalf("subset 0: %+v", out.Subsets[0])
	}
	if got := out.Subsets[1].Addresses; len(got) != 1 || got[0].IP != "10.0.0.2" {
		t.Fatalf("subset 1: %+v", out.Subsets[1])
	}
	if len(*lines) != 3 {
		t.Fatalf("want 3 log lines, got %q", *lines)
	}
}

// TestServiceLosesARestrictedClusterIP: an idled service's route connects
// to its cluster IP (router/builder); a restricted one is dropped from the
// Service, with a log line naming the service and the address.
func TestServiceLosesARestrictedClusterIP(t *testing.T) {
	for _, tc := range []struct {
		ip   string
		drop bool
	}{
		{"169.254.169.254", true},
		{"64:ff9b::a9fe:a9fe", true},
		{"2002:a9fe:a9fe::1", true},
		{"100.100.100.200", true},
		{"255.255.255.255", true},
		{"not-an-ip", true},
		{"172.30.0.10", false},
		{"127.0.0.1", false}, // kept: AllowLoopbackClusterIP
		{"", false},
		{corev1.ClusterIPNone, false},
	} {
		t.Run(tc.ip, func(t *testing.T) {
			lines, sink := logged()
			in := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
				Spec: corev1.ServiceSpec{ClusterIP: tc.ip, ClusterIPs: []string{tc.ip}, Ports: []corev1.ServicePort{{Port: 80}}}}
			orig := in.DeepCopy()
			out := Filter(in, Options{AllowLoopbackClusterIP: true}, funcr.New(sink, funcr.Options{})).(*corev1.Service)
			if !reflect.DeepEqual(in, orig) {
				t.Fatal("the watched object was changed")
			}
			if !tc.drop {
				if out != in || len(*lines) != 0 {
					t.Fatalf("kept service changed (%+v) or logged %q", out.Spec, *lines)
				}
				return
			}
			if out.Spec.ClusterIP != "" || len(out.Spec.ClusterIPs) != 0 || len(out.Spec.Ports) != 1 {
				t.Fatalf("spec %+v", out.Spec)
			}
			if len(*lines) != 1 || !strings.Contains((*lines)[0], `"service"="ns/web"`) || !strings.Contains((*lines)[0], `"address"="`+tc.ip+`"`) {
				t.Fatalf("want one log line naming the service and address, got %q", *lines)
			}
		})
	}
	// Without either loopback option a loopback cluster IP goes too.
	in := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: corev1.ServiceSpec{ClusterIP: "127.0.0.1"}}
	if out := Filter(in, Options{}, logr.Discard()).(*corev1.Service); out.Spec.ClusterIP != "" {
		t.Errorf("loopback cluster IP kept without AllowLoopback")
	}
}

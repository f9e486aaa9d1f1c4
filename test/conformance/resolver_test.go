package conformance

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// The suite's TLS tests dial a Gateway's address on port 443 themselves (a
// net.Dialer, not the suite's round tripper): the test process resolves
// the Gateways' host names (under canonicalHostname) to one address of the
// test network namespace, where a forwarder passes port 443 to the router.
// Nothing else is resolved (or dialled) this way.

// resolveGatewaysTo makes the process's resolver answer names under
// canonicalHostname with ip (A), and no other name, until t ends.
func resolveGatewaysTo(t *testing.T, ip netip.Addr) {
	old := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go serveDNS(server, ip)
		return client, nil
	}}
	t.Cleanup(func() { net.DefaultResolver = old })
}

// serveDNS answers the queries of one connection (the stream form: each
// message after its 2-byte length).
func serveDNS(c net.Conn, ip netip.Addr) {
	defer c.Close()
	for {
		var size [2]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		query := make([]byte, binary.BigEndian.Uint16(size[:]))
		if _, err := io.ReadFull(c, query); err != nil {
			return
		}
		answer, err := answerDNS(query, ip)
		if err != nil {
			return
		}
		binary.BigEndian.PutUint16(size[:], uint16(len(answer)))
		if _, err := c.Write(append(size[:], answer...)); err != nil {
			return
		}
	}
}

// answerDNS answers one query: an A record with ip for a name under
// canonicalHostname, no record for its other types, NXDOMAIN for other
// names.
func answerDNS(query []byte, ip netip.Addr) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	name := strings.ToLower(strings.TrimSuffix(q.Name.String(), "."))
	ours := name == canonicalHostname || strings.HasSuffix(name, "."+canonicalHostname)
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired, RCode: dnsmessage.RCodeSuccess}
	if !ours {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	if ours && q.Type == dnsmessage.TypeA {
		if err := b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}, dnsmessage.AResource{A: ip.As4()}); err != nil {
			return nil, err
		}
	}
	return b.Finish()
}

// TestTheResolverAnswersTheGatewaysNamesOnly: names under
// canonicalHostname resolve to the address given, others do not.
func TestTheResolverAnswersTheGatewaysNamesOnly(t *testing.T) {
	ip := netip.MustParseAddr("198.51.100.99")
	resolveGatewaysTo(t, ip)
	addrs, err := net.DefaultResolver.LookupHost(context.Background(), "gw-ns."+canonicalHostname)
	if err != nil || len(addrs) != 1 || addrs[0] != ip.String() {
		t.Errorf("a Gateway's name: %v, %v", addrs, err)
	}
	if addrs, err := net.DefaultResolver.LookupHost(context.Background(), "example.org"); err == nil {
		t.Errorf("another name resolved: %v", addrs)
	}
}

package capability

import (
	"context"
	"reflect"
	"testing"

	"github.com/openshift-router-go/router/test/prereq"
)

// TestSupportedCurvesDropsWhatThisOpenSSLLacks: the ingress operator's
// default list names a post-quantum group the local OpenSSL may lack, and a
// made-up name is always refused; the classic curves are kept, in order.
func TestSupportedCurvesDropsWhatThisOpenSSLLacks(t *testing.T) {
	bin := prereq.NeedBinary(t, "haproxy")
	got, refused, err := SupportedCurves(context.Background(), bin, []string{"X25519", "bogus-curve", "secp256r1", "P-384"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, []string{"X25519", "secp256r1", "P-384"}) || !reflect.DeepEqual(refused, []string{"bogus-curve"}) {
		t.Fatalf("supported %q, refused %q", got, refused)
	}
}

func TestSupportedCurvesWithoutHAProxyIsAnError(t *testing.T) {
	if _, _, err := SupportedCurves(context.Background(), "/nonexistent/haproxy", []string{"X25519"}); err == nil {
		t.Fatal("no error without a haproxy binary")
	}
}
